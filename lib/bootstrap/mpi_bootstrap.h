/*
 * rinaMpiCommInit: a rina communicator over the processes of an MPI
 * communicator, bootstrapped through MPI. A separate static library
 * (rina_mpi_bootstrap) so that librina itself never depends on MPI.
 */
#ifndef RINA_LIB_BOOTSTRAP_MPI_BOOTSTRAP_H_
#define RINA_LIB_BOOTSTRAP_MPI_BOOTSTRAP_H_

#include <mpi.h>

#include "rina/rina.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over mpiComm: its rank 0 calls rinaGetUniqueId, broadcasts the
 * id, and every process calls rinaCommInitRank(comm, size, id, rank) with
 * its rank in mpiComm. If rank 0 cannot create the id, every rank returns
 * that error (rinaCommGetLastError(NULL) explains it on rank 0). */
rinaResult_t rinaMpiCommInit(MPI_Comm mpiComm, rinaComm_t* comm);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RINA_LIB_BOOTSTRAP_MPI_BOOTSTRAP_H_ */
