// INA racks of communicators made from others: after a shrink each rack
// registers its job with its switch again (new members, fan-in and token),
// the old job's slots are back at once (the switch's own STATS: jobs,
// fan-ins, slots in use, releases), a rack left with one host goes without
// the switch, and the sums stay exact and on the switch (no fallback). A
// switch that is killed makes its rack fall back; started again on the same
// address, the rack returns to it at a later plan check, counted in
// rinaCommGetStats (inaReturns), and every result stays exact. A split
// child keeps the switch for the racks it holds whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <future>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/handle.h"
#include "core/config.h"
#include "elastic_checks.h"
#include "ina/ctrl_client.h"
#include "ina_harness.h"
#include "member_values.h"
#include "rank_harness.h"

namespace rina::testing {
namespace {

using ina::testing::jsonField;
using ina::testing::jsonFields;
using ina::testing::SecretDir;

const bool kGenerousInaTimeout = useGenerousInaTimeout();

rinaCommStats_t statsOf(rinaComm_t comm) {
  rinaCommStats_t s{};
  s.size = sizeof s;
  EXPECT_EQ(rinaCommGetStats(comm, &s), rinaSuccess);
  return s;
}

// Two INA racks (3 and 2 ranks) on one switch with an admin secret.
config::Options rackOptions(const std::string& control, const std::string& auth) {
  config::Options o = config::environment();
  o.racks = "3:ina,2:ina";
  o.switches = control + "," + control;
  o.switchAuth = auth;
  o.inaSlots = 100;
  o.algo = "rina";
  return o;
}

// A rina-switchd that takes admin commands signed with a secret (the racks'
// options carry it, the environment does not), and its STATS.
class SignedSwitch {
 public:
  SignedSwitch() : sw_({"--slots", "1024", "--auth-file", secret_.file()}) {
    if (secret_.ok() && sw_.ready()) {
      EXPECT_TRUE(ina::CtrlClient::connect(sw_.control(), 5000, &admin_, secret_.file()).ok());
    }
  }
  bool ready() const { return secret_.ok() && sw_.ready() && admin_; }
  config::Options options() const { return rackOptions(sw_.control().toString(), secret_.file()); }
  std::string stats() {
    std::string reply;
    Status s = admin_->query("STATS", &reply);
    EXPECT_TRUE(s.ok()) << s.message();
    return reply;
  }

 private:
  SecretDir secret_;
  ina::testing::SwitchdProcess sw_;
  ScopedEnv noEnvSecret_{"RINA_SWITCH_AUTH_FILE", nullptr};
  std::unique_ptr<ina::CtrlClient> admin_;
};

std::vector<long long> sorted(std::vector<long long> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// The ranks in `out` fail (they stop taking part); the others shrink.
// alone: the rank left alone in its rack (it then sums without the switch).
void shrinkTwoRacks(const std::vector<int>& out, const std::vector<long long>& faninsAfter,
                    long long slotsAfter, int alone = -1) {
  SignedSwitch sw;
  ASSERT_TRUE(sw.ready());
  const int n = 5;
  std::vector<int> ids;
  for (int r = 0; r < n; ++r) {
    if (std::find(out.begin(), out.end(), r) == out.end()) ids.push_back(r);
  }
  std::barrier sync(n);
  std::latch shrunk(static_cast<int>(ids.size()));
  std::latch checked(static_cast<int>(ids.size()));  // no survivor leaves before the check
  runThreads(n, sw.options(), [&](int rank, rinaComm_t comm) {
    EXPECT_TRUE(exactMemberAllReduces(comm, {0, 1, 2, 3, 4}, {20000}));
    sync.arrive_and_wait();
    if (rank == 0) {
      const std::string before = sw.stats();
      EXPECT_EQ(sorted(jsonFields(before, "fanin")), (std::vector<long long>{2, 3})) << before;
      EXPECT_EQ(jsonField(before, "slots_used"), 200) << before;
    }
    sync.arrive_and_wait();
    if (std::find(out.begin(), out.end(), rank) != out.end()) {
      checked.wait();
      return;
    }
    rinaComm_t next = nullptr;
    ASSERT_EQ(
        rinaCommShrink(comm, out.data(), static_cast<int>(out.size()), &next, RINA_SHRINK_DEFAULT),
        rinaSuccess)
        << rinaCommGetLastError(comm);
    EXPECT_TRUE(exactMemberAllReduces(next, ids, {20000}));
    EXPECT_TRUE(exactMemberAllReduces(next, ids, {3}));
    shrunk.arrive_and_wait();
    int newRank = -1;
    rinaCommUserRank(next, &newRank);
    if (newRank == 0) {
      // Released at once: the old jobs are gone, only the new ones hold slots.
      const std::string after = sw.stats();
      EXPECT_EQ(sorted(jsonFields(after, "fanin")), faninsAfter) << after;
      EXPECT_EQ(jsonField(after, "slots_used"), slotsAfter) << after;
      EXPECT_EQ(jsonField(after, "releases"), 2) << after;
    }
    const rinaCommStats_t s = statsOf(next);
    EXPECT_EQ(s.inaFallbacks, 0u) << "rank " << newRank;
    if (rank == alone) {
      EXPECT_EQ(s.inaCalls, 0u) << "rank " << newRank << " is alone in its rack";
    } else {
      EXPECT_GT(s.inaCalls, 0u) << "rank " << newRank;
    }
    checked.arrive_and_wait();
    EXPECT_EQ(rinaCommDestroy(next), rinaSuccess);
  });
}

TEST(RackReform, ShrinkRegistersEveryRackAgainAndFreesTheOldSlots) {
  shrinkTwoRacks({1}, {2, 2}, 200);
}
// The agent of rack a fails: the new agent (a worker before) releases the
// old job over a CTRL connection of its own (signed: the secret is in its
// options) and registers the new one.
TEST(RackReform, ShrinkWithoutTheAgentReleasesItsJob) { shrinkTwoRacks({0}, {2, 2}, 200); }
// Rack b is left with one host: it goes without the switch (its job is
// released and not registered again); rack a keeps its switch.
TEST(RackReform, RackLeftWithOneHostGoesAutonomous) { shrinkTwoRacks({4}, {3}, 100, 3); }

// Grow: the joiner lands in a rack of its own; the old racks register again.
TEST(RackReform, GrowRegistersTheRacksAgain) {
  SignedSwitch sw;
  ASSERT_TRUE(sw.ready());
  config::Options o = sw.options();
  std::promise<rinaUniqueId> idMade;
  std::shared_future<rinaUniqueId> id = idMade.get_future().share();
  const std::vector<int> ids = {0, 1, 2, 3, 4, 100};
  std::thread joiner([&] {
    rinaComm_t comm = nullptr;
    ASSERT_EQ(api::commInitRank(&comm, 6, id.get(), 5,
                                [&] {
                                  config::Options j = o;
                                  j.racks.clear();  // rank 0's schedule names the grown racks
                                  return j;
                                }()),
              rinaSuccess)
        << rinaCommGetLastError(nullptr);
    EXPECT_TRUE(exactMemberAllReduces(comm, ids, {20000}));
    EXPECT_EQ(rinaCommDestroy(comm), rinaSuccess);
  });
  std::barrier sync(5);
  runThreads(5, o, [&](int rank, rinaComm_t comm) {
    EXPECT_TRUE(exactMemberAllReduces(comm, {0, 1, 2, 3, 4}, {100}));
    if (rank == 0) {
      rinaUniqueId fresh;
      ASSERT_EQ(rinaGetUniqueId(&fresh), rinaSuccess);
      idMade.set_value(fresh);
    }
    rinaComm_t next = nullptr;
    ASSERT_EQ(rinaCommGrow(comm, 1, id.get(), &next), rinaSuccess) << rinaCommGetLastError(comm);
    EXPECT_TRUE(exactMemberAllReduces(next, ids, {20000}));
    sync.arrive_and_wait();
    if (rank == 0) {
      const std::string after = sw.stats();
      EXPECT_EQ(sorted(jsonFields(after, "fanin")), (std::vector<long long>{2, 3})) << after;
      EXPECT_EQ(jsonField(after, "slots_used"), 200) << after;
      EXPECT_EQ(jsonField(after, "releases"), 2) << after;
    }
    EXPECT_EQ(statsOf(next).inaFallbacks, 0u);
    sync.arrive_and_wait();  // nobody's job goes before the check
    EXPECT_EQ(rinaCommDestroy(next), rinaSuccess);
  });
  joiner.join();
}

// Split: a child holding all of rack a (and rank 3 of rack b) registers a
// job of its own for rack a beside the parent's two; rank 3, without the
// rest of its rack, sums without the switch. Calls on parent and child
// interleave, all exact; the child's job goes with the child.
TEST(RackReform, SplitKeepsWholeRacksOnTheSwitch) {
  SignedSwitch sw;
  ASSERT_TRUE(sw.ready());
  const std::vector<int> parentIds = {0, 1, 2, 3, 4};
  const std::vector<int> childIds = {0, 1, 2, 3};
  std::barrier sync(5);
  runThreads(5, sw.options(), [&](int rank, rinaComm_t comm) {
    EXPECT_TRUE(exactMemberAllReduces(comm, parentIds, {20000}));
    rinaComm_t child = nullptr;
    ASSERT_EQ(rinaCommSplit(comm, rank < 4 ? 0 : 1, rank, &child), rinaSuccess)
        << rinaCommGetLastError(comm);
    int childSize = 0;
    ASSERT_EQ(rinaCommCount(child, &childSize), rinaSuccess);
    ASSERT_EQ(childSize, rank < 4 ? 4 : 1) << "rank " << rank;
    for (int round = 0; round < 2; ++round) {
      if (rank < 4) {
        EXPECT_TRUE(exactMemberAllReduces(child, childIds, {20000}));
      }
      EXPECT_TRUE(exactMemberAllReduces(comm, parentIds, {20000}));
    }
    sync.arrive_and_wait();
    if (rank == 0) {
      const std::string during = sw.stats();
      EXPECT_EQ(sorted(jsonFields(during, "fanin")), (std::vector<long long>{2, 3, 3})) << during;
      EXPECT_EQ(jsonField(during, "slots_used"), 300) << during;
    }
    const rinaCommStats_t s = statsOf(child);
    EXPECT_EQ(s.inaFallbacks, 0u) << "rank " << rank;
    if (rank < 3) {
      EXPECT_GT(s.inaCalls, 0u) << "rank " << rank << ": rack a is whole in the child";
    } else {
      EXPECT_EQ(s.inaCalls, 0u) << "rank " << rank << ": its rack is not whole";
    }
    sync.arrive_and_wait();
    EXPECT_EQ(rinaCommDestroy(child), rinaSuccess);
    sync.arrive_and_wait();
    if (rank == 0) {
      const std::string after = sw.stats();
      EXPECT_EQ(sorted(jsonFields(after, "fanin")), (std::vector<long long>{2, 3})) << after;
      EXPECT_EQ(jsonField(after, "slots_used"), 200) << after;
    }
    EXPECT_TRUE(exactMemberAllReduces(comm, parentIds, {20000}));
    EXPECT_EQ(statsOf(comm).inaFallbacks, 0u) << "rank " << rank;
  });
}

// The switch killed between calls and started again at the same address:
// the racks fall back (exact), and at a later plan check (here before every
// rina call) they return to it, counted once on every rank of both racks.
TEST(RackReform, RacksReturnToARestartedSwitchAtAPlanCheck) {
  auto sw =
      std::make_unique<ina::testing::SwitchdProcess>(std::vector<std::string>{"--slots", "1024"});
  ASSERT_TRUE(sw->ready());
  const ina::Endpoint data = sw->data(), control = sw->control();
  ScopedEnv noEnvSecret("RINA_SWITCH_AUTH_FILE", nullptr);
  ScopedEnv planCheck("RINA_PLAN_CHECK_EVERY", "1");
  config::Options o = rackOptions(control.toString(), "");
  std::barrier sync(5);
  runThreads(5, o, [&](int rank, rinaComm_t comm) {
    const std::vector<int> ids = {0, 1, 2, 3, 4};
    EXPECT_TRUE(exactMemberAllReduces(comm, ids, {20000}));
    sync.arrive_and_wait();
    if (rank == 0) sw.reset();  // killed
    sync.arrive_and_wait();
    EXPECT_TRUE(exactMemberAllReduces(comm, ids, {20000}));  // the racks fall back: still exact
    EXPECT_EQ(statsOf(comm).inaFallbacks, 1u) << "rank " << rank;
    sync.arrive_and_wait();
    if (rank == 0) {
      sw = std::make_unique<ina::testing::SwitchdProcess>(std::vector<std::string>{
          "--slots", "1024", "--listen", data.toString(), "--control", control.toString()});
      EXPECT_TRUE(sw->ready());
    }
    sync.arrive_and_wait();
    // Back at the next plan check; bounded in calls, not in time.
    for (int i = 0; i < 50 && statsOf(comm).inaReturns == 0; ++i)
      EXPECT_TRUE(exactMemberAllReduces(comm, ids, {5000}));
    const rinaCommStats_t s = statsOf(comm);
    EXPECT_EQ(s.inaReturns, 1u) << "rank " << rank;
    const uint64_t callsBefore = s.inaCalls;
    EXPECT_TRUE(exactMemberAllReduces(comm, ids, {20000}));
    EXPECT_GT(statsOf(comm).inaCalls, callsBefore) << "rank " << rank << ": not on the switch";
    EXPECT_EQ(statsOf(comm).inaFallbacks, 1u) << "rank " << rank;
  });
  EXPECT_EQ(sorted(jsonFields(sw->query("STATS"), "fanin")), (std::vector<long long>{}))
      << "jobs left after the communicators went";
}

}  // namespace
}  // namespace rina::testing
