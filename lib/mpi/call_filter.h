// Which MPI calls rina can run: the MPI datatype and op behind a rina type and
// op, and the reason a call must go to the MPI library instead. Decisions use
// only arguments that MPI requires to match on every rank, so every rank of a
// communicator decides the same way (rina setup is collective).
#ifndef RINA_LIB_MPI_CALL_FILTER_H_
#define RINA_LIB_MPI_CALL_FILTER_H_

#include <mpi.h>

#include <cstddef>
#include <optional>

#include "rina/rina.h"
#include "rina/rina_mpi.h"

namespace rina::mpi {

// The rina type of a predefined MPI type with the same representation
// (MPI_INT -> int32, MPI_REAL8 -> float64, ...); nothing for the rest.
std::optional<rinaDataType_t> rinaTypeOf(MPI_Datatype type);

// A predefined type whose elements are contiguous bytes with no gaps
// (allgather moves them as bytes); its size in *bytes.
bool isContiguousPredefined(MPI_Datatype type, size_t* bytes);

// An allreduce-style call: the rina type and op, the bytes reduced, or why
// it goes to PMPI. The communicator is judged separately (commReason).
struct ReductionPlan {
  rinaDataType_t type = rinaFloat32;
  rinaRedOp_t op = rinaSum;
  size_t bytes = 0;
  std::optional<rinaMpiDelegateReason_t> delegate;
};
ReductionPlan planReduction(size_t elements, MPI_Datatype type, MPI_Op op);

// The byte threshold below which calls are delegated (RINA_MPI_MIN_BYTES)
// and whether everything is (RINA_MPI_DISABLE), read once.
size_t minBytes();
bool disabled();
// RINA_MPI_STATS=1: time calls and print the counters at MPI_Finalize.
bool statsEnabled();

}  // namespace rina::mpi

#endif  // RINA_LIB_MPI_CALL_FILTER_H_
