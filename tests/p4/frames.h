// Ethernet/IPv4/UDP frames and pcap files for the P4 tests: the datagrams a
// host sends to the switch, the frame rina_v1model.p4 must send for each of
// rina-switchd's answers, and the pcap records simple_switch reads and writes
// in its file mode. Written from the formats' definitions (RFC 791, 768; the
// libpcap file format), not by the code under test.
#ifndef RINA_TESTS_P4_FRAMES_H_
#define RINA_TESTS_P4_FRAMES_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bmv2/neighbors.h"
#include "wire/endpoint.h"

namespace rina::p4test {

using Frame = std::vector<uint8_t>;
using bmv2::Mac;

struct IpFields {
  uint8_t tos = 0;
  uint16_t identification = 0;
  uint16_t flagsFragment = 0x4000;  // don't fragment
  uint8_t ttl = 64;
};

// A UDP datagram in IPv4 in Ethernet, the IPv4 checksum computed, UDP's 0.
Frame udpFrame(const Mac& dst, const Mac& src, const ina::Endpoint& from, const ina::Endpoint& to,
               std::span<const uint8_t> payload, const IpFields& ip = {});

// The fields of a frame that udpFrame could have built; false if it is not
// IPv4 (no options) + UDP.
struct ParsedFrame {
  Mac dst{}, src{};
  ina::Endpoint from, to;
  std::span<const uint8_t> payload;
};
bool parseUdpFrame(const Frame& frame, ParsedFrame* out);

// pcap (microsecond, Ethernet link type) file pieces.
std::vector<uint8_t> pcapFileHeader();
std::vector<uint8_t> pcapRecord(const Frame& frame);
// The complete records of a pcap file's bytes (a record still being written
// is left out); false if the file header is not a pcap one.
bool parsePcap(std::span<const uint8_t> bytes, std::vector<Frame>* frames);

// "0000: 45 00 ..." lines of a frame, and where two frames first differ.
std::string hexDump(const Frame& frame);
size_t firstDifference(const Frame& a, const Frame& b);

}  // namespace rina::p4test

#endif  // RINA_TESTS_P4_FRAMES_H_
