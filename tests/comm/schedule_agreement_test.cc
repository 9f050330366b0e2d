// Ranks that would run different schedules for one call (another
// algorithm, another slice size) get rinaInvalidUsage naming both ranks and
// both values, never a wrong sum or a wait until RINA_TIMEOUT_MS.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "api/handle.h"
#include "core/config.h"
#include "rank_harness.h"

namespace rina::testing {
namespace {

int64_t msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               t0)
      .count();
}

// Rank 0 sets `first` (which runs as firstRuns at this size), every other
// rank `others`; every rank must return rinaInvalidUsage well before
// RINA_TIMEOUT_MS, its message naming the other side's algorithm and the
// rank that runs it.
void mismatchedAlgorithms(int n, const char* first, const char* firstRuns, const char* others,
                          size_t count) {
  ScopedEnv timeout("RINA_TIMEOUT_MS", "30000");
  runThreads(n, [&](int rank, rinaComm_t comm) {
    ASSERT_EQ(rinaCommSetAlgorithm(comm, rank == 0 ? first : others), rinaSuccess);
    const char* mine = rank == 0 ? firstRuns : others;
    const char* theirs = rank == 0 ? others : firstRuns;
    std::vector<int32_t> buf(count, rank + 1);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(rinaAllReduce(buf.data(), buf.data(), count, rinaInt32, rinaSum, comm),
              rinaInvalidUsage)
        << "rank " << rank << ": " << rinaCommGetLastError(comm);
    EXPECT_LT(msSince(t0), 20000) << "rank " << rank;
    const std::string msg = rinaCommGetLastError(comm);
    EXPECT_NE(msg.find("schedules do not match"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank " + std::to_string(rank) + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string("runs it with ") + theirs), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string("this rank runs ") + mine), std::string::npos) << msg;
    if (rank != 0) {
      // It names rank 0, the odd one.
      EXPECT_NE(msg.find("rank 0 runs it with"), std::string::npos) << msg;
    }
  });
}

// 400 KB: above RINA_SMALL_MSG_BYTES, so ring runs the ring.
TEST(ScheduleAgreement, RingAgainstRdOnTwoRanks) {
  mismatchedAlgorithms(2, "ring", "ring", "rd", 100000);
}
TEST(ScheduleAgreement, RingAgainstRdOnFourRanks) {
  mismatchedAlgorithms(4, "ring", "ring", "rd", 100000);
}
// 4 KB: ring takes the latency path, one-shot through the host segment.
TEST(ScheduleAgreement, OneShotAgainstRdOnTwoRanks) {
  mismatchedAlgorithms(2, "ring", "oneshot", "rd", 1000);
}
TEST(ScheduleAgreement, OneShotAgainstRdOnFourRanks) {
  mismatchedAlgorithms(4, "ring", "oneshot", "rd", 1000);
}

// One rank's environment differs in knobs that shape the schedule: at
// creation it takes rank 0's values, with one WARN naming each knob and both
// values, and every result is exact (int32 against a serial sum).
void differentKnobsOnOneRank(int n, int odd,
                             const std::vector<std::pair<const char*, const char*>>& knobs) {
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
  config::Options base;
  base.timeoutMs = 30000;
  config::Options other = base;
  for (const auto& [name, value] : knobs) ASSERT_TRUE(config::set(&other, name, value).ok());
  ::testing::internal::CaptureStderr();
  std::vector<std::thread> threads;
  std::vector<config::Options> took(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      rinaComm_t comm = nullptr;
      ASSERT_EQ(api::commInitRank(&comm, n, id, r, r == odd ? other : base), rinaSuccess)
          << "rank " << r << ": " << rinaCommGetLastError(nullptr);
      took[r] = api::communicatorOf(comm)->options();
      // Small (latency path) and large (ring, slices) calls.
      for (size_t count : {size_t{1000}, size_t{100000}}) {
        for (int k = 0; k < 3; ++k) {
          std::vector<int32_t> buf(count);
          for (size_t i = 0; i < count; ++i)
            buf[i] = static_cast<int32_t>((r + 1) * (k + 1) + i % 97);
          ASSERT_EQ(rinaAllReduce(buf.data(), buf.data(), count, rinaInt32, rinaSum, comm),
                    rinaSuccess)
              << "rank " << r << ": " << rinaCommGetLastError(comm);
          size_t wrong = 0;
          for (size_t i = 0; i < count; ++i) {
            int64_t want = 0;
            for (int q = 0; q < n; ++q) want += (q + 1) * (k + 1) + static_cast<int64_t>(i % 97);
            wrong += buf[i] != want;
          }
          EXPECT_EQ(wrong, 0u) << "rank " << r << " count " << count << " call " << k;
        }
      }
      EXPECT_EQ(rinaCommDestroy(comm), rinaSuccess);
    });
  }
  for (auto& t : threads) t.join();
  const std::string err = ::testing::internal::GetCapturedStderr();
  for (int r = 0; r < n; ++r) {
    for (const config::Knob& k : config::knobs()) {
      if (!k.schedule) continue;
      EXPECT_EQ(config::valueText(took[r], k), config::valueText(base, k))
          << "rank " << r << " " << k.name;
    }
  }
  size_t warns = 0;
  for (size_t p = err.find("WARN"); p != std::string::npos; p = err.find("WARN", p + 1)) ++warns;
  EXPECT_EQ(warns, 1u) << err;
  const size_t at = err.find("WARN rank " + std::to_string(odd) + ": ");
  ASSERT_NE(at, std::string::npos) << err;
  const std::string line = err.substr(at, err.find('\n', at) - at);
  for (const auto& [name, value] : knobs) {
    const config::Knob* k = config::find(name);
    const std::string want = std::string(name) + "=" + config::valueText(other, *k) + " here, " +
                             config::valueText(base, *k) + " on rank 0";
    EXPECT_NE(line.find(want), std::string::npos) << line;
  }
}

TEST(ScheduleAgreement, DifferentSmallMessageBytesOnTwoRanksTakesRankZeros) {
  differentKnobsOnOneRank(2, 1, {{"RINA_SMALL_MSG_BYTES", "0"}});
}
TEST(ScheduleAgreement, DifferentKnobsOnOneOfFourRanksTakesRankZeros) {
  differentKnobsOnOneRank(4, 2, {{"RINA_SLICE_BYTES", "4K"}, {"RINA_ALGO", "rd"}});
}

TEST(ScheduleAgreement, KnobTextRoundTripsAndRejectsOtherKnobs) {
  config::Options a, b;
  ASSERT_TRUE(config::set(&b, "RINA_SLICE_BYTES", "8K").ok());
  ASSERT_TRUE(config::set(&b, "RINA_PLAN_CHECK_EVERY", "3s").ok());
  std::string text;
  ASSERT_TRUE(config::scheduleText(b, &text).ok());
  std::vector<config::Adopted> adopted;
  ASSERT_TRUE(config::adoptSchedule(&a, text, &adopted).ok());
  EXPECT_EQ(a.sliceBytes, 8192);
  EXPECT_TRUE(a.planCheckEvery.inSeconds);
  ASSERT_EQ(adopted.size(), 2u);
  EXPECT_STREQ(adopted[0].knob->name, "RINA_SLICE_BYTES");
  EXPECT_EQ(adopted[0].mine, "128K");
  EXPECT_EQ(adopted[0].theirs, "8K");
  // Only knobs that shape the schedule travel, and only good values.
  EXPECT_EQ(config::adoptSchedule(&a, "RINA_TIMEOUT_MS=5\n", &adopted).code(), rinaInvalidArgument);
  EXPECT_EQ(config::adoptSchedule(&a, "RINA_SLICE_BYTES=lots\n", &adopted).code(),
            rinaInvalidArgument);
  EXPECT_EQ(config::adoptSchedule(&a, "", &adopted).code(), rinaInvalidArgument);
  ASSERT_TRUE(config::set(&b, "RINA_RACKS", "2:ina\n1").ok());
  EXPECT_EQ(config::scheduleText(b, &text).code(), rinaInvalidArgument);
}

}  // namespace
}  // namespace rina::testing
