// --local-ranks: runs the benchmark as N forked processes on this host.
#ifndef RINA_TOOLS_PERF_LOCAL_LAUNCHER_H_
#define RINA_TOOLS_PERF_LOCAL_LAUNCHER_H_

#include <functional>

namespace rina::perf {

// Forks nranks children, each running body(rank) and exiting with its value;
// the parent waits for them all and returns the exit code for the tool:
// - every child 0 -> 0;
// - a child that exits 1 (kExitWrongResults: an orderly verdict every rank
//   reaches) leaves the others running; the result is then 1;
// - any other failure (exit code, signal, or timeoutSeconds passing) makes
//   the parent kill the remaining children; the result is that child's code
//   (128 + signal for a signal, kExitTimeout for the timeout).
// Children die with the parent (PR_SET_PDEATHSIG).
int runForkedRanks(int nranks, int timeoutSeconds, const std::function<int(int rank)>& body);

}  // namespace rina::perf

#endif  // RINA_TOOLS_PERF_LOCAL_LAUNCHER_H_
