// Per-communicator counters of the interposer and the RINA_MPI_STATS report.
#ifndef RINA_LIB_MPI_STATS_H_
#define RINA_LIB_MPI_STATS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "rina/rina_mpi.h"

namespace rina::mpi {

struct CommReport {
  uint64_t serial;
  std::string name;
  int size;
  rinaMpiCommStats stats;
};

// One line per communicator on stderr, in order of first use, e.g.
// "rina-mpi stats: MPI_COMM_WORLD size 4: handled 10 calls 40960000 bytes
//  0.0123 s; delegated 3 calls 96 bytes 0.0001 s (below-threshold 2, op 1)".
void printReports(const std::vector<CommReport>& reports);

// Times one call when RINA_MPI_STATS=1 (a clock read costs more than the
// counters, and the delegated path should cost nothing measurable).
class CallTimer {
 public:
  CallTimer();
  double seconds() const;

 private:
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
};

void countHandled(rinaMpiCommStats& stats, uint64_t bytes, const CallTimer& timer);
void countDelegated(rinaMpiCommStats& stats, rinaMpiDelegateReason_t reason, uint64_t bytes,
                    const CallTimer& timer);

}  // namespace rina::mpi

#endif  // RINA_LIB_MPI_STATS_H_
