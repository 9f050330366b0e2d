// The RoCEv2 layout of INA datagrams (include/rina/ina_roce.h): field
// placement checked byte by byte against the BTH/RETH/ImmDt layout of the
// InfiniBand spec, lossless translation to and from the native header, and
// every decode error with the input that triggers it.
#include <gtest/gtest.h>

#include <vector>

#include "rina/ina_roce.h"

namespace rina::ina::roce {
namespace {

Header sample() {
  Header h;
  h.type = Type::kData;
  h.flags = kFlagResend | kFlagLast;
  h.job = 0x1234;
  h.slot = 0x0567;
  h.shadow = true;
  h.worker = 2;
  h.fanIn = 5;
  h.seq = 0xA1B2C3D4;
  h.exponent = -7;
  h.elems = 3;
  h.token = 0xCAFEF00D8BADBEEFull;
  return h;
}

TEST(InaRoce, FieldsSitWhereTheRdmaHeadersPutThem) {
  std::vector<int32_t> payload = {1, -2, 0x01020304};
  std::vector<uint8_t> buf(kMaxDatagramBytes);
  size_t len = roce::encode(sample(), payload, buf);
  ASSERT_EQ(len, 36u + 12u + 4u);
  const std::vector<uint8_t> want = {
      0x2B, 0x00, 0xFF, 0xFF,  // BTH: opcode, flags, P_Key
      0x00, 0x00, 0x12, 0x34,  // reserved, DestQP = job
      0x00, 0xB2, 0xC3, 0xD4,  // AckReq/reserved, PSN = seq mod 2^24
      0x00, 0x00, 0x85, 0x67,  // RETH VA high: shadow | slot
      0xA1, 0xB2, 0xC3, 0xD4,  // VA low: seq
      0xCA, 0xFE, 0xF0, 0x0D,  // R_Key = token bits 63..32
      0x00, 0x00, 0x00, 0x10,  // DMA length = 4 + 4 x 3
      0x15, 0x02, 0x05, 0xF9,  // ImmDt: type 1 | flags 5, worker, fan-in, exponent
      0x8B, 0xAD, 0xBE, 0xEF,  // the write's first word: token bits 31..0
      0x00, 0x00, 0x00, 0x01, 0xFF, 0xFF, 0xFF, 0xFE, 0x01, 0x02, 0x03, 0x04,  // payload
      0x00, 0x00, 0x00, 0x00};                                                 // ICRC
  ASSERT_EQ(std::vector<uint8_t>(buf.begin(), buf.begin() + static_cast<long>(len)), want);
  Header back;
  ASSERT_EQ(roce::decode({buf.data(), len}, &back), RoceError::kOk);
  EXPECT_EQ(back.job, 0x1234);
  EXPECT_EQ(back.slot, 0x0567);
  EXPECT_TRUE(back.shadow);
  EXPECT_EQ(back.seq, 0xA1B2C3D4u);
  EXPECT_EQ(back.token, 0xCAFEF00D8BADBEEFull);
  EXPECT_EQ(back.exponent, -7);
  EXPECT_EQ(back.worker, 2);
  EXPECT_EQ(back.fanIn, 5);
  EXPECT_EQ(back.flags, kFlagResend | kFlagLast);
  EXPECT_EQ(back.type, Type::kData);
  EXPECT_EQ(back.elems, 3);
}

TEST(InaRoce, TranslationToNativeAndBackIsLossless) {
  std::vector<int32_t> payload(64);
  for (int i = 0; i < 64; ++i) payload[i] = i * 1000003 - 7;
  Header h = sample();
  h.elems = 64;
  std::vector<uint8_t> native(ina::kMaxDatagramBytes), roceBuf(kMaxDatagramBytes),
      again(kMaxDatagramBytes);
  size_t nlen = ina::encode(h, payload, native);
  ASSERT_GT(nlen, 0u);
  size_t rlen = fromNative({native.data(), nlen}, roceBuf);
  ASSERT_EQ(rlen, nlen - ina::kHeaderBytes + kOverheadBytes);
  RoceError err;
  size_t back = toNative({roceBuf.data(), rlen}, again, &err);
  ASSERT_EQ(err, RoceError::kOk);
  ASSERT_EQ(back, nlen);
  EXPECT_EQ(std::vector<uint8_t>(native.begin(), native.begin() + static_cast<long>(nlen)),
            std::vector<uint8_t>(again.begin(), again.begin() + static_cast<long>(back)));
  // A native datagram that does not decode does not translate.
  native[0] = 0;
  EXPECT_EQ(fromNative({native.data(), nlen}, roceBuf), 0u);
}

TEST(InaRoce, EveryDecodeErrorHasItsTrigger) {
  std::vector<int32_t> payload = {5, 6};
  Header h = sample();
  h.elems = 2;
  std::vector<uint8_t> good(kMaxDatagramBytes);
  size_t len = roce::encode(h, payload, good);
  good.resize(len);
  Header out;
  auto check = [&](std::vector<uint8_t> d, RoceError want, const char* what) {
    EXPECT_EQ(roce::decode(d, &out), want) << what << ": " << roceErrorName(roce::decode(d, &out));
  };
  check(good, RoceError::kOk, "good");
  check(std::vector<uint8_t>(good.begin(), good.begin() + 39), RoceError::kTruncated, "short");
  auto bad = good;
  bad[0] = 0x0B;  // RC, not UC
  check(bad, RoceError::kBadOpcode, "opcode");
  bad = good;
  bad[1] = 0x80;  // solicited event
  check(bad, RoceError::kBadBth, "SE bit");
  bad = good;
  bad[3] = 0x00;  // partition key
  check(bad, RoceError::kBadBth, "pkey");
  bad = good;
  bad[5] = 0x01;  // QP above 16 bits
  check(bad, RoceError::kBadBth, "QPN");
  bad = good;
  bad[12] = 0x01;  // VA bits 63..48
  check(bad, RoceError::kBadAddress, "VA");
  bad = good;
  bad[27] = 0x10;  // DMA length 16, written data 12 (token word + payload 8)
  check(bad, RoceError::kBadLength, "DMA length");
  bad = good;
  bad.insert(bad.end() - 4, {0, 0});  // payload not whole int32s
  bad[27] = 0x0E;                     // token word + 10 bytes
  check(bad, RoceError::kBadLength, "odd payload");
  bad = good;
  bad[29] = 9;  // worker >= fan-in
  check(bad, RoceError::kBadHeader, "worker");
  bad = good;
  bad[7] = 0;  // job 0
  bad[6] = 0;
  check(bad, RoceError::kBadHeader, "job 0");
  EXPECT_STREQ(roceErrorName(RoceError::kBadHeader), "bad_header");
  EXPECT_STREQ(roceErrorName(RoceError::kCount), "unknown");
}

// A UC requester numbers packets per queue pair: a resent slice carries a new
// PSN. The PSN is the NIC's business, not part of the INA header.
TEST(InaRoce, AnyPsnIsAccepted) {
  Header h = sample();
  std::vector<uint8_t> b(kOverheadBytes + 4 * h.elems);
  ASSERT_GT(roce::encode(h, std::vector<int32_t>{4, 5, 6}, b), 0u);
  for (uint32_t psn : {0u, 1u, 0xFFFFFFu, (h.seq + 1) & 0xFFFFFFu}) {
    b[9] = static_cast<uint8_t>(psn >> 16);
    b[10] = static_cast<uint8_t>(psn >> 8);
    b[11] = static_cast<uint8_t>(psn);
    Header got;
    ASSERT_EQ(roce::decode(b, &got), RoceError::kOk) << "PSN " << psn;
    EXPECT_EQ(got.seq, h.seq);
  }
}

}  // namespace
}  // namespace rina::ina::roce
