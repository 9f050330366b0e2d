// The INA datagram codec: round trip and every rejection.
#include <gtest/gtest.h>

#include <vector>

#include "rina/ina_wire.h"

namespace rina::ina {
namespace {

Header sampleHeader() {
  Header h;
  h.type = Type::kData;
  h.flags = kFlagResend | kFlagLast;
  h.job = 0x1234;
  h.slot = 0x7ABC;
  h.shadow = true;
  h.worker = 3;
  h.fanIn = 8;
  h.seq = 0xDEADBEEF;
  h.exponent = -7;
  h.elems = 4;
  h.token = 0xCAFEF00D8BADBEEFull;  // both halves non-zero: 64 bits survive
  return h;
}

std::vector<uint8_t> encodeSample(const Header& h, std::vector<int32_t> payload) {
  std::vector<uint8_t> buf(kMaxDatagramBytes);
  size_t len = encode(h, payload, buf);
  buf.resize(len);
  return buf;
}

TEST(InaWire, RoundTripKeepsEveryField) {
  Header h = sampleHeader();
  auto buf = encodeSample(h, {1, -2, INT32_MAX, INT32_MIN});
  ASSERT_EQ(buf.size(), kHeaderBytes + 16);
  Header d;
  ASSERT_EQ(decode(buf, &d), DecodeError::kOk);
  EXPECT_EQ(d.type, h.type);
  EXPECT_EQ(d.flags, h.flags);
  EXPECT_EQ(d.job, h.job);
  EXPECT_EQ(d.slot, h.slot);
  EXPECT_TRUE(d.shadow);
  EXPECT_EQ(d.worker, h.worker);
  EXPECT_EQ(d.fanIn, h.fanIn);
  EXPECT_EQ(d.seq, h.seq);
  EXPECT_EQ(d.exponent, h.exponent);
  EXPECT_EQ(d.elems, h.elems);
  EXPECT_EQ(d.token, h.token);
  EXPECT_EQ(payloadAt(buf.data(), 0), 1);
  EXPECT_EQ(payloadAt(buf.data(), 1), -2);
  EXPECT_EQ(payloadAt(buf.data(), 2), INT32_MAX);
  EXPECT_EQ(payloadAt(buf.data(), 3), INT32_MIN);
}

TEST(InaWire, NetworkByteOrderOnTheWire) {
  auto buf = encodeSample(sampleHeader(), {0x01020304, 0, 0, 0});
  EXPECT_EQ(buf[0], 0x52);   // magic 5, version 2
  EXPECT_EQ(buf[1], 0x15);   // DATA, RESEND|LAST
  EXPECT_EQ(buf[2], 0x12);   // job, big endian
  EXPECT_EQ(buf[4], 0xFA);   // shadow bit | slot high byte
  EXPECT_EQ(buf[8], 0xDE);   // seq
  EXPECT_EQ(buf[14], 0x00);  // elems = 4
  EXPECT_EQ(buf[15], 0x04);
  const uint8_t token[8] = {0xCA, 0xFE, 0xF0, 0x0D, 0x8B, 0xAD, 0xBE, 0xEF};
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(buf[16 + i], token[i]) << "token byte " << i;
  EXPECT_EQ(kHeaderBytes, 24u);        // 4-byte aligned: the payload starts at 24
  EXPECT_EQ(buf[kHeaderBytes], 0x01);  // payload, big endian
  EXPECT_EQ(buf[kHeaderBytes + 3], 0x04);
}

TEST(InaWire, RejectsTruncatedAndWrongLengths) {
  auto buf = encodeSample(sampleHeader(), {1, 2, 3, 4});
  Header d;
  for (size_t len = 0; len < kHeaderBytes; ++len) {
    EXPECT_EQ(decode({buf.data(), len}, &d), DecodeError::kTruncated) << len;
  }
  EXPECT_EQ(decode({buf.data(), buf.size() - 1}, &d), DecodeError::kBadLength);
  EXPECT_EQ(decode({buf.data(), buf.size() - 4}, &d), DecodeError::kBadLength);
  auto longer = buf;
  longer.push_back(0);
  EXPECT_EQ(decode(longer, &d), DecodeError::kBadLength);
}

TEST(InaWire, RejectsOversizedPayload) {
  Header h = sampleHeader();
  h.elems = kMaxPayloadElems;
  std::vector<int32_t> payload(kMaxPayloadElems, 1);
  auto buf = encodeSample(h, payload);
  Header d;
  ASSERT_EQ(decode(buf, &d), DecodeError::kOk);
  // elems above the maximum, with a datagram long enough to match it.
  buf[14] = (kMaxPayloadElems + 1) >> 8;
  buf[15] = (kMaxPayloadElems + 1) & 0xFF;
  buf.resize(buf.size() + 4);
  EXPECT_EQ(decode(buf, &d), DecodeError::kOversized);
  h.elems = kMaxPayloadElems + 1;
  std::vector<int32_t> tooMany(kMaxPayloadElems + 1);
  std::vector<uint8_t> out(kMaxDatagramBytes + 8);
  EXPECT_EQ(encode(h, tooMany, out), 0u);
}

TEST(InaWire, RejectsWrongMagicVersionTypePad) {
  auto good = encodeSample(sampleHeader(), {1, 2, 3, 4});
  Header d;
  auto b = good;
  b[0] = 0x51;  // version 1: the layout with a 32-bit token
  EXPECT_EQ(decode(b, &d), DecodeError::kBadVersion);
  b[0] = 0x41;
  EXPECT_EQ(decode(b, &d), DecodeError::kBadMagic);
  b = good;
  b[1] = 0x05;  // type 0
  EXPECT_EQ(decode(b, &d), DecodeError::kBadType);
  b[1] = 0x65;  // type 6
  EXPECT_EQ(decode(b, &d), DecodeError::kBadType);
  b = good;
  b[13] = 1;
  EXPECT_EQ(decode(b, &d), DecodeError::kBadPad);
}

TEST(InaWire, RejectsBadJobFanInWorkerAndEmptyData) {
  Header h = sampleHeader();
  std::vector<uint8_t> out(kMaxDatagramBytes);
  std::vector<int32_t> p(4);
  auto b = encodeSample(h, p);
  Header d;
  auto mutate = [&](size_t off, uint8_t v) {
    auto c = b;
    c[off] = v;
    return decode(c, &d);
  };
  EXPECT_EQ(mutate(2, 0) == DecodeError::kOk, true);  // job 0x0034 is still valid
  auto c = b;
  c[2] = c[3] = 0;
  EXPECT_EQ(decode(c, &d), DecodeError::kBadJob);
  EXPECT_EQ(mutate(7, 0), DecodeError::kBadFanIn);
  EXPECT_EQ(mutate(7, kMaxFanIn + 1), DecodeError::kBadFanIn);
  EXPECT_EQ(mutate(6, 8), DecodeError::kBadWorker);
  h.elems = 0;
  EXPECT_EQ(encode(h, {}, out), 0u);  // DATA must carry a payload
  h.type = Type::kResult;             // a RESULT may be a bare acknowledgement
  EXPECT_EQ(encode(h, {}, out), kHeaderBytes);
  EXPECT_EQ(decode({out.data(), kHeaderBytes}, &d), DecodeError::kOk);
}

}  // namespace
}  // namespace rina::ina
