// ESA on a real switchd: two jobs of different priority share a switch with
// fewer slots than both want. The high-priority job preempts part of the
// low-priority job's slots mid-call; the low-priority job finishes those
// slices by host aggregation (union over its workers), asks again later, and
// every result is exact.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>

#include "ina_harness.h"
#include "int32_reference.h"

namespace rina::ina::testing {
namespace {

// The caller's side of a preemption: the union of host slices is summed on
// the host from every worker's input and written to every worker.
void hostAggregate(const std::vector<std::vector<uint8_t>>& in, const std::vector<uint32_t>& slices,
                   size_t P, size_t count, std::vector<std::vector<uint8_t>>* out) {
  for (uint32_t s : slices) {
    for (size_t i = s * P; i < std::min(count, (s + 1) * P); ++i) {
      int32_t sum = int32Sum(in, i);
      for (auto& b : *out) std::memcpy(b.data() + 4 * i, &sum, 4);
    }
  }
}

TEST(InaEsa, HigherPriorityJobPreemptsAndBothResultsAreExact) {
  SwitchdProcess sw({"--slots", "48", "--idle-ms", "60000"});
  ASSERT_TRUE(sw.ready());
  // Job 1's worker 0 holds its contributions from slice 257 on until the
  // switch has told job 1 of the preemption: job 1 is then surely mid-call,
  // its window full of slices the switch cannot complete, however fast or
  // loaded the machine is.
  SliceGate gate(257);
  RackOptions lowOpt;
  lowOpt.job = 1;
  lowOpt.token = 111;
  lowOpt.priority = 1;
  lowOpt.slots = 32;
  lowOpt.gate = &gate;
  lowOpt.gatedWorker = 0;
  // Workers 1 and 2 wait on worker 0 while it is held.
  lowOpt.client.switchTimeoutMs = 60000;
  std::unique_ptr<Rack> low;
  ASSERT_TRUE(Rack::create(sw, 3, lowOpt, &low).ok());
  ASSERT_EQ(low->grant().length, 32u);

  const size_t lowCount = 400000, highCount = 50000, P = 64;
  auto lowIn = int32Inputs(3, lowCount, 1);
  auto lowBuf = lowIn;
  std::vector<Status> lowSt;
  std::vector<InaCallResult> lowRes;
  std::thread lowThread([&] { low->allreduce(lowBuf, lowCount, rinaInt32, &lowSt, &lowRes); });
  // Whatever fails below, job 1's call ends and its thread is joined.
  struct JoinLow {
    SliceGate& gate;
    std::thread& thread;
    ~JoinLow() {
      gate.open();
      if (thread.joinable()) thread.join();
    }
  } joinLow{gate, lowThread};

  ASSERT_TRUE(gate.waitHolding(60000)) << "job 1 worker 0 never reached slice 257";
  // Slices up to 257 - window went through the switch before the hold.
  EXPECT_GE(sw.statsField("completed"), 200);
  RackOptions highOpt;
  highOpt.job = 2;
  highOpt.token = 222;
  highOpt.priority = 5;
  highOpt.slots = 32;
  std::unique_ptr<Rack> high;
  Status s = Rack::create(sw, 2, highOpt, &high);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(high->grant().length, 32u);  // 16 free + 16 taken from job 1
  std::vector<PreemptNotice> notices;
  ASSERT_TRUE(waitForNotices(low->ctrl(), 60000, &notices))
      << "job 1's agent got no PREEMPT notice within 60 s";
  gate.open();
  auto highIn = int32Inputs(2, highCount, 2);
  auto highBuf = highIn;
  std::vector<Status> highSt;
  std::vector<InaCallResult> highRes;
  high->allreduce(highBuf, highCount, rinaInt32, &highSt, &highRes);
  lowThread.join();
  EXPECT_FALSE(gate.expired());

  for (size_t w = 0; w < highSt.size(); ++w) {
    ASSERT_TRUE(highSt[w].ok()) << highSt[w].message();
    EXPECT_TRUE(highRes[w].hostSlices.empty());
  }
  expectInt32Sum(highIn, highBuf, highCount, "high-priority job");

  for (size_t w = 0; w < lowSt.size(); ++w) ASSERT_TRUE(lowSt[w].ok()) << lowSt[w].message();
  std::vector<uint32_t> hostSlices = unionOfHostSlices(lowRes);
  EXPECT_FALSE(hostSlices.empty()) << "preemption should have cost job 1 some slices";
  uint64_t nacks = 0;
  for (const auto& r : lowRes) nacks += r.stats.nacks;
  EXPECT_GT(nacks, 0u);
  hostAggregate(lowIn, hostSlices, P, lowCount, &lowBuf);
  expectInt32Sum(lowIn, lowBuf, lowCount, "low-priority job");

  EXPECT_GT(sw.statsField("preemptions"), 0);
  EXPECT_EQ(sw.statsField("preempted_slots"), 16);
  for (const PreemptNotice& n : low->ctrl().takeNotices()) notices.push_back(n);
  ASSERT_FALSE(notices.empty());
  EXPECT_EQ(notices[0].job, 1);

  // Job 2 leaves; job 1 asks again and runs fully in the switch.
  ASSERT_TRUE(high->ctrl().release(2, 222).ok());
  Grant again;
  ASSERT_TRUE(low->ctrl().requestSlots(1, 111, 32, &again).ok());
  EXPECT_EQ(again.length, 32u);
  ASSERT_TRUE(low->setGrant(again).ok());
  auto in2 = int32Inputs(3, 20000, 3);
  auto buf2 = in2;
  low->allreduce(buf2, 20000, rinaInt32, &lowSt, &lowRes);
  for (size_t w = 0; w < lowSt.size(); ++w) {
    ASSERT_TRUE(lowSt[w].ok()) << lowSt[w].message();
    EXPECT_TRUE(lowRes[w].hostSlices.empty());
  }
  expectInt32Sum(in2, buf2, 20000, "job 1 after asking again");
  EXPECT_GE(sw.statsField("grants"), 3);
}

}  // namespace
}  // namespace rina::ina::testing
