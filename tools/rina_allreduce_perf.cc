// rina-allreduce-perf: allreduce latency and bandwidth, nccl-tests style,
// for rina's algorithms and (under mpirun) the MPI library's own allreduce.
// See usageText() in perf/options.cc for the flags.
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "perf/bench.h"
#include "perf/local_launcher.h"
#include "perf/options.h"
#include "perf/rank_group.h"
#include "perf/rina_algorithm.h"
#include "rina/rina.h"

#ifdef RINA_PERF_HAVE_MPI
#include "bootstrap/mpi_bootstrap.h"
#include "perf/mpi_support.h"
#endif

namespace rina::perf {
namespace {

constexpr const char* kTool = "rina-allreduce-perf";

// Whether an MPI launcher started us (Open MPI, or a PMI-based one).
bool launchedByMpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

// Benchmarks on comm (null when only "mpi" was asked for) and destroys it.
int benchmarkOnComm(const Options& options, const BenchSetup& setup, RankGroup& group,
                    rinaComm_t comm, std::unique_ptr<AllreduceAlgorithm> mpiAllreduce) {
  std::vector<std::unique_ptr<AllreduceAlgorithm>> owned;
  for (const std::string& name : options.algorithms) {
    if (name == kMpiAlgorithm) {
      owned.push_back(std::move(mpiAllreduce));
    } else {
      owned.push_back(makeRinaAlgorithm(comm, name));
    }
  }
  std::vector<AllreduceAlgorithm*> algorithms;
  for (const auto& algorithm : owned) {
    algorithms.push_back(algorithm.get());
  }
  const int code = runBenchmark(options, setup, group, algorithms);
  if (comm != nullptr) {
    // What ran, summed over the ranks (warm-up and checks included), and
    // what the INA racks did: switch calls, resends, slices left to the
    // hosts, fallbacks (one per worker of a rack that lost its switch);
    // and rank 0's plan counters (equal on every rank).
    rinaCommStats_t s{};
    s.size = sizeof s;
    checkRina(rinaCommGetStats(comm, &s), comm, "rinaCommGetStats");
    auto sum = [&](uint64_t v) { return group.sumOverRanks(static_cast<int64_t>(v)); };
    const int64_t calls[] = {sum(s.callsRing), sum(s.callsRd),    sum(s.callsHier),
                             sum(s.callsRina), sum(s.callsPsIna), sum(s.callsOneShot)};
    const int64_t ina[] = {sum(s.inaCalls), sum(s.inaRetransmissions), sum(s.inaHostSlices),
                           sum(s.inaFallbacks), sum(s.inaRegrants)};
    // What the INA datagrams met: first sends, resends by cause (overtaken
    // by later answers, or the retransmission timer), answers that came
    // twice (the first copy was only late), kernel drops at the ranks' INA
    // sockets, window halvings.
    const int64_t sends[] = {sum(s.inaDatagrams), sum(s.inaFastRetransmissions),
                             sum(s.inaLateAnswers), sum(s.inaSocketDrops), sum(s.inaWindowCuts)};
    // Which transports carried the bytes (rinaLinkStats_t::transport): the
    // RDMA tests read this line to see that verbs, not sockets, moved them.
    const char* const kTransports[] = {"verbs", "socket", "shm"};
    int64_t transportBytes[3] = {};
    int nLinks = 0;
    checkRina(rinaCommGetLinkStats(comm, nullptr, 0, &nLinks), comm, "rinaCommGetLinkStats");
    std::vector<rinaLinkStats_t> links(static_cast<size_t>(nLinks));
    checkRina(rinaCommGetLinkStats(comm, links.data(), nLinks, &nLinks), comm,
              "rinaCommGetLinkStats");
    for (const rinaLinkStats_t& l : links) {
      for (int t = 0; t < 3; ++t) {
        if (std::strncmp(l.transport, kTransports[t], sizeof l.transport) == 0) {
          transportBytes[t] += static_cast<int64_t>(l.bytesSent);
        }
      }
    }
    for (int64_t& b : transportBytes) b = group.sumOverRanks(b);
    if (group.rank() == 0) {
      std::printf("# rina bytes sent, all ranks: verbs %lld socket %lld shm %lld\n",
                  static_cast<long long>(transportBytes[0]),
                  static_cast<long long>(transportBytes[1]),
                  static_cast<long long>(transportBytes[2]));
      std::printf(
          "# rina calls, all ranks: ring %lld rd %lld oneshot %lld hier %lld rina %lld ps-ina "
          "%lld\n"
          "# rina INA, all ranks: switch calls %lld retransmissions %lld host slices %lld "
          "fallbacks %lld regrants %lld\n",
          static_cast<long long>(calls[0]), static_cast<long long>(calls[1]),
          static_cast<long long>(calls[5]), static_cast<long long>(calls[2]),
          static_cast<long long>(calls[3]), static_cast<long long>(calls[4]),
          static_cast<long long>(ina[0]), static_cast<long long>(ina[1]),
          static_cast<long long>(ina[2]), static_cast<long long>(ina[3]),
          static_cast<long long>(ina[4]));
      std::printf(
          "# rina INA sends, all ranks: first %lld resent %lld (fast %lld, by timer %lld) late "
          "answers %lld socket drops %lld window cuts %lld\n",
          static_cast<long long>(sends[0]), static_cast<long long>(ina[1]),
          static_cast<long long>(sends[1]), static_cast<long long>(ina[1] - sends[1]),
          static_cast<long long>(sends[2]), static_cast<long long>(sends[3]),
          static_cast<long long>(sends[4]));
      std::printf("# rina plans: epoch %llu replans %llu checks %llu\n",
                  static_cast<unsigned long long>(s.planEpoch),
                  static_cast<unsigned long long>(s.replans),
                  static_cast<unsigned long long>(s.planChecks));
      std::fflush(stdout);
    }
    checkRina(rinaCommDestroy(comm), comm, "rinaCommDestroy");
  }
  return code;
}

#ifdef RINA_PERF_HAVE_MPI
int runUnderMpi(const Options& options, int* argc, char*** argv) {
  initMpi(argc, argv);
  auto group = makeMpiRankGroup();
  rinaComm_t comm = nullptr;
  if (wantsRina(options)) {
    checkRina(rinaMpiCommInit(MPI_COMM_WORLD, &comm), nullptr, "rinaMpiCommInit");
  }
  const BenchSetup setup{kTool, "rina " + rinaVersionString(), "mpi"};
  const int code = benchmarkOnComm(options, setup, *group, comm, makeMpiAllreduce());
  group.reset();
  finalizeMpi();
  return code;
}
#endif

int runForked(const Options& options) {
  const int nranks = options.localRanks;
  // Rank 0 makes the unique id after fork() and hands it over in shared
  // memory: rinaGetUniqueId starts the bootstrap root's thread, and a process
  // that forks while a thread of its own may hold a lock (the allocator's,
  // the log's) gives its children that lock held forever.
  void* idMemory = mmap(nullptr, sizeof(rinaUniqueId), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (idMemory == MAP_FAILED) fatal(kExitError, "mmap of the shared unique id failed");
  auto* sharedId = static_cast<rinaUniqueId*>(idMemory);
  auto group = ForkedRankGroup::create(nranks, options.timeoutSeconds);
  const BenchSetup setup{kTool, "rina " + rinaVersionString(), "local-ranks"};
  const int code = runForkedRanks(nranks, options.timeoutSeconds, [&](int rank) {
    setFatalRank(rank);
    group->joinAsRank(rank);
    rinaComm_t comm = nullptr;
    if (wantsRina(options)) {
      if (rank == 0) checkRina(rinaGetUniqueId(sharedId), nullptr, "rinaGetUniqueId");
      group->barrier();
      const rinaUniqueId id = *sharedId;
      checkRina(rinaCommInitRank(&comm, nranks, id, rank), nullptr, "rinaCommInitRank");
    }
    return benchmarkOnComm(options, setup, *group, comm, nullptr);
  });
  munmap(idMemory, sizeof(rinaUniqueId));
  return code;
}

int runSingle(const Options& options) {
  auto group = makeSingleRankGroup();
  rinaComm_t comm = nullptr;
  if (wantsRina(options)) {
    rinaUniqueId id{};
    checkRina(rinaGetUniqueId(&id), nullptr, "rinaGetUniqueId");
    checkRina(rinaCommInitRank(&comm, 1, id, 0), nullptr, "rinaCommInitRank");
  }
  return benchmarkOnComm(options, BenchSetup{kTool, "rina " + rinaVersionString(), "single"},
                         *group, comm, nullptr);
}

int run(int argc, char** argv) {
  Options options;
  std::string error;
  if (!parseOptions(argc, argv, &options, &error)) {
    std::fprintf(stderr, "rina-allreduce-perf: %s\n%s", error.c_str(), usageText(argv[0]).c_str());
    return kExitError;
  }
  if (options.help) {
    std::fputs(usageText(argv[0]).c_str(), stdout);
    return kExitOk;
  }
  const bool underMpi = launchedByMpi();
  if (underMpi && options.localRanks > 0) {
    fatal(kExitError, "--local-ranks cannot be used under mpirun");
  }
  if (underMpi) {
#ifdef RINA_PERF_HAVE_MPI
    return runUnderMpi(options, &argc, &argv);
#else
    fatal(kExitError, "started by mpirun, but built without MPI; use --local-ranks instead");
#endif
  }
  if (wantsMpi(options)) {
    fatal(kExitError, "algorithm \"mpi\" needs mpirun (and a build with MPI)");
  }
  return options.localRanks > 0 ? runForked(options) : runSingle(options);
}

}  // namespace
}  // namespace rina::perf

int main(int argc, char** argv) { return rina::perf::run(argc, argv); }
