// rinaCommGrow and rinaCommJoin: the ranks of a communicator keep their
// numbers, the joiners take the next ones, and the grown communicator's
// collectives are exact against a serial reference of everyone's inputs
// (int32 and float32, shared memory and TCP, flat and rack algorithms);
// a grow after a shrink (a failed rank replaced), two joiners at once.
#include <gtest/gtest.h>

#include <future>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "elastic_checks.h"
#include "member_values.h"
#include "rank_harness.h"

namespace rina::testing {
namespace {

// n thread ranks grow by joiners (identities 100, 101, ...), which join
// from threads of their own.
void growBy(int n, int joiners) {
  std::promise<rinaUniqueId> idMade;
  std::shared_future<rinaUniqueId> id = idMade.get_future().share();
  std::vector<int> ids;
  for (int r = 0; r < n; ++r) ids.push_back(r);
  for (int j = 0; j < joiners; ++j) ids.push_back(100 + j);
  std::vector<std::thread> joining;
  for (int j = 0; j < joiners; ++j) {
    joining.emplace_back([&, j] {
      rinaComm_t comm = nullptr;
      ASSERT_EQ(rinaCommJoin(&comm, n + joiners, id.get(), n + j), rinaSuccess)
          << rinaCommGetLastError(nullptr);
      EXPECT_TRUE(exactMemberAllReduces(comm, ids, {3, 250000}));
      EXPECT_EQ(rinaCommDestroy(comm), rinaSuccess);
    });
  }
  runThreads(n, [&](int rank, rinaComm_t comm) {
    if (rank == 0) {
      rinaUniqueId fresh;
      ASSERT_EQ(rinaGetUniqueId(&fresh), rinaSuccess);
      idMade.set_value(fresh);
    }
    rinaComm_t next = nullptr;
    ASSERT_EQ(rinaCommGrow(comm, joiners, id.get(), &next), rinaSuccess)
        << rinaCommGetLastError(comm);
    int newRank = -1;
    ASSERT_EQ(rinaCommUserRank(next, &newRank), rinaSuccess);
    EXPECT_EQ(newRank, rank);
    EXPECT_TRUE(exactMemberAllReduces(next, ids, {3, 250000}));
    int32_t v = 1;
    EXPECT_EQ(rinaAllReduce(&v, &v, 1, rinaInt32, rinaSum, comm), rinaInvalidUsage);
    EXPECT_NE(std::string(rinaCommGetLastError(comm)).find("used up by rinaCommGrow"),
              std::string::npos)
        << rinaCommGetLastError(comm);
    EXPECT_EQ(rinaCommDestroy(next), rinaSuccess);
  });
  for (auto& t : joining) t.join();
}

TEST(Grow, OneRankIntoThree) { growBy(3, 1); }
TEST(Grow, TwoRanksIntoFour) { growBy(4, 2); }
TEST(Grow, OneRankIntoEight) { growBy(8, 1); }
TEST(Grow, OverTcp) {
  ScopedEnv shm("RINA_SHM_DISABLE", "1");
  growBy(3, 2);
}
TEST(Grow, RackAlgorithmWithRacksInRankOrder) {
  ScopedEnv racks("RINA_RACKS", "2,2");
  ScopedEnv algo("RINA_ALGO", "hier");
  growBy(4, 1);  // the joiner is a rack of its own
}

// A rank fails (it leaves), the others shrink it away, and a new rank
// joins in its place: the allreduce after the grow includes it.
TEST(Grow, ReplacesARankAfterAShrink) {
  std::promise<rinaUniqueId> idMade;
  std::shared_future<rinaUniqueId> id = idMade.get_future().share();
  std::latch shrunk(3);
  std::thread joiner([&] {
    rinaComm_t comm = nullptr;
    ASSERT_EQ(rinaCommJoin(&comm, 4, id.get(), 3), rinaSuccess) << rinaCommGetLastError(nullptr);
    EXPECT_TRUE(exactMemberAllReduces(comm, {0, 2, 3, 100}, {3, 250000}));
    EXPECT_EQ(rinaCommDestroy(comm), rinaSuccess);
  });
  runThreads(4, [&](int rank, rinaComm_t comm) {
    if (rank == 1) {
      shrunk.wait();
      return;
    }
    const int out[] = {1};
    rinaComm_t small = nullptr;
    ASSERT_EQ(rinaCommShrink(comm, out, 1, &small, RINA_SHRINK_DEFAULT), rinaSuccess)
        << rinaCommGetLastError(comm);
    shrunk.count_down();
    EXPECT_TRUE(exactMemberAllReduces(small, {0, 2, 3}, {3, 250000}));
    int r = -1;
    rinaCommUserRank(small, &r);
    if (r == 0) {
      rinaUniqueId fresh;
      ASSERT_EQ(rinaGetUniqueId(&fresh), rinaSuccess);
      idMade.set_value(fresh);
    }
    rinaComm_t big = nullptr;
    ASSERT_EQ(rinaCommGrow(small, 1, id.get(), &big), rinaSuccess) << rinaCommGetLastError(small);
    EXPECT_TRUE(exactMemberAllReduces(big, {0, 2, 3, 100}, {3, 250000}));
    EXPECT_EQ(rinaCommDestroy(big), rinaSuccess);
    EXPECT_EQ(rinaCommDestroy(small), rinaSuccess);
  });
  joiner.join();
}

}  // namespace
}  // namespace rina::testing
