// Credit accounting: a sender never has more writes in flight than the
// receiver's ring has slots, slots are reused in ring order, credits come
// back in batches, and the counters survive their 2^31 wrap. The reference
// is a model ring that records which slot holds unconsumed data.
#include "transport/verbs/credits.h"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <vector>

namespace rina::transport::verbs {
namespace {

TEST(Credits, SlotCountsMustBePowersOfTwo) {
  EXPECT_TRUE(validSlotCount(1));
  EXPECT_TRUE(validSlotCount(16));
  EXPECT_TRUE(validSlotCount(1u << 16));
  EXPECT_FALSE(validSlotCount(0));
  EXPECT_FALSE(validSlotCount(12));
  EXPECT_FALSE(validSlotCount(1u << 17));
}

TEST(Credits, FullRingRefusesUntilCreditsReturn) {
  CreditWindow w(4);
  uint32_t slot = 99;
  for (uint32_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(w.take(&slot));
    EXPECT_EQ(slot, i);
  }
  EXPECT_FALSE(w.take(&slot));
  EXPECT_EQ(slot, 3u);  // untouched by the refusal
  ASSERT_TRUE(w.update(2).ok());
  EXPECT_EQ(w.available(), 2u);
  ASSERT_TRUE(w.take(&slot));
  EXPECT_EQ(slot, 0u);  // wraps to the start of the ring
}

TEST(Credits, UpdateFreeingMoreThanInFlightIsAProtocolError) {
  CreditWindow w(8);
  uint32_t slot;
  ASSERT_TRUE(w.take(&slot));
  ASSERT_TRUE(w.take(&slot));
  Status s = w.update(3);
  EXPECT_EQ(s.code(), rinaRemoteError);
  EXPECT_NE(s.message().find("frees 3 slots but only 2"), std::string::npos) << s.message();
  EXPECT_EQ(w.inFlight(), 2u);  // unchanged
  ASSERT_TRUE(w.update(2).ok());
  ASSERT_TRUE(w.update(2).ok());  // a repeated counter frees nothing
  EXPECT_EQ(w.available(), 8u);
}

TEST(Credits, ReturnerBatchesHalfARingOrWhenForced) {
  CreditReturner r(8);
  uint32_t counter = 0;
  EXPECT_FALSE(r.due(true, &counter));  // nothing consumed
  for (int i = 0; i < 3; ++i) r.consumedOne();
  EXPECT_FALSE(r.due(false, &counter));
  r.consumedOne();
  ASSERT_TRUE(r.due(false, &counter));
  EXPECT_EQ(counter, 4u);
  r.consumedOne();
  ASSERT_TRUE(r.due(true, &counter));
  EXPECT_EQ(counter, 5u);
  EXPECT_EQ(r.nextSlot(), 5u);
}

// Sender and receiver against a model of the ring across the counter wrap,
// with random production and consumption.
TEST(Credits, ModelNeverOverrunsAcrossTheWrap) {
  for (uint32_t slots : {1u, 2u, 8u, 64u}) {
    const uint32_t start = kCounterMask - 3 * slots;  // wraps within the run
    CreditWindow w(slots, start);
    CreditReturner r(slots, start);
    std::vector<int> ring(slots, -1);  // message id in each slot, -1 free
    std::deque<int> pendingCredits;    // counters in flight back to the sender
    std::deque<uint32_t> order;        // slots in the order they were written
    std::mt19937 rng(slots);
    int nextMsg = 0, nextExpected = 0;
    for (int step = 0; step < 20000; ++step) {
      int action = static_cast<int>(rng() % 3);
      uint32_t slot;
      if (action == 0 && w.take(&slot)) {
        ASSERT_LT(slot, slots);
        ASSERT_EQ(ring[slot], -1) << "overrun of slot " << slot << " at step " << step;
        ring[slot] = nextMsg++;
        order.push_back(slot);
      } else if (action == 1 && !order.empty()) {
        ASSERT_EQ(r.nextSlot(), order.front());
        ASSERT_EQ(ring[order.front()], nextExpected++);
        ring[order.front()] = -1;
        order.pop_front();
        r.consumedOne();
        uint32_t c;
        if (r.due(rng() % 4 == 0, &c)) pendingCredits.push_back(static_cast<int>(c));
      } else if (action == 2 && !pendingCredits.empty()) {
        ASSERT_TRUE(w.update(static_cast<uint32_t>(pendingCredits.front())).ok());
        pendingCredits.pop_front();
      }
      ASSERT_LE(w.inFlight(), slots);
    }
    EXPECT_GT(nextMsg, static_cast<int>(4 * slots)) << "the run must pass the counter wrap";
  }
}

}  // namespace
}  // namespace rina::transport::verbs
