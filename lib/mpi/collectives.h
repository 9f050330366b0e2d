// The interposed collectives, shared by the C entry points (interposer.cc)
// and the Fortran ones (fortran.cc): run by rina when it handles the call,
// else by PMPI_* with the caller's arguments unchanged.
#ifndef RINA_LIB_MPI_COLLECTIVES_H_
#define RINA_LIB_MPI_COLLECTIVES_H_

#include <mpi.h>

namespace rina::mpi {

int allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm);
int reduceScatterBlock(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type,
                       MPI_Op op, MPI_Comm comm);
int allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

}  // namespace rina::mpi

#endif  // RINA_LIB_MPI_COLLECTIVES_H_
