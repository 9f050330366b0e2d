/*
 * A plain MPI program, run with librina_mpi preloaded, in which one rank
 * dies (SIGKILL) in the middle of a loop of MPI_Allreduce calls. MPI itself
 * is not fault tolerant; what the interposer must give is that every other
 * rank's call ends, with an error naming the dead rank (the interposer's
 * WARN line, which carries rina's message), and never waits out
 * RINA_TIMEOUT_MS. The communicator's error handler is MPI_ERRORS_RETURN
 * here, so each surviving rank reports and exits on its own.
 *
 *   rank_death VICTIM          (every rank runs the loop; VICTIM dies at call 5)
 *
 * Each survivor prints "rank_death: rank R: MPI_Allreduce failed after T ms"
 * and exits 3; a survivor whose calls all succeed exits 4.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double nowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int victim = argc > 1 ? atoi(argv[1]) : 1;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  enum { kCount = 1 << 18 };
  float* buf = malloc(sizeof(float) * kCount);
  for (int i = 0; i < kCount; ++i) buf[i] = 1.0f;
  for (int call = 0; call < 100000; ++call) {
    if (rank == victim && call == 5) raise(SIGKILL);
    const double t0 = nowMs();
    const int rc = MPI_Allreduce(MPI_IN_PLACE, buf, kCount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
      printf("rank_death: rank %d: MPI_Allreduce failed after %.0f ms\n", rank, nowMs() - t0);
      fflush(stdout);
      _exit(3); /* MPI cannot be finalized with a dead rank */
    }
    for (int i = 0; i < kCount; ++i) buf[i] = 1.0f;
  }
  return 4;
}
