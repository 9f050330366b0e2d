// gloo-allreduce-bench: the baseline for rina's allreduce. Gloo's classic
// chunked ring (gloo::AllreduceRingChunked<float>, float32 sum) over its TCP
// transport on loopback, ranks meeting through a gloo::rendezvous::FileStore
// in a temporary directory. Timing, the check and the table are
// rina-allreduce-perf's own (rina_perf_core), so the rows compare directly.
//
// Ranks: forked (--local-ranks N, default 4), or one per process under
// mpirun (rank and size from Open MPI's environment; MPI itself is not used).
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/config.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "perf/bench.h"
#include "perf/local_launcher.h"
#include "perf/options.h"
#include "perf/rank_group.h"

namespace rina::perf {
namespace {

constexpr const char* kTool = "gloo-allreduce-bench";

std::string glooVersion() {
  return "gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) +
         "." + std::to_string(GLOO_VERSION_PATCH) + " AllreduceRingChunked, tcp";
}

// Timings and error counts through Gloo itself: it is the baseline here, not
// the code under test.
class GlooRankGroup final : public RankGroup {
 public:
  explicit GlooRankGroup(std::shared_ptr<gloo::Context> context) : context_(std::move(context)) {}
  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }
  void barrier() override { gloo::BarrierAllToAll(context_).run(); }
  double maxOverRanks(double value) override {
    return reduce(value, gloo::ReductionFunction<double>::max);
  }
  int64_t sumOverRanks(int64_t value) override {
    // Counts of wrong elements stay far below 2^53: exact in a double.
    return static_cast<int64_t>(
        reduce(static_cast<double>(value), gloo::ReductionFunction<double>::sum));
  }
  // The TCP device listens on loopback, so every rank is on this host.
  std::vector<std::string> hostNames() override {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    return std::vector<std::string>(static_cast<size_t>(size()), name);
  }

 private:
  double reduce(double value, const gloo::ReductionFunction<double>* fn) {
    gloo::AllreduceRing<double>(context_, {&value}, 1, fn).run();
    return value;
  }
  std::shared_ptr<gloo::Context> context_;
};

// Gloo's allreduce works in place; out of place copies first (so time with
// -i 1, the default here).
class GlooRingChunked final : public AllreduceAlgorithm {
 public:
  explicit GlooRingChunked(std::shared_ptr<gloo::Context> context) : context_(std::move(context)) {}
  const std::string& name() const override { return name_; }
  std::string unsupportedReason(rinaDataType_t type, rinaRedOp_t op) const override {
    return type == rinaFloat32 && op == rinaSum ? "" : "this driver runs float32 sum only";
  }
  void run(const void* sendbuff, void* recvbuff, size_t count, rinaDataType_t,
           rinaRedOp_t) override {
    if (count > static_cast<size_t>(INT_MAX)) {
      fatal(kExitError, "count " + std::to_string(count) + " exceeds Gloo's int count");
    }
    if (sendbuff != recvbuff) {
      std::memcpy(recvbuff, sendbuff, count * sizeof(float));
    }
    float* data = static_cast<float*>(recvbuff);
    // Building the algorithm registers buffers with every peer; do it once
    // per (buffer, count), in the same order on every rank.
    if (!algorithm_ || data != data_ || count != count_) {
      algorithm_.reset();
      algorithm_ = std::make_unique<gloo::AllreduceRingChunked<float>>(
          context_, std::vector<float*>{data}, static_cast<int>(count));
      data_ = data;
      count_ = count;
    }
    algorithm_->run();
  }

 private:
  std::shared_ptr<gloo::Context> context_;
  std::unique_ptr<gloo::AllreduceRingChunked<float>> algorithm_;
  float* data_ = nullptr;
  size_t count_ = 0;
  std::string name_ = "gloo";
};

struct GlooSettings {
  std::string storeDir;               // FileStore directory shared by the ranks
  std::string address = "127.0.0.1";  // what the TCP device binds to
};

int benchmarkRank(const Options& options, const GlooSettings& settings, int rank, int nranks,
                  const char* bootstrap) {
  setFatalRank(rank);
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = settings.address;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(settings.storeDir);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
    context->setTimeout(std::chrono::seconds(options.timeoutSeconds));
    context->connectFullMesh(store, device);
    GlooRankGroup group(context);
    GlooRingChunked algorithm(context);
    const int code =
        runBenchmark(options, BenchSetup{kTool, glooVersion(), bootstrap}, group, {&algorithm});
    // Nobody leaves while a peer still finishes the last collective. A rank
    // that leaves this barrier first may close its sockets before the other
    // has read its message, and Gloo then reports "Connection closed by
    // peer": harmless here, since a rank in this barrier needs nothing more.
    try {
      group.barrier();
    } catch (const std::exception&) {
    }
    return code;
  } catch (const std::exception& e) {
    fatal(kExitError, std::string("gloo: ") + e.what());
  }
}

// Takes this driver's own flags out of argv; the rest are
// rina-allreduce-perf's.
bool takeGlooFlags(std::vector<const char*>* args, GlooSettings* settings, std::string* error) {
  std::vector<const char*> rest;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string_view flag = (*args)[i];
    if (flag == "--store" || flag == "--address") {
      if (i + 1 >= args->size()) {
        *error = "missing value for " + std::string(flag);
        return false;
      }
      (flag == "--store" ? settings->storeDir : settings->address) = (*args)[++i];
    } else {
      rest.push_back((*args)[i]);
    }
  }
  *args = std::move(rest);
  return true;
}

std::string usage(const char* program) {
  return std::string("usage: ") + program +
         " [--local-ranks N] [-b SIZE] [-e SIZE] [-f F] [-n N] [-w N] [-c 0|1] [-i 0|1]\n"
         "       [--timeout SECS] [-J FILE] [--store DIR] [--address HOST]\n"
         "Gloo's AllreduceRingChunked<float> (float32 sum) over TCP, timed like\n"
         "rina-allreduce-perf. Defaults: -b 64K -e 64M -f 4 --local-ranks 4 -i 1 (Gloo\n"
         "reduces in place). Under mpirun, one rank per process; --store must then be a\n"
         "directory every rank sees (default /tmp/gloo-allreduce-bench-<jobid>).\n";
}

int run(int argc, char** argv) {
  setFatalProgram(kTool);
  Options options;
  options.minBytes = size_t{64} << 10;
  options.maxBytes = size_t{64} << 20;
  options.factor = 4;
  options.localRanks = 4;
  options.inPlace = true;
  options.algorithms = {"gloo"};
  GlooSettings settings;
  std::vector<const char*> args(argv, argv + argc);
  std::string error;
  if (!takeGlooFlags(&args, &settings, &error) ||
      !parseOptions(static_cast<int>(args.size()), args.data(), &options, &error)) {
    std::fprintf(stderr, "%s: %s\n%s", kTool, error.c_str(), usage(argv[0]).c_str());
    return kExitError;
  }
  if (options.help) {
    std::fputs(usage(argv[0]).c_str(), stdout);
    return kExitOk;
  }
  if (options.type != rinaFloat32 || options.op != rinaSum ||
      options.algorithms != std::vector<std::string>{"gloo"}) {
    std::fprintf(stderr, "%s: runs float32 sum with Gloo only (no -d, -o, -a)\n", kTool);
    return kExitError;
  }

  const char* mpiRank = std::getenv("OMPI_COMM_WORLD_RANK");
  const char* mpiSize = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (mpiRank != nullptr && mpiSize != nullptr) {
    const int rank = std::atoi(mpiRank);
    if (settings.storeDir.empty()) {
      const char* job = std::getenv("OMPI_MCA_ess_base_jobid");
      settings.storeDir = std::string("/tmp/gloo-allreduce-bench-") + (job ? job : "mpirun");
    }
    std::filesystem::create_directories(settings.storeDir);
    const int code = benchmarkRank(options, settings, rank, std::atoi(mpiSize), "mpirun (env)");
    if (rank == 0) {
      std::filesystem::remove_all(settings.storeDir);  // after the last barrier
    }
    return code;
  }

  bool madeStore = false;
  if (settings.storeDir.empty()) {
    char dir[] = "/tmp/gloo-allreduce-bench-XXXXXX";
    if (mkdtemp(dir) == nullptr) {
      fatal(kExitError, "mkdtemp failed");
    }
    settings.storeDir = dir;
    madeStore = true;
  }
  const int code = runForkedRanks(options.localRanks, options.timeoutSeconds, [&](int rank) {
    return benchmarkRank(options, settings, rank, options.localRanks, "local-ranks");
  });
  if (madeStore) {
    std::filesystem::remove_all(settings.storeDir);
  }
  return code;
}

}  // namespace
}  // namespace rina::perf

int main(int argc, char** argv) { return rina::perf::run(argc, argv); }
