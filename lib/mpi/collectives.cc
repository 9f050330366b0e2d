#include "mpi/collectives.h"

#include <cstring>
#include <optional>
#include <vector>

#include "core/log.h"
#include "mpi/call_filter.h"
#include "mpi/comm_registry.h"
#include "mpi/stats.h"
#include "mpi/type_signature.h"
#include "reduce/reduce.h"

namespace rina::mpi {
namespace {

std::optional<rinaMpiDelegateReason_t> commReason(const CommState& state) {
  if (state.intercomm) return rinaMpiIntercomm;
  if (state.size < 2) return rinaMpiSingleRank;
  return std::nullopt;
}

// Decides on the communicator and sets rina up if needed. Every rank of the
// communicator gets here in the same call: reason depends only on what MPI
// requires to match on every rank (the signature: element kind and bytes),
// so the set-up's collectives always meet each other.
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
// It is revoked first: the ranks that wait in the same call on live ranks
// (not next to a dead one) get rinaRevoked at once, with this rank's error,
// which names the rank that failed, instead of waiting out RINA_TIMEOUT_MS.
int reportFailure(CommState& state, MPI_Comm comm, const char* call, rinaResult_t result) {
  if (result != rinaSuccess && result != rinaRevoked && result != rinaInvalidArgument) {
    rinaCommRevoke(state.rina);
  }
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

// This rank's data disagrees with what the other ranks were told it holds (an
// erroneous program, or an MPI library whose packed form is not the plain
// elements): the call fails here, the other ranks' rina calls time out.
int reportLayoutFailure(CommState& state, MPI_Comm comm, const char* call, const char* what) {
  RINA_WARN("rina-mpi: %s on %s (rank %d of %d): %s", call, state.name.c_str(), state.rank,
            state.size, what);
  state.rinaState = CommState::Rina::kFailed;
  PMPI_Comm_call_errhandler(comm, MPI_ERR_TYPE);
  return MPI_ERR_TYPE;
}

int finishHandled(CommState& state, MPI_Comm comm, const char* call, rinaResult_t result,
                  size_t bytes, const CallTimer& timer) {
  if (result != rinaSuccess) return reportFailure(state, comm, call, result);
  countHandled(state.stats, bytes, timer);
  return MPI_SUCCESS;
}

// count instances of type at buf as `bytes` plain bytes in scratch.
bool pack(const void* buf, int count, MPI_Datatype type, size_t bytes, char* scratch,
          MPI_Comm comm) {
  int position = 0;
  return PMPI_Pack(buf, count, type, scratch, static_cast<int>(bytes), &position, comm) ==
             MPI_SUCCESS &&
         static_cast<size_t>(position) == bytes;
}

bool unpack(const char* scratch, size_t bytes, void* buf, int count, MPI_Datatype type,
            MPI_Comm comm) {
  int position = 0;
  return PMPI_Unpack(scratch, static_cast<int>(bytes), &position, buf, count, type, comm) ==
             MPI_SUCCESS &&
         static_cast<size_t>(position) == bytes;
}

MPI_Aint extentOf(MPI_Datatype type) {
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(type, &lb, &extent);
  return extent;
}

// The signature of count instances of type as an allreduce-style call sees
// it: its elements, and why it goes to PMPI if it does.
ReductionPlan planFor(size_t count, MPI_Datatype type, MPI_Op op, TypeSignature* sig) {
  if (!typeSignature(type, sig)) {
    ReductionPlan plan;
    plan.delegate = rinaMpiDatatype;  // MPI reports the bad type
    return plan;
  }
  return planReduction(count * sig->bytes, sig->element, op);
}

}  // namespace

int allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm) {
  CallTimer timer;
  TypeSignature sig;
  ReductionPlan plan = planFor(count > 0 ? static_cast<size_t>(count) : 0, type, op, &sig);
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
  const size_t elements = plan.bytes / reduce::dataTypeSize(plan.type);
  if (sig.contiguous) {
    rinaResult_t result = rinaAllReduce(source, recvbuf, elements, plan.type, plan.op, state->rina);
    return finishHandled(*state, comm, "MPI_Allreduce", result, plan.bytes, timer);
  }
  // Elements with gaps or out of order: reduce a packed copy in place.
  char* packed = state->scratch(plan.bytes);
  if (!pack(source, count, type, plan.bytes, packed, comm)) {
    return reportLayoutFailure(*state, comm, "MPI_Allreduce", "cannot pack the send buffer");
  }
  rinaResult_t result = rinaAllReduce(packed, packed, elements, plan.type, plan.op, state->rina);
  if (result == rinaSuccess && !unpack(packed, plan.bytes, recvbuf, count, type, comm)) {
    return reportLayoutFailure(*state, comm, "MPI_Allreduce", "cannot unpack the result");
  }
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
  const size_t blocks = state->intercomm ? 1 : static_cast<size_t>(state->size);
  TypeSignature sig;
  ReductionPlan plan = planFor(block * blocks, type, op, &sig);
  std::optional<rinaMpiDelegateReason_t> reason = admit(plan.delegate, *state, comm);
  if (reason) {
    int rc = PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
    countDelegated(state->stats, *reason, plan.bytes, timer);
    return rc;
  }
  if (state->rinaState == CommState::Rina::kFailed) {
    return reportFailure(*state, comm, "MPI_Reduce_scatter_block", rinaSuccess);
  }
  const size_t blockBytes = plan.bytes / blocks;
  const size_t blockElements = blockBytes / reduce::dataTypeSize(plan.type);
  const size_t mine = static_cast<size_t>(state->rank) * blockBytes;
  rinaResult_t result;
  if (sig.contiguous && sendbuf == MPI_IN_PLACE) {
    // MPI: the input is the whole receive buffer and the result goes to its
    // start; rina reduces in place into this rank's block, moved afterwards.
    char* whole = static_cast<char*>(recvbuf);
    result = rinaReduceScatter(whole, whole + mine, blockElements, plan.type, plan.op, state->rina);
    if (result == rinaSuccess && mine != 0) std::memmove(whole, whole + mine, blockBytes);
  } else if (sig.contiguous) {
    result = rinaReduceScatter(sendbuf, recvbuf, blockElements, plan.type, plan.op, state->rina);
  } else {
    // Packed: the whole input, reduced into this rank's block in place.
    const void* input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    char* packed = state->scratch(plan.bytes);
    if (!pack(input, static_cast<int>(block * blocks), type, plan.bytes, packed, comm)) {
      return reportLayoutFailure(*state, comm, "MPI_Reduce_scatter_block",
                                 "cannot pack the send buffer");
    }
    result =
        rinaReduceScatter(packed, packed + mine, blockElements, plan.type, plan.op, state->rina);
    if (result == rinaSuccess &&
        !unpack(packed + mine, blockBytes, recvbuf, recvcount, type, comm)) {
      return reportLayoutFailure(*state, comm, "MPI_Reduce_scatter_block",
                                 "cannot unpack the result");
    }
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
  // rina moves bytes, so only the bytes per rank decide, from the receive
  // side (significant on every rank; MPI_IN_PLACE is all or none). A rank
  // may describe its send side differently (8 n MPI_BYTE against n
  // MPI_DOUBLE): its bytes are the same by MPI's rules.
  std::optional<rinaMpiDelegateReason_t> argsReason;
  TypeSignature recvSig, sendSig;
  const size_t block = recvcount > 0 ? static_cast<size_t>(recvcount) : 0;
  if (disabled()) {
    argsReason = rinaMpiDisabled;
  } else if (!typeSignature(recvtype, &recvSig)) {
    argsReason = rinaMpiDatatype;  // MPI reports the bad type
  } else if (block * recvSig.bytes == 0) {
    argsReason = rinaMpiCountZero;
  }
  const size_t blockBytes = block * recvSig.bytes;
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
  // This rank's block: in place, where it lies in the receive buffer.
  const bool inPlace = sendbuf == MPI_IN_PLACE;
  const void* mine = inPlace
                         ? static_cast<const char*>(recvbuf) +
                               static_cast<MPI_Aint>(state->rank) * recvcount * extentOf(recvtype)
                         : sendbuf;
  const int mineCount = inPlace ? recvcount : sendcount;
  MPI_Datatype mineType = inPlace ? recvtype : sendtype;
  if (!inPlace &&
      (!typeSignature(sendtype, &sendSig) ||
       static_cast<size_t>(sendcount > 0 ? sendcount : 0) * sendSig.bytes != blockBytes)) {
    return reportLayoutFailure(*state, comm, "MPI_Allgather",
                               "the send side's bytes differ from the receive side's block");
  }
  const bool mineContiguous = inPlace ? recvSig.contiguous : sendSig.contiguous;
  // Gathered straight into the receive buffer when its blocks are plain
  // bytes back to back, else into scratch and unpacked block by block.
  char* gathered = recvSig.contiguous
                       ? static_cast<char*>(recvbuf)
                       : state->scratch(totalBytes + (mineContiguous ? 0 : blockBytes));
  const char* source = static_cast<const char*>(mine);
  if (recvSig.contiguous && inPlace) {
    source = gathered + static_cast<size_t>(state->rank) * blockBytes;  // rina's in-place form
  } else if (!mineContiguous) {
    char* packedMine = recvSig.contiguous ? gathered + static_cast<size_t>(state->rank) * blockBytes
                                          : gathered + totalBytes;
    if (!pack(mine, mineCount, mineType, blockBytes, packedMine, comm)) {
      return reportLayoutFailure(*state, comm, "MPI_Allgather", "cannot pack the send buffer");
    }
    source = packedMine;
  }
  rinaResult_t result = rinaAllGather(source, gathered, blockBytes, rinaUint8, state->rina);
  if (result == rinaSuccess && !recvSig.contiguous) {
    const MPI_Aint stride = static_cast<MPI_Aint>(recvcount) * extentOf(recvtype);
    for (int r = 0; r < state->size; ++r) {
      if (!unpack(gathered + static_cast<size_t>(r) * blockBytes, blockBytes,
                  static_cast<char*>(recvbuf) + r * stride, recvcount, recvtype, comm)) {
        return reportLayoutFailure(*state, comm, "MPI_Allgather", "cannot unpack the result");
      }
    }
  }
  return finishHandled(*state, comm, "MPI_Allgather", result, totalBytes, timer);
}

}  // namespace rina::mpi
