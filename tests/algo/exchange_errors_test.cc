// Every error path of the point-to-point, group, all-to-all and rooted
// calls, each with the input that triggers it: bad arguments (refused at
// once, the communicator still usable), messages and blocks whose counts,
// types or tags do not match (reported by the receiver, and by the sender
// too where the protocol lets it know), a receive nobody answers (timeout
// naming the peer), and a peer that dies: between messages, in the middle
// of one (at a byte the test chooses), and before it answers a large one.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "rank_harness.h"

namespace rina::testing {
namespace {

bool contains(const char* text, const std::string& part) {
  return std::string(text).find(part) != std::string::npos;
}

TEST(ExchangeErrors, BadArgumentsAreRefusedAndTheCommunicatorStaysUsable) {
  runThreads(2, [](int rank, rinaComm_t comm) {
    float x[8] = {};
    const int peer = 1 - rank;
    EXPECT_EQ(rinaSend(x, 1, rinaFloat32, 2, comm), rinaInvalidArgument);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm),
                         "rinaSend: rank " + std::to_string(rank) + ": peer 2 is outside [0, 2)"))
        << rinaCommGetLastError(comm);
    EXPECT_EQ(rinaRecv(x, 1, rinaFloat32, -2, comm), rinaInvalidArgument);
    EXPECT_EQ(rinaRecv(x, 1, rinaFloat32, rank, comm), rinaInvalidArgument);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "a receive from itself"))
        << rinaCommGetLastError(comm);
    EXPECT_EQ(rinaSend(x, 1, rinaFloat32, rank, comm), rinaInvalidArgument);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "a send to itself"));
    EXPECT_EQ(rinaSend(x, 1, rinaFloat32, RINA_ANY_PEER, comm), rinaInvalidArgument);
    EXPECT_EQ(rinaSendTagged(x, 1, rinaFloat32, peer, -3, comm), rinaInvalidArgument);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "tag -3 is negative"));
    EXPECT_EQ(rinaSendTagged(x, 1, rinaFloat32, peer, RINA_ANY_TAG, comm), rinaInvalidArgument);
    EXPECT_EQ(rinaRecvTagged(x, 1, rinaFloat32, peer, -5, nullptr, comm), rinaInvalidArgument);
    EXPECT_EQ(rinaSend(nullptr, 1, rinaFloat32, peer, comm), rinaInvalidArgument);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "rinaSend: sendbuff is NULL with count 1"));
    EXPECT_EQ(rinaRecv(x, 1, static_cast<rinaDataType_t>(rinaNumTypes), peer, comm),
              rinaInvalidArgument);
    EXPECT_EQ(rinaSend(x, 1, rinaFloat32, peer, nullptr), rinaInvalidArgument);

    EXPECT_EQ(rinaGroupStart(), rinaSuccess);
    EXPECT_EQ(rinaRecvTagged(x, 1, rinaFloat32, RINA_ANY_PEER, 0, nullptr, comm), rinaInvalidUsage);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "cannot be part of a group"));
    EXPECT_EQ(rinaSend(x, 1, rinaFloat32, 5, comm), rinaInvalidArgument);
    EXPECT_EQ(rinaGroupEnd(), rinaSuccess);  // nothing valid was posted
    EXPECT_EQ(rinaGroupEnd(), rinaInvalidUsage);
    EXPECT_TRUE(contains(rinaCommGetLastError(nullptr), "no rinaGroupStart"));

    std::vector<size_t> counts(2, 1), displs{0, 1}, bad{1, 2};
    EXPECT_EQ(rinaAllToAllv(x, nullptr, displs.data(), x + 4, counts.data(), displs.data(),
                            rinaFloat32, comm),
              rinaInvalidArgument);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "sendcounts is NULL"));
    EXPECT_EQ(rinaAllToAllv(x, counts.data(), displs.data(), x + 4, counts.data(), nullptr,
                            rinaFloat32, comm),
              rinaInvalidArgument);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "rdispls is NULL"));
    std::vector<size_t> selfMismatch = counts;
    selfMismatch[rank] = 2;
    EXPECT_EQ(rinaAllToAllv(x, selfMismatch.data(), displs.data(), x + 4, counts.data(),
                            displs.data(), rinaFloat32, comm),
              rinaInvalidArgument);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "the rank's block to itself"));
    std::vector<size_t> huge{SIZE_MAX / 2, 1};
    EXPECT_EQ(rinaAllToAllv(x, huge.data(), displs.data(), x + 4, huge.data(), displs.data(),
                            rinaFloat32, comm),
              rinaInvalidArgument);
    EXPECT_EQ(rinaAllToAllv(nullptr, counts.data(), displs.data(), x + 4, counts.data(),
                            displs.data(), rinaFloat32, comm),
              rinaInvalidArgument);
    EXPECT_EQ(rinaAllToAll(x, nullptr, 1, rinaFloat32, comm), rinaInvalidArgument);
    EXPECT_EQ(rinaReduce(x, x, 1, rinaFloat32, rinaSum, 2, comm), rinaInvalidArgument);
    EXPECT_TRUE(contains(rinaCommGetLastError(comm), "rinaReduce: root 2 is outside [0, 2)"));
    EXPECT_EQ(rinaReduce(x, x, 1, rinaFloat32, rinaNumOps, 0, comm), rinaInvalidArgument);
    EXPECT_EQ(rinaGather(x, nullptr, 1, rinaFloat32, rank, comm), rinaInvalidArgument);
    EXPECT_EQ(rinaScatter(nullptr, x, 1, rinaFloat32, rank, comm), rinaInvalidArgument);
    EXPECT_EQ(rinaScatter(x, x, 1, rinaFloat32, -1, comm), rinaInvalidArgument);

    // None of that broke anything: a real exchange still works.
    float out[2] = {float(rank), float(rank) + 10}, in[2] = {};
    ASSERT_EQ(rinaAllToAll(out, in, 1, rinaFloat32, comm), rinaSuccess)
        << rinaCommGetLastError(comm);
    EXPECT_EQ(in[peer], float(peer) + (rank == 1 ? 10 : 0));
    ASSERT_EQ(rinaGroupStart(), rinaSuccess);
    ASSERT_EQ(rinaSend(out, 2, rinaFloat32, peer, comm), rinaSuccess);
    ASSERT_EQ(rinaRecv(in, 2, rinaFloat32, peer, comm), rinaSuccess);
    ASSERT_EQ(rinaGroupEnd(), rinaSuccess) << rinaCommGetLastError(comm);
    EXPECT_EQ(in[1], float(peer) + 10);
  });
}

// A small (eager) message with the wrong count: the receiver says what
// came and what it expected.
TEST(ExchangeErrors, EagerCountMismatchIsReportedByTheReceiver) {
  runThreads(2, [](int rank, rinaComm_t comm) {
    int32_t x[16] = {};
    if (rank == 0) {
      EXPECT_EQ(rinaSend(x, 10, rinaInt32, 1, comm), rinaSuccess);
    } else {
      EXPECT_EQ(rinaRecv(x, 12, rinaInt32, 0, comm), rinaInvalidUsage);
      const char* e = rinaCommGetLastError(comm);
      EXPECT_TRUE(contains(e,
                           "rank 1: message #1 from rank 0 does not match its receive: rank 0 "
                           "sends 10 int32 with tag 0, this rank expects 12 int32"))
          << e;
      // The communicator is now broken for every call.
      EXPECT_EQ(rinaRecv(x, 10, rinaInt32, 0, comm), rinaInvalidUsage);
      EXPECT_TRUE(contains(rinaCommGetLastError(comm), "communicator failed earlier"));
    }
  });
}

// A rendezvous-sized message with the wrong type: the receiver refuses it,
// so the sender reports the mismatch too (over shared memory and TCP).
TEST(ExchangeErrors, RendezvousTypeMismatchIsReportedByBothSides) {
  for (bool tcp : {false, true}) {
    config::Options options;
    options.shmDisable = tcp;
    runThreads(2, options, [tcp](int rank, rinaComm_t comm) {
      const size_t count = tcp ? (1 << 20) : (1 << 16);  // 4 MiB / 256 KiB of 4-byte elements
      std::vector<float> x(count);
      if (rank == 0) {
        EXPECT_EQ(rinaSend(x.data(), count, rinaFloat32, 1, comm), rinaInvalidUsage);
        const char* e = rinaCommGetLastError(comm);
        EXPECT_TRUE(contains(e,
                             "rank 0: send #1 to rank 1 does not match its receive: this rank "
                             "sends " +
                                 std::to_string(count) + " float32"))
            << e;
        EXPECT_TRUE(contains(e, "rank 1 expects " + std::to_string(count) + " int32")) << e;
      } else {
        EXPECT_EQ(rinaRecv(x.data(), count, rinaInt32, 0, comm), rinaInvalidUsage);
        EXPECT_TRUE(contains(rinaCommGetLastError(comm), "does not match its receive"))
            << rinaCommGetLastError(comm);
      }
    });
  }
}

// A count that does not match on a message both sides would copy (5 MiB
// over shared memory, above RINA_P2P_COPY_BYTES): the receiver refuses it
// before copying anything, so both report both counts.
TEST(ExchangeErrors, SharedCopyCountMismatchIsReportedByBothSides) {
  runThreads(2, [](int rank, rinaComm_t comm) {
    const size_t count = 5 << 18;  // 5 MiB of float32
    std::vector<float> x(count + 1, 5.0f);
    if (rank == 0) {
      EXPECT_EQ(rinaSend(x.data(), count, rinaFloat32, 1, comm), rinaInvalidUsage);
      const char* e = rinaCommGetLastError(comm);
      EXPECT_TRUE(contains(e, "this rank sends " + std::to_string(count) +
                                  " float32 with tag 0, rank 1 expects " +
                                  std::to_string(count + 1) + " float32"))
          << e;
    } else {
      std::vector<float> y(count + 1, 0.0f);
      EXPECT_EQ(rinaRecv(y.data(), count + 1, rinaFloat32, 0, comm), rinaInvalidUsage);
      const char* e = rinaCommGetLastError(comm);
      EXPECT_TRUE(contains(e, "rank 0 sends " + std::to_string(count) +
                                  " float32 with tag 0, this rank expects " +
                                  std::to_string(count + 1) + " float32"))
          << e;
      EXPECT_EQ(y[0], 0.0f) << "a refused message was copied";
    }
  });
}

TEST(ExchangeErrors, TagMismatchIsReported) {
  runThreads(2, [](int rank, rinaComm_t comm) {
    int32_t x[4] = {};
    if (rank == 0) {
      EXPECT_EQ(rinaSendTagged(x, 4, rinaInt32, 1, 7, comm), rinaSuccess);
    } else {
      EXPECT_EQ(rinaRecvTagged(x, 4, rinaInt32, 0, 8, nullptr, comm), rinaInvalidUsage);
      EXPECT_TRUE(contains(rinaCommGetLastError(comm),
                           "with tag 7, this rank expects 4 int32 "
                           "with tag 8"))
          << rinaCommGetLastError(comm);
    }
  });
}

// rinaAllToAllv splits that do not add up between two ranks: both report
// the pair's counts (shared memory and TCP).
TEST(ExchangeErrors, AllToAllvPairMismatchIsReportedByBothRanks) {
  for (bool tcp : {false, true}) {
    config::Options options;
    options.shmDisable = tcp;
    runThreads(2, options, [](int rank, rinaComm_t comm) {
      std::vector<float> send(16), recv(16);
      std::vector<size_t> sc{2, 5}, sd{0, 2}, rc{2, 5}, rd{0, 2};
      if (rank == 1) {
        sc = {6, 2};  // rank 0 expects 5 from rank 1
        rc = {5, 2};
        sd = {2, 0};
        rd = {2, 0};
      }
      EXPECT_EQ(rinaAllToAllv(send.data(), sc.data(), sd.data(), recv.data(), rc.data(), rd.data(),
                              rinaFloat32, comm),
                rinaInvalidUsage);
      const char* e = rinaCommGetLastError(comm);
      if (rank == 0) {
        EXPECT_TRUE(contains(e,
                             "counts do not match: rank 1 sends 6 elements to this rank and "
                             "expects 5 from it; this rank expects 5 from it and sends 5"))
            << e;
      } else {
        EXPECT_TRUE(contains(e,
                             "counts do not match: rank 0 sends 5 elements to this rank and "
                             "expects 5 from it; this rank expects 5 from it and sends 6"))
            << e;
      }
    });
  }
}

// Calls that differ across ranks (a gather against a scatter, or another
// root) are reported as for any collective.
TEST(ExchangeErrors, DifferentRootedCallsAreReported) {
  config::Options options;
  options.timeoutMs = 5000;  // rank 2 waits for rank 0, which stopped at the error
  runThreads(3, options, [](int rank, rinaComm_t comm) {
    std::vector<float> a(3 * 4), b(3 * 4);
    rinaResult_t rc = rank == 1 ? rinaScatter(a.data(), b.data(), 4, rinaFloat32, 0, comm)
                                : rinaGather(a.data(), b.data(), 4, rinaFloat32, 0, comm);
    if (rank != 2) {  // rank 2's gather pairs only with rank 0, which agrees
      EXPECT_EQ(rc, rinaInvalidUsage) << "rank " << rank;
      EXPECT_TRUE(contains(rinaCommGetLastError(comm), "calls do not match"))
          << rinaCommGetLastError(comm);
    }
  });
}

// A receive nobody answers ends at the timeout, naming the peer.
TEST(ExchangeErrors, UnansweredReceiveTimesOut) {
  config::Options options;
  options.timeoutMs = 400;
  runThreads(2, options, [](int rank, rinaComm_t comm) {
    float x[4];
    if (rank == 1) {
      EXPECT_EQ(rinaRecv(x, 4, rinaFloat32, 0, comm), rinaTimeout);
      EXPECT_TRUE(contains(rinaCommGetLastError(comm), "waiting for rank 0 to open its channel"))
          << rinaCommGetLastError(comm);
    }
  });
}

// A peer that dies while this rank waits for its next message.
TEST(ExchangeErrors, DeadPeerFailsTheReceive) {
  std::vector<int> codes = runProcesses(
      2,
      [](int rank, rinaComm_t comm) -> int {
        float x[4] = {1, 2, 3, 4};
        if (rank == 1) {
          if (rinaSend(x, 4, rinaFloat32, 0, comm) != rinaSuccess) return 20;
          _exit(0);  // gone without a word
        }
        if (rinaRecv(x, 4, rinaFloat32, 1, comm) != rinaSuccess) return 21;
        const rinaResult_t rc = rinaRecv(x, 4, rinaFloat32, 1, comm);
        if (rc != rinaRemoteError) return 22;
        return contains(rinaCommGetLastError(comm), "peer 1 hung up") ? 0 : 23;
      },
      60);
  EXPECT_EQ(codes[0], 0);
}

// A sender that dies in the middle of a message: 4 MiB sent eagerly into a
// 1 MiB channel (RINA_P2P_EAGER_BYTES above it), so it cannot have finished
// when the receiver kills it. The receive fails naming the peer, no hang.
TEST(ExchangeErrors, SenderDyingMidMessageFailsTheReceive) {
  ScopedEnv eager("RINA_P2P_EAGER_BYTES", "64M");
  ScopedEnv timeout("RINA_TIMEOUT_MS", "20000");
  // The sender's pid, where the receiver can read it (mapped before the fork).
  auto* sender = static_cast<std::atomic<pid_t>*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(sender, MAP_FAILED);
  new (sender) std::atomic<pid_t>(0);
  std::vector<int> codes = runProcesses(
      2,
      [sender](int rank, rinaComm_t comm) -> int {
        std::vector<char> x(4 << 20, 7);
        if (rank == 1) {
          // A first message opens the channel, so the receiver finds it.
          if (rinaSend(x.data(), 8, rinaInt8, 0, comm) != rinaSuccess) return 29;
          sender->store(getpid());
          rinaSend(x.data(), x.size(), rinaInt8, 0, comm);
          return 30;  // cannot finish: nobody reads past the channel's 1 MiB
        }
        for (long spins = 0; sender->load() == 0; ++spins) {
          if (spins > 4000000000L) return 31;
          sched_yield();
        }
        kill(sender->load(), SIGKILL);
        if (rinaRecv(x.data(), 8, rinaInt8, 1, comm) != rinaSuccess) return 34;
        const rinaResult_t rc = rinaRecv(x.data(), x.size(), rinaInt8, 1, comm);
        if (rc != rinaRemoteError) return 32;
        return contains(rinaCommGetLastError(comm), "peer 1 hung up") ? 0 : 33;
      },
      60);
  munmap(sender, 4096);
  EXPECT_EQ(codes[0], 0) << "receiver";
  EXPECT_EQ(codes[1], 128 + SIGKILL) << "sender";
}

// A receiver that dies after its first message: the sender of the next,
// answered one waits for an answer that never comes, and fails naming it;
// 1 MiB would stream through the channel, 4 MiB be copied between the
// buffers (the defaults of RINA_P2P_EAGER_BYTES and RINA_P2P_COPY_BYTES).
TEST(ExchangeErrors, ReceiverDyingFailsTheLargeSend) {
  for (size_t count : {size_t{1} << 18, size_t{1} << 20}) {
    SCOPED_TRACE(count);
    std::vector<int> codes = runProcesses(
        2,
        [count](int rank, rinaComm_t comm) -> int {
          std::vector<float> x(count, 1.0f);
          if (rank == 1) {
            if (rinaRecv(x.data(), 4, rinaFloat32, 0, comm) != rinaSuccess) return 40;
            _exit(0);  // gone without a word
          }
          if (rinaSend(x.data(), 4, rinaFloat32, 1, comm) != rinaSuccess) return 41;
          const rinaResult_t rc = rinaSend(x.data(), x.size(), rinaFloat32, 1, comm);
          if (rc != rinaRemoteError) return 42;
          return contains(rinaCommGetLastError(comm), "peer 1 hung up") ? 0 : 43;
        },
        60);
    EXPECT_EQ(codes[0], 0);
  }
}

// A receiver that dies in the middle of a large message, at a byte the test
// chooses (the page at 3/4 of it, made a fault that kills the receiver):
// 3 MiB streams through the 1 MiB channel, 8 MiB is copied straight between
// the two buffers by both ranks (the receiver reads the first 256 KiB, then
// both claim chunks). Either way the sender has written part of the message
// and fails naming the peer, without hanging.
TEST(ExchangeErrors, ReceiverDyingMidMessageFailsTheSend) {
  if (!userfaultfdWorks()) GTEST_SKIP() << "no userfaultfd in this kernel or sandbox";
  ScopedEnv timeout("RINA_TIMEOUT_MS", "20000");
  for (size_t bytes : {size_t{3} << 20, size_t{8} << 20}) {
    SCOPED_TRACE(bytes);
    std::vector<int> codes = runProcesses(
        2,
        [bytes](int rank, rinaComm_t comm) -> int {
          if (rank == 1) {
            float first[4];
            if (rinaRecv(first, 4, rinaFloat32, 0, comm) != rinaSuccess) return 60;
            const size_t page = static_cast<size_t>(getpagesize());
            auto* buf = static_cast<char*>(
                mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
            if (buf == MAP_FAILED) return 61;
            if (!dieWhenWritten(buf + bytes / 4 * 3 / page * page)) return 62;
            rinaRecv(buf, bytes, rinaUint8, 0, comm);
            return 63;  // cannot finish: the fault's handler kills this process
          }
          std::vector<char> x(bytes, 5);
          if (rinaSend(x.data(), 4, rinaFloat32, 1, comm) != rinaSuccess) return 64;
          const rinaResult_t rc = rinaSend(x.data(), bytes, rinaUint8, 1, comm);
          if (rc != rinaRemoteError) return 65;
          return contains(rinaCommGetLastError(comm), "peer 1 hung up") ? 0 : 66;
        },
        60);
    EXPECT_EQ(codes[0], 0) << "sender";
    EXPECT_EQ(codes[1], 128 + SIGKILL) << "receiver";
  }
}

}  // namespace
}  // namespace rina::testing
