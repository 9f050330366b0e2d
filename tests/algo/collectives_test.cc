// Collectives against an independent serial reference, over threads-as-ranks
// (1..8 ranks, shared memory and TCP) and forked processes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "algo/engine/algorithm.h"
#include "core/config.h"
#include "rank_harness.h"
#include "reference.h"

namespace rina::testing {
namespace {

const rinaDataType_t kTypes[] = {rinaInt8,   rinaUint8,   rinaInt32,    rinaUint32,  rinaInt64,
                                 rinaUint64, rinaFloat16, rinaBfloat16, rinaFloat32, rinaFloat64};
const rinaRedOp_t kOps[] = {rinaSum, rinaProd, rinaMin, rinaMax, rinaAvg};

struct Setup {
  int nranks;
  bool tcp;
  int socketsPerPeer = 1;  // TCP only: several sockets stripe each slice
};

// What gtest prints for GetParam() (instead of the struct's bytes).
void PrintTo(const Setup& s, std::ostream* os) {
  *os << s.nranks << " ranks over " << (s.tcp ? "TCP" : "shm");
  if (s.socketsPerPeer > 1) *os << ", " << s.socketsPerPeer << " sockets per peer";
}

std::string setupName(const ::testing::TestParamInfo<Setup>& p) {
  std::string name = std::to_string(p.param.nranks) + "ranks" + (p.param.tcp ? "Tcp" : "Shm");
  if (p.param.socketsPerPeer > 1) name += std::to_string(p.param.socketsPerPeer) + "Sockets";
  return name;
}

class Collectives : public ::testing::TestWithParam<Setup> {
 protected:
  // The communicators' knobs, passed to each rank's init.
  void SetUp() override {
    options_.shmDisable = GetParam().tcp;
    // Small slices so modest counts already run many pipelined slices.
    options_.sliceBytes = 4 << 10;
    options_.socketNsocks = GetParam().socketsPerPeer;
  }
  config::Options options_;
};

// Every dtype x op x algorithm, counts 1, primes, not divisible by n,
// in place and out of place; results equal to the reference and identical
// on all ranks.
TEST_P(Collectives, AllReduceEveryTypeOpAlgorithm) {
  const int n = GetParam().nranks;
  const size_t counts[] = {1, 2, 7, 97, 1031, 20011};
  std::vector<std::vector<char>> results(n);
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    for (const char* algo : {"auto", "ring", "rd", "oneshot", "twoshot"}) {
      ASSERT_EQ(rinaCommSetAlgorithm(comm, algo), rinaSuccess);
      for (rinaDataType_t t : kTypes) {
        for (rinaRedOp_t op : kOps) {
          for (size_t count : counts) {
            for (bool inPlace : {false, true}) {
              size_t es = sizeOf(t);
              std::vector<char> send(count * es), recv(count * es, 0x5a);
              fillInput(t, op, rank, send.data(), count);
              void* out = inPlace ? send.data() : recv.data();
              ASSERT_EQ(rinaAllReduce(send.data(), out, count, t, op, comm), rinaSuccess)
                  << rinaCommGetLastError(comm);
              int64_t bad = firstMismatch(t, op, n, out, count);
              ASSERT_EQ(bad, -1) << "rank " << rank << " algo " << algo << " type " << t << " op "
                                 << op << " count " << count << (inPlace ? " in place" : "");
            }
          }
        }
      }
    }
  });
}

// Random floats: not exact, so compare with a double-precision serial sum
// within a bound, and require all ranks to hold the very same bits.
TEST_P(Collectives, AllReduceRandomFloatsBitwiseIdentical) {
  const int n = GetParam().nranks;
  const size_t count = 300007;
  const size_t kSmall = 5003;  // 20 KiB
  std::vector<std::vector<float>> inputs(n), outputs(n), smallOut(n, std::vector<float>(kSmall));
  for (int r = 0; r < n; ++r) {
    std::mt19937 gen(1234 + r);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    inputs[r].resize(count);
    for (auto& x : inputs[r]) x = dist(gen);
    outputs[r].assign(count, 0.0f);
  }
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    for (const char* algo : {"ring", "rd", "twoshot"}) {
      ASSERT_EQ(rinaCommSetAlgorithm(comm, algo), rinaSuccess);
      ASSERT_EQ(rinaAllReduce(inputs[rank].data(), outputs[rank].data(), count, rinaFloat32,
                              rinaSum, comm),
                rinaSuccess)
          << rinaCommGetLastError(comm);
    }
    // The latency algorithm (one-shot on one host) on a prefix that fits
    // RINA_SMALL_MSG_BYTES; its output is checked on that prefix below.
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "oneshot"), rinaSuccess);
    ASSERT_EQ(rinaAllReduce(inputs[rank].data(), smallOut[rank].data(), kSmall, rinaFloat32,
                            rinaSum, comm),
              rinaSuccess)
        << rinaCommGetLastError(comm);
  });
  for (size_t i = 0; i < kSmall; ++i) {
    double ref = 0, mag = 0;
    for (int r = 0; r < n; ++r) ref += inputs[r][i], mag += std::fabs(inputs[r][i]);
    ASSERT_NEAR(smallOut[0][i], ref, mag * n * 1.2e-7 + 1e-30) << "one-shot element " << i;
  }
  for (int r = 1; r < n; ++r) {
    ASSERT_EQ(std::memcmp(smallOut[0].data(), smallOut[r].data(), kSmall * sizeof(float)), 0)
        << "one-shot: rank " << r << " differs from rank 0";
  }
  for (size_t i = 0; i < count; ++i) {
    double ref = 0, mag = 0;
    for (int r = 0; r < n; ++r) ref += inputs[r][i], mag += std::fabs(inputs[r][i]);
    ASSERT_NEAR(outputs[0][i], ref, mag * n * 1.2e-7 + 1e-30) << "element " << i;
  }
  for (int r = 1; r < n; ++r) {
    ASSERT_EQ(std::memcmp(outputs[0].data(), outputs[r].data(), count * sizeof(float)), 0)
        << "rank " << r << " differs from rank 0";
  }
}

TEST_P(Collectives, ReduceScatterAllGatherBroadcast) {
  const int n = GetParam().nranks;
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    for (rinaDataType_t t : {rinaInt32, rinaFloat16, rinaFloat64, rinaUint8}) {
      size_t es = sizeOf(t);
      for (size_t count : {size_t{1}, size_t{13}, size_t{4099}}) {
        // Reduce-scatter, out of place and in place.
        for (rinaRedOp_t op : kOps) {
          std::vector<char> send(n * count * es), recv(count * es);
          fillInput(t, op, rank, send.data(), n * count);
          ASSERT_EQ(rinaReduceScatter(send.data(), recv.data(), count, t, op, comm), rinaSuccess)
              << rinaCommGetLastError(comm);
          ASSERT_EQ(firstMismatch(t, op, n, recv.data(), count, rank * count), -1)
              << "reduce-scatter rank " << rank << " op " << op << " count " << count;
          char* inPlace = send.data() + rank * count * es;
          fillInput(t, op, rank, send.data(), n * count);
          ASSERT_EQ(rinaReduceScatter(send.data(), inPlace, count, t, op, comm), rinaSuccess);
          ASSERT_EQ(firstMismatch(t, op, n, inPlace, count, rank * count), -1) << "in place";
        }
        // All-gather: block r holds rank r's input.
        std::vector<char> mine(count * es), all(n * count * es);
        fillInput(t, rinaSum, rank, mine.data(), count);
        ASSERT_EQ(rinaAllGather(mine.data(), all.data(), count, t, comm), rinaSuccess);
        for (int r = 0; r < n; ++r) {
          std::vector<char> want(count * es);
          fillInput(t, rinaSum, r, want.data(), count);
          ASSERT_EQ(std::memcmp(all.data() + r * count * es, want.data(), count * es), 0)
              << "block " << r;
        }
        std::memset(all.data(), 0, all.size());
        fillInput(t, rinaSum, rank, all.data() + rank * count * es, count);
        ASSERT_EQ(rinaAllGather(all.data() + rank * count * es, all.data(), count, t, comm),
                  rinaSuccess);
        for (int r = 0; r < n; ++r) {
          std::vector<char> want(count * es);
          fillInput(t, rinaSum, r, want.data(), count);
          ASSERT_EQ(std::memcmp(all.data() + r * count * es, want.data(), count * es), 0)
              << "in place block " << r;
        }
        // Broadcast from every root, out of place and in place.
        for (int root = 0; root < n; ++root) {
          std::vector<char> src(count * es), dst(count * es, 0);
          fillInput(t, rinaMax, root, src.data(), count);
          std::vector<char> want = src;
          if (rank != root) std::memset(src.data(), 0, src.size());
          ASSERT_EQ(rinaBroadcast(src.data(), dst.data(), count, t, root, comm), rinaSuccess);
          ASSERT_EQ(std::memcmp(dst.data(), want.data(), dst.size()), 0) << "root " << root;
          ASSERT_EQ(rinaBroadcast(src.data(), src.data(), count, t, root, comm), rinaSuccess);
          ASSERT_EQ(std::memcmp(src.data(), want.data(), src.size()), 0)
              << "in place root " << root;
        }
      }
    }
  });
}

// Small allreduces between other collectives, in place and not, with
// inputs that change every call: the host segment's slots are reused every
// other call, and a broadcast in between lets a fast rank run ahead into
// the next allreduce while others still read the last one. Each result
// against the serial reference; the counters say which algorithm ran:
// one-shot exactly when every rank shares memory.
TEST_P(Collectives, SmallAllReducesBetweenOtherCollectives) {
  const int n = GetParam().nranks;
  if (n < 2) GTEST_SKIP() << "one rank copies";
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    rinaCommStats_t before{};
    before.size = sizeof before;
    ASSERT_EQ(rinaCommGetStats(comm, &before), rinaSuccess);
    for (int it = 0; it < 60; ++it) {
      const size_t count = 1 + static_cast<size_t>(it * 37 % 1500);
      std::vector<int64_t> send(count), recv(count, -1);
      for (size_t i = 0; i < count; ++i) send[i] = (rank + 1) * 1000003LL * (it + 1) + i;
      int64_t* out = it % 3 == 0 ? send.data() : recv.data();
      ASSERT_EQ(rinaAllReduce(send.data(), out, count, rinaInt64, rinaSum, comm), rinaSuccess)
          << rinaCommGetLastError(comm);
      for (size_t i = 0; i < count; ++i) {
        int64_t want = 0;
        for (int r = 0; r < n; ++r) want += (r + 1) * 1000003LL * (it + 1) + i;
        ASSERT_EQ(out[i], want) << "rank " << rank << " call " << it << " element " << i;
      }
      if (it % 4 == 1) {
        std::vector<int32_t> b(7, rank == it % n ? it : -1);
        ASSERT_EQ(rinaBroadcast(b.data(), b.data(), b.size(), rinaInt32, it % n, comm),
                  rinaSuccess);
        ASSERT_EQ(b[6], it);
      }
    }
    rinaCommStats_t after{};
    after.size = sizeof after;
    ASSERT_EQ(rinaCommGetStats(comm, &after), rinaSuccess);
    ASSERT_GE(after.version, 4u);  // callsOneShot came in version 4
    const uint64_t oneShot = after.callsOneShot - before.callsOneShot;
    const uint64_t rd = after.callsRd - before.callsRd;
    if (GetParam().tcp) {
      EXPECT_EQ(oneShot, 0u);
      EXPECT_EQ(rd, 60u);
    } else {
      EXPECT_EQ(oneShot, 60u);
      EXPECT_EQ(rd, 0u);
    }
  });
}

// Two-shot through small slots (4 KiB: RINA_SMALL_MSG_BYTES, with
// RINA_TWO_SHOT_BYTES not above it), so a call runs many chunks: counts at
// every chunk edge and one element either side, shares of a chunk that
// are empty (fewer elements than ranks), in place and out of place, from
// buffers one element past an aligned address; each against the serial
// reference, and all ranks bit for bit alike. With every rank on this host
// the counters say two-shot ran; over TCP it is the ring.
TEST_P(Collectives, TwoShotChunkEdges) {
  const int n = GetParam().nranks;
  if (n < 2) GTEST_SKIP() << "one rank copies";
  options_.smallMsgBytes = 4 << 10;
  options_.twoShotBytes = 0;
  const size_t chunk = (4 << 10) / sizeof(float);
  const std::vector<size_t> counts{chunk - 1, chunk,         chunk + 1, 2 * chunk - 1,
                                   2 * chunk, 2 * chunk + 1, 2,         5 * chunk + 3};
  std::vector<std::vector<float>> results(n);
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "twoshot"), rinaSuccess);
    rinaCommStats_t before{};
    before.size = sizeof before;
    ASSERT_EQ(rinaCommGetStats(comm, &before), rinaSuccess);
    int calls = 0;
    for (rinaRedOp_t op : {rinaSum, rinaAvg, rinaMax}) {
      for (size_t count : counts) {
        for (bool inPlace : {false, true}) {
          std::vector<float> send(count + 1), recv(count + 1, -7.0f);
          fillInput(rinaFloat32, op, rank, send.data() + 1, count);
          float* out = inPlace ? send.data() + 1 : recv.data() + 1;
          ASSERT_EQ(rinaAllReduce(send.data() + 1, out, count, rinaFloat32, op, comm), rinaSuccess)
              << rinaCommGetLastError(comm);
          calls += count * sizeof(float) >= (4 << 10) ? 1 : 0;
          ASSERT_EQ(firstMismatch(rinaFloat32, op, n, out, count), -1)
              << "rank " << rank << " op " << op << " count " << count
              << (inPlace ? " in place" : "");
          if (!inPlace) {
            ASSERT_EQ(recv[0], -7.0f) << "a value before the output was written";
          }
        }
      }
    }
    // Random floats, several chunks: every rank must hold the same bits.
    std::mt19937 gen(77 + rank);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> x(3 * chunk + 17);
    for (float& v : x) v = dist(gen);
    results[rank].resize(x.size());
    ASSERT_EQ(rinaAllReduce(x.data(), results[rank].data(), x.size(), rinaFloat32, rinaSum, comm),
              rinaSuccess);
    ++calls;
    rinaCommStats_t after{};
    after.size = sizeof after;
    ASSERT_EQ(rinaCommGetStats(comm, &after), rinaSuccess);
    ASSERT_GE(after.version, 7u);  // callsTwoShot came in version 7
    EXPECT_EQ(after.callsTwoShot - before.callsTwoShot,
              GetParam().tcp ? 0u : static_cast<uint64_t>(calls));
  });
  for (int r = 1; r < n; ++r) {
    ASSERT_EQ(std::memcmp(results[0].data(), results[r].data(), results[0].size() * sizeof(float)),
              0)
        << "rank " << r << " differs from rank 0";
  }
}

// Two-shot calls whose counts differ between ranks: reported on every
// rank that sees a peer's chunk, naming both counts, not a wrong sum.
TEST_P(Collectives, TwoShotCountMismatchIsReported) {
  const int n = GetParam().nranks;
  if (n < 2 || GetParam().tcp) GTEST_SKIP() << "two-shot needs every rank on one host's segment";
  options_.timeoutMs = 5000;
  runThreads(n, options_, [&](int rank, rinaComm_t comm) {
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "twoshot"), rinaSuccess);
    const size_t count = rank == 0 ? 300000 : 300001;
    std::vector<float> x(count, 1.0f), y(count);
    const rinaResult_t rc = rinaAllReduce(x.data(), y.data(), count, rinaFloat32, rinaSum, comm);
    ASSERT_NE(rc, rinaSuccess);
    if (rc == rinaInvalidUsage) {
      const std::string e = rinaCommGetLastError(comm);
      EXPECT_NE(e.find("calls do not match"), std::string::npos) << e;
      EXPECT_NE(e.find(rank == 0 ? "count 300001" : "count 300000"), std::string::npos) << e;
    }
  });
}

TEST_P(Collectives, CountZeroIsANoOp) {
  runThreads(GetParam().nranks, options_, [&](int, rinaComm_t comm) {
    float x = 3.0f;
    EXPECT_EQ(rinaAllReduce(nullptr, nullptr, 0, rinaFloat32, rinaSum, comm), rinaSuccess);
    EXPECT_EQ(rinaReduceScatter(nullptr, nullptr, 0, rinaFloat32, rinaSum, comm), rinaSuccess);
    EXPECT_EQ(rinaAllGather(nullptr, nullptr, 0, rinaFloat32, comm), rinaSuccess);
    EXPECT_EQ(rinaBroadcast(nullptr, nullptr, 0, rinaFloat32, 0, comm), rinaSuccess);
    EXPECT_EQ(x, 3.0f);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives,
                         ::testing::Values(Setup{1, false}, Setup{2, false}, Setup{3, false},
                                           Setup{4, false}, Setup{5, false}, Setup{8, false},
                                           Setup{2, true}, Setup{3, true}, Setup{4, true},
                                           Setup{7, true}, Setup{3, true, 3}, Setup{4, true, 2}),
                         setupName);

// Random bits of count elements of type t, none of them NaN or infinite (a
// NaN's payload is the one thing an average over one rank may change).
std::vector<char> finiteRandomBits(rinaDataType_t t, size_t count, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<char> out(count * sizeOf(t));
  for (char& c : out) c = static_cast<char>(rng());
  if (!isFloat(t)) return out;
  for (size_t i = 0; i < count; ++i) {
    char* e = out.data() + i * sizeOf(t);
    // The exponent's top bit, in the element's most significant byte (little
    // endian), cleared when the exponent is all ones.
    char* top = e + sizeOf(t) - 1;
    uint64_t bits = 0;
    std::memcpy(&bits, e, sizeOf(t));
    const uint64_t exponent = t == rinaFloat16    ? 0x7C00
                              : t == rinaBfloat16 ? 0x7F80
                              : t == rinaFloat32  ? 0x7F800000
                                                  : 0x7FF0000000000000;
    if ((bits & exponent) == exponent) *top = static_cast<char>(*top & 0xBF);
  }
  return out;
}

// On one rank every collective's result is its input: each one, out of place
// (recv starts as other bytes) and in place, leaves exactly the input's bytes
// in recv, for every allreduce algorithm and reduction.
TEST(CollectivesOneRank, EveryCollectiveCopiesItsInput) {
  runThreads(1, [&](int, rinaComm_t comm) {
    const size_t count = 1031;
    for (rinaDataType_t t :
         {rinaInt8, rinaUint32, rinaFloat16, rinaBfloat16, rinaFloat32, rinaFloat64}) {
      const size_t bytes = count * sizeOf(t);
      const std::vector<char> input = finiteRandomBits(t, count, 7 + t);
      // call(send, recv) on a copy of the input into other bytes, then in place.
      auto check = [&](const std::string& what,
                       const std::function<rinaResult_t(void*, void*)>& call) {
        std::vector<char> send = input, recv(bytes, static_cast<char>(0x5A));
        ASSERT_EQ(call(send.data(), recv.data()), rinaSuccess)
            << what << ": " << rinaCommGetLastError(comm);
        EXPECT_EQ(recv, input) << what << " type " << t << ", out of place";
        EXPECT_EQ(send, input) << what << " type " << t << " wrote its send buffer";
        std::vector<char> buf = input;
        ASSERT_EQ(call(buf.data(), buf.data()), rinaSuccess)
            << what << ": " << rinaCommGetLastError(comm);
        EXPECT_EQ(buf, input) << what << " type " << t << ", in place";
      };
      for (const algo::AlgorithmEntry& a : algo::kAlgorithmTable) {
        ASSERT_EQ(rinaCommSetAlgorithm(comm, a.name), rinaSuccess);
        for (rinaRedOp_t op : kOps) {
          check(std::string("allreduce ") + a.name,
                [&](void* s, void* r) { return rinaAllReduce(s, r, count, t, op, comm); });
        }
      }
      for (rinaRedOp_t op : kOps) {
        check("reduce-scatter",
              [&](void* s, void* r) { return rinaReduceScatter(s, r, count, t, op, comm); });
        check("reduce", [&](void* s, void* r) { return rinaReduce(s, r, count, t, op, 0, comm); });
      }
      if (isFloat(t)) {
        check("weighted allreduce",
              [&](void* s, void* r) { return rinaAllReduceWeighted(s, r, count, t, 3.0, comm); });
      }
      check("allgather", [&](void* s, void* r) { return rinaAllGather(s, r, count, t, comm); });
      check("broadcast", [&](void* s, void* r) { return rinaBroadcast(s, r, count, t, 0, comm); });
      check("gather", [&](void* s, void* r) { return rinaGather(s, r, count, t, 0, comm); });
      check("scatter", [&](void* s, void* r) { return rinaScatter(s, r, count, t, 0, comm); });
      // All-to-all's buffers must not overlap: out of place only.
      std::vector<char> recv(bytes, static_cast<char>(0x5A));
      ASSERT_EQ(rinaAllToAll(input.data(), recv.data(), count, t, comm), rinaSuccess);
      EXPECT_EQ(recv, input) << "all-to-all type " << t;
    }
  });
}

// Processes: 64 MiB float32 through shared memory, in place and not.
TEST(CollectivesProcesses, AllReduce64MiB) {
  const size_t count = (64u << 20) / sizeof(float);
  auto codes = runProcesses(
      4,
      [&](int rank, rinaComm_t comm) {
        std::vector<float> buf(count), out(count);
        for (size_t i = 0; i < count; ++i) buf[i] = static_cast<float>((i % 1000) + rank);
        if (rinaAllReduce(buf.data(), out.data(), count, rinaFloat32, rinaSum, comm) != rinaSuccess)
          return 1;
        if (rinaAllReduce(buf.data(), buf.data(), count, rinaFloat32, rinaSum, comm) != rinaSuccess)
          return 2;
        for (size_t i = 0; i < count; ++i) {
          float want = static_cast<float>(4 * (i % 1000) + 6);
          if (out[i] != want || buf[i] != want) return 3;
        }
        return 0;
      },
      120);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(codes[r], 0) << "rank " << r;
}

TEST(CollectivesProcesses, MixedCollectivesOverTcpWithOddCounts) {
  ScopedEnv tcp("RINA_SHM_DISABLE", "1");
  auto codes = runProcesses(
      3,
      [&](int rank, rinaComm_t comm) {
        for (size_t count : {size_t{1}, size_t{101}, size_t{100003}}) {
          std::vector<char> send(count * 8), recv(count * 8);
          fillInput(rinaInt64, rinaSum, rank, send.data(), count);
          if (rinaAllReduce(send.data(), recv.data(), count, rinaInt64, rinaSum, comm) !=
              rinaSuccess)
            return 1;
          if (firstMismatch(rinaInt64, rinaSum, 3, recv.data(), count) != -1) return 2;
          std::vector<char> all(3 * count * 2);
          fillInput(rinaBfloat16, rinaSum, rank, send.data(), count);
          if (rinaAllGather(send.data(), all.data(), count, rinaBfloat16, comm) != rinaSuccess)
            return 3;
          for (int r = 0; r < 3; ++r) {
            std::vector<char> want(count * 2);
            fillInput(rinaBfloat16, rinaSum, r, want.data(), count);
            if (std::memcmp(all.data() + r * count * 2, want.data(), count * 2) != 0) return 4;
          }
        }
        return 0;
      },
      120);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(codes[r], 0) << "rank " << r;
}

}  // namespace
}  // namespace rina::testing
