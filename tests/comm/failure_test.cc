// Every error path with the input that triggers it: invalid arguments, a
// killed peer, a silent peer (timeout), abort from another thread, wrong
// communicator ids at the root and at peers, mismatched calls.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "core/socket.h"
#include "rank_harness.h"

namespace rina::testing {
namespace {

using Ms = std::chrono::milliseconds;

int64_t msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<Ms>(std::chrono::steady_clock::now() - t0).count();
}

TEST(InvalidArguments, EveryCallRejectsBadInput) {
  rinaUniqueId id;
  EXPECT_EQ(rinaGetUniqueId(nullptr), rinaInvalidArgument);
  EXPECT_EQ(rinaGetVersion(nullptr), rinaInvalidArgument);
  int v = 0;
  EXPECT_EQ(rinaGetVersion(&v), rinaSuccess);
  EXPECT_EQ(v, RINA_VERSION_CODE);
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
  rinaComm_t comm = nullptr;
  EXPECT_EQ(rinaCommInitRank(nullptr, 1, id, 0), rinaInvalidArgument);
  EXPECT_EQ(rinaCommInitRank(&comm, 0, id, 0), rinaInvalidArgument);
  EXPECT_NE(std::string(rinaCommGetLastError(nullptr)).find("nranks 0"), std::string::npos);
  EXPECT_EQ(rinaCommInitRank(&comm, 2, id, 2), rinaInvalidArgument);
  EXPECT_EQ(rinaCommInitRank(&comm, 2, id, -1), rinaInvalidArgument);
  rinaUniqueId garbage;
  std::memset(&garbage, 0x42, sizeof(garbage));
  EXPECT_EQ(rinaCommInitRank(&comm, 1, garbage, 0), rinaInvalidArgument);
  EXPECT_NE(std::string(rinaCommGetLastError(nullptr)).find("unique id"), std::string::npos);

  ASSERT_EQ(rinaCommInitRank(&comm, 1, id, 0), rinaSuccess) << rinaCommGetLastError(nullptr);
  float x[4] = {1, 2, 3, 4};
  EXPECT_EQ(rinaAllReduce(x, x, 4, rinaFloat32, rinaSum, nullptr), rinaInvalidArgument);
  EXPECT_EQ(rinaAllReduce(nullptr, x, 4, rinaFloat32, rinaSum, comm), rinaInvalidArgument);
  EXPECT_NE(std::string(rinaCommGetLastError(comm)).find("sendbuff is NULL"), std::string::npos);
  EXPECT_EQ(rinaAllReduce(x, nullptr, 4, rinaFloat32, rinaSum, comm), rinaInvalidArgument);
  EXPECT_EQ(rinaAllReduce(x, x, 4, static_cast<rinaDataType_t>(rinaNumTypes), rinaSum, comm),
            rinaInvalidArgument);
  EXPECT_NE(std::string(rinaCommGetLastError(comm)).find("invalid datatype"), std::string::npos);
  // 7: invalid, yet inside the enum's value range (C++ makes -1 undefined there; UBSan flags it).
  EXPECT_EQ(rinaAllReduce(x, x, 4, rinaFloat32, static_cast<rinaRedOp_t>(7), comm),
            rinaInvalidArgument);
  EXPECT_NE(std::string(rinaCommGetLastError(comm)).find("invalid reduction op"),
            std::string::npos);
  EXPECT_EQ(rinaAllReduce(x, x, SIZE_MAX / 2, rinaFloat32, rinaSum, comm), rinaInvalidArgument);
  EXPECT_EQ(rinaReduceScatter(x, nullptr, 1, rinaFloat32, rinaSum, comm), rinaInvalidArgument);
  EXPECT_EQ(rinaReduceScatter(x, x, 1, rinaFloat32, rinaNumOps, comm), rinaInvalidArgument);
  EXPECT_EQ(rinaAllGather(nullptr, x, 1, rinaFloat32, comm), rinaInvalidArgument);
  EXPECT_EQ(rinaAllGather(x, x, 1, static_cast<rinaDataType_t>(15), comm), rinaInvalidArgument);
  EXPECT_EQ(rinaBroadcast(x, x, 4, rinaFloat32, 1, comm), rinaInvalidArgument);
  EXPECT_NE(std::string(rinaCommGetLastError(comm)).find("root 1"), std::string::npos);
  EXPECT_EQ(rinaBroadcast(x, x, 4, rinaFloat32, -1, comm), rinaInvalidArgument);
  EXPECT_EQ(rinaBroadcast(x, nullptr, 4, rinaFloat32, 0, comm), rinaInvalidArgument);
  EXPECT_EQ(rinaCommSetAlgorithm(comm, "bogus"), rinaInvalidArgument);
  EXPECT_NE(std::string(rinaCommGetLastError(comm)).find("unknown algorithm 'bogus'"),
            std::string::npos);
  EXPECT_EQ(rinaCommSetAlgorithm(comm, nullptr), rinaInvalidArgument);
  EXPECT_EQ(rinaCommSetAlgorithm(comm, ""), rinaInvalidArgument);
  EXPECT_NE(std::string(rinaCommGetLastError(comm)).find("unknown algorithm ''"), std::string::npos)
      << rinaCommGetLastError(comm);
  EXPECT_EQ(rinaCommCount(comm, nullptr), rinaInvalidArgument);
  EXPECT_EQ(rinaCommUserRank(nullptr, &v), rinaInvalidArgument);
  int n = 0, r = -1;
  EXPECT_EQ(rinaCommCount(comm, &n), rinaSuccess);
  EXPECT_EQ(rinaCommUserRank(comm, &r), rinaSuccess);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(r, 0);
  // Invalid arguments leave the communicator usable.
  EXPECT_EQ(rinaAllReduce(x, x, 4, rinaFloat32, rinaSum, comm), rinaSuccess);
  EXPECT_EQ(x[3], 4.0f);
  EXPECT_EQ(rinaCommDestroy(comm), rinaSuccess);
  EXPECT_EQ(rinaCommDestroy(nullptr), rinaInvalidArgument);
  EXPECT_EQ(rinaCommAbort(nullptr), rinaInvalidArgument);
  EXPECT_STREQ(rinaGetErrorString(rinaTimeout), "timed out");
  EXPECT_STREQ(rinaGetErrorString(static_cast<rinaResult_t>(1234)), "unknown result code");
}

// A call on a destroyed communicator is rinaInvalidArgument with a message,
// not undefined behaviour: the API keeps the last destroyed handles'
// memory (marked destroyed) in a small quarantine, so reading one here is
// valid, also under AddressSanitizer. A second destroy is refused the same way.
TEST(InvalidArguments, CallsOnADestroyedCommunicatorAreRefused) {
  std::vector<rinaComm_t> dead(2, nullptr);
  runThreads(2, [&](int rank, rinaComm_t comm) { dead[rank] = comm; });
  for (rinaComm_t comm : dead) {
    ASSERT_NE(comm, nullptr);
    int32_t v = 1;
    EXPECT_EQ(rinaAllReduce(&v, &v, 1, rinaInt32, rinaSum, comm), rinaInvalidArgument);
    std::string e = rinaCommGetLastError(nullptr);
    EXPECT_NE(e.find("rinaAllReduce: comm was destroyed"), std::string::npos) << e;
    EXPECT_EQ(rinaBroadcast(&v, &v, 1, rinaInt32, 0, comm), rinaInvalidArgument);
    EXPECT_EQ(rinaAllGather(&v, &v, 1, rinaInt32, comm), rinaInvalidArgument);
    int n = 0;
    EXPECT_EQ(rinaCommCount(comm, &n), rinaInvalidArgument);
    EXPECT_EQ(rinaCommUserRank(comm, &n), rinaInvalidArgument);
    EXPECT_EQ(rinaCommSetAlgorithm(comm, "ring"), rinaInvalidArgument);
    EXPECT_EQ(rinaCommAbort(comm), rinaInvalidArgument);
    EXPECT_EQ(rinaCommDestroy(comm), rinaInvalidArgument);
    e = rinaCommGetLastError(nullptr);
    EXPECT_NE(e.find("rinaCommDestroy: comm was destroyed"), std::string::npos) << e;
    // The handle's own last error says so too, instead of reading freed memory.
    EXPECT_NE(std::string(rinaCommGetLastError(comm)).find("destroyed"), std::string::npos);
  }
}

TEST(InvalidArguments, TimeoutOfZeroOrLessFailsInit) {
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
  for (const char* value : {"0", "-5"}) {
    ScopedEnv timeout("RINA_TIMEOUT_MS", value);
    rinaComm_t comm = nullptr;
    EXPECT_EQ(rinaCommInitRank(&comm, 1, id, 0), rinaInvalidArgument) << value;
    const std::string msg = rinaCommGetLastError(nullptr);
    EXPECT_NE(msg.find(std::string("RINA_TIMEOUT_MS=") + value), std::string::npos) << msg;
    EXPECT_EQ(comm, nullptr);
  }
}

TEST(InvalidArguments, BadEnvironmentValues) {
  ScopedEnv algo("RINA_ALGO", "nonsense");
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
  rinaComm_t comm = nullptr;
  EXPECT_EQ(rinaCommInitRank(&comm, 1, id, 0), rinaInvalidArgument);
  EXPECT_NE(std::string(rinaCommGetLastError(nullptr)).find("RINA_ALGO"), std::string::npos);
  ScopedEnv algoOk("RINA_ALGO", "ring");
  ScopedEnv commId("RINA_COMM_ID", "no-port-here");
  EXPECT_EQ(rinaCommInitRank(&comm, 1, id, 0), rinaInvalidArgument);
  EXPECT_NE(std::string(rinaCommGetLastError(nullptr)).find("RINA_COMM_ID"), std::string::npos);
  for (const char* bad : {"0", "9", "two", "2x"}) {
    ScopedEnv nsocks("RINA_SOCKET_NSOCKS", bad);
    ScopedEnv noCommId("RINA_COMM_ID", nullptr);
    EXPECT_EQ(rinaCommInitRank(&comm, 1, id, 0), rinaInvalidArgument) << bad;
    EXPECT_NE(std::string(rinaCommGetLastError(nullptr)).find("RINA_SOCKET_NSOCKS"),
              std::string::npos)
        << bad;
  }
}

// A peer killed between collectives: each survivor's next call fails with
// rinaRemoteError naming the peer, well before RINA_TIMEOUT_MS, whether it
// was waiting on the dead peer or on the other survivor (a ring's rank 1
// has sent to rank 2 and waits on rank 0: it finds rank 2 gone among the
// peers it still has to send to).
void killedPeer(const char* shmDisable, size_t count = 1 << 20) {
  ScopedEnv shm("RINA_SHM_DISABLE", shmDisable);
  ScopedEnv timeout("RINA_TIMEOUT_MS", "20000");
  // The survivors stay until both have their error: one that returned and
  // exited would hang up on the other, which could then name it instead.
  ProcessBarrier bothFailed(2);
  auto codes = runProcesses(
      3,
      [count, &bothFailed](int rank, rinaComm_t comm) {
        std::vector<float> buf(count, 1.0f);
        if (rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaFloat32, rinaSum, comm) !=
            rinaSuccess)
          return 1;
        if (rank == 2) raise(SIGKILL);
        auto t0 = std::chrono::steady_clock::now();
        rinaResult_t rc =
            rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaFloat32, rinaSum, comm);
        int64_t took = msSince(t0);
        std::string msg = rinaCommGetLastError(comm);
        fprintf(stderr, "rank %d: rc %d after %lld ms: %s\n", rank, rc,
                static_cast<long long>(took), msg.c_str());
        if (!bothFailed.arriveAndWait(30000)) return 6;
        if (rc != rinaRemoteError) return 2;
        if (msg.find("peer 2") == std::string::npos) return 5;
        // Half the timeout: a survivor that waited it out is told apart
        // from one that found the hang-up (about 100 ms) on any machine.
        if (took > 10000) return 3;
        // A failed communicator stays failed.
        if (rinaAllReduce(buf.data(), buf.data(), 4, rinaFloat32, rinaSum, comm) == rinaSuccess)
          return 4;
        return 0;
      },
      60);
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 0);
  EXPECT_EQ(codes[2], 128 + SIGKILL);
}

TEST(PeerFailure, KilledPeerGivesErrorNotHangShm) { killedPeer("0"); }
// Small: one-shot through the host segment, where nothing but the pair
// connections' liveness sockets tells that a peer is gone.
TEST(PeerFailure, KilledPeerGivesErrorNotHangOneShot) { killedPeer("0", 256); }
// Two-shot through the host segment (1 MiB: two chunks of a slot).
TEST(PeerFailure, KilledPeerGivesErrorNotHangTwoShot) {
  ScopedEnv algo("RINA_ALGO", "twoshot");
  killedPeer("0", 1 << 18);
}
TEST(PeerFailure, KilledPeerGivesErrorNotHangTcp) { killedPeer("1"); }
TEST(PeerFailure, KilledPeerGivesErrorNotHangStripedTcp) {
  ScopedEnv nsocks("RINA_SOCKET_NSOCKS", "3");
  killedPeer("1");
}

TEST(PeerFailure, SilentPeerTimesOutWithContext) {
  ScopedEnv timeout("RINA_TIMEOUT_MS", "700");
  std::latch returned(1);  // rank 0's call is over: rank 1 may leave
  runThreads(2, [&](int rank, rinaComm_t comm) {
    if (rank == 1) {
      returned.wait();  // alive and connected, never joins the collective
      return;
    }
    std::vector<float> buf(1 << 16, 1.0f);
    auto t0 = std::chrono::steady_clock::now();
    rinaResult_t rc = rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaFloat32, rinaSum, comm);
    const int64_t took = msSince(t0);
    returned.count_down();
    EXPECT_EQ(rc, rinaTimeout);
    EXPECT_GE(took, 700);    // it waited the whole timeout
    EXPECT_LT(took, 20000);  // and not much longer (generous: a loaded host)
    std::string msg = rinaCommGetLastError(comm);
    EXPECT_NE(msg.find("rank 0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("allreduce #1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("step"), std::string::npos) << msg;
  });
}

// The same for a small call on one host (one-shot): the message names the
// rank, the peer it waits for and the step.
TEST(PeerFailure, SilentPeerTimesOutInOneShot) {
  ScopedEnv timeout("RINA_TIMEOUT_MS", "700");
  runThreads(3, [](int rank, rinaComm_t comm) {
    if (rank == 1) {
      std::this_thread::sleep_for(Ms(1500));  // never joins the collective
      return;
    }
    std::vector<float> buf(64, 1.0f);
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaFloat32, rinaSum, comm),
              rinaTimeout);
    EXPECT_LT(msSince(t0), 1400);
    std::string msg = rinaCommGetLastError(comm);
    EXPECT_NE(msg.find("rank " + std::to_string(rank) + ": allreduce #1"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("one-shot step 2 of 2: waiting for rank 1 to post"), std::string::npos)
        << msg;
  });
}

// A rank that comes late to a one-shot allreduce: the others yield, spin
// and sleep on the host segment meanwhile (with RINA_SPIN_US=0 they sleep at
// once), and every rank still gets the exact sum.
void lateRankInOneShot(const char* spinUs) {
  ScopedEnv spin("RINA_SPIN_US", spinUs);
  constexpr int kRanks = 3;
  constexpr size_t kCount = 5;
  runThreads(kRanks, [](int rank, rinaComm_t comm) {
    for (int call = 0; call < 3; ++call) {
      if (rank == 1 && call == 1) std::this_thread::sleep_for(Ms(30));
      std::vector<int32_t> send(kCount), recv(kCount, -1);
      for (size_t i = 0; i < kCount; ++i) send[i] = (rank + 1) * 100 + call * 10 + int32_t(i);
      ASSERT_EQ(rinaAllReduce(send.data(), recv.data(), kCount, rinaInt32, rinaSum, comm),
                rinaSuccess)
          << rinaCommGetLastError(comm);
      for (size_t i = 0; i < kCount; ++i) {
        int32_t want = 0;
        for (int r = 0; r < kRanks; ++r) want += (r + 1) * 100 + call * 10 + int32_t(i);
        EXPECT_EQ(recv[i], want) << "rank " << rank << " call " << call << " element " << i;
      }
    }
  });
}

TEST(PeerFailure, LateRankInOneShotGetsTheExactSum) { lateRankInOneShot("200"); }
TEST(PeerFailure, LateRankInOneShotGetsTheExactSumWithoutSpinning) { lateRankInOneShot("0"); }

TEST(PeerFailure, AbortUnblocksACallInProgress) {
  std::latch returned(1);  // rank 0's calls are over: rank 1 may leave
  runThreads(2, [&](int rank, rinaComm_t comm) {
    if (rank == 1) {
      returned.wait();  // alive and connected, never joins the collective
      return;
    }
    // Most likely inside the call by then; an abort that comes first must
    // give the same answer.
    std::thread aborter([comm] {
      std::this_thread::sleep_for(Ms(200));
      EXPECT_EQ(rinaCommAbort(comm), rinaSuccess);
    });
    std::vector<float> buf(1 << 18, 1.0f);
    auto t0 = std::chrono::steady_clock::now();
    // Without the abort it would wait for RINA_TIMEOUT_MS and give rinaTimeout.
    EXPECT_EQ(rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaFloat32, rinaSum, comm),
              rinaAborted);
    EXPECT_LT(msSince(t0), 20000);
    aborter.join();
    EXPECT_EQ(rinaAllReduce(buf.data(), buf.data(), 1, rinaFloat32, rinaSum, comm), rinaAborted);
    returned.count_down();
  });
}

TEST(PeerFailure, MismatchedCallsAreReported) {
  runThreads(2, [](int rank, rinaComm_t comm) {
    std::vector<int32_t> buf(1000, 1);
    size_t count = rank == 0 ? 1000 : 999;
    EXPECT_EQ(rinaAllReduce(buf.data(), buf.data(), count, rinaInt32, rinaSum, comm),
              rinaInvalidUsage);
    std::string msg = rinaCommGetLastError(comm);
    EXPECT_NE(msg.find("calls do not match"), std::string::npos) << msg;
    EXPECT_NE(msg.find(rank == 0 ? "count 999" : "count 1000"), std::string::npos) << msg;
  });
}

TEST(Bootstrap, WrongCommIdIsRejectedByTheRoot) {
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
  rinaUniqueId wrong = id;
  bootstrap::IdData data;
  std::memcpy(&data, wrong.internal, sizeof(data));
  data.commId ^= 1;
  std::memcpy(wrong.internal, &data, sizeof(data));
  ScopedEnv timeout("RINA_TIMEOUT_MS", "5000");
  std::thread intruder([&] {
    rinaComm_t comm = nullptr;
    EXPECT_EQ(rinaCommInitRank(&comm, 2, wrong, 1), rinaInvalidUsage);
    EXPECT_NE(std::string(rinaCommGetLastError(nullptr)).find("communicator id does not match"),
              std::string::npos)
        << rinaCommGetLastError(nullptr);
  });
  intruder.join();
  // The root keeps serving the right ranks.
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      rinaComm_t comm = nullptr;
      ASSERT_EQ(rinaCommInitRank(&comm, 2, id, r), rinaSuccess) << rinaCommGetLastError(nullptr);
      int32_t v = r + 1;
      EXPECT_EQ(rinaAllReduce(&v, &v, 1, rinaInt32, rinaSum, comm), rinaSuccess);
      EXPECT_EQ(v, 3);
      rinaCommDestroy(comm);
    });
  }
  for (auto& t : ranks) t.join();
}

TEST(Bootstrap, GarbageConnectionsDoNotDisturbTheRoot) {
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
  bootstrap::IdData data;
  std::memcpy(&data, id.internal, sizeof(data));
  Fd junk;
  ASSERT_TRUE(connectTo(data.root, deadlineAfterMs(2000), &junk).ok());
  char garbage[200];
  std::memset(garbage, 0xab, sizeof(garbage));
  ASSERT_TRUE(sendAll(junk.get(), garbage, sizeof(garbage), deadlineAfterMs(2000)).ok());
  std::vector<std::thread> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.emplace_back([&, r] {
      rinaComm_t comm = nullptr;
      ASSERT_EQ(rinaCommInitRank(&comm, 3, id, r), rinaSuccess) << rinaCommGetLastError(nullptr);
      rinaCommDestroy(comm);
    });
  }
  for (auto& t : ranks) t.join();
}

TEST(Bootstrap, CommIdFromEnvironment) {
  // Find a free port, then let rank 0 serve RINA_COMM_ID on it.
  PackedAddr any;
  ASSERT_TRUE(parseHostPort("127.0.0.1:0", &any).ok());
  Fd probe;
  PackedAddr bound;
  ASSERT_TRUE(listenOn(any, true, &probe, &bound).ok());
  std::string addr = bound.str();
  probe.reset();
  ScopedEnv env("RINA_COMM_ID", addr.c_str());
  rinaUniqueId unused;
  std::memset(&unused, 0, sizeof(unused));
  std::vector<std::thread> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.emplace_back([&, r] {
      rinaComm_t comm = nullptr;
      ASSERT_EQ(rinaCommInitRank(&comm, 3, unused, r), rinaSuccess)
          << rinaCommGetLastError(nullptr);
      int64_t v = 10 * (r + 1);
      EXPECT_EQ(rinaAllReduce(&v, &v, 1, rinaInt64, rinaMax, comm), rinaSuccess);
      EXPECT_EQ(v, 30);
      rinaCommDestroy(comm);
    });
  }
  for (auto& t : ranks) t.join();
}

}  // namespace
}  // namespace rina::testing
