/*
 * mpi-allreduce-bench: a plain MPI program (no rina header, no rina library)
 * that times MPI_Allreduce, float sum, out of place, over a range of sizes.
 * perf/mpi/run.sh runs it with and without LD_PRELOAD=librina_mpi.so.
 *
 *   mpi-allreduce-bench [-b MIN_BYTES] [-e MAX_BYTES] [-f FACTOR] [-r REPS]
 *
 * Per size: 5 warmup calls, then REPS blocks of ITERS calls (ITERS chosen so
 * a block moves about 64 MiB, between 4 and 200 calls); a block's time is the
 * slowest rank's, the row shows the median block's time per call. Each
 * result is checked against the closed-form sum (inputs are small integers,
 * exact in float). Prints one row per size: bytes, time (us), algbw, busbw
 * (GB/s; busbw = algbw * 2 (n-1) / n), wrong elements.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compareDoubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static size_t parseBytes(const char* text) {
  char* end = NULL;
  size_t v = strtoull(text, &end, 10);
  if (*end == 'K' || *end == 'k') v <<= 10;
  if (*end == 'M' || *end == 'm') v <<= 20;
  if (*end == 'G' || *end == 'g') v <<= 30;
  return v;
}

int main(int argc, char** argv) {
  size_t minBytes = 4096, maxBytes = (size_t)64 << 20, factor = 2;
  int reps = 7;
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-b"))
      minBytes = parseBytes(argv[i + 1]);
    else if (!strcmp(argv[i], "-e"))
      maxBytes = parseBytes(argv[i + 1]);
    else if (!strcmp(argv[i], "-f"))
      factor = parseBytes(argv[i + 1]);
    else if (!strcmp(argv[i], "-r"))
      reps = atoi(argv[i + 1]);
  }
  if (factor < 2 || reps < 1 || reps > 100 || minBytes < sizeof(float) || maxBytes < minBytes) {
    if (rank == 0) fprintf(stderr, "mpi-allreduce-bench: bad arguments\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const size_t maxCount = maxBytes / sizeof(float);
  float* send = malloc(maxCount * sizeof(float));
  float* recv = malloc(maxCount * sizeof(float));
  double* blockTimes = malloc((size_t)reps * sizeof(double));
  if (!send || !recv || !blockTimes) MPI_Abort(MPI_COMM_WORLD, 3);
  for (size_t i = 0; i < maxCount; ++i) send[i] = (float)(i % 64 + rank);
  const float rankSum = (float)(nranks * (nranks - 1) / 2);
  if (rank == 0) {
    printf("# mpi-allreduce-bench: %d ranks, float sum, out of place, %d blocks per size\n", nranks,
           reps);
    printf("# %12s %12s %10s %10s %8s\n", "bytes", "time(us)", "algbw", "busbw", "#wrong");
  }
  int failed = 0;
  for (size_t bytes = minBytes; bytes <= maxBytes; bytes *= factor) {
    const size_t count = bytes / sizeof(float);
    size_t iters = ((size_t)64 << 20) / bytes;
    if (iters < 4) iters = 4;
    if (iters > 200) iters = 200;
    for (int w = 0; w < 5; ++w) {
      MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    for (int r = 0; r < reps; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      double start = MPI_Wtime();
      for (size_t it = 0; it < iters; ++it) {
        MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }
      double mine = (MPI_Wtime() - start) / (double)iters, slowest = 0;
      MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      blockTimes[r] = slowest;
    }
    long long wrong = 0, wrongAll = 0;
    for (size_t i = 0; i < count; ++i) {
      if (recv[i] != (float)(i % 64) * (float)nranks + rankSum) ++wrong;
    }
    MPI_Allreduce(&wrong, &wrongAll, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (wrongAll) failed = 1;
    qsort(blockTimes, (size_t)reps, sizeof(double), compareDoubles);
    const double t = blockTimes[reps / 2];
    const double algbw = (double)bytes / t / 1e9;
    if (rank == 0) {
      printf("  %12zu %12.1f %10.3f %10.3f %8lld\n", bytes, t * 1e6, algbw,
             algbw * 2.0 * (nranks - 1) / nranks, wrongAll);
      fflush(stdout);
    }
  }
  free(send);
  free(recv);
  free(blockTimes);
  MPI_Finalize();
  return failed;
}
