#include "p4/frames.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace rina::p4test {
namespace {

void put16(Frame& f, uint16_t v) {
  f.push_back(static_cast<uint8_t>(v >> 8));
  f.push_back(static_cast<uint8_t>(v));
}
void put32(Frame& f, uint32_t v) {
  put16(f, static_cast<uint16_t>(v >> 16));
  put16(f, static_cast<uint16_t>(v));
}
void putLe32(std::vector<uint8_t>& f, uint32_t v) {
  for (int i = 0; i < 4; ++i) f.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void putLe16(std::vector<uint8_t>& f, uint16_t v) {
  f.push_back(static_cast<uint8_t>(v));
  f.push_back(static_cast<uint8_t>(v >> 8));
}
uint32_t getLe32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t get32(const uint8_t* p) { return uint32_t{get16(p)} << 16 | get16(p + 2); }

// RFC 1071: the one's complement of the one's complement sum of 16-bit words.
uint16_t internetChecksum(const uint8_t* p, size_t n) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < n; i += 2) sum += get16(p + i);
  if (n % 2) sum += uint32_t{p[n - 1]} << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

}  // namespace

Frame udpFrame(const Mac& dst, const Mac& src, const ina::Endpoint& from, const ina::Endpoint& to,
               std::span<const uint8_t> payload, const IpFields& ip) {
  Frame f;
  f.insert(f.end(), dst.begin(), dst.end());
  f.insert(f.end(), src.begin(), src.end());
  put16(f, 0x0800);
  const size_t ipStart = f.size();
  f.push_back(0x45);
  f.push_back(ip.tos);
  put16(f, static_cast<uint16_t>(20 + 8 + payload.size()));
  put16(f, ip.identification);
  put16(f, ip.flagsFragment);
  f.push_back(ip.ttl);
  f.push_back(17);
  put16(f, 0);
  put32(f, from.addr);
  put32(f, to.addr);
  uint16_t sum = internetChecksum(f.data() + ipStart, 20);
  f[ipStart + 10] = static_cast<uint8_t>(sum >> 8);
  f[ipStart + 11] = static_cast<uint8_t>(sum);
  put16(f, from.port);
  put16(f, to.port);
  put16(f, static_cast<uint16_t>(8 + payload.size()));
  put16(f, 0);
  f.insert(f.end(), payload.begin(), payload.end());
  return f;
}

bool parseUdpFrame(const Frame& f, ParsedFrame* out) {
  if (f.size() < 42 || get16(f.data() + 12) != 0x0800 || f[14] != 0x45 || f[23] != 17) {
    return false;
  }
  uint16_t udpLength = get16(f.data() + 38);
  if (udpLength < 8 || 34u + udpLength > f.size()) return false;
  std::copy(f.begin(), f.begin() + 6, out->dst.begin());
  std::copy(f.begin() + 6, f.begin() + 12, out->src.begin());
  out->from = {get32(f.data() + 26), get16(f.data() + 34)};
  out->to = {get32(f.data() + 30), get16(f.data() + 36)};
  out->payload = std::span<const uint8_t>(f.data() + 42, udpLength - 8u);
  return true;
}

std::vector<uint8_t> pcapFileHeader() {
  std::vector<uint8_t> h;
  putLe32(h, 0xa1b2c3d4);
  putLe16(h, 2);
  putLe16(h, 4);
  putLe32(h, 0);      // time zone
  putLe32(h, 0);      // accuracy
  putLe32(h, 65535);  // snap length
  putLe32(h, 1);      // Ethernet
  return h;
}

std::vector<uint8_t> pcapRecord(const Frame& frame) {
  std::vector<uint8_t> r;
  putLe32(r, 0);
  putLe32(r, 0);
  putLe32(r, static_cast<uint32_t>(frame.size()));
  putLe32(r, static_cast<uint32_t>(frame.size()));
  r.insert(r.end(), frame.begin(), frame.end());
  return r;
}

bool parsePcap(std::span<const uint8_t> bytes, std::vector<Frame>* frames) {
  frames->clear();
  if (bytes.size() < 24 || getLe32(bytes.data()) != 0xa1b2c3d4) return false;
  size_t off = 24;
  while (off + 16 <= bytes.size()) {
    uint32_t caplen = getLe32(bytes.data() + off + 8);
    if (off + 16 + caplen > bytes.size()) break;
    frames->emplace_back(bytes.begin() + off + 16, bytes.begin() + off + 16 + caplen);
    off += 16 + caplen;
  }
  return true;
}

std::string hexDump(const Frame& frame) {
  std::string out;
  char buf[24];
  for (size_t i = 0; i < frame.size(); ++i) {
    if (i % 16 == 0) {
      snprintf(buf, sizeof buf, "%s%04zx:", i ? "\n" : "", i);
      out += buf;
    }
    snprintf(buf, sizeof buf, " %02x", frame[i]);
    out += buf;
  }
  return out;
}

size_t firstDifference(const Frame& a, const Frame& b) {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return i;
  }
  return n;
}

}  // namespace rina::p4test
