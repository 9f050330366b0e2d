// The C entry points librina_mpi.so exports. A program (or mpi4py) calling
// MPI_Allreduce finds these before libmpi's; they call PMPI_* for what rina
// does not handle. MPI_Init* only add the MPI_Finalize hook.
#include <mpi.h>

#include <cstring>

#include "mpi/collectives.h"
#include "mpi/comm_registry.h"
#include "rina/rina_mpi.h"

#define RINA_MPI_EXPORT extern "C" __attribute__((visibility("default")))

RINA_MPI_EXPORT int MPI_Init(int* argc, char*** argv) {
  int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) rina::mpi::installFinalizeHook();
  return rc;
}

RINA_MPI_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) rina::mpi::installFinalizeHook();
  return rc;
}

RINA_MPI_EXPORT int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return rina::mpi::allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

RINA_MPI_EXPORT int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return rina::mpi::reduceScatterBlock(sendbuf, recvbuf, recvcount, datatype, op, comm);
}

RINA_MPI_EXPORT int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                  void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                  MPI_Comm comm) {
  return rina::mpi::allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

RINA_MPI_EXPORT int rinaMpiGetCommStats(MPI_Comm comm, rinaMpiCommStats* stats) {
  if (stats == nullptr) return MPI_ERR_ARG;
  if (comm == MPI_COMM_NULL) return MPI_ERR_COMM;
  rina::mpi::CommState* state = rina::mpi::commState(comm);
  if (state == nullptr) return MPI_ERR_COMM;
  *stats = state->stats;
  return MPI_SUCCESS;
}
