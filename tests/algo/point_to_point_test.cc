// rinaSend / rinaRecv and groups: payloads against what was sent, at sizes
// on both sides of every protocol threshold (eager, the copy out of the
// sender's memory and the copy both sides share over shared memory,
// rendezvous over TCP: each cut-over, one byte either side, from buffers
// that are not aligned), orders that deadlock without groups (a ring, both
// ends sending first), a receiver that posts after the sender has sent,
// receives from any peer, tags, collectives inside a group, forked ranks,
// and statistics.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "rank_harness.h"

namespace rina::testing {
namespace {

struct Setup {
  int nranks;
  bool tcp;
};

void PrintTo(const Setup& s, std::ostream* os) {
  *os << s.nranks << " ranks over " << (s.tcp ? "TCP" : "shm");
}

std::string setupName(const ::testing::TestParamInfo<Setup>& p) {
  return std::to_string(p.param.nranks) + "ranks" + (p.param.tcp ? "Tcp" : "Shm");
}

// Byte i of message `seq` from rank `from` to rank `to`.
uint8_t messageByte(int from, int to, int seq, size_t i) {
  return static_cast<uint8_t>(from * 31 + to * 17 + seq * 5 + i * 3 + (i >> 9));
}

std::vector<uint8_t> messageOf(int from, int to, int seq, size_t bytes) {
  std::vector<uint8_t> m(bytes);
  for (size_t i = 0; i < bytes; ++i) m[i] = messageByte(from, to, seq, i);
  return m;
}

// Eager, the copy out of the sender's memory (>= 32 KiB over shm), the
// shared copy (>= 1 MiB over shm) and rendezvous over TCP (>= 1 MiB).
const size_t kSizes[] = {0, 8, 16, 17, 4096, 32767, 32768, 200000, (1 << 20) + 3, 5 << 20};

// Every cut-over of these knobs and one byte either side, and the shared
// copy's chunk edges (256 KiB: the part the receiver copies alone first).
std::vector<size_t> cutOverSizes(const config::Options& o) {
  std::vector<size_t> sizes{1, 55, 56, 57};  // 56: a header and its payload fill one line
  const size_t chunk = 256 << 10;
  for (int64_t k : {o.p2pEagerBytes, o.p2pCopyBytes, o.p2pRendezvousBytes}) {
    for (int64_t d : {-1, 0, 1}) sizes.push_back(static_cast<size_t>(k + d));
  }
  for (size_t s : {chunk + 1, 2 * chunk - 1, 2 * chunk + 1, 9 * chunk + 7}) sizes.push_back(s);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// Rank 0 and rank 1 send each size back and forth (blocking calls, so the
// shared copy runs), from and into buffers 1 and 3 bytes past an aligned
// address; every byte is checked against the pattern sent.
void pingPongEverySize(int rank, rinaComm_t comm, const std::vector<size_t>& sizes) {
  const int peer = 1 - rank;
  int seq = 0;
  for (size_t bytes : sizes) {
    ++seq;
    std::vector<uint8_t> outBuf(bytes + 1), inBuf(bytes + 3, 0xEE);
    const std::vector<uint8_t> mine = messageOf(rank, peer, seq, bytes);
    std::copy(mine.begin(), mine.end(), outBuf.begin() + 1);
    for (int leg = 0; leg < 2; ++leg) {
      if ((leg == 0) == (rank == 0)) {
        ASSERT_EQ(rinaSend(outBuf.data() + 1, bytes, rinaUint8, peer, comm), rinaSuccess)
            << rinaCommGetLastError(comm);
      } else {
        ASSERT_EQ(rinaRecv(inBuf.data() + 3, bytes, rinaUint8, peer, comm), rinaSuccess)
            << rinaCommGetLastError(comm);
      }
    }
    const std::vector<uint8_t> want = messageOf(peer, rank, seq, bytes);
    ASSERT_TRUE(std::equal(want.begin(), want.end(), inBuf.begin() + 3))
        << "rank " << rank << ", " << bytes << " bytes";
    ASSERT_EQ(inBuf[2], 0xEE) << "a byte before the buffer was written, " << bytes << " bytes";
  }
}

class PointToPoint : public ::testing::TestWithParam<Setup> {
 protected:
  void SetUp() override { options_.shmDisable = GetParam().tcp; }
  config::Options options_;
};

// Rank 0 sends each size to every other rank, in blocking calls; they
// receive in the same order.
TEST_P(PointToPoint, BlockingSendRecvEverySize) {
  const int n = GetParam().nranks;
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    int seq = 0;
    for (size_t bytes : kSizes) {
      ++seq;
      if (rank == 0) {
        for (int p = 1; p < n; ++p) {
          std::vector<uint8_t> m = messageOf(0, p, seq, bytes);
          ASSERT_EQ(rinaSend(m.data(), bytes, rinaUint8, p, comm), rinaSuccess)
              << rinaCommGetLastError(comm);
        }
      } else {
        std::vector<uint8_t> got(bytes, 0xEE);
        ASSERT_EQ(rinaRecv(got.data(), bytes, rinaUint8, 0, comm), rinaSuccess)
            << rinaCommGetLastError(comm);
        ASSERT_EQ(got, messageOf(0, rank, seq, bytes)) << "rank " << rank << " size " << bytes;
      }
    }
  });
}

TEST_P(PointToPoint, EveryCutOverUnaligned) {
  if (GetParam().nranks != 2) GTEST_SKIP() << "one pair is enough";
  runThreads(2, options_, [&](int rank, rinaComm_t comm) {
    pingPongEverySize(rank, comm, cutOverSizes(options_));
  });
}

// The same with the cut-overs moved (answered and streamed from 1000 bytes,
// a straight copy between the buffers from just past its first chunk).
TEST_P(PointToPoint, EveryCutOverOfOtherKnobs) {
  if (GetParam().nranks != 2) GTEST_SKIP() << "one pair is enough";
  options_.p2pEagerBytes = 1000;
  options_.p2pCopyBytes = (256 << 10) + 1;
  options_.p2pRendezvousBytes = 5000;
  runThreads(2, options_, [&](int rank, rinaComm_t comm) {
    pingPongEverySize(rank, comm, cutOverSizes(options_));
  });
}

// The receiver posts its receive only once the sender is in (or, eager,
// through with) its send: an eager message waits in the channel, a large
// one's sender waits for the answer.
TEST_P(PointToPoint, ReceiverPostsLate) {
  if (GetParam().nranks != 2) GTEST_SKIP() << "one pair is enough";
  std::atomic<int> sent{0}, sending{0};
  runThreads(2, options_, [&](int rank, rinaComm_t comm) {
    int seq = 300;
    for (size_t bytes : {size_t{100}, size_t{20000}, size_t{100000}, size_t{3} << 20}) {
      ++seq;
      const bool eager = bytes < static_cast<size_t>(GetParam().tcp ? options_.p2pRendezvousBytes
                                                                    : options_.p2pEagerBytes);
      if (rank == 0) {
        std::vector<uint8_t> m = messageOf(0, 1, seq, bytes);
        sending.store(seq);
        ASSERT_EQ(rinaSend(m.data(), bytes, rinaUint8, 1, comm), rinaSuccess)
            << rinaCommGetLastError(comm);
        sent.store(seq);
      } else {
        // Eager: the send returns before this receive exists. Else the
        // sender is inside its send, waiting for this rank's answer.
        std::atomic<int>& mark = eager ? sent : sending;
        for (long spins = 0; mark.load() < seq; ++spins) {
          ASSERT_LT(spins, 4000000000L) << "rank 0 never got to its send of " << bytes;
          std::this_thread::yield();
        }
        std::vector<uint8_t> got(bytes, 0xEE);
        ASSERT_EQ(rinaRecv(got.data(), bytes, rinaUint8, 0, comm), rinaSuccess)
            << rinaCommGetLastError(comm);
        ASSERT_EQ(got, messageOf(0, 1, seq, bytes)) << bytes << " bytes";
      }
    }
  });
}

// Many short messages, more than a FIFO's lap (over shared memory the
// sender starts laps early while the receiver keeps up, and goes round
// while it does not): a ping-pong, then a burst the receiver starts taking
// only once 1000 of its messages are sent, then a ping-pong again; sizes
// 1-300 bytes, from and into unaligned buffers, every byte checked.
TEST_P(PointToPoint, ShortMessagesAcrossLaps) {
  if (GetParam().nranks != 2) GTEST_SKIP() << "one pair is enough";
  std::atomic<int> burstSent{0};
  runThreads(2, options_, [&](int rank, rinaComm_t comm) {
    const int peer = 1 - rank;
    std::vector<uint8_t> out(302), in(304);
    int seq = 1000;
    auto send = [&](int to, size_t bytes) {
      const std::vector<uint8_t> m = messageOf(rank, to, seq, bytes);
      std::copy(m.begin(), m.end(), out.begin() + 1);
      ASSERT_EQ(rinaSend(out.data() + 1, bytes, rinaUint8, to, comm), rinaSuccess)
          << rinaCommGetLastError(comm);
    };
    auto recv = [&](int from, size_t bytes) {
      ASSERT_EQ(rinaRecv(in.data() + 3, bytes, rinaUint8, from, comm), rinaSuccess)
          << rinaCommGetLastError(comm);
      const std::vector<uint8_t> want = messageOf(from, rank, seq, bytes);
      ASSERT_TRUE(std::equal(want.begin(), want.end(), in.begin() + 3))
          << "rank " << rank << ", message " << seq << ", " << bytes << " bytes";
    };
    auto pingPong = [&](int rounds) {
      for (int i = 0; i < rounds; ++i, ++seq) {
        const size_t bytes = 1 + static_cast<size_t>(seq * 37 % 300);
        if (rank == 0) {
          send(peer, bytes);
          recv(peer, bytes);
        } else {
          recv(peer, bytes);
          send(peer, bytes);
        }
      }
    };
    pingPong(3000);
    for (int i = 0; i < 3000; ++i, ++seq) {
      const size_t bytes = 1 + static_cast<size_t>(seq * 53 % 300);
      if (rank == 0) {
        send(peer, bytes);
        burstSent.store(i + 1);
      } else {
        for (long spins = 0; i == 0 && burstSent.load() < 1000; ++spins) {
          ASSERT_LT(spins, 4000000000L) << "rank 0 never sent 1000 messages";
          std::this_thread::yield();
        }
        recv(peer, bytes);
      }
    }
    pingPong(3000);
  });
}

// Every rank sends to rank + 1 and receives from rank - 1 in one group, and
// the same with both neighbours at once: large messages would deadlock if
// the sends ran before the receives.
TEST_P(PointToPoint, RingInAGroup) {
  const int n = GetParam().nranks;
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    int seq = 100;
    for (size_t bytes : kSizes) {
      ++seq;
      std::vector<uint8_t> toNext = messageOf(rank, next, seq, bytes);
      std::vector<uint8_t> toPrev = messageOf(rank, prev, seq, bytes);
      std::vector<uint8_t> fromPrev(bytes, 0xEE), fromNext(bytes, 0xEE);
      ASSERT_EQ(rinaGroupStart(), rinaSuccess);
      ASSERT_EQ(rinaSend(toNext.data(), bytes, rinaUint8, next, comm), rinaSuccess);
      ASSERT_EQ(rinaSend(toPrev.data(), bytes, rinaUint8, prev, comm), rinaSuccess);
      ASSERT_EQ(rinaRecv(fromPrev.data(), bytes, rinaUint8, prev, comm), rinaSuccess);
      ASSERT_EQ(rinaRecv(fromNext.data(), bytes, rinaUint8, next, comm), rinaSuccess);
      ASSERT_EQ(rinaGroupEnd(), rinaSuccess) << rinaCommGetLastError(comm);
      if (n == 2) {
        // prev == next: the two messages each way match in posting order.
        ASSERT_EQ(fromPrev, messageOf(prev, rank, seq, bytes));
        ASSERT_EQ(fromNext, messageOf(next, rank, seq, bytes));
      } else {
        ASSERT_EQ(fromPrev, messageOf(prev, rank, seq, bytes)) << "size " << bytes;
        ASSERT_EQ(fromNext, messageOf(next, rank, seq, bytes)) << "size " << bytes;
      }
    }
  });
}

// Several messages to one peer in one group keep their order, with sizes
// mixing the protocols; a collective posted in the same group runs after.
TEST_P(PointToPoint, OrderPerPeerAndCollectiveInGroup) {
  const int n = GetParam().nranks;
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    const size_t sizes[] = {3, 40000, 100, (1 << 20) + 64, 9};
    std::vector<std::vector<uint8_t>> out, in;
    ASSERT_EQ(rinaGroupStart(), rinaSuccess);
    ASSERT_EQ(rinaGroupStart(), rinaSuccess);  // nested: the outer end runs them
    for (int p = 0; p < n; ++p) {
      if (p == rank) continue;
      for (size_t k = 0; k < 5; ++k) {
        out.push_back(messageOf(rank, p, static_cast<int>(k), sizes[k]));
        in.emplace_back(sizes[k], 0xEE);
      }
    }
    size_t at = 0;
    for (int p = 0; p < n; ++p) {
      if (p == rank) continue;
      for (size_t k = 0; k < 5; ++k, ++at) {
        ASSERT_EQ(rinaRecv(in[at].data(), sizes[k], rinaUint8, p, comm), rinaSuccess);
        ASSERT_EQ(rinaSend(out[at].data(), sizes[k], rinaUint8, p, comm), rinaSuccess);
      }
    }
    int32_t one = 1, sum = 0;
    ASSERT_EQ(rinaAllReduce(&one, &sum, 1, rinaInt32, rinaSum, comm), rinaSuccess);
    ASSERT_EQ(sum, 0) << "a collective inside a group ran before rinaGroupEnd";
    ASSERT_EQ(rinaGroupEnd(), rinaSuccess);
    ASSERT_EQ(sum, 0) << "the inner rinaGroupEnd ran the group";
    ASSERT_EQ(rinaGroupEnd(), rinaSuccess) << rinaCommGetLastError(comm);
    EXPECT_EQ(sum, n);
    at = 0;
    for (int p = 0; p < n; ++p) {
      if (p == rank) continue;
      for (size_t k = 0; k < 5; ++k, ++at) {
        ASSERT_EQ(in[at], messageOf(p, rank, static_cast<int>(k), sizes[k]))
            << "from " << p << " message " << k;
      }
    }
  });
}

// Rank 0 receives from any peer, twice per peer, small messages and then
// (after a barrier) rendezvous-sized ones: it gets every message once, in
// each sender's order, with its true sender.
TEST_P(PointToPoint, ReceiveFromAnyPeer) {
  const int n = GetParam().nranks;
  if (n < 2) GTEST_SKIP() << "needs a peer";
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    for (size_t bytes : {size_t{12}, size_t{300000}}) {
      if (rank != 0) {
        for (int k = 0; k < 2; ++k) {
          std::vector<uint8_t> m = messageOf(rank, 0, k, bytes);
          ASSERT_EQ(rinaSendTagged(m.data(), bytes, rinaUint8, 0, 40 + k, comm), rinaSuccess)
              << rinaCommGetLastError(comm);
        }
      } else {
        std::multiset<int> senders;
        std::vector<int> nextOf(n, 0);  // each sender's messages arrive in order
        for (int got = 0; got < 2 * (n - 1); ++got) {
          std::vector<uint8_t> buf(bytes, 0xEE);
          int source = -1;
          ASSERT_EQ(rinaRecvTagged(buf.data(), bytes, rinaUint8, RINA_ANY_PEER, RINA_ANY_TAG,
                                   &source, comm),
                    rinaSuccess)
              << rinaCommGetLastError(comm);
          ASSERT_GE(source, 1);
          ASSERT_LT(source, n);
          ASSERT_EQ(buf, messageOf(source, 0, nextOf[source], bytes))
              << "message " << nextOf[source] << " of rank " << source;
          ++nextOf[source];
          senders.insert(source);
        }
        for (int p = 1; p < n; ++p) EXPECT_EQ(senders.count(p), 2u) << "from rank " << p;
      }
      int32_t one = 1, sum = 0;  // a barrier between the sizes
      ASSERT_EQ(rinaAllReduce(&one, &sum, 1, rinaInt32, rinaSum, comm), rinaSuccess);
    }
  });
}

// Every datatype moves its bytes (no conversion), tags are checked, and the
// statistics count messages and channel bytes.
TEST_P(PointToPoint, TypesTagsAndStatistics) {
  const int n = GetParam().nranks;
  if (n < 2) GTEST_SKIP() << "needs a peer";
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    const rinaDataType_t types[] = {rinaInt8,    rinaUint8,  rinaInt32,   rinaUint32,
                                    rinaInt64,   rinaUint64, rinaFloat16, rinaBfloat16,
                                    rinaFloat32, rinaFloat64};
    const int peer = rank ^ 1;
    if (peer >= n) return;
    size_t bytesOut = 0;
    for (rinaDataType_t t : types) {
      const size_t count = 1000 + t;
      const size_t es = t == rinaInt8 || t == rinaUint8                         ? 1
                        : t == rinaFloat16 || t == rinaBfloat16                 ? 2
                        : t == rinaInt32 || t == rinaUint32 || t == rinaFloat32 ? 4
                                                                                : 8;
      std::vector<uint8_t> out = messageOf(rank, peer, t, count * es), in(count * es, 0);
      ASSERT_EQ(rinaGroupStart(), rinaSuccess);
      ASSERT_EQ(rinaSendTagged(out.data(), count, t, peer, t, comm), rinaSuccess);
      ASSERT_EQ(rinaRecvTagged(in.data(), count, t, peer, t, nullptr, comm), rinaSuccess);
      ASSERT_EQ(rinaGroupEnd(), rinaSuccess) << rinaCommGetLastError(comm);
      ASSERT_EQ(in, messageOf(peer, rank, t, count * es)) << "type " << t;
      bytesOut += count * es;
    }
    rinaCommStats_t st{};
    st.size = sizeof st;
    ASSERT_EQ(rinaCommGetStats(comm, &st), rinaSuccess);
    EXPECT_EQ(st.sends, 10u);
    EXPECT_EQ(st.recvs, 10u);
    // Payload plus a 48-byte header per message (these are all eager).
    EXPECT_EQ(st.p2pBytesSent, bytesOut + 10 * 48);
    EXPECT_EQ(st.p2pBytesReceived, bytesOut + 10 * 48);
  });
}

INSTANTIATE_TEST_SUITE_P(Setups, PointToPoint,
                         ::testing::Values(Setup{2, false}, Setup{3, false}, Setup{4, false},
                                           Setup{2, true}, Setup{3, true}),
                         setupName);

// Forked ranks: a rendezvous over shared memory reads the sender's memory
// in another process; both ends send first inside a group.
TEST(PointToPointProcesses, BothSendFirstAcrossProcesses) {
  std::vector<int> codes = runProcesses(
      2,
      [](int rank, rinaComm_t comm) -> int {
        const int peer = 1 - rank;
        for (size_t bytes : {size_t{8}, size_t{5000}, size_t{1 << 20}, size_t{16 << 20}}) {
          std::vector<uint8_t> out = messageOf(rank, peer, 7, bytes), in(bytes, 0xEE);
          if (rinaGroupStart() != rinaSuccess) return 10;
          if (rinaSend(out.data(), bytes, rinaUint8, peer, comm) != rinaSuccess) return 11;
          if (rinaRecv(in.data(), bytes, rinaUint8, peer, comm) != rinaSuccess) return 12;
          if (rinaGroupEnd() != rinaSuccess) return 13;
          if (in != messageOf(peer, rank, 7, bytes)) return 14;
        }
        return 0;
      },
      120);
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

// Forked ranks, every cut-over of the default knobs: the copy out of the
// sender's memory and the shared copy between two address spaces.
TEST(PointToPointProcesses, EveryCutOverAcrossProcesses) {
  std::vector<int> codes = runProcesses(
      2,
      [](int rank, rinaComm_t comm) -> int {
        pingPongEverySize(rank, comm, cutOverSizes(config::Options{}));
        return ::testing::Test::HasFailure() ? 1 : 0;
      },
      120);
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

}  // namespace
}  // namespace rina::testing
