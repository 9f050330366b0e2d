// One CommState per MPI communicator the interposer has seen: its counters
// and, once a call is handled, its rina communicator. The state hangs off the
// communicator as an MPI attribute; the attribute's delete callback (on
// MPI_Comm_free) retires it, and an attribute on MPI_COMM_SELF, deleted first
// thing in MPI_Finalize, destroys every rina communicator still alive and
// prints the counters (RINA_MPI_STATS=1).
#ifndef RINA_LIB_MPI_COMM_REGISTRY_H_
#define RINA_LIB_MPI_COMM_REGISTRY_H_

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "rina/rina.h"
#include "rina/rina_mpi.h"

namespace rina::mpi {

struct CommState {
  enum class Rina { kNotCreated, kReady, kUnavailable, kFailed };

  uint64_t serial = 0;  // order of first use; names unnamed communicators
  std::string name;
  int rank = 0;
  int size = 1;
  bool intercomm = false;
  Rina rinaState = Rina::kNotCreated;
  rinaComm_t rina = nullptr;
  rinaMpiCommStats stats{};
  // Packed copies of data with gaps (grown, never shrunk: reused pages).
  std::vector<char> scratchBuffer;

  char* scratch(size_t bytes) {
    if (scratchBuffer.size() < bytes) scratchBuffer.resize(bytes);
    return scratchBuffer.data();
  }
};

// The state of comm, created on first use (no rina communicator yet);
// nullptr when MPI rejects comm (MPI_COMM_NULL, freed): the caller delegates
// and PMPI reports the error.
CommState* commState(MPI_Comm comm);

// Sets up state.rina on first need; collective over comm, so every rank must
// call it in the same collective. On comm it runs one allgather (rank 0's
// unique id; it waits for every rank) and one allreduce (the agreement);
// between them rina's own set-up, whose every wait ends after
// RINA_TIMEOUT_MS. True when rina can run the call. When setup fails on any
// rank, every rank marks the communicator kUnavailable and delegates from
// then on.
bool ensureRina(CommState& state, MPI_Comm comm);

// Arranges for the MPI_Finalize clean-up (idempotent; MPI_Init* and the first
// intercepted call both call it).
void installFinalizeHook();

}  // namespace rina::mpi

#endif  // RINA_LIB_MPI_COMM_REGISTRY_H_
