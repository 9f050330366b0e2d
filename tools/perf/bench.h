// The measurement loop of rina-allreduce-perf: sizes, interleaved rounds of
// every algorithm on the same buffers, the correctness check, the table.
#ifndef RINA_TOOLS_PERF_BENCH_H_
#define RINA_TOOLS_PERF_BENCH_H_

#include <cstddef>
#include <string>
#include <vector>

#include "perf/options.h"
#include "perf/rank_group.h"
#include "rina/rina.h"

namespace rina::perf {

// One allreduce implementation under test.
class AllreduceAlgorithm {
 public:
  virtual ~AllreduceAlgorithm() = default;
  virtual const std::string& name() const = 0;
  // Empty when it can reduce this type with this op; otherwise why not.
  virtual std::string unsupportedReason(rinaDataType_t type, rinaRedOp_t op) const = 0;
  // Makes it the algorithm of the run() calls that follow (called before
  // every block of iterations, since algorithms are interleaved).
  virtual void select() {}
  // recvbuff == sendbuff: in place. Failures are fatal().
  virtual void run(const void* sendbuff, void* recvbuff, size_t count, rinaDataType_t type,
                   rinaRedOp_t op) = 0;
};

struct BenchSetup {
  std::string tool;       // "rina-allreduce-perf"
  std::string library;    // "rina 0.1.0"
  std::string bootstrap;  // "mpi", "local-ranks", "single"
};

// Runs on every rank; rank 0 prints. Returns kExitOk or kExitWrongResults.
int runBenchmark(const Options& options, const BenchSetup& setup, RankGroup& group,
                 const std::vector<AllreduceAlgorithm*>& algorithms);

// Iterations of each block: iters split over min(iters, 5) rounds, the first
// rounds taking one more when it does not divide.
std::vector<int> blockIterations(int iters);

}  // namespace rina::perf

#endif  // RINA_TOOLS_PERF_BENCH_H_
