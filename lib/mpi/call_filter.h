// Which MPI calls rina can run: the rina type behind a predefined MPI type,
// the rina op behind an MPI op, and the reason a call must go to the MPI
// library instead. Decisions use only what MPI requires to match on every
// rank (the type signature's element kind and bytes, the op, the
// communicator), so every rank decides the same way and rina's set-up,
// collective over the communicator, always meets itself.
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

// An allreduce-style call: the rina type and op, the bytes reduced, or why
// it goes to PMPI. element is what every element of the signature is
// (type_signature.h); the communicator is judged separately (commReason).
struct ReductionPlan {
  rinaDataType_t type = rinaFloat32;
  rinaRedOp_t op = rinaSum;
  size_t bytes = 0;
  std::optional<rinaMpiDelegateReason_t> delegate;
};
ReductionPlan planReduction(size_t bytes, std::optional<rinaDataType_t> element, MPI_Op op);

// The byte threshold below which calls are delegated (RINA_MPI_MIN_BYTES)
// and whether everything is (RINA_MPI_DISABLE), read once.
size_t minBytes();
bool disabled();
// RINA_MPI_STATS=1: time calls and print the counters at MPI_Finalize.
bool statsEnabled();

}  // namespace rina::mpi

#endif  // RINA_LIB_MPI_CALL_FILTER_H_
