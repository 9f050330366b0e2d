#include "mpi/collectives.h"

#include <cstring>
#include <optional>

#include "core/log.h"
#include "mpi/call_filter.h"
#include "mpi/comm_registry.h"
#include "mpi/stats.h"
#include "reduce/reduce.h"

namespace rina::mpi {
namespace {

std::optional<rinaMpiDelegateReason_t> commReason(const CommState& state) {
  if (state.intercomm) return rinaMpiIntercomm;
  if (state.size < 2) return rinaMpiSingleRank;
  return std::nullopt;
}

// Decides on the communicator and sets rina up if needed (collective: every
// rank gets here in the same call, since the argument checks agree).
std::optional<rinaMpiDelegateReason_t> admit(std::optional<rinaMpiDelegateReason_t> reason,
                                             CommState& state, MPI_Comm comm) {
  if (reason) return reason;
  if (auto r = commReason(state)) return r;
  if (state.rinaState == CommState::Rina::kFailed) return std::nullopt;  // reported by run
  if (!ensureRina(state, comm)) return rinaMpiUnavailable;
  return std::nullopt;
}

// A failed rina collective goes to the communicator's error handler (which
// aborts only if the application left MPI_ERRORS_ARE_FATAL); the rina
// communicator is then unusable, so later handled calls fail the same way.
int reportFailure(CommState& state, MPI_Comm comm, const char* call, rinaResult_t result) {
  if (state.rinaState == CommState::Rina::kFailed && result == rinaSuccess) {
    RINA_WARN(
        "rina-mpi: %s on %s (rank %d of %d): an earlier rina collective on this "
        "communicator failed; free it",
        call, state.name.c_str(), state.rank, state.size);
  } else {
    RINA_WARN("rina-mpi: %s on %s (rank %d of %d) failed: %s: %s", call, state.name.c_str(),
              state.rank, state.size, rinaGetErrorString(result), rinaCommGetLastError(state.rina));
    state.rinaState = CommState::Rina::kFailed;
  }
  PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
  return MPI_ERR_OTHER;
}

int finishHandled(CommState& state, MPI_Comm comm, const char* call, rinaResult_t result,
                  size_t bytes, const CallTimer& timer) {
  if (result != rinaSuccess) return reportFailure(state, comm, call, result);
  countHandled(state.stats, bytes, timer);
  return MPI_SUCCESS;
}

}  // namespace

int allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm) {
  CallTimer timer;
  ReductionPlan plan = planReduction(count > 0 ? static_cast<size_t>(count) : 0, type, op);
  CommState* state = commState(comm);
  if (state == nullptr) return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
  std::optional<rinaMpiDelegateReason_t> reason = admit(plan.delegate, *state, comm);
  if (reason) {
    int rc = PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
    countDelegated(state->stats, *reason, plan.bytes, timer);
    return rc;
  }
  if (state->rinaState == CommState::Rina::kFailed) {
    return reportFailure(*state, comm, "MPI_Allreduce", rinaSuccess);
  }
  const void* source = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  rinaResult_t result =
      rinaAllReduce(source, recvbuf, static_cast<size_t>(count), plan.type, plan.op, state->rina);
  return finishHandled(*state, comm, "MPI_Allreduce", result, plan.bytes, timer);
}

int reduceScatterBlock(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type,
                       MPI_Op op, MPI_Comm comm) {
  CallTimer timer;
  CommState* state = commState(comm);
  if (state == nullptr) {
    return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
  }
  // The threshold applies to the whole vector reduced, as for allreduce.
  const size_t block = recvcount > 0 ? static_cast<size_t>(recvcount) : 0;
  ReductionPlan plan =
      planReduction(state->intercomm ? block : block * static_cast<size_t>(state->size), type, op);
  std::optional<rinaMpiDelegateReason_t> reason = admit(plan.delegate, *state, comm);
  if (reason) {
    int rc = PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
    countDelegated(state->stats, *reason, plan.bytes, timer);
    return rc;
  }
  if (state->rinaState == CommState::Rina::kFailed) {
    return reportFailure(*state, comm, "MPI_Reduce_scatter_block", rinaSuccess);
  }
  rinaResult_t result;
  if (sendbuf == MPI_IN_PLACE) {
    // MPI: the input is the whole receive buffer and the result goes to its
    // start; rina reduces in place into this rank's block, moved afterwards.
    const size_t blockBytes = block * reduce::dataTypeSize(plan.type);
    char* whole = static_cast<char*>(recvbuf);
    char* mine = whole + static_cast<size_t>(state->rank) * blockBytes;
    result = rinaReduceScatter(whole, mine, block, plan.type, plan.op, state->rina);
    if (result == rinaSuccess && mine != whole) std::memmove(whole, mine, blockBytes);
  } else {
    result = rinaReduceScatter(sendbuf, recvbuf, block, plan.type, plan.op, state->rina);
  }
  return finishHandled(*state, comm, "MPI_Reduce_scatter_block", result, plan.bytes, timer);
}

int allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  CallTimer timer;
  CommState* state = commState(comm);
  if (state == nullptr) {
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  // Any gap-free predefined type moves as bytes. Only the receive side is
  // the same on every rank (MPI_IN_PLACE may differ), so it decides; a send
  // side described differently is left to MPI.
  std::optional<rinaMpiDelegateReason_t> argsReason;
  size_t elementSize = 0;
  const size_t block = recvcount > 0 ? static_cast<size_t>(recvcount) : 0;
  if (disabled()) {
    argsReason = rinaMpiDisabled;
  } else if (block == 0) {
    argsReason = rinaMpiCountZero;
  } else if (!isContiguousPredefined(recvtype, &elementSize)) {
    argsReason = rinaMpiDatatype;
  } else if (sendbuf != MPI_IN_PLACE && (sendtype != recvtype || sendcount != recvcount)) {
    argsReason = rinaMpiArguments;
  }
  const size_t blockBytes = block * elementSize;
  const size_t totalBytes = blockBytes * static_cast<size_t>(state->size);
  if (!argsReason && totalBytes < minBytes()) argsReason = rinaMpiBelowThreshold;
  std::optional<rinaMpiDelegateReason_t> reason = admit(argsReason, *state, comm);
  if (reason) {
    int rc = PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    countDelegated(state->stats, *reason, totalBytes, timer);
    return rc;
  }
  if (state->rinaState == CommState::Rina::kFailed) {
    return reportFailure(*state, comm, "MPI_Allgather", rinaSuccess);
  }
  const void* source = sendbuf == MPI_IN_PLACE ? static_cast<const char*>(recvbuf) +
                                                     static_cast<size_t>(state->rank) * blockBytes
                                               : sendbuf;
  rinaResult_t result = rinaAllGather(source, recvbuf, blockBytes, rinaUint8, state->rina);
  return finishHandled(*state, comm, "MPI_Allgather", result, totalBytes, timer);
}

}  // namespace rina::mpi
