#include "bootstrap/mpi_bootstrap.h"

#include <cstring>

namespace {

// What rank 0 broadcasts: its rinaGetUniqueId result and the id.
struct RootMessage {
  int result;
  rinaUniqueId id;
};

}  // namespace

// PMPI_* throughout: an MPI interposer built on rina may call this from its
// own MPI_* wrappers, and must not see (or recurse into) these calls.
extern "C" rinaResult_t rinaMpiCommInit(MPI_Comm mpiComm, rinaComm_t* comm) {
  if (comm == nullptr) {
    return rinaInvalidArgument;
  }
  int rank = 0;
  int size = 0;
  if (PMPI_Comm_rank(mpiComm, &rank) != MPI_SUCCESS ||
      PMPI_Comm_size(mpiComm, &size) != MPI_SUCCESS) {
    return rinaInvalidArgument;
  }
  RootMessage message;
  std::memset(&message, 0, sizeof message);
  if (rank == 0) {
    message.result = rinaGetUniqueId(&message.id);
  }
  if (PMPI_Bcast(&message, sizeof message, MPI_BYTE, 0, mpiComm) != MPI_SUCCESS) {
    return rinaSystemError;
  }
  if (message.result != rinaSuccess) {
    return static_cast<rinaResult_t>(message.result);
  }
  return rinaCommInitRank(comm, size, message.id, rank);
}
