// rina-switchd's whole RoCEv2 frames (switchd/roce_frame.h): every header
// byte buildUcWrite() writes against the IPv4 / UDP / BTH / RETH / ImmDt
// offsets, and its ICRC against a reference computed here bit by bit over
// a pseudo-packet assembled field by field (the masking rules of InfiniBand
// Annex A17). That Soft-RoCE takes these frames and drops one with a bit
// flipped is checked in the VM (tests/rdma/ina_roce_vm_test.cc).
#include "switchd/roce_frame.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "rina/ina_roce.h"

namespace rina::switchd::roce {
namespace {

// CRC-32, one bit at a time: reflected Ethernet polynomial, initial all
// ones, result complemented.
uint32_t bitwiseCrc32(const std::vector<uint8_t>& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (uint8_t b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void push16(std::vector<uint8_t>* v, uint32_t x) {
  v->push_back(static_cast<uint8_t>(x >> 8));
  v->push_back(static_cast<uint8_t>(x));
}
void push32(std::vector<uint8_t>* v, uint32_t x) {
  push16(v, x >> 16);
  push16(v, x & 0xFFFF);
}

// The bytes the ICRC covers for a UC write with the given fields.
std::vector<uint8_t> icrcInput(const UcWrite& w, const std::vector<uint8_t>& payload) {
  const uint32_t total = 20 + 8 + 12 + 16 + 4 + static_cast<uint32_t>(payload.size()) + 4;
  std::vector<uint8_t> v(8, 0xFF);  // the LRH stand-in
  v.push_back(0x45);
  v.push_back(0xFF);  // TOS masked
  push16(&v, total);
  push16(&v, w.ipId);
  push16(&v, 0x4000);  // DF
  v.push_back(0xFF);   // TTL masked
  v.push_back(17);
  push16(&v, 0xFFFF);  // header checksum masked
  push32(&v, w.srcAddr);
  push32(&v, w.dstAddr);
  push16(&v, w.srcPort);
  push16(&v, 4791);
  push16(&v, total - 20);
  push16(&v, 0xFFFF);  // UDP checksum masked
  v.push_back(0x2B);   // UC RDMA WRITE Only with Immediate
  v.push_back(0);
  push16(&v, 0xFFFF);                  // P_Key
  push32(&v, 0xFF000000u | w.destQp);  // reserved byte masked
  push32(&v, w.psn);
  push32(&v, static_cast<uint32_t>(w.va >> 32));
  push32(&v, static_cast<uint32_t>(w.va));
  push32(&v, w.rkey);
  push32(&v, static_cast<uint32_t>(payload.size()));
  push32(&v, w.imm);
  v.insert(v.end(), payload.begin(), payload.end());
  return v;
}

UcWrite sample() {
  UcWrite w;
  w.srcAddr = 0x0A4D0002;  // 10.77.0.2
  w.dstAddr = 0x0A4D0001;
  w.srcPort = 0xC123;
  w.ipId = 0x1234;
  w.destQp = 0x000011;
  w.psn = 0xABCDEF;
  w.va = 0x00007F0012345678ull;
  w.rkey = 0x00C0FFEE;
  w.imm = 7;
  return w;
}

TEST(RoceFrame, UcWriteHeaderBytesSitAtTheirOffsets) {
  const UcWrite w = sample();
  std::vector<uint8_t> payload(100);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 7 + 3);
  std::vector<uint8_t> out(2048);
  const size_t len = buildUcWrite(w, payload, out);
  ASSERT_EQ(len, 20u + 8 + 12 + 16 + 4 + 100 + 4);
  const uint8_t* p = out.data();
  EXPECT_EQ(p[0], 0x45);
  EXPECT_EQ((p[2] << 8) | p[3], static_cast<int>(len));
  EXPECT_EQ((p[4] << 8) | p[5], 0x1234);
  EXPECT_EQ(p[9], 17);
  EXPECT_EQ(p[12], 10);
  EXPECT_EQ(p[15], 2);
  EXPECT_EQ(p[16], 10);
  EXPECT_EQ(p[19], 1);
  EXPECT_EQ((p[20] << 8) | p[21], 0xC123);
  EXPECT_EQ((p[22] << 8) | p[23], 4791);
  EXPECT_EQ((p[24] << 8) | p[25], static_cast<int>(len - 20));
  const uint8_t* bth = p + 28;
  EXPECT_EQ(bth[0], 0x2B);
  EXPECT_EQ((bth[2] << 8) | bth[3], 0xFFFF);
  EXPECT_EQ(bth[4], 0);
  EXPECT_EQ((bth[5] << 16) | (bth[6] << 8) | bth[7], 0x11);
  EXPECT_EQ((bth[9] << 16) | (bth[10] << 8) | bth[11], 0xABCDEF);
  const uint8_t* reth = bth + 12;
  EXPECT_EQ(reth[2], 0x7F);
  EXPECT_EQ(reth[7], 0x78);
  EXPECT_EQ((reth[8] << 24) | (reth[9] << 16) | (reth[10] << 8) | reth[11], 0x00C0FFEE);
  EXPECT_EQ((reth[14] << 8) | reth[15], 100);
  EXPECT_EQ(reth[19], 7);
  EXPECT_EQ(std::vector<uint8_t>(p + 60, p + 160), payload);
}

TEST(RoceFrame, IcrcMatchesABitwiseCrcOverTheMaskedPacket) {
  for (size_t n : {0u, 4u, 100u, 4096u}) {
    UcWrite w = sample();
    w.psn = static_cast<uint32_t>(n * 977) & 0xFFFFFF;
    std::vector<uint8_t> payload(n);
    for (size_t i = 0; i < n; ++i) payload[i] = static_cast<uint8_t>(i ^ (i >> 8));
    std::vector<uint8_t> out(8192);
    const size_t len = buildUcWrite(w, payload, out);
    ASSERT_GT(len, 0u);
    const uint32_t want = bitwiseCrc32(icrcInput(w, payload));
    const uint8_t* t = out.data() + len - 4;  // least significant byte first
    EXPECT_EQ(uint32_t{t[0]} | uint32_t{t[1]} << 8 | uint32_t{t[2]} << 16 | uint32_t{t[3]} << 24,
              want)
        << n << " payload bytes";
    std::span<uint8_t> frame(out.data(), len);
    EXPECT_TRUE(icrcValid(frame));
    // The masked fields do not count; every other one does.
    frame[1] = 0x2E;   // TOS
    frame[8] = 3;      // TTL
    frame[10] = 0x5A;  // header checksum
    frame[26] = 0x11;  // UDP checksum
    frame[32] = 0x42;  // BTH reserved byte
    EXPECT_TRUE(icrcValid(frame)) << "a masked field changed the ICRC";
    for (size_t at :
         {size_t{5}, size_t{13}, size_t{22}, size_t{30}, size_t{40}, len - 5, len - 1}) {
      frame[at] ^= 0x01;
      EXPECT_FALSE(icrcValid(frame)) << "byte " << at << " flipped, " << n << " payload bytes";
      frame[at] ^= 0x01;
    }
  }
}

TEST(RoceFrame, RefusesWhatCannotBeAFrame) {
  std::vector<uint8_t> payload(100);
  std::vector<uint8_t> small(20 + 8 + 12 + 16 + 4 + 99 + 4);
  EXPECT_EQ(buildUcWrite(sample(), payload, small), 0u) << "output one byte short";
  std::vector<uint8_t> huge(70000), out(70100);
  EXPECT_EQ(buildUcWrite(sample(), huge, out), 0u) << "longer than an IPv4 packet";
  std::vector<uint8_t> tiny(20 + 8 + 12 + 3, 0);
  tiny[0] = 0x45;
  EXPECT_FALSE(icrcValid(tiny)) << "too short for IPv4 + UDP + BTH + ICRC";
  std::vector<uint8_t> frame(1024);
  const size_t len = buildUcWrite(sample(), payload, frame);
  frame.resize(len);
  ASSERT_TRUE(icrcValid(frame));
  frame[0] = 0x46;  // IP options
  EXPECT_FALSE(icrcValid(frame));
}

}  // namespace
}  // namespace rina::switchd::roce
