// The members' MAC addresses, which the P4 program's neighbor_table needs to
// address its answers (a REGISTER names IPv4 endpoints only): from a file
// the operator gives, else from the kernel's neighbour table of the host the
// controller runs on (a one-armed switch shares the rack's L2 with it).
#ifndef RINA_P4_AGENT_BMV2_NEIGHBORS_H_
#define RINA_P4_AGENT_BMV2_NEIGHBORS_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/status.h"

namespace rina::bmv2 {

using Mac = std::array<uint8_t, 6>;
using NeighborMap = std::map<uint32_t, Mac>;  // IPv4 address (host order) -> MAC

std::string macString(const Mac& mac);  // "02:00:00:00:00:01"
bool parseMac(std::string_view text, Mac* out);

// Lines "A.B.C.D aa:bb:cc:dd:ee:ff"; '#' starts a comment. An address listed
// twice, a bad address or MAC is an error naming the line.
Status parseNeighbors(std::string_view text, const std::string& where, NeighborMap* out);
Status readNeighborFile(const std::string& path, NeighborMap* out);

// The complete entries of a /proc/net/arp-format table (header line, then
// "IP HWtype Flags HWaddress Mask Device"); flags 0x2 = complete.
NeighborMap parseKernelNeighbors(std::string_view text);
NeighborMap kernelNeighbors();

// The MAC of addr: from `known`, else the kernel's table; when the kernel
// does not know it yet, one UDP datagram to addr's discard port (9) makes
// it resolve, and the table is read again for up to waitMs.
bool resolveNeighbor(uint32_t addr, const NeighborMap& known, int waitMs, Mac* out);

}  // namespace rina::bmv2

#endif  // RINA_P4_AGENT_BMV2_NEIGHBORS_H_
