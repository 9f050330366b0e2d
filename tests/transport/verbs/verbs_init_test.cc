// The RDMA knobs through rinaCommInitRank: a named adapter that does not
// exist fails init on every rank with a message naming the knob (no hang),
// and RINA_IB_DISABLE=1 is the documented way out.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "rank_harness.h"
#include "rina/rina.h"

namespace rina::testing {
namespace {

TEST(VerbsInit, MissingHcaFailsInitWithTheKnobNamed) {
  ScopedEnv hca("RINA_IB_HCA", "nosuch_0:1");
  ScopedEnv timeout("RINA_TIMEOUT_MS", "10000");
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
  std::vector<rinaResult_t> results(2, rinaSuccess);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      rinaComm_t comm = nullptr;
      results[r] = rinaCommInitRank(&comm, 2, id, r);
      errors[r] = rinaCommGetLastError(nullptr);
      if (comm) rinaCommDestroy(comm);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r], rinaSystemError) << errors[r];
    EXPECT_NE(errors[r].find("RINA_IB_HCA=nosuch_0:1: no such RDMA device"), std::string::npos)
        << errors[r];
    EXPECT_NE(errors[r].find("rank " + std::to_string(r)), std::string::npos) << errors[r];
  }
}

TEST(VerbsInit, DisabledIgnoresTheHcaAndUsesTcp) {
  ScopedEnv hca("RINA_IB_HCA", "nosuch_0");
  ScopedEnv off("RINA_IB_DISABLE", "1");
  ScopedEnv tcp("RINA_SHM_DISABLE", "1");
  runThreads(2, [](int rank, rinaComm_t comm) {
    std::vector<int64_t> v(5000, rank + 1);
    ASSERT_EQ(rinaAllReduce(v.data(), v.data(), v.size(), rinaInt64, rinaSum, comm), rinaSuccess);
    EXPECT_EQ(v[4999], 3);
  });
}

TEST(VerbsInit, NoDeviceFallsBackToTcp) {
  // Where no RDMA device exists (as in CI) the pair uses TCP; with one, RDMA.
  // Either way the result is the same.
  ScopedEnv tcp("RINA_SHM_DISABLE", "1");
  runThreads(3, [](int rank, rinaComm_t comm) {
    std::vector<float> v(70000, static_cast<float>(rank));
    ASSERT_EQ(rinaAllReduce(v.data(), v.data(), v.size(), rinaFloat32, rinaSum, comm), rinaSuccess);
    EXPECT_EQ(v[123], 3.0f);
  });
}

}  // namespace
}  // namespace rina::testing
