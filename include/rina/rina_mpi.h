/*
 * librina_mpi: a PMPI interposer. Loaded with LD_PRELOAD (or linked before
 * -lmpi), it runs MPI_Allreduce, MPI_Reduce_scatter_block and MPI_Allgather
 * through rina for the calls rina handles (elements of one kind rina reduces,
 * SUM/PROD/MIN/MAX, intracommunicators, RINA_MPI_MIN_BYTES and above) and
 * hands every other call to the MPI library (PMPI_*). Programs need no
 * change and no header; this one only reads the interposer's counters
 * (tests, tools).
 */
#ifndef RINA_RINA_MPI_H_
#define RINA_RINA_MPI_H_

#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Why a call went to the MPI library instead of rina. */
typedef enum {
  rinaMpiDisabled = 0,       /* RINA_MPI_DISABLE=1 */
  rinaMpiCountZero = 1,      /* nothing to reduce */
  rinaMpiBelowThreshold = 2, /* fewer bytes than RINA_MPI_MIN_BYTES */
  rinaMpiDatatype = 3,       /* elements of several kinds, or of one rina lacks */
  rinaMpiOp = 4,             /* predefined op rina lacks (logical, bitwise, loc) */
  rinaMpiUserOp = 5,         /* user-defined op */
  rinaMpiIntercomm = 6,      /* intercommunicator */
  rinaMpiSingleRank = 7,     /* communicator of one process */
  rinaMpiArguments = 8,      /* not given since decisions follow the signature */
  rinaMpiUnavailable = 9,    /* rina could not be set up on this communicator */
  rinaMpiNumReasons = 10
} rinaMpiDelegateReason_t;

typedef struct {
  uint64_t handledCalls;
  uint64_t handledBytes;
  double handledSeconds; /* measured only with RINA_MPI_STATS=1 */
  uint64_t delegatedCalls;
  uint64_t delegatedBytes;
  double delegatedSeconds; /* measured only with RINA_MPI_STATS=1 */
  uint64_t delegatedBy[rinaMpiNumReasons];
} rinaMpiCommStats;

/* This process's counters for the collectives it called on comm (zeros if
 * none reached the interposer). Returns MPI_SUCCESS, or MPI_ERR_ARG for a
 * NULL stats or MPI_ERR_COMM for MPI_COMM_NULL. */
int rinaMpiGetCommStats(MPI_Comm comm, rinaMpiCommStats* stats);

/* "below-threshold", ...; "?" when out of range. */
const char* rinaMpiDelegateReasonName(int reason);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RINA_RINA_MPI_H_ */
