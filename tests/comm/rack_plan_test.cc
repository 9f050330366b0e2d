// The plan in the communicator (lib/comm/plan_sync.h): rank 0 plans from
// the link rates gathered to it (injected here through the test hook, so
// they are exact), every rank adopts each plan before the same collective,
// and the rack algorithms follow its ring order and ports. What a plan
// changed is read back independently: which connections carried bytes
// (rinaCommGetLinkStats), which connections exist, and int32 results
// equal to a serial reference on every rank.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "comm/plan_sync.h"
#include "plan_test_helpers.h"
#include "rank_harness.h"

namespace rina::testing {
namespace {

[[maybe_unused]] const bool kGenerousInaTimeout = useGenerousInaTimeout();

class RackPlanTest : public ::testing::Test {
 protected:
  ScopedEnv switchd_{"RINA_SWITCHD_PATH", RINA_SWITCHD_PATH};
  ScopedEnv switch_{"RINA_SWITCH", "auto"};
  ScopedEnv slice_{"RINA_SLICE_BYTES", "4K"};
  ScopedEnv threshold_{"RINA_PLAN_THRESHOLD", "0"};
};

// hier over five racks of two: the first plan (at the first collective)
// keeps the rack order, the re-plan before the third collective orders the
// racks r0 r2 r4 r1 r3, so every rack gets two neighbours it never had.
// Traffic is compared in the second and fourth collectives, which run no
// plan exchange.
// Bytes between racks then flow only between plan neighbours; the rank of
// rack r2 connected on demand to rack r4's ranks and dropped its old
// neighbours r1 and r3.
TEST_F(RackPlanTest, ReplanMovesTheRingToNewNeighbours) {
  ScopedEnv racks("RINA_RACKS", "2,2,2,2,2");
  ScopedEnv interval("RINA_PLAN_INTERVAL", "2");
  const int n = 10;
  const std::vector<int> rackOrder = {0, 1, 2, 3, 4}, replanned = {0, 2, 4, 1, 3};
  ScopedRatesHook hook([&](uint64_t check, std::vector<comm::LinkRate>* table) {
    std::vector<int> ring;
    for (int rack : check == 0 ? rackOrder : replanned) {
      ring.push_back(2 * rack);
      ring.push_back(2 * rack + 1);
    }
    *table = syntheticTable(n, ringRates(ring));
  });
  // sent[call][rank][peer]
  std::vector<std::vector<std::map<int, uint64_t>>> sent(4,
                                                         std::vector<std::map<int, uint64_t>>(n));
  std::vector<std::set<int>> peersAfter(n);
  std::vector<rinaCommStats_t> stats(n);
  runThreads(n, [&](int rank, rinaComm_t comm) {
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "hier"), rinaSuccess);
    for (int call = 0; call < 4; ++call) {
      sent[call][rank] = sentDuring(comm, [&] { allreduceExact(comm, rank, n, call, 20000); });
    }
    for (const auto& [peer, bytes] : bytesSentByPeer(comm)) peersAfter[rank].insert(peer);
    stats[rank] = statsOf(comm);
  });
  auto rackBytes = [&](int call, int from, int to) {
    uint64_t b = 0;
    for (int r : {2 * from, 2 * from + 1}) {
      for (int p : {2 * to, 2 * to + 1}) {
        auto it = sent[call][r].find(p);
        if (it != sent[call][r].end()) b += it->second;
      }
    }
    return b;
  };
  auto neighbours = [](const std::vector<int>& order, int a, int b) {
    for (size_t k = 0; k < order.size(); ++k) {
      int x = order[k], y = order[(k + 1) % order.size()];
      if ((x == a && y == b) || (x == b && y == a)) return true;
    }
    return false;
  };
  // The ring is directed, so a pair of neighbour racks carries bytes one way
  // or the other (the plan may run either way round).
  for (int call : {1, 3}) {
    const std::vector<int>& order = call == 1 ? rackOrder : replanned;
    for (int a = 0; a < 5; ++a) {
      for (int b = a + 1; b < 5; ++b) {
        const uint64_t both = rackBytes(call, a, b) + rackBytes(call, b, a);
        if (neighbours(order, a, b)) {
          EXPECT_GT(both, 0u) << "call " << call << " racks " << a << ", " << b;
        } else {
          EXPECT_EQ(both, 0u) << "call " << call << " racks " << a << ", " << b;
        }
      }
    }
  }
  // Rank 5 (rack r2) keeps neighbourRanks(5, 10) = {3, 4, 6, 9} and its rack
  // ({4}); the plan adds racks r0 and r4. Rack order gave it 2, 3, 6, 7.
  EXPECT_EQ(peersAfter[5], (std::set<int>{0, 1, 3, 4, 6, 8, 9}));
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(stats[r].planEpoch, 2u) << "rank " << r;
    EXPECT_EQ(stats[r].replans, 1u) << "rank " << r;
    EXPECT_EQ(stats[r].planChecks, 2u) << "rank " << r;
  }
}

// rina with an INA rack of three: while every host link measures the
// same, each worker is port of one of the three chunks; once rank 1's hops
// to other racks measure slow, the re-plan (before the third collective)
// gives its chunk to the others and rank 1 sends nothing out of the rack.
TEST_F(RackPlanTest, PortsFollowMeasuredHostRates) {
  ScopedEnv racks("RINA_RACKS", "3:ina,1,1");
  ScopedEnv interval("RINA_PLAN_INTERVAL", "2");
  const int n = 5;
  ScopedRatesHook hook([&](uint64_t check, std::vector<comm::LinkRate>* table) {
    *table = syntheticTable(n, [check](int a, int b) {
      const bool outside = (a >= 3) != (b >= 3);
      return check > 0 && outside && (a == 1 || b == 1) ? kSlow : kFast;
    });
  });
  std::vector<std::map<int, uint64_t>> sent1(n), sent2(n);
  std::vector<rinaCommStats_t> stats(n);
  runThreads(n, [&](int rank, rinaComm_t comm) {
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "rina"), rinaSuccess);
    for (int call = 0; call < 4; ++call) {
      std::map<int, uint64_t> s =
          sentDuring(comm, [&] { allreduceExact(comm, rank, n, call, 30000); });
      if (call == 1) sent1[rank] = s;
      if (call == 3) sent2[rank] = s;
    }
    stats[rank] = statsOf(comm);
  });
  auto outOfRack = [](const std::map<int, uint64_t>& m) {
    uint64_t b = 0;
    for (const auto& [peer, bytes] : m) b += peer >= 3 ? bytes : 0;
    return b;
  };
  for (int r = 0; r < 3; ++r) {
    EXPECT_GT(outOfRack(sent1[r]), 0u) << "rank " << r << " under the first plan";
  }
  EXPECT_EQ(outOfRack(sent2[1]), 0u) << "rank 1 is port of no chunk after the re-plan";
  EXPECT_GT(outOfRack(sent2[0]) + outOfRack(sent2[2]), 0u);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(stats[r].planEpoch, 2u) << "rank " << r;
    EXPECT_EQ(stats[r].inaFallbacks, 0u) << "rank " << r;
  }
}

// Re-planning every collective (or every second one) while the plans
// alternate between two ring orders and port sets: if any rank switched at
// another collective than its peers, results would be wrong or the call
// would fail. rina and hier take turns; sizes vary.
class RackPlanEveryTest : public RackPlanTest, public ::testing::WithParamInterface<int> {};

TEST_P(RackPlanEveryTest, EveryRankSwitchesAtTheSameCollective) {
  const int every = GetParam();
  ScopedEnv racks("RINA_RACKS", "2:ina,1,2:ina,1");
  const std::string text = std::to_string(every);
  ScopedEnv interval("RINA_PLAN_INTERVAL", text.c_str());
  const int n = 6, calls = 30;
  // Members {0,1} {2} {3,4} {5}: ring A keeps them in rank order, ring B
  // swaps {2} and {3,4}, and makes rank 0's outside hops slow (its ports go
  // to rank 1).
  ScopedRatesHook hook([&](uint64_t check, std::vector<comm::LinkRate>* table) {
    const bool b = check % 2 == 1;
    const int memberOf[] = {0, 0, 1, 2, 2, 3};
    // A probe caps the whole hop between two members, so every host pair
    // of two members the ring joins is fast.
    const std::function<double(int, int)> ring =
        ringRates(b ? std::vector<int>{0, 2, 1, 3} : std::vector<int>{0, 1, 2, 3});
    *table = syntheticTable(n, [&](int x, int y) {
      if (memberOf[x] == memberOf[y]) return kFast;
      if (b && (x == 0 || y == 0)) return kSlow;
      return ring(memberOf[x], memberOf[y]);
    });
  });
  std::vector<rinaCommStats_t> stats(n);
  runThreads(n, [&](int rank, rinaComm_t comm) {
    for (int call = 0; call < calls; ++call) {
      ASSERT_EQ(rinaCommSetAlgorithm(comm, call % 3 == 2 ? "hier" : "rina"), rinaSuccess);
      allreduceExact(comm, rank, n, call, 1000 + 3701 * static_cast<size_t>(call % 7));
      if (::testing::Test::HasFatalFailure()) return;
    }
    stats[rank] = statsOf(comm);
  });
  const uint64_t replans = (calls - 1) / every;
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(stats[r].replans, replans) << "rank " << r;
    EXPECT_EQ(stats[r].planEpoch, replans + 1) << "rank " << r;
    EXPECT_EQ(stats[r].planChecks, replans + 1) << "rank " << r;
    EXPECT_EQ(stats[r].inaFallbacks, 0u) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Interval, RackPlanEveryTest, ::testing::Values(1, 2));

// Only a measured move past RINA_PLAN_THRESHOLD re-plans (no interval):
// rank 0 looks every 16 collectives (RINA_PLAN_CHECK_EVERY=16), keeps the plan
// while the rates hold, and after rank 1's outside links drop (from call
// 20 on) re-plans at the next check, logging the plan and the link that
// moved; every rank follows, and rank 1 stops carrying outside traffic.
// Rank 1 still sends its S to the switch, so its port share off it makes
// the rack 1 + h/3 = 1.44 times faster (3 members, h = 4/3): past a 30%
// threshold (the new split must beat the old by that much).
TEST_F(RackPlanTest, ThresholdMoveMakesRankZeroReplan) {
  ScopedEnv racks("RINA_RACKS", "3:ina,1,1");
  ScopedEnv interval("RINA_PLAN_INTERVAL", "0");
  ScopedEnv threshold("RINA_PLAN_THRESHOLD", "0.3");
  ScopedEnv debug("RINA_DEBUG", "INFO");
  const int n = 5, calls = 40, moveAfter = 20;
  std::atomic<bool> moved{false};
  ScopedRatesHook hook([&](uint64_t, std::vector<comm::LinkRate>* table) {
    const bool slow = moved.load();
    *table = syntheticTable(n, [slow](int a, int b) {
      const bool outside = (a >= 3) != (b >= 3);
      return slow && outside && (a == 1 || b == 1) ? kSlow : kFast;
    });
  });
  ScopedEnv every("RINA_PLAN_CHECK_EVERY", "16");
  std::vector<std::vector<uint64_t>> outside(n, std::vector<uint64_t>(calls));
  std::vector<std::vector<uint64_t>> epochs(n, std::vector<uint64_t>(calls));
  std::vector<rinaCommStats_t> stats(n);
  ::testing::internal::CaptureStderr();
  runThreads(n, [&](int rank, rinaComm_t comm) {
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "rina"), rinaSuccess);
    for (int call = 0; call < calls; ++call) {
      std::map<int, uint64_t> s =
          sentDuring(comm, [&] { allreduceExact(comm, rank, n, call, 6000); });
      if (::testing::Test::HasFatalFailure()) return;
      for (const auto& [peer, bytes] : s) outside[rank][call] += peer >= 3 ? bytes : 0;
      epochs[rank][call] = statsOf(comm).planEpoch;
      // Rank 0 decides; it can reach the next check only with everyone.
      if (rank == 0 && call + 1 == moveAfter) moved = true;
    }
    stats[rank] = statsOf(comm);
  });
  const std::string err = ::testing::internal::GetCapturedStderr();
  // Checks before calls 17 and 33 (0-based 16 and 32): the first keeps the
  // plan, the second sees the move.
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(stats[r].planChecks, 3u) << "rank " << r;
    EXPECT_EQ(stats[r].replans, 1u) << "rank " << r;
    for (int call = 0; call < calls; ++call) {
      EXPECT_EQ(epochs[r][call], call < 32 ? 1u : 2u) << "rank " << r << " call " << call;
    }
  }
  EXPECT_GT(outside[1][31], 0u);
  for (int call = 32; call < calls; ++call) EXPECT_EQ(outside[1][call], 0u) << "call " << call;
  EXPECT_NE(err.find("plan #1 (initial): ring 0[ina]"), std::string::npos) << err;
  EXPECT_NE(err.find("plan #2 (link 3->1 moved 8000 -> 8 Mbit/s (-100%, threshold 30%))"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("plan #3"), std::string::npos) << err;
}

// RINA_PLAN_CHECK_EVERY in seconds: rank 0 turns it into a count from how
// long the collectives took and sends it with every notice. Nothing is
// known at the first plan, so the next check comes after one collective;
// then 1000 s is far beyond 20 small collectives (no more checks), and
// 1 us is less than any collective (a check before every one). Any rank
// off that schedule would make the calls fail or the counts differ.
TEST_F(RackPlanTest, CheckScheduleInSecondsComesFromRankZero) {
  ScopedEnv racks("RINA_RACKS", "2,2");
  ScopedEnv interval("RINA_PLAN_INTERVAL", "0");
  ScopedEnv threshold("RINA_PLAN_THRESHOLD", "0.5");
  for (const auto& [every, checks] : {std::pair<const char*, uint64_t>{"1000s", 2},
                                      std::pair<const char*, uint64_t>{"0.000001s", 20}}) {
    ScopedEnv e("RINA_PLAN_CHECK_EVERY", every);
    const int n = 4, calls = 20;
    std::vector<rinaCommStats_t> stats(n);
    runThreads(n, [&](int rank, rinaComm_t comm) {
      ASSERT_EQ(rinaCommSetAlgorithm(comm, "hier"), rinaSuccess);
      for (int call = 0; call < calls; ++call) {
        allreduceExact(comm, rank, n, call, 3000);
        if (::testing::Test::HasFatalFailure()) return;
      }
      stats[rank] = statsOf(comm);
    });
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(stats[r].planChecks, checks) << every << " rank " << r;
    }
  }
}

// Bad RINA_PLAN_INTERVAL / RINA_PLAN_THRESHOLD / RINA_PLAN_CHECK_EVERY:
// rinaCommInitRank fails on every rank, the message naming the knob and
// the value.
TEST(RackPlanKnobs, BadValuesAreRefusedAtInit) {
  const std::vector<std::pair<const char*, const char*>> bad = {
      {"RINA_PLAN_INTERVAL", "often"}, {"RINA_PLAN_INTERVAL", "-3"},
      {"RINA_PLAN_INTERVAL", "5x"},    {"RINA_PLAN_INTERVAL", "1.5"},
      {"RINA_PLAN_INTERVAL", "s"},     {"RINA_PLAN_THRESHOLD", "-0.1"},
      {"RINA_PLAN_THRESHOLD", "x"},    {"RINA_PLAN_THRESHOLD", "inf"},
      {"RINA_PLAN_CHECK_EVERY", "0"},  {"RINA_PLAN_CHECK_EVERY", "0s"}};
  for (const auto& [knob, value] : bad) {
    ScopedEnv e(knob, value);
    rinaUniqueId id;
    ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
    std::vector<std::thread> threads;
    std::mutex mu;
    std::vector<std::string> errors;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        rinaComm_t comm = nullptr;
        const rinaResult_t rc = rinaCommInitRank(&comm, 2, id, r);
        std::lock_guard<std::mutex> lock(mu);
        errors.push_back(rc == rinaInvalidArgument ? rinaCommGetLastError(nullptr) : "");
        if (rc == rinaSuccess) rinaCommDestroy(comm);
      });
    }
    for (std::thread& t : threads) t.join();
    const std::string expected = std::string(knob) + "=" + value + ": expected";
    for (const std::string& e2 : errors) {
      EXPECT_NE(e2.find(expected), std::string::npos) << knob << "=" << value << ": '" << e2 << "'";
    }
  }
}

// A rank that dies inside a plan exchange (after the rate gather, before
// the plan notice) makes every other rank's call fail, within the timeout;
// the rank after it on the notice line names it and the exchange.
TEST(RackPlanFailure, RankDyingInTheExchangeFailsTheOthers) {
  ScopedEnv racks("RINA_RACKS", "2,2");
  ScopedEnv algo("RINA_ALGO", "hier");
  ScopedEnv interval("RINA_PLAN_INTERVAL", "2");
  ScopedEnv threshold("RINA_PLAN_THRESHOLD", "0");  // checks only by the count
  ScopedEnv timeout("RINA_TIMEOUT_MS", "5000");
  // Exchange 0 is the initial plan at creation, exchange 1 comes before the
  // third collective.
  comm::setPlanExchangeHookForTesting([](int rank) {
    static int exchanges = 0;
    if (rank == 2 && ++exchanges == 2) _exit(7);
  });
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int> codes = runProcesses(
      4,
      [](int rank, rinaComm_t comm) {
        std::vector<int32_t> buf(5000, rank);
        for (int call = 0; call < 6; ++call) {
          const rinaResult_t rc =
              rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaInt32, rinaSum, comm);
          if (rc != rinaSuccess) {
            const std::string msg = rinaCommGetLastError(comm);
            fprintf(stderr, "rank %d call %d: %s\n", rank, call, msg.c_str());
            if (call != 2) return 40;  // failed elsewhere than in the third call
            if (rank == 3) {
              return msg.find("plan exchange") != std::string::npos &&
                             msg.find("peer 2") != std::string::npos
                         ? 30
                         : 41;
            }
            return 31;
          }
        }
        return 0;
      },
      60);
  comm::setPlanExchangeHookForTesting({});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  EXPECT_EQ(codes[2], 7);
  EXPECT_EQ(codes[3], 30);
  EXPECT_EQ(codes[0], 31);
  EXPECT_EQ(codes[1], 31);
}

}  // namespace
}  // namespace rina::testing
