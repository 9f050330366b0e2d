// rinaAllToAll, rinaAllToAllv, rinaReduce, rinaGather and rinaScatter
// against serial references, over threads-as-ranks (1..5 ranks, shared
// memory and TCP) and forked processes (where a shared-memory block really
// crosses address spaces), and the statistics they count.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "rank_harness.h"
#include "reference.h"

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

// Element i of the block rank `from` sends to rank `to`: every byte says
// who sent it where (any type: the bytes are compared, not the values).
uint8_t blockByte(int from, int to, size_t i) {
  return static_cast<uint8_t>(from * 37 + to * 11 + i * 7 + (i >> 8));
}

class Exchange : public ::testing::TestWithParam<Setup> {
 protected:
  void SetUp() override {
    options_.shmDisable = GetParam().tcp;
    options_.sliceBytes = 4 << 10;  // many slices in the chain reduce
  }
  config::Options options_;
};

// Every block lands where it should, for counts from 0 up to several MiB
// (a block over shared memory is copied out of the sender's memory in one
// go; over TCP it streams), in four datatypes.
TEST_P(Exchange, AllToAllMatchesReference) {
  const int n = GetParam().nranks;
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    for (rinaDataType_t t : {rinaUint8, rinaFloat16, rinaFloat32, rinaFloat64}) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, size_t{300001}}) {
        const size_t es = sizeOf(t), block = count * es;
        std::vector<uint8_t> send(n * block), recv(n * block, 0xEE);
        for (int p = 0; p < n; ++p) {
          for (size_t i = 0; i < block; ++i) send[p * block + i] = blockByte(rank, p, i);
        }
        ASSERT_EQ(rinaAllToAll(send.data(), recv.data(), count, t, comm), rinaSuccess)
            << rinaCommGetLastError(comm);
        for (int p = 0; p < n; ++p) {
          for (size_t i = 0; i < block; ++i) {
            ASSERT_EQ(recv[p * block + i], blockByte(p, rank, i))
                << "rank " << rank << " block from " << p << " byte " << i << " count " << count;
          }
        }
      }
    }
  });
}

// rinaAllToAll on both sides of where the host path changes, one byte
// either side: below RINA_ALLTOALL_SLOT_BYTES sent per rank through the
// slots (blocks of a slot's share and more go in chunks, the slots taken in
// turn), from it straight between the buffers. The slot is 1 MiB (the
// default knobs); a rank's share of it for one peer is 1 MiB / (n - 1)
// rounded down to 64 bytes. From blocks of a share on, the copies into the
// receive buffer bypass the cache (RINA_ALLTOALL_STREAM_BYTES), below they
// do not. Buffers start one byte past an aligned address,
// the byte before and after each stays untouched, and the last rank comes
// late to the first call. Every byte against the pattern.
TEST_P(Exchange, AllToAllAtTheHostCutOvers) {
  const int n = GetParam().nranks;
  if (n < 2) GTEST_SKIP() << "no peers";
  const size_t share = (size_t{1} << 20) / (n - 1) / 64 * 64;
  const size_t cut = 3 * share / 2 * n;  // per rank: blocks of 1.5 shares still in the slots
  options_.allToAllSlotBytes = static_cast<int64_t>(cut);
  options_.allToAllStreamBytes = static_cast<int64_t>(share * n);
  std::vector<size_t> counts{1, 63, 64, 65, share - 1, share, share + 1, 2 * share + 1};
  for (size_t c : {cut / n - 1, cut / n, cut / n + 1}) counts.push_back(c);
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    for (size_t k = 0; k < counts.size(); ++k) {
      const size_t count = counts[k];
      SCOPED_TRACE("count " + std::to_string(count));
      std::vector<uint8_t> send(n * count + 2, 0x5A), recv(n * count + 2, 0xEE);
      for (int p = 0; p < n; ++p) {
        for (size_t i = 0; i < count; ++i) send[1 + p * count + i] = blockByte(rank, p, i + k);
      }
      if (k == 0 && rank == n - 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      ASSERT_EQ(rinaAllToAll(send.data() + 1, recv.data() + 1, count, rinaUint8, comm), rinaSuccess)
          << rinaCommGetLastError(comm);
      ASSERT_EQ(recv.front(), 0xEE) << "the byte before the blocks was written";
      ASSERT_EQ(recv.back(), 0xEE) << "the byte after the blocks was written";
      for (int p = 0; p < n; ++p) {
        for (size_t i = 0; i < count; ++i) {
          ASSERT_EQ(recv[1 + p * count + i], blockByte(p, rank, i + k))
              << "rank " << rank << " block from " << p << " byte " << i;
        }
      }
    }
  });
}

// Uneven blocks with gaps between them: rank r sends (r + p) % 4 * 1000 + p
// elements to rank p, at displacements that leave holes, which must stay
// untouched.
TEST_P(Exchange, AllToAllvUnevenBlocks) {
  const int n = GetParam().nranks;
  auto countOf = [](int from, int to) -> size_t { return (from + to) % 4 * 1000 + to; };
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
    size_t sendTotal = 0, recvTotal = 0;
    for (int p = 0; p < n; ++p) {
      sc[p] = countOf(rank, p);
      sd[p] = sendTotal + 3;  // 3 elements of gap before each block
      sendTotal = sd[p] + sc[p];
      rc[p] = countOf(p, rank);
      rd[p] = recvTotal + 5;
      recvTotal = rd[p] + rc[p];
    }
    std::vector<int32_t> send(sendTotal, -1), recv(recvTotal, -2);
    for (int p = 0; p < n; ++p) {
      for (size_t i = 0; i < sc[p]; ++i) send[sd[p] + i] = rank * 1000000 + p * 10000 + int(i);
    }
    ASSERT_EQ(rinaAllToAllv(send.data(), sc.data(), sd.data(), recv.data(), rc.data(), rd.data(),
                            rinaInt32, comm),
              rinaSuccess)
        << rinaCommGetLastError(comm);
    size_t at = 0;
    for (int p = 0; p < n; ++p) {
      for (; at < rd[p]; ++at) ASSERT_EQ(recv[at], -2) << "gap at " << at << " was written";
      for (size_t i = 0; i < rc[p]; ++i, ++at) {
        ASSERT_EQ(recv[at], p * 1000000 + rank * 10000 + int(i))
            << "rank " << rank << " from " << p << " element " << i;
      }
    }
  });
}

// A rank that sends and receives nothing still takes part: rank 0's
// counts are all 0 (NULL buffers), the others exchange among themselves.
TEST_P(Exchange, AllToAllvWithAnEmptyRank) {
  const int n = GetParam().nranks;
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
    for (int p = 0; p < n; ++p) {
      const bool moves = rank != 0 && p != 0;
      sc[p] = rc[p] = moves ? 100 : 0;
      sd[p] = rd[p] = p * 100;
    }
    std::vector<int64_t> send(n * 100), recv(n * 100, -1);
    for (size_t i = 0; i < send.size(); ++i) send[i] = rank * 100000 + int64_t(i);
    ASSERT_EQ(rinaAllToAllv(rank ? send.data() : nullptr, sc.data(), sd.data(),
                            rank ? recv.data() : nullptr, rc.data(), rd.data(), rinaInt64, comm),
              rinaSuccess)
        << rinaCommGetLastError(comm);
    for (int p = 1; p < n && rank != 0; ++p) {
      for (int i = 0; i < 100; ++i) {
        ASSERT_EQ(recv[p * 100 + i], p * 100000 + rank * 100 + i) << "from " << p;
      }
    }
  });
}

// Every type and op, roots rotating, in place at the root and not: the
// root's result equals the serial reduction; other ranks' inputs and
// (unused) outputs are untouched.
TEST_P(Exchange, ReduceEveryTypeOpRoot) {
  const int n = GetParam().nranks;
  const rinaDataType_t types[] = {rinaInt8,   rinaUint8,   rinaInt32,    rinaUint32,  rinaInt64,
                                  rinaUint64, rinaFloat16, rinaBfloat16, rinaFloat32, rinaFloat64};
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    for (rinaDataType_t t : types) {
      for (rinaRedOp_t op : {rinaSum, rinaProd, rinaMin, rinaMax, rinaAvg}) {
        for (size_t count : {size_t{1}, size_t{1031}, size_t{20011}}) {
          const int root = static_cast<int>((int(t) + int(op) + count) % n);
          for (bool inPlace : {false, true}) {
            const size_t es = sizeOf(t);
            std::vector<char> send(count * es), recv(count * es, 0x5a);
            fillInput(t, op, rank, send.data(), count);
            const std::vector<char> input = send;
            void* out = inPlace && rank == root ? send.data() : recv.data();
            ASSERT_EQ(rinaReduce(send.data(), out, count, t, op, root, comm), rinaSuccess)
                << rinaCommGetLastError(comm);
            if (rank == root) {
              ASSERT_EQ(firstMismatch(t, op, n, out, count), -1)
                  << "type " << t << " op " << op << " count " << count << " root " << root;
            } else {
              ASSERT_EQ(send, input) << "rank " << rank << " input changed";
              ASSERT_EQ(recv, std::vector<char>(count * es, 0x5a)) << "non-root output written";
            }
          }
        }
      }
    }
  });
}

// Gather and scatter with every root, out of place and in place at the root.
TEST_P(Exchange, GatherAndScatterEveryRoot) {
  const int n = GetParam().nranks;
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    for (size_t count : {size_t{1}, size_t{4099}, size_t{262147}}) {
      for (int root = 0; root < n; ++root) {
        for (bool inPlace : {false, true}) {
          std::vector<uint8_t> mine(count), all(n * count, 0xEE);
          for (size_t i = 0; i < count; ++i) mine[i] = blockByte(rank, root, i);
          const void* send = mine.data();
          if (inPlace && rank == root) {
            std::memcpy(all.data() + rank * count, mine.data(), count);
            send = all.data() + rank * count;
          }
          ASSERT_EQ(
              rinaGather(send, rank == root ? all.data() : nullptr, count, rinaUint8, root, comm),
              rinaSuccess)
              << rinaCommGetLastError(comm);
          if (rank == root) {
            for (int p = 0; p < n; ++p) {
              for (size_t i = 0; i < count; ++i) {
                ASSERT_EQ(all[p * count + i], blockByte(p, root, i)) << "gather from " << p;
              }
            }
          }
          // Scatter back a block made for each rank.
          std::vector<uint8_t> blocks(n * count), got(count, 0xEE);
          for (int p = 0; p < n; ++p) {
            for (size_t i = 0; i < count; ++i) blocks[p * count + i] = blockByte(root, p, i + 1);
          }
          void* recv = got.data();
          if (inPlace && rank == root) recv = blocks.data() + rank * count;
          ASSERT_EQ(rinaScatter(rank == root ? blocks.data() : nullptr, recv, count, rinaUint8,
                                root, comm),
                    rinaSuccess)
              << rinaCommGetLastError(comm);
          const uint8_t* in = static_cast<const uint8_t*>(recv);
          for (size_t i = 0; i < count; ++i) {
            ASSERT_EQ(in[i], blockByte(root, rank, i + 1))
                << "scatter to " << rank << " byte " << i;
          }
        }
      }
    }
  });
}

// What the calls count (rinaCommGetStats, version 5).
TEST_P(Exchange, StatisticsCountTheCalls) {
  const int n = GetParam().nranks;
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    std::vector<float> a(n * 64, 1.0f), b(n * 64);
    ASSERT_EQ(rinaAllToAll(a.data(), b.data(), 64, rinaFloat32, comm), rinaSuccess);
    ASSERT_EQ(rinaAllToAll(a.data(), b.data(), 64, rinaFloat32, comm), rinaSuccess);
    ASSERT_EQ(rinaReduce(a.data(), b.data(), 64, rinaFloat32, rinaSum, 0, comm), rinaSuccess);
    ASSERT_EQ(rinaGather(a.data(), b.data(), 64, rinaFloat32, 0, comm), rinaSuccess);
    ASSERT_EQ(rinaScatter(a.data(), b.data(), 64, rinaFloat32, 0, comm), rinaSuccess);
    rinaCommStats_t st{};
    st.size = sizeof st;
    ASSERT_EQ(rinaCommGetStats(comm, &st), rinaSuccess);
    EXPECT_GE(st.version, 5u);  // these counters came with version 5
    EXPECT_EQ(st.callsAllToAll, 2u);
    EXPECT_EQ(st.callsReduce, 1u);
    EXPECT_EQ(st.callsGather, 1u);
    EXPECT_EQ(st.callsScatter, 1u);
    EXPECT_EQ(st.sends, 0u);
    EXPECT_EQ(st.p2pBytesSent, 0u);
    if (n > 1) {
      EXPECT_GT(st.bytesSent, 0u);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Setups, Exchange,
                         ::testing::Values(Setup{1, false}, Setup{2, false}, Setup{3, false},
                                           Setup{4, false}, Setup{5, false}, Setup{2, true},
                                           Setup{3, true}, Setup{4, true}),
                         setupName);

// Forked ranks: a shared-memory block is read out of another process.
TEST(ExchangeProcesses, AllToAllvAndRootedCallsAcrossProcesses) {
  const int n = 4;
  std::vector<int> codes = runProcesses(
      n,
      [n](int rank, rinaComm_t comm) -> int {
        const size_t count = 1 << 18;  // 1 MiB of float32 per block
        std::vector<float> send(n * count), recv(n * count, -1.0f);
        for (int p = 0; p < n; ++p) {
          for (size_t i = 0; i < count; ++i) send[p * count + i] = float(rank * 10 + p) + i;
        }
        if (rinaAllToAll(send.data(), recv.data(), count, rinaFloat32, comm) != rinaSuccess) {
          return 10;
        }
        for (int p = 0; p < n; ++p) {
          for (size_t i = 0; i < count; i += 97) {
            if (recv[p * count + i] != float(p * 10 + rank) + i) return 11;
          }
        }
        std::vector<double> in(count, rank + 1.0), out(count, 0.0);
        if (rinaReduce(in.data(), out.data(), count, rinaFloat64, rinaSum, 2, comm) !=
            rinaSuccess) {
          return 12;
        }
        if (rank == 2) {
          for (size_t i = 0; i < count; ++i) {
            if (out[i] != n * (n + 1) / 2.0) return 13;
          }
        }
        std::vector<float> all(n * count);
        if (rinaGather(send.data(), all.data(), count, rinaFloat32, 1, comm) != rinaSuccess) {
          return 14;
        }
        if (rank == 1) {
          for (int p = 0; p < n; ++p) {
            if (all[p * count + 5] != float(p * 10) + 5) return 15;
          }
        }
        return 0;
      },
      120);
  for (int r = 0; r < n; ++r) EXPECT_EQ(codes[r], 0) << "rank " << r;
}

// With every rank on this host the blocks go through the host segment:
// copied straight between the ranks' buffers (by either rank of a pair),
// not a byte over the connections. Blocks start one byte past an aligned
// address, some are empty, calls come back to back (the segment's two
// slots reused) with a broadcast between some; every byte against the
// pattern. Over TCP the pairs stream as before.
TEST_P(Exchange, AllToAllvOnOneHostMovesNothingOverTheConnections) {
  const int n = GetParam().nranks;
  if (n < 2) GTEST_SKIP() << "nothing to move";
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    rinaCommStats_t before{};
    before.size = sizeof before;
    ASSERT_EQ(rinaCommGetStats(comm, &before), rinaSuccess);
    for (int call = 0; call < 6; ++call) {
      // Rank r sends rank p ((r * 5 + p * 3 + call) % 4) * 70001 bytes (0 to 1.4 MiB).
      auto countOf = [call](int from, int to) -> size_t {
        return static_cast<size_t>((from * 5 + to * 3 + call) % 4) * 70001;
      };
      std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
      size_t sendTotal = 1, recvTotal = 1;  // byte 0 of each buffer is never used
      for (int p = 0; p < n; ++p) {
        sc[p] = countOf(rank, p);
        sd[p] = sendTotal;
        sendTotal += sc[p];
        rc[p] = countOf(p, rank);
        rd[p] = recvTotal;
        recvTotal += rc[p];
      }
      std::vector<uint8_t> send(sendTotal), recv(recvTotal, 0xEE);
      for (int p = 0; p < n; ++p) {
        for (size_t i = 0; i < sc[p]; ++i) send[sd[p] + i] = blockByte(rank, p, i + call);
      }
      ASSERT_EQ(rinaAllToAllv(send.data(), sc.data(), sd.data(), recv.data(), rc.data(), rd.data(),
                              rinaUint8, comm),
                rinaSuccess)
          << rinaCommGetLastError(comm);
      ASSERT_EQ(recv[0], 0xEE) << "the byte before the first block was written";
      for (int p = 0; p < n; ++p) {
        for (size_t i = 0; i < rc[p]; ++i) {
          ASSERT_EQ(recv[rd[p] + i], blockByte(p, rank, i + call))
              << "rank " << rank << " call " << call << " from " << p << " byte " << i;
        }
      }
      if (call % 2 == 1) {
        int32_t b = rank == 0 ? call : -1;
        ASSERT_EQ(rinaBroadcast(&b, &b, 1, rinaInt32, 0, comm), rinaSuccess);
        ASSERT_EQ(b, call);
      }
    }
    rinaCommStats_t after{};
    after.size = sizeof after;
    ASSERT_EQ(rinaCommGetStats(comm, &after), rinaSuccess);
    EXPECT_EQ(after.callsAllToAll - before.callsAllToAll, 6u);
    // The broadcasts of 4 bytes go over the ring (with their headers); the
    // all-to-alls add nothing on one host.
    const uint64_t moved = after.bytesSent - before.bytesSent;
    if (GetParam().tcp) {
      EXPECT_GT(moved, 6u * 70001);
    } else {
      EXPECT_LT(moved, 3u * 200) << "all-to-all bytes went over the connections";
    }
  });
}

// A rank that dies before it posts its blocks: the others' all-to-all
// fails naming it (no hang), through the host segment as over TCP.
TEST(ExchangeProcesses, APeerThatDiesFailsTheAllToAll) {
  for (const char* shm : {"0", "1"}) {
    ScopedEnv disable("RINA_SHM_DISABLE", shm);
    ScopedEnv timeout("RINA_TIMEOUT_MS", "20000");
    // The survivors stay until both have their error: one that returned and
    // exited would hang up on the other, which could then name it instead.
    ProcessBarrier bothFailed(2);
    std::vector<int> codes = runProcesses(
        3,
        [&bothFailed](int rank, rinaComm_t comm) -> int {
          std::vector<float> send(3 * 1000, 1.0f), recv(3 * 1000);
          // One call together first: every pair is connected.
          if (rinaAllToAll(send.data(), recv.data(), 1000, rinaFloat32, comm) != rinaSuccess) {
            return 20;
          }
          if (rank == 2) _exit(0);  // gone without a word
          const rinaResult_t rc = rinaAllToAll(send.data(), recv.data(), 1000, rinaFloat32, comm);
          if (rc != rinaRemoteError) return 21;
          const std::string e = rinaCommGetLastError(comm);
          if (!bothFailed.arriveAndWait(30000)) return 23;
          // Over TCP the socket reports it first, on one host the liveness check.
          const bool named = e.find("peer 2 hung up") != std::string::npos ||
                             e.find("peer 2 closed the connection") != std::string::npos;
          return named ? 0 : 22;
        },
        60);
    EXPECT_EQ(codes[0], 0) << "RINA_SHM_DISABLE=" << shm;
    EXPECT_EQ(codes[1], 0) << "RINA_SHM_DISABLE=" << shm;
  }
}

}  // namespace
}  // namespace rina::testing
