// The plan's choice of how each INA rack takes part, at run time
// (RINA_PLAN_INA, plan/rack_modes.h): a rack the plan makes autonomous or
// sums on its hosts sends nothing to its switch, every rank follows, and
// results stay the serial sums; a switch measured slow is left at the next
// check. Which rack used its switch is read back from each rank's INA call
// count; the choice from rank 0's INFO lines.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <string>
#include <vector>

#include "comm/link_stats.h"
#include "plan_test_helpers.h"
#include "rank_harness.h"

namespace rina::testing {
namespace {

[[maybe_unused]] const bool kGenerousInaTimeout = useGenerousInaTimeout();

// A topology file of racks given by rank counts, every host link at 500
// Mbit/s (the switch's measure counts only against configured rates).
std::string topologyFile(const char* name, const std::string& racks) {
  const std::string path = ::testing::TempDir() + "/" + name + ".json";
  std::ofstream f(path);
  f << R"({"spines": 1, "racks": [)" << racks << "]}";
  return path;
}

class RackModesTest : public ::testing::Test {
 protected:
  ScopedEnv switchd_{"RINA_SWITCHD_PATH", RINA_SWITCHD_PATH};
  ScopedEnv switch_{"RINA_SWITCH", "auto"};
  ScopedEnv slice_{"RINA_SLICE_BYTES", "4K"};
  ScopedEnv debug_{"RINA_DEBUG", "INFO"};
};

// Racks of 3 (INA), 2 (INA) and 3 hosts at 500 Mbit/s: on its switch the
// rack of 2's hosts carry 1 + 1.6/2 = 1.8 S, autonomous every host at most
// 5/3 S (docs/planning.md): the plan makes it autonomous and keeps the rack
// of 3 on its switch. RINA_PLAN_INA=on keeps both on their switches.
TEST_F(RackModesTest, PlanTakesTheRackOfTwoOffItsSwitch) {
  const std::string topo = topologyFile(
      "rack_modes_small", R"({"name": "r0", "ina": true, "ranks": 3, "host_link_mbit": 500},
      {"name": "r1", "ina": true, "ranks": 2, "host_link_mbit": 500},
      {"name": "r2", "ranks": 3, "host_link_mbit": 500})");
  ScopedEnv file("RINA_TOPO_FILE", topo.c_str());
  // The initial plan only: no checks, so no measure of the switches on
  // loopback (however slow on a busy machine) moves anything.
  ScopedEnv interval("RINA_PLAN_INTERVAL", "0");
  ScopedEnv threshold("RINA_PLAN_THRESHOLD", "0");
  const int n = 8;
  for (const char* mode : {"choose", "on"}) {
    ScopedEnv planIna("RINA_PLAN_INA", mode);
    const bool forced = std::string(mode) == "on";
    std::vector<rinaCommStats_t> stats(n);
    ::testing::internal::CaptureStderr();
    runThreads(n, [&](int rank, rinaComm_t comm) {
      ASSERT_EQ(rinaCommSetAlgorithm(comm, "rina"), rinaSuccess);
      for (int call = 0; call < 3; ++call) {
        allreduceExact(comm, rank, n, call, 20000);
        if (::testing::Test::HasFatalFailure()) return;
      }
      stats[rank] = statsOf(comm);
    });
    const std::string err = ::testing::internal::GetCapturedStderr();
    for (int r = 0; r < n; ++r) {
      const bool onSwitch = r < 3 || (forced && r < 5);
      EXPECT_EQ(stats[r].inaCalls > 0, onSwitch) << mode << " rank " << r;
      EXPECT_EQ(stats[r].inaFallbacks, 0u) << mode << " rank " << r;
    }
    EXPECT_NE(err.find("rack r1 (INA, 2 hosts): switch"), std::string::npos) << err;
    EXPECT_NE(err.find(forced ? "-> switch; at 64 MiB" : "-> autonomous; at 64 MiB"),
              std::string::npos)
        << err;
  }
}

// An INA rack of 4 beside two hosts (R = 3: 4/3 S on every host link,
// against 5/3 S with the rack autonomous) until its switch is measured at
// 1 Mbit/s (below 1/8 of its hosts' 2000 Mbit/s): 5 datagrams per byte at
// that rate is far slower, so the next check re-plans, naming the switch,
// and the rack's hosts join the ring as autonomous members (summed on its
// hosts it would carry 1 + (2 + 4/3)/4 S = 11/6 S). The measures come
// through the rate hook, so the test does not depend on how fast the
// switch on loopback is.
TEST_F(RackModesTest, SwitchMeasuredSlowIsLeft) {
  const std::string topo = topologyFile(
      "rack_modes_slow", R"({"name": "r0", "ina": true, "ranks": 4, "host_link_mbit": 500},
      {"name": "r1", "ranks": 2, "host_link_mbit": 500})");
  ScopedEnv file("RINA_TOPO_FILE", topo.c_str());
  ScopedEnv interval("RINA_PLAN_INTERVAL", "0");
  ScopedEnv threshold("RINA_PLAN_THRESHOLD", "0.2");
  ScopedEnv every("RINA_PLAN_CHECK_EVERY", "4");
  const int n = 6, calls = 12, slowAfter = 5;
  std::atomic<bool> slow{false};
  ScopedRatesHook hook([&](uint64_t check, std::vector<comm::LinkRate>* table) {
    // The links as fast as configured, the switch as the test says.
    *table = syntheticTable(n, [](int, int) { return 500e6 / 8; });
    for (int r = 0; r < 4; ++r) {
      comm::LinkRate l;
      l.rank = r;
      l.peer = comm::kSwitchPeer;
      l.bytesRecv = (check + 1) << 20;  // fresh at every check
      l.recvRate = slow.load() ? 1e6 / 8 / 4 : 400e6 / 8;
      table->push_back(l);
    }
  });
  std::vector<std::vector<uint64_t>> inaCalls(n, std::vector<uint64_t>(calls));
  std::vector<rinaCommStats_t> stats(n);
  ::testing::internal::CaptureStderr();
  runThreads(n, [&](int rank, rinaComm_t comm) {
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "rina"), rinaSuccess);
    for (int call = 0; call < calls; ++call) {
      allreduceExact(comm, rank, n, call, 20000);
      if (::testing::Test::HasFatalFailure()) return;
      inaCalls[rank][call] = statsOf(comm).inaCalls;
      if (rank == 0 && call + 1 == slowAfter) slow = true;
    }
    stats[rank] = statsOf(comm);
  });
  const std::string err = ::testing::internal::GetCapturedStderr();
  // Checks before calls 1 (the initial plan), 5 (fast) and 9 (slow).
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(stats[r].replans, 1u) << "rank " << r;
    EXPECT_EQ(stats[r].inaFallbacks, 0u) << "rank " << r;
    if (r >= 4) continue;
    EXPECT_GT(inaCalls[r][7], inaCalls[r][6]) << "rank " << r << ": on the switch before the check";
    EXPECT_EQ(inaCalls[r][calls - 1], inaCalls[r][7]) << "rank " << r << ": off it after the check";
  }
  EXPECT_NE(err.find("plan #2 (the switch of rack r0 measured 1.0 Mbit/s (plan #1: no limit))"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("rack r0 (INA, 4 hosts, switch 1 Mbit/s): switch"), std::string::npos) << err;
  EXPECT_NE(err.find("-> autonomous"), std::string::npos) << err;
}

}  // namespace
}  // namespace rina::testing
