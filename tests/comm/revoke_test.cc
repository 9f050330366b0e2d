// rinaCommRevoke and rinaCommGetAsyncError: a revoke stops the calls in
// progress on every rank and every later call with rinaRevoked, promptly
// (well under RINA_TIMEOUT_MS), from any rank and any thread, over shared
// memory, TCP and the one-shot host segment; a rank killed in a loop of
// allreduces ends with every survivor's error naming it once a survivor
// revokes; the asynchronous error reports a revoke, a dead peer and nothing
// on a healthy communicator.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "elastic_checks.h"
#include "rank_harness.h"

namespace rina::testing {
namespace {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

int64_t msBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<Ms>(b - a).count();
}

// Ranks 0..n-2 enter an allreduce that rank n-1 never joins; rank n-1
// revokes. Every call returns rinaRevoked within a second of the revoke
// (RINA_TIMEOUT_MS is 20 s), naming the revoking rank, and so do later calls.
void revokeStopsWaitingRanks(int n, size_t count) {
  ScopedEnv timeout("RINA_TIMEOUT_MS", "20000");
  std::atomic<int64_t> revokedAtMs{0};
  const Clock::time_point t0 = Clock::now();
  runThreads(n, [&](int rank, rinaComm_t comm) {
    std::vector<float> buf(count, 1.0f);
    if (rank == n - 1) {
      revokedAtMs = msBetween(t0, Clock::now());
      EXPECT_EQ(rinaCommRevoke(comm), rinaSuccess);
      EXPECT_EQ(rinaCommRevoke(comm), rinaSuccess);  // twice is fine
    } else {
      EXPECT_EQ(rinaAllReduce(buf.data(), buf.data(), count, rinaFloat32, rinaSum, comm),
                rinaRevoked);
      const int64_t returnedMs = msBetween(t0, Clock::now());
      EXPECT_LT(returnedMs - revokedAtMs.load(), 1000) << "rank " << rank;
      const std::string msg = rinaCommGetLastError(comm);
      EXPECT_TRUE(contains(msg, "revoked by rank " + std::to_string(n - 1))) << msg;
    }
    // Every later call, collective or not, says so at once.
    EXPECT_EQ(rinaAllReduce(buf.data(), buf.data(), count, rinaFloat32, rinaSum, comm),
              rinaRevoked);
    EXPECT_EQ(rinaBroadcast(buf.data(), buf.data(), 4, rinaFloat32, 0, comm), rinaRevoked);
    EXPECT_EQ(rinaSend(buf.data(), 4, rinaFloat32, (rank + 1) % n, comm), rinaRevoked);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "rinaSend")) << rinaCommGetLastError(comm);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "revoked")) << rinaCommGetLastError(comm);
    rinaResult_t async = rinaSuccess;
    EXPECT_EQ(rinaCommGetAsyncError(comm, &async), rinaSuccess);
    EXPECT_EQ(async, rinaRevoked);
  });
}

TEST(Revoke, StopsCallsInProgressOverSharedMemory) { revokeStopsWaitingRanks(4, 1 << 20); }
TEST(Revoke, StopsCallsInProgressInOneShot) { revokeStopsWaitingRanks(4, 64); }
TEST(Revoke, StopsCallsInProgressOverTcp) {
  ScopedEnv shm("RINA_SHM_DISABLE", "1");
  revokeStopsWaitingRanks(3, 1 << 20);
}
TEST(Revoke, StopsCallsInProgressInARackAlgorithm) {
  ScopedEnv racks("RINA_RACKS", "2,2,1");
  ScopedEnv algo("RINA_ALGO", "hier");
  revokeStopsWaitingRanks(5, 1 << 18);
}

// A revoke from another thread of the same rank stops that rank's own call.
TEST(Revoke, FromAnotherThreadStopsThisRanksCall) {
  std::latch done(1);
  runThreads(2, [&](int rank, rinaComm_t comm) {
    if (rank == 1) {
      done.wait();  // never joins the collective
      return;
    }
    std::thread revoker([comm] { EXPECT_EQ(rinaCommRevoke(comm), rinaSuccess); });
    std::vector<int32_t> buf(1 << 18, 1);
    const Clock::time_point t0 = Clock::now();
    EXPECT_EQ(rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaInt32, rinaSum, comm),
              rinaRevoked);
    EXPECT_LT(msBetween(t0, Clock::now()), 5000);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "revoked on rank 0"))
        << rinaCommGetLastError(comm);
    revoker.join();
    done.count_down();
  });
}

// A rank killed in a loop of allreduces: the ranks next to it see its
// connection close (rinaRemoteError naming it) and revoke; the others, who
// wait on live ranks, get rinaRevoked whose message carries the revoker's
// error, so every survivor's error names the dead rank, all within a few
// seconds of each other (RINA_TIMEOUT_MS is 30 s).
void killedRankThenRevoke(const char* shmDisable, int n) {
  ScopedEnv shm("RINA_SHM_DISABLE", shmDisable);
  ScopedEnv timeout("RINA_TIMEOUT_MS", "30000");
  const int victim = 2;
  // Survivors keep their communicators until every survivor has its error:
  // one that left early would close connections the others still wait on.
  ProcessBarrier allErred(n - 1);
  auto codes = runProcesses(
      n,
      [&](int rank, rinaComm_t comm) {
        std::vector<float> buf(1 << 18, 1.0f);
        for (int i = 0; i < 1000; ++i) {
          if (rank == victim && i == 5) raise(SIGKILL);
          const Clock::time_point t0 = Clock::now();
          rinaResult_t rc =
              rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaFloat32, rinaSum, comm);
          if (rc == rinaSuccess) continue;
          const std::string first = rinaCommGetLastError(comm);
          if (rc == rinaRemoteError || rc == rinaTimeout) rinaCommRevoke(comm);
          const int64_t took = msBetween(t0, Clock::now());
          fprintf(stderr, "rank %d: call %d: %s after %lld ms: %s\n", rank, i,
                  rinaGetErrorString(rc), static_cast<long long>(took), first.c_str());
          if (rc != rinaRemoteError && rc != rinaRevoked) return 2;
          if (!contains(first, "peer " + std::to_string(victim)) &&
              !contains(first, "rank " + std::to_string(victim))) {
            return 3;  // the error does not name the dead rank
          }
          if (took > 10000) return 4;
          if (rinaAllReduce(buf.data(), buf.data(), 4, rinaFloat32, rinaSum, comm) != rinaRevoked) {
            return 5;
          }
          return allErred.arriveAndWait(30000) ? 0 : 7;
        }
        return 6;  // never noticed
      },
      90);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(codes[r], r == victim ? 128 + SIGKILL : 0) << "rank " << r;
  }
}

TEST(Revoke, KilledRankIsNamedOnEverySurvivorShm) { killedRankThenRevoke("0", 5); }
TEST(Revoke, KilledRankIsNamedOnEverySurvivorTcp) { killedRankThenRevoke("1", 5); }

TEST(AsyncError, NoneOnAHealthyCommunicatorThenADeadPeer) {
  ProcessBarrier bothSaw(2);  // ranks 0 and 2 stay until both saw rank 1 go
  auto codes = runProcesses(
      3,
      [&](int rank, rinaComm_t comm) {
        rinaResult_t async = rinaInternalError;
        if (rinaCommGetAsyncError(comm, &async) != rinaSuccess || async != rinaSuccess) return 1;
        if (rinaCommGetAsyncError(comm, nullptr) != rinaInvalidArgument) return 2;
        int32_t v = 1;
        if (rinaAllReduce(&v, &v, 1, rinaInt32, rinaSum, comm) != rinaSuccess || v != 3) return 3;
        if (rank == 1) return 0;  // leaves: its connections close
        // Rank 1 is gone at some point; until then nothing is reported.
        const Clock::time_point t0 = Clock::now();
        while (msBetween(t0, Clock::now()) < 20000) {
          if (rinaCommGetAsyncError(comm, &async) != rinaSuccess) return 4;
          if (async == rinaSuccess) {
            std::this_thread::sleep_for(Ms(5));
            continue;
          }
          const std::string msg = rinaCommGetLastError(comm);
          fprintf(stderr, "rank %d: %s: %s\n", rank, rinaGetErrorString(async), msg.c_str());
          if (async != rinaRemoteError || !contains(msg, "peer 1")) return 5;
          return bothSaw.arriveAndWait(20000) ? 0 : 7;
        }
        return 6;
      },
      60);
  EXPECT_EQ(codes, (std::vector<int>{0, 0, 0}));
}

TEST(AsyncError, ReportsARevokeFromAnotherRankWithoutACall) {
  std::latch revoked(1);
  runThreads(3, [&](int rank, rinaComm_t comm) {
    if (rank == 0) {
      EXPECT_EQ(rinaCommRevoke(comm), rinaSuccess);
      revoked.count_down();
      return;
    }
    revoked.wait();
    // The notice may still be on its way: read until it is in.
    rinaResult_t async = rinaSuccess;
    const Clock::time_point t0 = Clock::now();
    while (async == rinaSuccess && msBetween(t0, Clock::now()) < 5000) {
      ASSERT_EQ(rinaCommGetAsyncError(comm, &async), rinaSuccess);
      if (async == rinaSuccess) std::this_thread::sleep_for(Ms(1));
    }
    EXPECT_EQ(async, rinaRevoked);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "revoked by rank 0"))
        << rinaCommGetLastError(comm);
  });
}

}  // namespace
}  // namespace rina::testing
