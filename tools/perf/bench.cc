#include "perf/bench.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>

#include "perf/check_pattern.h"
#include "perf/dtype.h"
#include "perf/report.h"

namespace rina::perf {
namespace {

constexpr int kMaxRounds = 5;
// Right after launch every implementation (MPI's too) ran 3-6x slower for
// its first 10-20 calls here (4 ranks on 2 cores), which -w 5 alone left
// in the first size's row.
constexpr int kStartupWarmupIters = 20;
constexpr size_t kBufferAlignment = 4096;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<std::byte[], FreeDeleter>;

Buffer allocateBuffer(size_t bytes) {
  const size_t rounded =
      (std::max<size_t>(bytes, 1) + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  auto* memory = static_cast<std::byte*>(std::aligned_alloc(kBufferAlignment, rounded));
  if (memory == nullptr) {
    fatal(kExitError, "cannot allocate " + std::to_string(bytes) + " bytes");
  }
  std::memset(memory, 0, rounded);  // fault the pages in before timing
  return Buffer(memory);
}

void printLine(const std::string& line) {
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

std::string joined(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    out += (i ? separator : "") + items[i];
  }
  return out;
}

// The "#" lines above the table: what ran, where, and how.
void printHeader(const Options& options, const BenchSetup& setup, int nranks,
                 const std::vector<std::string>& hosts, const std::vector<std::string>& names,
                 const std::vector<std::string>& notes) {
  printLine("# " + setup.tool + ": " + setup.library + ", bootstrap " + setup.bootstrap);
  printLine("# nranks " + std::to_string(nranks) + " on " + std::to_string(hosts.size()) +
            " host(s): " + joined(hosts, ","));
  std::vector<std::string> types, ops;
  for (rinaDataType_t t : options.types) types.push_back(typeName(t));
  for (rinaRedOp_t o : options.ops) ops.push_back(opName(o));
  printLine("# type " + joined(types, ",") + "  redop " + joined(ops, ",") + "  algos " +
            (names.empty() ? "(none)" : joined(names, ",")) + "  iters " +
            std::to_string(options.iters) + " in " +
            std::to_string(blockIterations(options.iters).size()) + " interleaved rounds  warmup " +
            std::to_string(options.warmupIters) + "  check " + (options.check ? "1" : "0") +
            "  in-place " + (options.inPlace ? "1" : "0"));
  printLine("# sizes " + std::to_string(options.minBytes) + ".." +
            std::to_string(options.maxBytes) + " bytes x" + std::to_string(options.factor));
  for (const std::string& note : notes) {
    printLine("# " + note);
  }
  printLine("#");
  printLine(formatColumnHeader());
}

// Before the first size: every algorithm runs past the start-up transient.
void warmUpOnce(const Options& options, RankGroup& group,
                const std::vector<AllreduceAlgorithm*>& algorithms, const void* send, void* recv,
                size_t count) {
  const int iters =
      options.warmupIters > 0 ? std::max(options.warmupIters, kStartupWarmupIters) : 0;
  for (AllreduceAlgorithm* algorithm : algorithms) {
    algorithm->select();
    for (int i = 0; i < iters; ++i) {
      algorithm->run(send, recv, count, options.type, options.op);
    }
  }
  group.barrier();
}

// --timeline FILE on rank 0: one line per timed iteration, written and
// flushed as the iteration ends, so the file shows a run's progress while
// it goes (tests/lab/netlab_replan_test.sh changes a link once enough
// iterations are in).
class Timeline {
 public:
  explicit Timeline(const std::string& path) : path_(path), out_(std::fopen(path.c_str(), "w")) {
    if (!out_) fatal(kExitError, "cannot write " + path_);
    ok_ = std::fputs("# algo bytes start_unix_s duration_us\n", out_) >= 0;
  }
  ~Timeline() {
    if (out_) std::fclose(out_);
  }
  void add(const char* algorithm, size_t bytes, double startUnixSec, double durationUs) {
    ok_ =
        ok_ &&
        std::fprintf(out_, "%s %zu %.6f %.1f\n", algorithm, bytes, startUnixSec, durationUs) > 0 &&
        std::fflush(out_) == 0;
  }
  // Fatal when any line could not be written.
  void close() {
    const bool closed = std::fclose(out_) == 0;
    out_ = nullptr;
    if (!closed || !ok_) fatal(kExitError, "cannot write " + path_);
  }

 private:
  std::string path_;
  FILE* out_;
  bool ok_ = false;
};

// Mean time per iteration of each algorithm, in microseconds, on this rank;
// every iteration also goes to *timeline when it is not null (the writes'
// time is kept out of the mean). With -c 2 (out of place) every call's
// result is also checked against `pattern`, the input's, and the wrong
// elements added to (*wrong)[a] (the check's time is then in the mean, not
// in the timeline).
std::vector<double> timeInterleaved(const Options& options, RankGroup& group,
                                    const std::vector<AllreduceAlgorithm*>& algorithms,
                                    const void* send, void* recv, size_t count, Timeline* timeline,
                                    const CheckPattern& pattern, std::vector<int64_t>* wrong) {
  const size_t n = algorithms.size();
  wrong->assign(n, 0);
  const bool checkEach = options.checkEvery && !options.inPlace;
  auto checked = [&](size_t a) {
    if (checkEach) (*wrong)[a] += static_cast<int64_t>(countWrongResults(pattern, recv, count));
  };
  for (size_t a = 0; a < n; ++a) {
    algorithms[a]->select();
    for (int i = 0; i < options.warmupIters; ++i) {
      algorithms[a]->run(send, recv, count, options.type, options.op);
      checked(a);
    }
  }
  std::vector<double> totalUs(n, 0.0);
  const std::vector<int> blocks = blockIterations(options.iters);
  for (size_t round = 0; round < blocks.size(); ++round) {
    // Each round starts with a different algorithm, so none is always the
    // one that runs right after another's traffic.
    for (size_t k = 0; k < n; ++k) {
      const size_t a = (round + k) % n;
      algorithms[a]->select();
      group.barrier();
      const auto start = std::chrono::steady_clock::now();
      std::chrono::duration<double, std::micro> writing{0};
      for (int i = 0; i < blocks[round]; ++i) {
        const auto wall = std::chrono::system_clock::now();
        const auto t0 = std::chrono::steady_clock::now();
        algorithms[a]->run(send, recv, count, options.type, options.op);
        if (timeline) {
          const auto t1 = std::chrono::steady_clock::now();
          const std::chrono::duration<double, std::micro> took = t1 - t0;
          const std::chrono::duration<double> since = wall.time_since_epoch();
          timeline->add(algorithms[a]->name().c_str(), count * typeSize(options.type),
                        since.count(), took.count());
          writing += std::chrono::steady_clock::now() - t1;
        }
        checked(a);
      }
      const std::chrono::duration<double, std::micro> elapsed =
          std::chrono::steady_clock::now() - start;
      totalUs[a] += (elapsed - writing).count();
    }
  }
  for (double& t : totalUs) {
    t = options.iters > 0 ? t / options.iters : 0.0;
  }
  return totalUs;
}

// Wrong elements on this rank: out of place (result, and a send buffer that
// must stay untouched), then in place.
int64_t checkOnce(const Options& options, RankGroup& group, AllreduceAlgorithm& algorithm,
                  std::byte* send, std::byte* recv, size_t count) {
  const CheckPattern pattern(options.type, options.op, group.size());
  const int rank = group.rank();
  const size_t bytes = count * typeSize(options.type);
  fillInput(pattern, rank, send, count);
  std::memset(recv, 0xA5, bytes);  // elements the library never writes show up
  algorithm.select();
  algorithm.run(send, recv, count, options.type, options.op);
  size_t wrong = countWrongResults(pattern, recv, count);
  wrong += countChangedInputs(pattern, rank, send, count);
  fillInput(pattern, rank, recv, count);
  algorithm.run(recv, recv, count, options.type, options.op);
  wrong += countWrongResults(pattern, recv, count);
  return static_cast<int64_t>(wrong);
}

// Every size of one type and op: time, check, one table row per algorithm.
void runCombination(const Options& options, RankGroup& group,
                    const std::vector<AllreduceAlgorithm*>& algorithms, std::byte* send,
                    std::byte* recv, bool* first, std::vector<Row>* rows, Timeline* timeline) {
  const bool root = group.rank() == 0;
  const int nranks = group.size();
  const size_t elementSize = typeSize(options.type);
  const CheckPattern timingInput(options.type, options.op, nranks);
  size_t previousCount = SIZE_MAX;
  for (const size_t requestedBytes : sizeSequence(options)) {
    const size_t count = requestedBytes / elementSize;
    if (count == previousCount) continue;  // 1 byte of a wider type: 0 elements again
    previousCount = count;
    // In place runs on recv, so both modes start from the same input.
    fillInput(timingInput, group.rank(), options.inPlace ? recv : send, count);
    const void* source = options.inPlace ? recv : send;
    if (*first) {
      warmUpOnce(options, group, algorithms, source, recv, count);
      *first = false;
    }
    std::vector<int64_t> wrongTimed;
    std::vector<double> timesUs = algorithms.empty()
                                      ? std::vector<double>{}
                                      : timeInterleaved(options, group, algorithms, source, recv,
                                                        count, timeline, timingInput, &wrongTimed);
    for (size_t a = 0; a < algorithms.size(); ++a) {
      Row row;
      row.bytes = count * elementSize;
      row.count = count;
      row.type = options.type;
      row.op = options.op;
      row.algorithm = algorithms[a]->name();
      row.timeUs = group.maxOverRanks(timesUs[a]);
      if (options.check) {
        row.wrong = group.sumOverRanks(
            checkOnce(options, group, *algorithms[a], send, recv, count) + wrongTimed[a]);
      }
      if (root) {
        printLine(formatRow(row, nranks));
      }
      rows->push_back(row);
    }
  }
}

}  // namespace

std::vector<int> blockIterations(int iters) {
  const int rounds = std::min(iters, kMaxRounds);
  std::vector<int> blocks;
  for (int r = 0; r < rounds; ++r) {
    blocks.push_back(iters / rounds + (r < iters % rounds ? 1 : 0));
  }
  return blocks;
}

int runBenchmark(const Options& options, const BenchSetup& setup, RankGroup& group,
                 const std::vector<AllreduceAlgorithm*>& requested) {
  const bool root = group.rank() == 0;
  const int nranks = group.size();
  const std::vector<std::string> allHosts = group.hostNames();
  const std::set<std::string> hostSet(allHosts.begin(), allHosts.end());
  const std::vector<std::string> hosts(hostSet.begin(), hostSet.end());

  // Per combination, the algorithms that can run it; the others are noted.
  struct Combination {
    Options options;
    std::vector<AllreduceAlgorithm*> algorithms;
  };
  std::vector<Combination> combinations;
  std::vector<std::string> notes;
  std::vector<std::string> names;
  for (rinaDataType_t type : options.types) {
    for (rinaRedOp_t op : options.ops) {
      Combination c{options, {}};
      c.options.type = type;
      c.options.op = op;
      for (AllreduceAlgorithm* algorithm : requested) {
        const std::string why = algorithm->unsupportedReason(type, op);
        if (why.empty()) {
          c.algorithms.push_back(algorithm);
          if (std::find(names.begin(), names.end(), algorithm->name()) == names.end()) {
            names.push_back(algorithm->name());
          }
        } else {
          notes.push_back(algorithm->name() + " skipped for " + typeName(type) + " " + opName(op) +
                          ": " + why);
        }
      }
      combinations.push_back(std::move(c));
    }
  }

  if (root) {
    printHeader(options, setup, nranks, hosts, names, notes);
  }

  Buffer send = allocateBuffer(options.maxBytes);
  Buffer recv = allocateBuffer(options.maxBytes);
  std::vector<Row> rows;
  std::unique_ptr<Timeline> timeline;
  if (root && !options.timelinePath.empty()) {
    timeline = std::make_unique<Timeline>(options.timelinePath);
  }
  bool first = true;
  for (const Combination& combination : combinations) {
    runCombination(combination.options, group, combination.algorithms, send.get(), recv.get(),
                   &first, &rows, timeline.get());
  }

  const Summary summary = summarize(rows, nranks);
  if (timeline) timeline->close();
  if (root) {
    std::fputs(formatFooter(summary).c_str(), stdout);
    std::fflush(stdout);
    if (!options.jsonPath.empty()) {
      RunInfo info{setup.tool,          nranks,          hosts,
                   setup.bootstrap,     names,           options.iters,
                   options.warmupIters, options.inPlace, options.check};
      FILE* json = std::fopen(options.jsonPath.c_str(), "w");
      const std::string text = toJson(info, rows);
      if (json == nullptr || std::fputs(text.c_str(), json) < 0 || std::fclose(json) != 0) {
        fatal(kExitError, "cannot write " + options.jsonPath);
      }
    }
  }
  return summary.wrong > 0 ? kExitWrongResults : kExitOk;
}

}  // namespace rina::perf
