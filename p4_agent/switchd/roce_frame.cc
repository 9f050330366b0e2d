#include "switchd/roce_frame.h"

#include <array>
#include <cstring>

#include "rina/ina_roce.h"

namespace rina::switchd::roce {
namespace {

constexpr std::array<uint32_t, 256> makeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = makeTable();

uint32_t update(uint32_t crc, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return crc;
}

void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

constexpr size_t kBthBytes = 12;

}  // namespace

uint32_t icrc(std::span<const uint8_t> packet) {
  // The masked copy of IPv4 + UDP + BTH (40 bytes), then the rest as is.
  uint8_t head[kIpv4HeaderBytes + kUdpHeaderBytes + kBthBytes];
  std::memcpy(head, packet.data(), sizeof head);
  head[1] = 0xFF;              // TOS (DSCP, ECN)
  head[8] = 0xFF;              // TTL
  head[10] = head[11] = 0xFF;  // header checksum
  head[26] = head[27] = 0xFF;  // UDP checksum
  head[28 + 4] = 0xFF;         // BTH reserved byte (before the destination QP)
  const uint8_t lrh[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  uint32_t crc = update(0xFFFFFFFFu, lrh, sizeof lrh);
  crc = update(crc, head, sizeof head);
  crc = update(crc, packet.data() + sizeof head, packet.size() - sizeof head - kIcrcBytes);
  return ~crc;
}

bool icrcValid(std::span<const uint8_t> packet) {
  if (packet.size() < kIpv4HeaderBytes + kUdpHeaderBytes + kBthBytes + kIcrcBytes) return false;
  if (packet[0] != 0x45) return false;  // IPv4 without options
  const uint32_t want = icrc(packet);
  const uint8_t* p = packet.data() + packet.size() - kIcrcBytes;
  const uint32_t have =
      uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
  return want == have;
}

size_t buildUcWrite(const UcWrite& w, std::span<const uint8_t> payload, std::span<uint8_t> out) {
  const size_t len = kUcWriteHeaderBytes + payload.size() + kIcrcBytes;
  if (len > 65535 || out.size() < len) return 0;
  uint8_t* p = out.data();
  std::memset(p, 0, kUcWriteHeaderBytes);
  // IPv4: no options, DF, TTL 64, UDP; the kernel fills in the checksum.
  p[0] = 0x45;
  put16(p + 2, static_cast<uint16_t>(len));
  put16(p + 4, w.ipId);
  put16(p + 6, 0x4000);
  p[8] = 64;
  p[9] = 17;
  put32(p + 12, w.srcAddr);
  put32(p + 16, w.dstAddr);
  // UDP: no checksum (IPv4 allows it; the ICRC guards the payload).
  uint8_t* udp = p + kIpv4HeaderBytes;
  put16(udp, w.srcPort);
  put16(udp + 2, ina::roce::kUdpPort);
  put16(udp + 4, static_cast<uint16_t>(len - kIpv4HeaderBytes));
  // BTH, RETH, ImmDt.
  uint8_t* bth = udp + kUdpHeaderBytes;
  bth[0] = ina::roce::kOpUcWriteOnlyImm;
  put16(bth + 2, ina::roce::kDefaultPkey);
  put32(bth + 4, w.destQp & 0xFFFFFFu);
  put32(bth + 8, w.psn & 0xFFFFFFu);
  uint8_t* reth = bth + kBthBytes;
  put32(reth, static_cast<uint32_t>(w.va >> 32));
  put32(reth + 4, static_cast<uint32_t>(w.va));
  put32(reth + 8, w.rkey);
  put32(reth + 12, static_cast<uint32_t>(payload.size()));
  put32(reth + 16, w.imm);
  if (!payload.empty()) std::memcpy(p + kUcWriteHeaderBytes, payload.data(), payload.size());
  const uint32_t c = icrc(out.subspan(0, len));
  uint8_t* tail = p + len - kIcrcBytes;
  for (int i = 0; i < 4; ++i) tail[i] = static_cast<uint8_t>(c >> (8 * i));
  return len;
}

}  // namespace rina::switchd::roce
