// RingReader: the receive side of the verbs ring. A fake writer fills slots
// as the peer's RDMA writes would (chunk sizes that end mid-element on
// purpose); reads copy or reduce them, checked against a serial reference.
#include "transport/verbs/ring_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "reduce/reduce.h"

namespace rina::transport::verbs {
namespace {

constexpr uint32_t kSlots = 4;
constexpr uint32_t kSlotBytes = 64;

// Streams `bytes` through the ring in writer chunks of the given sizes,
// reading in reader chunks of `readLen` bytes (or elements) as slots fill.
struct Harness {
  std::vector<char> ring = std::vector<char>(kSlots * kSlotBytes);
  RingReader reader{ring.data(), kSlots, kSlotBytes, 6};  // starts at slot 6 % 4 = 2
  uint32_t writeSlot = 2;
  uint32_t inFlight = 0;

  bool write(const char* data, uint32_t len) {
    if (inFlight == kSlots) return false;
    std::memcpy(ring.data() + size_t{writeSlot} * kSlotBytes, data, len);
    EXPECT_TRUE(reader.arrived(len).ok());
    writeSlot = (writeSlot + 1) % kSlots;
    ++inFlight;
    return true;
  }
};

void stream(const std::vector<char>& incoming, std::vector<char>* dst, const RecvReduce& r,
            std::mt19937& rng) {
  Harness h;
  size_t written = 0, readDone = 0;
  while (readDone < incoming.size()) {
    // Writer: chunks of 1..kSlotBytes bytes, often not element multiples.
    while (written < incoming.size()) {
      uint32_t n = std::min<uint32_t>(1 + rng() % kSlotBytes,
                                      static_cast<uint32_t>(incoming.size() - written));
      if (!h.write(incoming.data() + written, n)) break;
      written += n;
    }
    size_t want = 1 + rng() % 100;
    if (r.fn) want = std::max(r.elemSize, want / r.elemSize * r.elemSize);  // as the engine asks
    want = std::min(want, incoming.size() - readDone);
    size_t moved = 0;
    uint32_t freed = 0;
    RecvReduce rr = r;
    if (rr.fn) rr.a = static_cast<const char*>(r.a) + readDone;
    h.reader.read(dst->data() + readDone, want, rr, &moved, &freed);
    ASSERT_LE(moved, want);
    if (r.fn) {
      ASSERT_EQ(moved % r.elemSize, 0u);
    }
    ASSERT_LE(freed, h.inFlight);
    h.inFlight -= freed;
    readDone += moved;
  }
  EXPECT_EQ(h.reader.pending(), 0u);
}

TEST(RingReader, CopiesAcrossSlotsInOrder) {
  std::mt19937 rng(1);
  std::vector<char> in(5000);
  for (char& c : in) c = static_cast<char>(rng());
  std::vector<char> out(in.size());
  stream(in, &out, RecvReduce{}, rng);
  EXPECT_EQ(in, out);
}

TEST(RingReader, ReducesWholeElementsEvenWhenSlotsSplitThem) {
  std::mt19937 rng(2);
  const size_t n = 3001;
  std::vector<int32_t> mine(n), theirs(n), out(n);
  for (size_t i = 0; i < n; ++i) {
    mine[i] = static_cast<int32_t>(rng() % 100000);
    theirs[i] = static_cast<int32_t>(rng() % 100000) - 50000;
  }
  std::vector<char> incoming(n * 4);
  std::memcpy(incoming.data(), theirs.data(), incoming.size());
  std::vector<char> dst(n * 4);
  RecvReduce r{reduce::reduceFunction(rinaInt32, rinaSum), mine.data(), 4};
  stream(incoming, &dst, r, rng);
  std::memcpy(out.data(), dst.data(), dst.size());
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], mine[i] + theirs[i]) << "element " << i;

  // float64: 8-byte elements, so most slot ends split one.
  std::vector<double> a(700), b(700);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<double>(i) * 0.5;
    b[i] = static_cast<double>(i) * 0.25;
  }
  std::vector<char> inb(b.size() * 8), dstb(b.size() * 8);
  std::memcpy(inb.data(), b.data(), inb.size());
  RecvReduce rd{reduce::reduceFunction(rinaFloat64, rinaSum), a.data(), 8};
  stream(inb, &dstb, rd, rng);
  std::vector<double> outb(b.size());
  std::memcpy(outb.data(), dstb.data(), dstb.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(outb[i], static_cast<double>(i) * 0.75);
}

TEST(RingReader, ProtocolErrors) {
  std::vector<char> ring(kSlots * kSlotBytes);
  RingReader r(ring.data(), kSlots, kSlotBytes);
  EXPECT_EQ(r.arrived(0).code(), rinaRemoteError);
  Status s = r.arrived(kSlotBytes + 1);
  EXPECT_EQ(s.code(), rinaRemoteError);
  EXPECT_NE(s.message().find("65 bytes"), std::string::npos) << s.message();
  for (uint32_t i = 0; i < kSlots; ++i) ASSERT_TRUE(r.arrived(8).ok());
  s = r.arrived(8);  // a write beyond the credits the writer had
  EXPECT_EQ(s.code(), rinaRemoteError);
  EXPECT_NE(s.message().find("4 of 4 slots full"), std::string::npos) << s.message();
}

TEST(RingReader, ReductionNeverWritesPastTheRequestedLength) {
  std::vector<char> ring(kSlots * kSlotBytes);
  RingReader r(ring.data(), kSlots, kSlotBytes);
  ASSERT_TRUE(r.arrived(3).ok());  // three bytes of a four-byte element
  ASSERT_TRUE(r.arrived(5).ok());
  int32_t a[2] = {1, 2};
  char dst[8];
  std::memset(dst, 0x5a, sizeof dst);
  RecvReduce rr{reduce::reduceFunction(rinaInt32, rinaSum), a, 4};
  size_t moved;
  uint32_t freed;
  r.read(dst, 2, rr, &moved, &freed);  // less than one element: nothing happens
  EXPECT_EQ(moved, 0u);
  EXPECT_EQ(freed, 0u);
  EXPECT_EQ(dst[0], 0x5a);
  r.read(dst, 8, rr, &moved, &freed);
  EXPECT_EQ(moved, 8u);
  EXPECT_EQ(freed, 2u);
  int32_t out[2];
  std::memcpy(out, dst, 8);
  EXPECT_EQ(out[0], 1);  // ring bytes are zero
  EXPECT_EQ(out[1], 2);
}

TEST(RingReader, FreesSlotsOnlyWhenFullyConsumed) {
  std::vector<char> ring(kSlots * kSlotBytes);
  for (size_t i = 0; i < ring.size(); ++i) ring[i] = static_cast<char>(i);
  RingReader r(ring.data(), kSlots, kSlotBytes, 3);  // first write lands in slot 3
  ASSERT_TRUE(r.arrived(10).ok());
  ASSERT_TRUE(r.arrived(10).ok());  // slot 0 (wrapped)
  char out[20];
  size_t moved;
  uint32_t freed;
  r.read(out, 6, RecvReduce{}, &moved, &freed);
  EXPECT_EQ(moved, 6u);
  EXPECT_EQ(freed, 0u);
  EXPECT_EQ(out[0], static_cast<char>(3 * kSlotBytes));
  r.read(out, 14, RecvReduce{}, &moved, &freed);
  EXPECT_EQ(moved, 14u);
  EXPECT_EQ(freed, 2u);
  EXPECT_EQ(out[4], static_cast<char>(0));  // slot 0 starts right after slot 3's 10 bytes
  EXPECT_EQ(out[13], static_cast<char>(9));
}

}  // namespace
}  // namespace rina::transport::verbs
