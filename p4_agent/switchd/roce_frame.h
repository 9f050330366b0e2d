// Whole RoCEv2 packets, IPv4 header to ICRC, for a switch that talks to
// RDMA NICs directly: what rina-switchd sends and receives on raw sockets
// with --roce-raw (the NIC checks the ICRC, and the ICRC covers IP header
// fields a UDP socket leaves to the kernel: the identification and the
// total length, so the packet must be built whole).
//
// ICRC (InfiniBand Annex A17, RoCEv2): CRC-32 (the Ethernet polynomial,
// reflected, initial value all ones, result complemented) over
//   8 bytes of 0xFF (standing in for the InfiniBand LRH)
//   the IPv4 header with TOS, TTL and the header checksum set to all ones
//   the UDP header with its checksum set to all ones
//   the BTH with its reserved byte (byte 4) set to all ones
//   everything after the BTH up to the ICRC (RETH, ImmDt, payload)
// and carried in the last 4 bytes least significant byte first. Soft-RoCE
// (rdma_rxe) accepts what buildUcWrite() makes and drops a packet whose
// ICRC is off by one bit (tests/rdma).
#ifndef RINA_P4_AGENT_SWITCHD_ROCE_FRAME_H_
#define RINA_P4_AGENT_SWITCHD_ROCE_FRAME_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace rina::switchd::roce {

inline constexpr size_t kIpv4HeaderBytes = 20;
inline constexpr size_t kUdpHeaderBytes = 8;
// IPv4 + UDP + BTH + RETH + ImmDt, then the payload, then the ICRC.
inline constexpr size_t kUcWriteHeaderBytes = kIpv4HeaderBytes + kUdpHeaderBytes + 12 + 16 + 4;
inline constexpr size_t kIcrcBytes = 4;

// The ICRC of an IPv4 RoCEv2 packet whose last 4 bytes are its ICRC field
// (their value does not matter). packet: the IP header on.
uint32_t icrc(std::span<const uint8_t> packet);
// The packet's ICRC field matches icrc(); false for anything too short to
// hold IPv4 + UDP + BTH + ICRC or with IP options.
bool icrcValid(std::span<const uint8_t> packet);

// One UC "RDMA WRITE Only with Immediate" from srcAddr to dstAddr (IPv4,
// host order) to UDP port 4791, into the remote QP's memory at va (rkey).
struct UcWrite {
  uint32_t srcAddr = 0;
  uint32_t dstAddr = 0;
  uint16_t srcPort = 0xC000;  // RoCEv2 uses the source port as flow entropy
  uint16_t ipId = 1;          // non-zero: the kernel fills in a zero one, after the ICRC
  uint32_t destQp = 0;        // 24 bits
  uint32_t psn = 0;           // 24 bits
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t imm = 0;  // host order; sent big-endian
};
// The whole packet into out (header, payload, ICRC); its length, or 0 when
// out is too small or the payload makes it longer than 65535 bytes.
size_t buildUcWrite(const UcWrite& w, std::span<const uint8_t> payload, std::span<uint8_t> out);

}  // namespace rina::switchd::roce

#endif  // RINA_P4_AGENT_SWITCHD_ROCE_FRAME_H_
