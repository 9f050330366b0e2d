// The MPI side of rina-allreduce-perf (built only with MPI). Everything goes
// through PMPI_* so that an interposer that overrides MPI_Allreduce (and
// friends) via LD_PRELOAD measures neither itself as "mpi" nor our
// bookkeeping.
#ifndef RINA_TOOLS_PERF_MPI_SUPPORT_H_
#define RINA_TOOLS_PERF_MPI_SUPPORT_H_

#include <memory>

#include "perf/bench.h"
#include "perf/rank_group.h"

namespace rina::perf {

// MPI_Init; fatal() then aborts the whole job. Pair with finalizeMpi().
void initMpi(int* argc, char*** argv);
void finalizeMpi();

// The ranks of MPI_COMM_WORLD.
std::unique_ptr<RankGroup> makeMpiRankGroup();

// The MPI library's allreduce on MPI_COMM_WORLD ("mpi").
std::unique_ptr<AllreduceAlgorithm> makeMpiAllreduce();

}  // namespace rina::perf

#endif  // RINA_TOOLS_PERF_MPI_SUPPORT_H_
