// The rack algorithms (hier, rina, ps-ina, auto) on ranks as threads, with
// INA racks served by rina-switchd processes on loopback (RINA_SWITCH=auto:
// each INA rack's agent starts its own; or switches this test starts and
// kills). Every result is compared with a serial reference computed here,
// and all ranks must agree bit for bit.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include "algo/dispatch/dispatch.h"
#include "comm/communicator.h"
#include "comm/rack_agent.h"
#include "core/config.h"
#include "ina_harness.h"
#include "rank_harness.h"
#include "reference.h"
#include "topo/rack_map.h"
#include "topo/topology_json.h"

namespace rina::testing {
namespace {

[[maybe_unused]] const bool kGenerousInaTimeout = useGenerousInaTimeout();

int ranksOf(const std::string& racks) {
  topo::TopologySpec spec;
  EXPECT_TRUE(topo::parseRacksShortForm(racks, &spec).ok());
  int n = 0;
  for (auto& r : spec.racks) n += r.rankCount;
  return n;
}

// The largest INA rack of a short form (for the quantization bound).
int largestInaRack(const std::string& racks) {
  topo::TopologySpec spec;
  EXPECT_TRUE(topo::parseRacksShortForm(racks, &spec).ok());
  int k = 1;
  for (auto& r : spec.racks) {
    if (r.ina) k = std::max(k, r.rankCount);
  }
  return k;
}

int32_t intInput(int r, size_t i) {
  return static_cast<int32_t>((r * 7919 + i * 31) % 2001) - 1000;
}
// Magnitudes that change along the buffer, so slices have different exponents.
float floatInput(int r, size_t i) {
  return static_cast<float>(((r + 3) * (i % 97) + 5 * r) % 113 - 56) *
         std::ldexp(1.0f, static_cast<int>(i / 50 % 9) - 4);
}
double doubleInput(int r, size_t i) { return floatInput(r, i) * 1.25 + r; }

struct Case {
  std::string racks;
  std::string algo;
};

// What gtest prints for GetParam() (instead of the struct's bytes).
void PrintTo(const Case& c, std::ostream* os) {
  *os << "RINA_RACKS=" << c.racks << " RINA_ALGO=" << c.algo;
}

// Runs `calls` allreduces of `count` elements on every rank and checks them.
void checkAllreduce(const Case& c, size_t count, rinaDataType_t type, rinaRedOp_t op, bool inPlace,
                    int calls = 1) {
  const int n = ranksOf(c.racks);
  ScopedEnv racks("RINA_RACKS", c.racks.c_str());
  std::vector<std::vector<char>> results(n);
  runThreads(n, [&](int rank, rinaComm_t comm) {
    ASSERT_EQ(rinaCommSetAlgorithm(comm, c.algo.c_str()), rinaSuccess);
    const size_t es = type == rinaFloat64 ? 8 : 4;
    std::vector<char> send(count * es), recv(count * es);
    for (size_t i = 0; i < count; ++i) {
      if (type == rinaInt32) {
        int32_t v = intInput(rank, i);
        std::memcpy(&send[i * es], &v, 4);
      } else if (type == rinaFloat32) {
        float v = floatInput(rank, i);
        std::memcpy(&send[i * es], &v, 4);
      } else {
        double v = doubleInput(rank, i);
        std::memcpy(&send[i * es], &v, 8);
      }
    }
    for (int k = 0; k < calls; ++k) {
      if (inPlace) recv = send;
      void* out = inPlace ? static_cast<void*>(recv.data()) : recv.data();
      const void* in = inPlace ? static_cast<const void*>(recv.data()) : send.data();
      ASSERT_EQ(rinaAllReduce(in, out, count, type, op, comm), rinaSuccess)
          << "rank " << rank << ": " << rinaCommGetLastError(comm);
    }
    results[rank] = recv;
  });
  const size_t es = type == rinaFloat64 ? 8 : 4;
  for (int r = 1; r < n; ++r) {
    ASSERT_EQ(results[r].size(), results[0].size());
    ASSERT_EQ(std::memcmp(results[r].data(), results[0].data(), results[0].size()), 0)
        << "rank " << r << " differs from rank 0 (" << c.racks << ", " << c.algo << ")";
  }
  // Block floating point: each INA reduction of a partial p adds at most
  // k * 2^(E + h - 31) <= |p|max * 2^(2h - 30) (lib/ina/quantize.h), plus the
  // float32 rounding of each host or output step (2^-24 relative); a chunk
  // passes through at most one such step per ring member (<= n).
  int h = 0;
  while ((1 << h) < largestInaRack(c.racks)) ++h;
  double maxAbsSum = 0;
  for (size_t i = 0; i < count; ++i) {
    double s = 0;
    for (int r = 0; r < n; ++r)
      s += std::fabs(type == rinaFloat64 ? doubleInput(r, i) : floatInput(r, i));
    maxAbsSum = std::max(maxAbsSum, s);
  }
  const double floatTol = n * maxAbsSum * (std::ldexp(1.0, 2 * h - 30) + std::ldexp(1.0, -23));
  for (size_t i = 0; i < count; ++i) {
    if (type == rinaInt32) {
      int64_t want = op == rinaMax ? INT64_MIN : 0;
      for (int r = 0; r < n; ++r)
        want = op == rinaMax ? std::max<int64_t>(want, intInput(r, i)) : want + intInput(r, i);
      int32_t got;
      std::memcpy(&got, &results[0][i * es], 4);
      ASSERT_EQ(got, static_cast<int32_t>(want)) << "element " << i;
    } else if (type == rinaFloat32) {
      double want = 0;
      for (int r = 0; r < n; ++r) want += floatInput(r, i);
      if (op == rinaAvg) want /= n;
      float got;
      std::memcpy(&got, &results[0][i * es], 4);
      ASSERT_LE(std::fabs(got - want), floatTol / (op == rinaAvg ? n : 1)) << "element " << i;
    } else {
      double want = 0;
      for (int r = 0; r < n; ++r) want += doubleInput(r, i);
      double got;
      std::memcpy(&got, &results[0][i * es], 8);
      ASSERT_LE(std::fabs(got - want), 1e-9 * maxAbsSum) << "element " << i;
    }
  }
}

class RackAlgoTest : public ::testing::TestWithParam<Case> {
 protected:
  ScopedEnv switchd_{"RINA_SWITCHD_PATH", RINA_SWITCHD_PATH};
  ScopedEnv auto_{"RINA_SWITCH", "auto"};
  ScopedEnv slice_{"RINA_SLICE_BYTES", "4K"};
};

TEST_P(RackAlgoTest, Int32SumOddCount) {
  checkAllreduce(GetParam(), 1001, rinaInt32, rinaSum, false);
}
TEST_P(RackAlgoTest, Int32SumInPlaceRepeated) {
  checkAllreduce(GetParam(), 5003, rinaInt32, rinaSum, true, 3);
}
TEST_P(RackAlgoTest, Int32SumFewerElementsThanMembers) {
  checkAllreduce(GetParam(), 2, rinaInt32, rinaSum, false);
}
TEST_P(RackAlgoTest, Float32SumWithinQuantizationBound) {
  checkAllreduce(GetParam(), 3001, rinaFloat32, rinaSum, false);
}
TEST_P(RackAlgoTest, Float32AvgInPlace) {
  checkAllreduce(GetParam(), 777, rinaFloat32, rinaAvg, true);
}
TEST_P(RackAlgoTest, Int32MaxOnHosts) {
  checkAllreduce(GetParam(), 999, rinaInt32, rinaMax, false);
}
TEST_P(RackAlgoTest, Float64SumOnHosts) {
  checkAllreduce(GetParam(), 1003, rinaFloat64, rinaSum, true);
}

INSTANTIATE_TEST_SUITE_P(Racks, RackAlgoTest,
                         ::testing::Values(Case{"3:ina", "rina"}, Case{"1,2:ina", "rina"},
                                           Case{"3:ina,1,2", "rina"},
                                           Case{"2:ina,3:ina,1:ina", "rina"},
                                           Case{"2:ina,1,3:ina", "ps-ina"}, Case{"1,2", "ps-ina"},
                                           Case{"2:ina,3", "hier"}, Case{"1,2,3", "hier"},
                                           Case{"2:ina,2", "auto"}, Case{"3", "hier"}),
                         [](const ::testing::TestParamInfo<Case>& p) {
                           std::string name = p.param.algo + "_" + p.param.racks;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

// Every datatype and op through every rack algorithm, with inputs whose
// reductions are exact in every type (tests/support/reference.h): int32 and
// float sums and averages go through the switches, the rest use the same
// steps on the hosts.
TEST(RackAlgoEveryType, EqualsReferenceOnEveryRank) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv racks("RINA_RACKS", "2:ina,1,2");
  ScopedEnv sw("RINA_SWITCH", "auto");
  const rinaDataType_t types[] = {rinaInt8,   rinaUint8,   rinaInt32,    rinaUint32,  rinaInt64,
                                  rinaUint64, rinaFloat16, rinaBfloat16, rinaFloat32, rinaFloat64};
  const rinaRedOp_t ops[] = {rinaSum, rinaProd, rinaMin, rinaMax, rinaAvg};
  const int n = 5;
  runThreads(n, [&](int rank, rinaComm_t comm) {
    for (const char* algo : {"rina", "hier", "ps-ina"}) {
      ASSERT_EQ(rinaCommSetAlgorithm(comm, algo), rinaSuccess);
      for (rinaDataType_t t : types) {
        for (rinaRedOp_t op : ops) {
          for (size_t count : {size_t{1}, size_t{7}, size_t{1031}}) {
            const bool inPlace = count != 7;
            const size_t es = sizeOf(t);
            std::vector<char> send(count * es), recv(count * es, 0x5a);
            fillInput(t, op, rank, send.data(), count);
            void* out = inPlace ? send.data() : recv.data();
            ASSERT_EQ(rinaAllReduce(send.data(), out, count, t, op, comm), rinaSuccess)
                << rinaCommGetLastError(comm);
            ASSERT_EQ(firstMismatch(t, op, n, out, count), -1)
                << "rank " << rank << " algo " << algo << " type " << t << " op " << op << " count "
                << count;
          }
        }
      }
    }
  });
}

// Processes whose executable is this build's rina-switchd and whose command
// line holds `mark` (so switches of tests running beside this one do not
// count).
int switchdProcesses(const std::string& mark) {
  int n = 0;
  DIR* proc = opendir("/proc");
  if (!proc) return -1;
  while (dirent* d = readdir(proc)) {
    char exe[4096] = {0};
    std::string path = std::string("/proc/") + d->d_name + "/exe";
    ssize_t len = readlink(path.c_str(), exe, sizeof exe - 1);
    if (len <= 0 || std::string(exe, len) != RINA_SWITCHD_PATH) continue;
    std::ifstream f(std::string("/proc/") + d->d_name + "/cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(mark) != std::string::npos) ++n;
  }
  closedir(proc);
  return n;
}

// Ranks as forked processes, each INA rack's agent starting its own switch:
// results exact, and no rina-switchd left behind after rinaCommDestroy.
TEST(RackProcesses, RinaAcrossProcessesStopsItsSwitches) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv racks("RINA_RACKS", "2:ina,1,3:ina");
  ScopedEnv sw("RINA_SWITCH", "auto");
  // This test's switches carry a seed no other test uses.
  const std::string mark = "--seed " + std::to_string(900000 + getpid() % 100000);
  ScopedEnv args("RINA_SWITCHD_ARGS", mark.c_str());
  ASSERT_EQ(switchdProcesses(mark), 0);
  std::vector<int> codes = runProcesses(
      6,
      [](int rank, rinaComm_t comm) {
        if (rinaCommSetAlgorithm(comm, "rina") != rinaSuccess) return 10;
        std::vector<int32_t> buf(50001);
        for (int k = 0; k < 3; ++k) {
          for (size_t i = 0; i < buf.size(); ++i) buf[i] = intInput(rank + k, i);
          if (rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaInt32, rinaSum, comm) !=
              rinaSuccess) {
            fprintf(stderr, "rank %d: %s\n", rank, rinaCommGetLastError(comm));
            return 11;
          }
          for (size_t i = 0; i < buf.size(); ++i) {
            int32_t want = 0;
            for (int r = 0; r < 6; ++r) want += intInput(r + k, i);
            if (buf[i] != want) return 12;
          }
        }
        rinaCommStats_t s{};
        s.size = sizeof s;
        if (rinaCommGetStats(comm, &s) != rinaSuccess || s.callsRina != 3 || s.inaFallbacks != 0)
          return 13;
        if (rank != 2 && s.inaCalls == 0) return 14;  // rank 2 is an autonomous worker
        return 0;
      },
      60);
  for (int r = 0; r < 6; ++r) EXPECT_EQ(codes[r], 0) << "rank " << r;
  EXPECT_EQ(switchdProcesses(mark), 0);
}

TEST(RackMap, RacksFromShortFormAndBadValues) {
  std::vector<std::string> hosts(6, "h/boot/ns");
  topo::RackMap map;
  ASSERT_TRUE(topo::rackMapFrom("", "3:ina,1,2", hosts, &map).ok());
  ASSERT_EQ(map.racks.size(), 3u);
  EXPECT_TRUE(map.racks[0].ina);
  EXPECT_EQ(map.racks[2].ranks, (std::vector<int>{4, 5}));
  EXPECT_EQ(map.rackOf[3], 1);
  // Neither a file nor a short form: one rack per host.
  std::vector<std::string> two = {"a/1/x", "b/1/x", "a/1/x"};
  ASSERT_TRUE(topo::rackMapFrom("", "", two, &map).ok());
  ASSERT_EQ(map.racks.size(), 2u);
  EXPECT_EQ(map.racks[0].ranks, (std::vector<int>{0, 2}));
  for (const char* bad : {"3:inx,3", "0,6", "two", "3,2", "3,4"}) {
    Status s = topo::rackMapFrom("", bad, hosts, &map);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("RINA_RACKS"), std::string::npos) << s.message();
  }
}

TEST(RackMap, TopologyFileWinsOverShortForm) {
  topo::TopologySpec spec;
  spec.name = "t";
  topo::RackSpec a;
  a.name = "a";
  a.ina = true;
  a.hosts = {topo::HostSpec{"hx", 0, "", {}}};
  topo::RackSpec b;
  b.name = "b";
  b.hosts = {topo::HostSpec{"hy", 0, "", {}}};
  spec.racks = {a, b};
  std::string path = ::testing::TempDir() + "rina_rack_topo.json";
  {
    std::ofstream f(path);
    f << topo::topologyToJson(spec);
  }
  const std::string racks = "1,1,1";  // ignored: the file wins
  topo::RackMap map;
  Status st = topo::rackMapFrom(path, racks, {"hy/1/n", "hx/1/n", "hx/1/n"}, &map);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(map.racks.size(), 2u);
  EXPECT_TRUE(map.racks[0].ina);
  EXPECT_EQ(map.racks[0].ranks, (std::vector<int>{1, 2}));
  EXPECT_EQ(map.racks[1].ranks, (std::vector<int>{0}));
  st = topo::rackMapFrom(path, racks, {"hy/1/n", "hz/1/n"}, &map);  // hz is in no rack
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("RINA_TOPO_FILE"), std::string::npos) << st.message();
  st = topo::rackMapFrom("/nonexistent/topo.json", "", {"hy/1/n"}, &map);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("RINA_TOPO_FILE=/nonexistent/topo.json"), std::string::npos)
      << st.message();
}

TEST(RackMap, PeersCoverNeighbourRacksOnly) {
  topo::TopologySpec spec;
  ASSERT_TRUE(topo::parseRacksShortForm("2,2,2,2,2", &spec).ok());
  topo::RackMap map;
  ASSERT_TRUE(topo::resolveRackMap(spec, std::vector<std::string>(10, "h"), &map).ok());
  EXPECT_EQ(algo::rackPeerRanks(4, map), (std::set<int>{0, 2, 3, 5, 6, 7}));  // agent: + server 0
  EXPECT_EQ(algo::rackPeerRanks(5, map), (std::set<int>{2, 3, 4, 6, 7}));
  EXPECT_EQ(algo::rackPeerRanks(0, map), (std::set<int>{1, 2, 3, 4, 6, 8, 9}));
}

TEST(RackMap, SwitchListErrors) {
  std::vector<ina::Endpoint> out;
  EXPECT_TRUE(comm::parseSwitchList("auto", 2, &out).ok());
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(comm::parseSwitchList("127.0.0.1:9101,10.0.0.2:9101", 2, &out).ok());
  EXPECT_EQ(out[1].port, 9101);
  Status s = comm::parseSwitchList("127.0.0.1:9101", 2, &out);
  EXPECT_EQ(s.code(), rinaInvalidArgument);
  EXPECT_NE(s.message().find("2 INA rack"), std::string::npos) << s.message();
  s = comm::parseSwitchList("localhost:9101", 1, &out);
  EXPECT_EQ(s.code(), rinaInvalidArgument);
  EXPECT_NE(s.message().find("'localhost:9101'"), std::string::npos) << s.message();
}

// rinaCommInitRank fails on every rank, naming the knob.
void expectInitFails(int n, const char* knob) {
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
  std::vector<std::thread> threads;
  std::mutex mu;
  std::vector<std::string> errors;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      rinaComm_t comm = nullptr;
      rinaResult_t rc = rinaCommInitRank(&comm, n, id, r);
      std::lock_guard<std::mutex> lock(mu);
      if (rc == rinaSuccess) {
        rinaCommDestroy(comm);
        errors.push_back("");
      } else {
        errors.push_back(rinaCommGetLastError(nullptr));
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const std::string& e : errors) EXPECT_NE(e.find(knob), std::string::npos) << "'" << e << "'";
}

TEST(RackInit, BadRacksOrSwitchIsAClearError) {
  ScopedEnv timeout("RINA_TIMEOUT_MS", "60000");
  {
    ScopedEnv racks("RINA_RACKS", "2,2");  // 4 ranks for 3
    expectInitFails(3, "RINA_RACKS");
  }
  {
    ScopedEnv racks("RINA_RACKS", "2:ina,1");
    ScopedEnv sw("RINA_SWITCH", "127.0.0.1:1,127.0.0.1:2");  // two for one INA rack
    expectInitFails(3, "RINA_SWITCH");
  }
  {
    ScopedEnv algo("RINA_ALGO", "flat");
    expectInitFails(2, "RINA_ALGO");
  }
  {
    ScopedEnv racks("RINA_RACKS", "2:ina");
    ScopedEnv slots("RINA_INA_SLOTS", "0");
    expectInitFails(2, "RINA_INA_SLOTS");
  }
  {
    ScopedEnv racks("RINA_RACKS", "2:ina");
    ScopedEnv markers("RINA_INA_PORT_MARKERS", "2");
    expectInitFails(2, "RINA_INA_PORT_MARKERS");
  }
}

// RINA_INA_PORT_MARKERS=0 (a switch that does not know port markers):
// every worker sends every slice of the rack reduce-scatter; the results
// are the serial sums as with markers (every other rina test).
TEST(RackInit, WithoutPortMarkersStillCorrect) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv sw("RINA_SWITCH", "auto");
  ScopedEnv markers("RINA_INA_PORT_MARKERS", "0");
  checkAllreduce(Case{"3:ina,2:ina,1", "rina"}, 9001, rinaInt32, rinaSum, false);
  checkAllreduce(Case{"2:ina,3:ina", "rina"}, 9001, rinaFloat32, rinaSum, true);
}

// RINA_INA_SLOTS: fewer slots than the default still give exact int32 sums
// and float32 within the bound (a buffer of many windows).
TEST(RackInit, FewSlotsStillCorrect) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv sw("RINA_SWITCH", "auto");
  ScopedEnv args("RINA_SWITCHD_ARGS", "--payload 64");
  ScopedEnv slots("RINA_INA_SLOTS", "4");
  checkAllreduce(Case{"3:ina", "rina"}, 9001, rinaInt32, rinaSum, false);
  checkAllreduce(Case{"2:ina,2:ina", "rina"}, 9001, rinaFloat32, rinaSum, true);
  // Two slots cannot give each of three roots one for the rack all-gather:
  // that rack gathers over its hosts, the rack of two through its switch.
  ScopedEnv two("RINA_INA_SLOTS", "2");
  checkAllreduce(Case{"3:ina,2:ina,1", "rina"}, 9001, rinaInt32, rinaSum, true, 2);
}

rinaCommStats_t statsOf(rinaComm_t comm) {
  rinaCommStats_t s{};
  s.size = sizeof s;
  EXPECT_EQ(rinaCommGetStats(comm, &s), rinaSuccess);
  return s;
}

TEST(RackStats, CountsCallsAndRejectsSmallSize) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv racks("RINA_RACKS", "2:ina,1");
  ScopedEnv sw("RINA_SWITCH", "auto");
  runThreads(3, [&](int rank, rinaComm_t comm) {
    std::vector<int32_t> buf(100, rank + 1);
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "rina"), rinaSuccess);
    ASSERT_EQ(rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaInt32, rinaSum, comm),
              rinaSuccess);
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "hier"), rinaSuccess);
    ASSERT_EQ(rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaInt32, rinaSum, comm),
              rinaSuccess);
    EXPECT_EQ(buf[7], (1 + 2 + 3) * 3);  // the sum, then the sum of three copies of it
    rinaCommStats_t s = statsOf(comm);
    EXPECT_EQ(s.version, RINA_COMM_STATS_VERSION);
    EXPECT_EQ(s.callsRina, 1u);
    EXPECT_EQ(s.callsHier, 1u);
    EXPECT_EQ(s.inaFallbacks, 0u);
    if (rank < 2) {
      EXPECT_GT(s.inaCalls, 0u) << "rank " << rank;
      // Every switch call of this rank sent at least one datagram.
      EXPECT_GE(s.inaDatagrams, s.inaCalls) << "rank " << rank;
    } else {
      EXPECT_EQ(s.inaCalls, 0u);
      EXPECT_EQ(s.inaDatagrams, 0u);
    }
    EXPECT_LE(s.inaFastRetransmissions, s.inaRetransmissions);
    EXPECT_LE(s.inaLateAnswers, s.inaRetransmissions);
    rinaCommStats_t small{};
    small.size = 4;
    EXPECT_EQ(rinaCommGetStats(comm, &small), rinaInvalidArgument);
    EXPECT_EQ(rinaCommGetStats(comm, nullptr), rinaInvalidArgument);
    // An older, shorter struct: only its fields are written.
    struct {
      rinaCommStats_t head;
      uint64_t guard;
    } partial{};
    partial.head.size = offsetof(rinaCommStats_t, callsHier);
    partial.guard = 77;
    partial.head.callsHier = 12345;
    ASSERT_EQ(rinaCommGetStats(comm, &partial.head), rinaSuccess);
    EXPECT_EQ(partial.head.callsRd + partial.head.callsRing, 0u);
    EXPECT_EQ(partial.head.callsHier, 12345u);
    EXPECT_EQ(partial.guard, 77u);
  });
}

// RINA_ALGO=auto runs what its link model picks (auto_select.h): rina for
// one INA rack of 4 (S per host link against 1.5 S), the ring for an INA
// rack of 2 beside one host (2 S against 1.33 S), and the latency
// algorithm for small buffers either way (one-shot: the ranks, threads
// here, share one host). Results are the serial sums.
TEST(RackAuto, RunsWhatTheLinkModelPicks) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv sw("RINA_SWITCH", "auto");
  struct Want {
    const char* racks;
    uint64_t rina, ring;
  };
  for (const Want& w : {Want{"4:ina", 1, 0}, Want{"2:ina,1", 0, 1}}) {
    ScopedEnv racks("RINA_RACKS", w.racks);
    const int n = ranksOf(w.racks);
    runThreads(n, [&](int rank, rinaComm_t comm) {
      for (size_t count : {size_t{1} << 20, size_t{100}}) {
        std::vector<int32_t> buf(count, rank + 1);
        ASSERT_EQ(rinaAllReduce(buf.data(), buf.data(), count, rinaInt32, rinaSum, comm),
                  rinaSuccess);
        ASSERT_EQ(buf[count - 1], n * (n + 1) / 2) << w.racks << " count " << count;
      }
      rinaCommStats_t s = statsOf(comm);
      EXPECT_EQ(s.callsRina, w.rina) << w.racks;
      EXPECT_EQ(s.callsRing, w.ring) << w.racks;
      EXPECT_EQ(s.callsOneShot, 1u) << w.racks;
      EXPECT_EQ(s.callsRd, 0u) << w.racks;
    });
  }
}

// int32 sums the switch cannot hold (it saturates and flags OVERFLOW) come
// back as host slices: the port sums them on the hosts, wrapping like every
// other int32 path. One INA rack alone, and INA racks in a ring of members
// (where each port asks its rack-mates for their inputs of those slices).
TEST(RackHostSlices, Int32OverflowIsSummedOnTheHosts) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv sw("RINA_SWITCH", "auto");
  // Out of place the switch reads the input from the send buffer and leaves
  // the result's host slices unwritten: the hosts start from the input.
  for (const bool inPlace : {true, false}) {
    for (const char* layout : {"3:ina", "3:ina,2:ina,1"}) {
      ScopedEnv racks("RINA_RACKS", layout);
      const int n = ranksOf(layout);
      std::atomic<uint64_t> hostSlices{0};
      runThreads(n, [&](int rank, rinaComm_t comm) {
        ASSERT_EQ(rinaCommSetAlgorithm(comm, "rina"), rinaSuccess);
        std::vector<int32_t> buf(30000);
        // Elements 10000..19999 overflow in a switch (2 or 3 x 2^30), the rest do not.
        for (size_t i = 0; i < buf.size(); ++i)
          buf[i] = (i / 10000 == 1) ? (1 << 30) : intInput(rank, i);
        const std::vector<int32_t> input = buf;
        std::vector<int32_t> out(buf.size(), 0x5A5A5A5A);
        int32_t* result = inPlace ? buf.data() : out.data();
        ASSERT_EQ(rinaAllReduce(buf.data(), result, buf.size(), rinaInt32, rinaSum, comm),
                  rinaSuccess)
            << rinaCommGetLastError(comm);
        for (size_t i = 0; i < buf.size(); ++i) {
          uint32_t want = 0;  // wraps
          for (int r = 0; r < n; ++r) {
            want += static_cast<uint32_t>((i / 10000 == 1) ? (1 << 30) : intInput(r, i));
          }
          ASSERT_EQ(result[i], static_cast<int32_t>(want))
              << layout << (inPlace ? " in place" : " out of place") << ": rank " << rank
              << " elem " << i;
        }
        if (!inPlace) {
          ASSERT_EQ(buf, input) << layout << ": rank " << rank << "'s send buffer";
        }
        rinaCommStats_t s = statsOf(comm);
        hostSlices += s.inaHostSlices;
        EXPECT_EQ(s.inaFallbacks, 0u);
      });
      EXPECT_GT(hostSlices.load(), 0u) << layout << (inPlace ? " in place" : " out of place");
    }
  }
}

// NaN and Inf inputs cannot be quantized: their slices go to the hosts,
// which propagate them as every host kernel does, in a ring of INA racks.
TEST(RackHostSlices, NanAndInfAreSummedOnTheHosts) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv sw("RINA_SWITCH", "auto");
  ScopedEnv racks("RINA_RACKS", "2:ina,3:ina,1");
  constexpr size_t kNan = 5000, kInf = 23456, kCount = 40000;
  std::vector<std::vector<float>> results(6);
  runThreads(6, [&](int rank, rinaComm_t comm) {
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "rina"), rinaSuccess);
    std::vector<float> buf(kCount);
    for (size_t i = 0; i < kCount; ++i) buf[i] = static_cast<float>(intInput(rank, i));
    if (rank == 1) buf[kNan] = std::nanf("");
    if (rank == 3) buf[kInf] = INFINITY;
    ASSERT_EQ(rinaAllReduce(buf.data(), buf.data(), kCount, rinaFloat32, rinaSum, comm),
              rinaSuccess)
        << rinaCommGetLastError(comm);
    results[rank] = buf;
    EXPECT_GT(statsOf(comm).inaHostSlices + (rank == 5 ? 1u : 0u), 0u) << "rank " << rank;
  });
  for (int r = 0; r < 6; ++r) {
    for (size_t i = 0; i < kCount; ++i) {
      if (i == kNan) {
        ASSERT_TRUE(std::isnan(results[r][i])) << "rank " << r;
      } else if (i == kInf) {
        ASSERT_EQ(results[r][i], INFINITY) << "rank " << r;
      } else {
        double want = 0;
        for (int q = 0; q < 6; ++q) want += intInput(q, i);
        // Small integers: quantized and host sums of them are exact.
        ASSERT_EQ(results[r][i], static_cast<float>(want)) << "rank " << r << " elem " << i;
      }
    }
  }
}

// The rack all-gather's multicasts lost on the way down (the switch drops
// each copy it sends with probability 3%): a worker fetches what never came
// from the slice's port over the host connections. Exact results, no
// fallback, and the repaired slices are counted.
TEST(RackGather, LostMulticastsAreRepairedFromThePorts) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv sw("RINA_SWITCH", "auto");
  ScopedEnv args("RINA_SWITCHD_ARGS", "--payload 256 --send-drop-rate 0.03 --seed 11");
  checkAllreduce(Case{"3:ina,2:ina,1", "rina"}, 30011, rinaFloat32, rinaSum, true, 2);
  ScopedEnv racks("RINA_RACKS", "3:ina,2:ina,1");
  std::atomic<uint64_t> repaired{0};
  runThreads(6, [&](int rank, rinaComm_t comm) {
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "rina"), rinaSuccess);
    for (int k = 0; k < 3; ++k) {
      std::vector<int32_t> buf(100003);
      for (size_t i = 0; i < buf.size(); ++i) buf[i] = intInput(rank + k, i);
      ASSERT_EQ(rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaInt32, rinaSum, comm),
                rinaSuccess)
          << rinaCommGetLastError(comm);
      for (size_t i = 0; i < buf.size(); ++i) {
        int64_t want = 0;
        for (int r = 0; r < 6; ++r) want += intInput(r + k, i);
        ASSERT_EQ(buf[i], want) << "rank " << rank << " call " << k << " elem " << i;
      }
    }
    rinaCommStats_t s = statsOf(comm);
    repaired += s.inaHostSlices;
    EXPECT_EQ(s.inaFallbacks, 0u) << "rank " << rank;
  });
  EXPECT_GT(repaired.load(), 0u);
}

// One INA rack is the whole ring: the switch returns the sum to every
// worker, one switch call per allreduce on each (no reduce to a port and
// multicast back). A small payload spreads the buffer over many slices with
// different exponents, injected loss makes the client resend, and int32
// sums that overflow in the switch come back as host slices in the middle
// of switch slices. Results: within the bound (checkAllreduce), identical
// on every rank, int32 exact.
TEST(RackOneRack, SwitchSumsToEveryWorkerInOneCallPerAllreduce) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv sw("RINA_SWITCH", "auto");
  ScopedEnv args("RINA_SWITCHD_ARGS", "--payload 64 --drop-rate 0.01 --seed 5");
  checkAllreduce(Case{"4:ina", "rina"}, 30001, rinaFloat32, rinaSum, false);
  checkAllreduce(Case{"4:ina", "rina"}, 20011, rinaInt32, rinaSum, true, 2);
  checkAllreduce(Case{"4:ina", "rina"}, 5003, rinaFloat32, rinaAvg, true);
  ScopedEnv racks("RINA_RACKS", "4:ina");
  constexpr int kCalls = 3;
  std::vector<std::vector<int32_t>> results(4);
  std::vector<rinaCommStats_t> stats(4);
  runThreads(4, [&](int rank, rinaComm_t comm) {
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "rina"), rinaSuccess);
    std::vector<int32_t> buf(10000), in(buf.size());
    for (int k = 0; k < kCalls; ++k) {
      // Elements 640..767 (slices 10 and 11) overflow: 4 x 2^30. Call 1 is
      // out of place (host slices start from the send buffer).
      for (size_t i = 0; i < buf.size(); ++i)
        buf[i] = (i / 128 == 5) ? (1 << 30) : intInput(rank + k, i);
      in = buf;
      if (k == 1) std::fill(buf.begin(), buf.end(), -7);
      const int32_t* send = k == 1 ? in.data() : buf.data();
      ASSERT_EQ(rinaAllReduce(send, buf.data(), buf.size(), rinaInt32, rinaSum, comm), rinaSuccess)
          << "rank " << rank << " call " << k << ": " << rinaCommGetLastError(comm);
      for (size_t i = 0; i < buf.size(); ++i) {
        int64_t want = 0;
        for (int r = 0; r < 4; ++r) want += (i / 128 == 5) ? (1 << 30) : intInput(r + k, i);
        ASSERT_EQ(buf[i], static_cast<int32_t>(static_cast<uint32_t>(want)))
            << "rank " << rank << " call " << k << " elem " << i;
      }
    }
    results[rank] = buf;
    stats[rank] = statsOf(comm);
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(results[r], results[0]) << "rank " << r;
    EXPECT_EQ(stats[r].inaCalls, static_cast<uint64_t>(kCalls)) << "rank " << r;
    EXPECT_EQ(stats[r].inaFallbacks, 0u) << "rank " << r;
  }
  EXPECT_GE(stats[0].inaHostSlices, 2u * kCalls);  // the agent counts the rack's union
}

TEST(RackFallback, MissingSwitchdBinaryFallsBackToHosts) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", "/nonexistent/rina-switchd");
  ScopedEnv racks("RINA_RACKS", "2:ina,1");
  ScopedEnv sw("RINA_SWITCH", "auto");
  runThreads(3, [&](int rank, rinaComm_t comm) {
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "rina"), rinaSuccess);
    std::vector<int32_t> buf(333);
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = intInput(rank, i);
    ASSERT_EQ(rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaInt32, rinaSum, comm),
              rinaSuccess);
    for (size_t i = 0; i < buf.size(); ++i) {
      ASSERT_EQ(buf[i], intInput(0, i) + intInput(1, i) + intInput(2, i)) << i;
    }
    rinaCommStats_t s = statsOf(comm);
    EXPECT_EQ(s.inaFallbacks, rank < 2 ? 1u : 0u) << "rank " << rank;
    EXPECT_EQ(s.inaCalls, 0u);
  });
}

TEST(RackFallback, LossyLinkStillExactWithRetransmissions) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv args("RINA_SWITCHD_ARGS", "--drop-rate 0.02 --seed 7");
  ScopedEnv sw("RINA_SWITCH", "auto");
  std::atomic<uint64_t> resent{0};
  checkAllreduce(Case{"3:ina,2:ina", "rina"}, 20000, rinaInt32, rinaSum, false, 2);
  ScopedEnv racks("RINA_RACKS", "3:ina,2:ina");
  runThreads(5, [&](int rank, rinaComm_t comm) {
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "rina"), rinaSuccess);
    // About 500 datagrams up (2048 elements each): 2% loss drops some.
    std::vector<int32_t> buf(200000, rank);
    ASSERT_EQ(rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaInt32, rinaSum, comm),
              rinaSuccess);
    for (size_t i = 0; i < buf.size(); ++i) ASSERT_EQ(buf[i], 10) << i;
    resent += statsOf(comm).inaRetransmissions;
    EXPECT_EQ(statsOf(comm).inaFallbacks, 0u);
  });
  EXPECT_GT(resent.load(), 0u);
}

// A switch that dies or hangs in the middle of a run of collectives: every
// collective still returns the right answer; the rack falls back once
// (logged once at WARN, counted). `pause` freezes the switch (SIGSTOP), so
// only the data-plane timeout can notice; `kill` also closes its CTRL
// connection, which the agent notices at the next collective.
void switchLostMidRun(bool pause) {
  ina::testing::SwitchdProcess sw0({}), sw1({});
  ASSERT_TRUE(sw0.ready() && sw1.ready());
  std::string list = sw0.control().toString() + "," + sw1.control().toString();
  ScopedEnv racks("RINA_RACKS", "2:ina,3:ina");
  ScopedEnv sw("RINA_SWITCH", list.c_str());
  ScopedEnv inaTimeout("RINA_INA_TIMEOUT_MS", "300");
  ScopedEnv debug("RINA_DEBUG", "WARN");
  constexpr int kCalls = 6;
  std::atomic<int> done{0};
  ::testing::internal::CaptureStderr();
  std::vector<rinaCommStats_t> stats(5);
  runThreads(5, [&](int rank, rinaComm_t comm) {
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "rina"), rinaSuccess);
    for (int k = 0; k < kCalls; ++k) {
      if (rank == 1 && k == 2) {  // rank 1: not the agent; the others may be mid-call
        if (pause) {
          sw0.pause();
        } else {
          sw0.kill();
        }
      }
      std::vector<float> buf(4099);
      for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(intInput(rank + k, i));
      ASSERT_EQ(rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaFloat32, rinaSum, comm),
                rinaSuccess)
          << "rank " << rank << " call " << k << ": " << rinaCommGetLastError(comm);
      for (size_t i = 0; i < buf.size(); ++i) {
        double want = 0;
        for (int r = 0; r < 5; ++r) want += intInput(r + k, i);
        // Small integers: quantized sums of them are exact.
        ASSERT_EQ(buf[i], static_cast<float>(want))
            << "rank " << rank << " call " << k << " elem " << i;
      }
    }
    stats[rank] = statsOf(comm);
    done++;
  });
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(done.load(), 5);
  size_t warns = 0;
  for (size_t p = err.find("falling back"); p != std::string::npos;
       p = err.find("falling back", p + 1)) {
    size_t lineStart = err.rfind('\n', p);
    lineStart = lineStart == std::string::npos ? 0 : lineStart;
    if (err.substr(lineStart, p - lineStart).find("WARN") != std::string::npos) ++warns;
  }
  EXPECT_EQ(warns, 1u) << err;
  for (int r = 0; r < 5; ++r) {
    EXPECT_EQ(stats[r].inaFallbacks, r < 2 ? 1u : 0u) << "rank " << r;
    EXPECT_EQ(stats[r].callsRina, static_cast<uint64_t>(kCalls));
  }
  // Rack 1 kept its switch: a switch reduce-scatter and a switch all-gather
  // per collective.
  EXPECT_EQ(stats[3].inaCalls, static_cast<uint64_t>(2 * kCalls));
}

// A call that differs on one rank is rinaInvalidUsage (naming both sides)
// where it is noticed, and an error everywhere, for every rack algorithm.
TEST(RackCalls, MismatchedCountIsReported) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv racks("RINA_RACKS", "2:ina,1,2");
  ScopedEnv sw("RINA_SWITCH", "auto");
  ScopedEnv timeout("RINA_TIMEOUT_MS", "60000");
  for (const char* algo : {"rina", "hier", "ps-ina"}) {
    std::atomic<int> usage{0}, failed{0};
    runThreads(5, [&](int rank, rinaComm_t comm) {
      ASSERT_EQ(rinaCommSetAlgorithm(comm, algo), rinaSuccess);
      std::vector<int32_t> buf(1000, 1);
      size_t count = rank == 3 ? 999 : 1000;
      rinaResult_t rc = rinaAllReduce(buf.data(), buf.data(), count, rinaInt32, rinaSum, comm);
      if (rc != rinaSuccess) failed++;
      if (rc == rinaInvalidUsage) {
        usage++;
        EXPECT_NE(std::string(rinaCommGetLastError(comm)).find("calls do not match"),
                  std::string::npos)
            << rinaCommGetLastError(comm);
      }
    });
    EXPECT_EQ(failed.load(), 5) << algo;
    EXPECT_GE(usage.load(), 1) << algo;
  }
}

TEST(RackFallback, KilledSwitchMidRunKeepsResultsLogsOnceAndCounts) { switchLostMidRun(false); }
TEST(RackFallback, FrozenSwitchMidRunTimesOutAndFallsBack) { switchLostMidRun(true); }

// ESA preemption: another job takes the rack's slots; the agent sees the
// NOTICE PREEMPT at a later collective (slices sent before that are NACKed
// and summed on the hosts), asks again and hands the new grant to every
// worker; when no slot can be had, the rack falls back. Every result stays
// exact (int32).
TEST(RackFallback, PreemptionRegrantsEveryWorkerThenRefusalFallsBack) {
  // --idle-ms: the intruder, idle, must not lose its slots to our REQUEST.
  ina::testing::SwitchdProcess sw({"--slots", "64", "--idle-ms", "600000"});
  ASSERT_TRUE(sw.ready());
  ScopedEnv racks("RINA_RACKS", "3:ina");
  ScopedEnv list("RINA_SWITCH", sw.control().toString().c_str());
  ScopedEnv inaTimeout("RINA_INA_TIMEOUT_MS", "500");
  std::barrier sync(3);
  std::unique_ptr<ina::CtrlClient> intruder;
  auto takeSlots = [&] {
    ASSERT_TRUE(ina::CtrlClient::connect(sw.control(), 2000, &intruder).ok());
    ina::CtrlRequest reg;
    reg.verb = ina::CtrlVerb::kRegister;
    reg.job = 999;
    reg.token = 5;
    reg.fanIn = 1;
    reg.priority = 9;
    reg.slots = 64;
    reg.members = {ina::Endpoint{0x7F000001, 9}};
    ina::Grant g;
    ASSERT_TRUE(intruder->registerJob(reg, &g).ok());
    ASSERT_EQ(g.length, 64u);
  };
  std::vector<rinaCommStats_t> after(3), after3(3), last(3);
  runThreads(3, [&](int rank, rinaComm_t comm) {
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "rina"), rinaSuccess);
    auto call = [&](int k) {
      std::vector<int32_t> buf(2000);
      for (size_t i = 0; i < buf.size(); ++i) buf[i] = intInput(rank + k, i);
      ASSERT_EQ(rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaInt32, rinaSum, comm),
                rinaSuccess)
          << rinaCommGetLastError(comm);
      for (size_t i = 0; i < buf.size(); ++i) {
        ASSERT_EQ(buf[i], intInput(k, i) + intInput(1 + k, i) + intInput(2 + k, i))
            << "call " << k << " elem " << i;
      }
    };
    call(0);
    sync.arrive_and_wait();
    if (rank == 0) {
      takeSlots();  // preempts the rack's job
      ASSERT_TRUE(intruder->release(999, 5).ok());
    }
    sync.arrive_and_wait();
    call(1);  // the agent re-grants first
    after[rank] = statsOf(comm);
    sync.arrive_and_wait();
    if (rank == 0) takeSlots();  // and keeps them this time
    sync.arrive_and_wait();
    call(2);  // NACKed slots go to the hosts; the notice may only be read now
    call(3);
    after3[rank] = statsOf(comm);
    call(4);
    last[rank] = statsOf(comm);
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(after[r].inaRegrants, 1u) << "rank " << r;
    EXPECT_EQ(after[r].inaFallbacks, 0u) << "rank " << r;
    EXPECT_EQ(last[r].inaFallbacks, 1u) << "rank " << r;
    EXPECT_EQ(last[r].inaCalls, after3[r].inaCalls)
        << "rank " << r << ": no switch calls after the fallback";
  }
}

}  // namespace
}  // namespace rina::testing
