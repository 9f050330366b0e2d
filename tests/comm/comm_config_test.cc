// rinaCommInitRankConfig: a configured timeout replaces RINA_TIMEOUT_MS for
// that communicator's waits; bad configs are refused with a message.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "rank_harness.h"
#include "rina/rina.h"

namespace rina::testing {
namespace {

using Clock = std::chrono::steady_clock;

int64_t msSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// The knob says ten minutes, longer than ctest lets this test run: an
// error within a minute can only come from the config's timeout.
constexpr const char* kKnobMs = "600000";
constexpr int64_t kWellBelowKnobMs = 60000;

TEST(CommConfig, TimeoutReplacesTheKnobInACollective) {
  ScopedEnv knob("RINA_TIMEOUT_MS", kKnobMs);
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess) << rinaCommGetLastError(nullptr);
  std::promise<void> rank0Done;
  std::shared_future<void> done = rank0Done.get_future().share();
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      rinaConfig_t config = RINA_CONFIG_INITIALIZER;
      config.timeoutMs = 500;
      rinaComm_t comm = nullptr;
      ASSERT_EQ(rinaCommInitRankConfig(&comm, 2, id, r, &config), rinaSuccess)
          << rinaCommGetLastError(nullptr);
      if (r == 1) {
        // Never joins the collective; leaves once rank 0 has its answer.
        EXPECT_EQ(done.wait_for(std::chrono::seconds(120)), std::future_status::ready);
      } else {
        std::vector<float> buf(1024, 1.0f);
        auto t0 = Clock::now();
        EXPECT_EQ(rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaFloat32, rinaSum, comm),
                  rinaTimeout);
        EXPECT_LT(msSince(t0), kWellBelowKnobMs);
        std::string msg = rinaCommGetLastError(comm);
        EXPECT_NE(msg.find("rank 0"), std::string::npos) << msg;
        EXPECT_NE(msg.find("no progress for"), std::string::npos) << msg;
        rank0Done.set_value();
      }
      EXPECT_EQ(rinaCommDestroy(comm), rinaSuccess);
    });
  }
  for (auto& t : threads) t.join();
}

TEST(CommConfig, TimeoutReplacesTheKnobInTheRendezvous) {
  ScopedEnv knob("RINA_TIMEOUT_MS", kKnobMs);
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess) << rinaCommGetLastError(nullptr);
  rinaConfig_t config = RINA_CONFIG_INITIALIZER;
  config.timeoutMs = 300;
  rinaComm_t comm = nullptr;
  auto t0 = Clock::now();
  // Rank 1 of 2 never comes.
  rinaResult_t rc = rinaCommInitRankConfig(&comm, 2, id, 0, &config);
  EXPECT_EQ(rc, rinaTimeout) << rinaCommGetLastError(nullptr);
  EXPECT_LT(msSince(t0), kWellBelowKnobMs);
  EXPECT_EQ(comm, nullptr);
}

TEST(CommConfig, BadConfigsAreRefused) {
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess) << rinaCommGetLastError(nullptr);
  rinaComm_t comm = nullptr;
  rinaConfig_t config = RINA_CONFIG_INITIALIZER;
  config.size = 4;
  EXPECT_EQ(rinaCommInitRankConfig(&comm, 1, id, 0, &config), rinaInvalidArgument);
  EXPECT_NE(std::string(rinaCommGetLastError(nullptr)).find("RINA_CONFIG_INITIALIZER"),
            std::string::npos)
      << rinaCommGetLastError(nullptr);
  config = RINA_CONFIG_INITIALIZER;
  config.timeoutMs = -1;
  EXPECT_EQ(rinaCommInitRankConfig(&comm, 1, id, 0, &config), rinaInvalidArgument);
  EXPECT_NE(std::string(rinaCommGetLastError(nullptr)).find("timeoutMs -1"), std::string::npos)
      << rinaCommGetLastError(nullptr);
  EXPECT_EQ(rinaCommInitRankConfig(nullptr, 1, id, 0, &config), rinaInvalidArgument);
  EXPECT_EQ(comm, nullptr);
}

// A caller built against an older header (only the head) or a newer one (a
// longer struct) is served; a NULL config is rinaCommInitRank.
TEST(CommConfig, OlderNewerAndNullConfigsWork) {
  struct Newer {
    rinaConfig_t base;
    int64_t later;
  } newer{RINA_CONFIG_INITIALIZER, 7};
  newer.base.size = sizeof newer;
  rinaConfig_t headOnly = RINA_CONFIG_INITIALIZER;
  headOnly.size = offsetof(rinaConfig_t, timeoutMs);
  headOnly.timeoutMs = -5;  // beyond the caller's size: not read
  for (const rinaConfig_t* config : {&newer.base, &headOnly, static_cast<rinaConfig_t*>(nullptr)}) {
    rinaUniqueId id;
    ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess) << rinaCommGetLastError(nullptr);
    rinaComm_t comm = nullptr;
    ASSERT_EQ(rinaCommInitRankConfig(&comm, 1, id, 0, config), rinaSuccess)
        << rinaCommGetLastError(nullptr);
    int32_t x = 41, y = 0;
    EXPECT_EQ(rinaAllReduce(&x, &y, 1, rinaInt32, rinaSum, comm), rinaSuccess);
    EXPECT_EQ(y, 41);
    EXPECT_EQ(rinaCommDestroy(comm), rinaSuccess);
  }
}

}  // namespace
}  // namespace rina::testing
