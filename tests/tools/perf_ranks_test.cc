// rina-allreduce-perf's multi-rank machinery without librina: forked ranks
// (exit codes, kills, timeouts), the shared-memory rank group, and the whole
// benchmark loop driven by stand-in allreduce implementations.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "perf/bench.h"
#include "perf/local_launcher.h"
#include "perf/rank_group.h"

namespace rina::perf {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void waitToBeKilled() {
  while (true) {
    pause();
  }
}

TEST(PerfForkedRanks, AllSucceed) {
  EXPECT_EQ(runForkedRanks(4, 60, [](int) { return 0; }), kExitOk);
}

TEST(PerfForkedRanks, WrongResultsLetTheOthersFinish) {
  // Rank 1 reports wrong results at once; the others finish later, normally.
  EXPECT_EQ(runForkedRanks(3, 60,
                           [](int rank) {
                             if (rank == 1) {
                               return kExitWrongResults;
                             }
                             usleep(200 * 1000);
                             return kExitOk;
                           }),
            kExitWrongResults);
}

TEST(PerfForkedRanks, AnErrorStopsTheOthers) {
  const auto start = Clock::now();
  EXPECT_EQ(runForkedRanks(4, 60,
                           [](int rank) -> int {
                             if (rank == 2) {
                               return kExitError;
                             }
                             waitToBeKilled();
                           }),
            kExitError);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(30));
}

TEST(PerfForkedRanks, ASignalIsReported) {
  EXPECT_EQ(runForkedRanks(2, 60,
                           [](int rank) -> int {
                             if (rank == 0) {
                               signal(SIGABRT, SIG_DFL);
                               raise(SIGABRT);
                             }
                             waitToBeKilled();
                           }),
            128 + SIGABRT);
}

TEST(PerfForkedRanks, TimeoutKillsEveryRank) {
  EXPECT_EQ(runForkedRanks(2, 1, [](int) -> int { waitToBeKilled(); }), kExitTimeout);
}

TEST(PerfForkedRanks, RanksThatIgnoreSigtermAreKilled) {
  EXPECT_EQ(runForkedRanks(2, 1,
                           [](int) -> int {
                             signal(SIGTERM, SIG_IGN);
                             waitToBeKilled();
                           }),
            kExitTimeout);
}

TEST(PerfForkedRankGroup, ReducesAcrossRanksRepeatedly) {
  constexpr int kRanks = 5;
  auto group = ForkedRankGroup::create(kRanks, 60);
  EXPECT_EQ(runForkedRanks(kRanks, 60,
                           [&](int rank) {
                             group->joinAsRank(rank);
                             for (int round = 0; round < 200; ++round) {
                               if (group->maxOverRanks(rank * 1.5 + round) != 6.0 + round ||
                                   group->sumOverRanks(rank + 1 + round) != 15 + 5 * round) {
                                 return kExitError;
                               }
                             }
                             return group->size() == kRanks && group->rank() == rank ? kExitOk
                                                                                     : kExitError;
                           }),
            kExitOk);
}

// float32 sum through a shared mapping: the ranks' slots, summed in rank
// order. skipRank's contribution is left out when skipRank >= 0 (a bug), on
// every call or, with onlyCall >= 0, on that call (counted from 0) alone.
class SharedSumAllreduce final : public AllreduceAlgorithm {
 public:
  SharedSumAllreduce(RankGroup& group, size_t maxCount, int skipRank, int onlyCall = -1)
      : group_(group), maxCount_(maxCount), skipRank_(skipRank), onlyCall_(onlyCall) {
    bytes_ = maxCount * sizeof(float) * static_cast<size_t>(group.size());
    slots_ = static_cast<float*>(
        mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  }
  ~SharedSumAllreduce() override { munmap(slots_, bytes_); }
  const std::string& name() const override { return name_; }
  std::string unsupportedReason(rinaDataType_t type, rinaRedOp_t op) const override {
    return type == rinaFloat32 && op == rinaSum ? "" : "float32 sum only";
  }
  void run(const void* sendbuff, void* recvbuff, size_t count, rinaDataType_t,
           rinaRedOp_t) override {
    const int n = group_.size();
    std::memcpy(slots_ + static_cast<size_t>(group_.rank()) * maxCount_, sendbuff,
                count * sizeof(float));
    group_.barrier();
    float* out = static_cast<float*>(recvbuff);
    const bool skip = onlyCall_ < 0 || calls_ == onlyCall_;
    ++calls_;
    for (size_t i = 0; i < count; ++i) {
      float sum = 0;
      for (int r = 0; r < n; ++r) {
        sum += skip && r == skipRank_ ? 0.0f : slots_[static_cast<size_t>(r) * maxCount_ + i];
      }
      out[i] = sum;
    }
    group_.barrier();
  }

 private:
  RankGroup& group_;
  size_t maxCount_;
  int skipRank_;
  int onlyCall_;
  int calls_ = 0;
  size_t bytes_ = 0;
  float* slots_ = nullptr;
  std::string name_ = "shm";
};

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs the benchmark on 3 forked ranks; returns the exit code, *json the file.
int benchmarkForked(int skipRank, std::string* json) {
  constexpr int kRanks = 3;
  Options options;
  options.minBytes = 1 << 10;
  options.maxBytes = 64 << 10;
  options.factor = 8;
  options.iters = 7;
  options.warmupIters = 1;
  options.jsonPath = ::testing::TempDir() + "perf_ranks_test.json";
  std::remove(options.jsonPath.c_str());
  auto group = ForkedRankGroup::create(kRanks, 60);
  auto algorithm = std::make_unique<SharedSumAllreduce>(*group, options.maxBytes / 4, skipRank);
  const int code = runForkedRanks(kRanks, 60, [&](int rank) {
    group->joinAsRank(rank);
    return runBenchmark(options, BenchSetup{"test", "none", "local-ranks"}, *group,
                        {algorithm.get()});
  });
  *json = readFile(options.jsonPath);
  return code;
}

TEST(PerfBenchmark, CorrectAllreduceOverForkedRanksPasses) {
  std::string json;
  EXPECT_EQ(benchmarkForked(-1, &json), kExitOk);
  EXPECT_NE(json.find("\"out_of_bounds\": 0,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"size\": 65536"), std::string::npos) << json;
}

// A contribution lost in one timed call only: -c 1 checks one call per size
// and misses it, -c 2 checks every call and counts it. One size; calls: 20
// start-up warm-ups, 1 warm-up, 7 timed (call 25 is the 5th), 2 checked.
int benchmarkLosingOneCall(bool checkEvery) {
  constexpr int kRanks = 3;
  Options options;
  options.minBytes = options.maxBytes = 4 << 10;
  options.iters = 7;
  options.warmupIters = 1;
  options.checkEvery = checkEvery;
  auto group = ForkedRankGroup::create(kRanks, 60);
  auto algorithm = std::make_unique<SharedSumAllreduce>(*group, options.maxBytes / 4, 1, 25);
  return runForkedRanks(kRanks, 60, [&](int rank) {
    group->joinAsRank(rank);
    return runBenchmark(options, BenchSetup{"test", "none", "local-ranks"}, *group,
                        {algorithm.get()});
  });
}

TEST(PerfBenchmark, CheckEveryCallFindsAWrongTimedCall) {
  EXPECT_EQ(benchmarkLosingOneCall(false), kExitOk);
  EXPECT_EQ(benchmarkLosingOneCall(true), kExitWrongResults);
}

TEST(PerfBenchmark, LostContributionIsCountedAndFails) {
  std::string json;
  EXPECT_EQ(benchmarkForked(1, &json), kExitWrongResults);
  EXPECT_EQ(json.find("\"out_of_bounds\": 0,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"out_of_bounds\": "), std::string::npos) << json;
}

// One rank: a copy is a correct allreduce for every type and op.
class CopyAllreduce final : public AllreduceAlgorithm {
 public:
  const std::string& name() const override { return name_; }
  std::string unsupportedReason(rinaDataType_t, rinaRedOp_t) const override { return ""; }
  void run(const void* sendbuff, void* recvbuff, size_t count, rinaDataType_t type,
           rinaRedOp_t) override {
    static constexpr size_t kSizes[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
    if (sendbuff != recvbuff) {
      std::memcpy(recvbuff, sendbuff, count * kSizes[type]);
    }
  }

 private:
  std::string name_ = "copy";
};

TEST(PerfBenchmark, SingleRankEveryTypeAndOp) {
  auto group = makeSingleRankGroup();
  CopyAllreduce copy;
  for (int type = 0; type < rinaNumTypes; ++type) {
    for (int op = 0; op < rinaNumOps; ++op) {
      Options options;
      options.minBytes = 8;
      options.maxBytes = 8 << 10;
      options.factor = 32;
      options.iters = 2;
      options.warmupIters = 0;
      options.type = static_cast<rinaDataType_t>(type);
      options.op = static_cast<rinaRedOp_t>(op);
      EXPECT_EQ(runBenchmark(options, BenchSetup{"test", "none", "single"}, *group, {&copy}),
                kExitOk)
          << type << " " << op;
    }
  }
}

}  // namespace
}  // namespace rina::perf
