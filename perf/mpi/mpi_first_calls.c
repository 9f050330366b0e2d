/*
 * mpi-first-calls: per-call time of the first CALLS float-sum allreduces on
 * a fresh communicator, for the interposed MPI_Allreduce (rina when
 * LD_PRELOAD=librina_mpi.so is set) and the MPI library's own
 * PMPI_Allreduce, interleaved in one run: each trial dups MPI_COMM_WORLD
 * twice and runs CALLS calls of one kind on each copy, the kind that goes
 * first alternating by trial, so both see the same machine noise. Without the
 * preload both columns are the MPI library (a check of the method).
 *
 *   mpi-first-calls [-s BYTES[,BYTES...]] [-n CALLS] [-t TRIALS] [-o CSV]
 *
 * A call's time is the slowest rank's (each call starts after a barrier).
 * Every result is checked against the closed-form sum (small integers, exact
 * in float). Prints, per size and kind, the medians over trials of: call 0
 * (the communicator's set-up when rina takes it), calls 1-19 (median and the
 * slowest), and the steady time (median of calls CALLS/2 .. CALLS-1); and
 * the ratio of the slowest of calls 1-19 to the steady time. -o writes every
 * call: size,kind,trial,call,seconds,faults, where faults are the page faults
 * taken during the call (barrier included), summed over ranks: a call that
 * touches memory for the first time (fresh buffers, fresh FIFO pages) shows
 * it there whatever the machine's load.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

enum { kInterposed = 0, kLibrary = 1 };
static const char* const kKindNames[2] = {"MPI_Allreduce", "PMPI_Allreduce"};

static int compareDoubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof(double), compareDoubles);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double maxOf(const double* v, int n) {
  double m = v[0];
  for (int i = 1; i < n; ++i) m = v[i] > m ? v[i] : m;
  return m;
}

static long long minorFaults(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (long long)ru.ru_minflt + (long long)ru.ru_majflt;
}

static size_t parseBytes(const char* text, char** end) {
  size_t v = strtoull(text, end, 10);
  if (**end == 'K' || **end == 'k')
    v <<= 10, ++*end;
  else if (**end == 'M' || **end == 'm')
    v <<= 20, ++*end;
  return v;
}

/* One fresh communicator, `calls` calls of one kind; times[i] gets the
 * slowest rank's time of call i and faults[i] its page faults summed over
 * ranks (on rank 0). Returns wrong elements, summed over ranks and calls. */
static long long runTrial(int kind, const float* send, float* recv, size_t count, int calls,
                          double* mine, long long* myFaults, double* times, long long* faults) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  const float rankSum = (float)(nranks * (nranks - 1) / 2);
  long long wrong = 0, wrongAll = 0;
  for (int i = 0; i < calls; ++i) {
    memset(recv, 0, count * sizeof(float));
    const long long faultsBefore = minorFaults();
    MPI_Barrier(comm);
    const double start = MPI_Wtime();
    if (kind == kInterposed) {
      MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, comm);
    } else {
      PMPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, comm);
    }
    mine[i] = MPI_Wtime() - start;
    myFaults[i] = minorFaults() - faultsBefore;
    for (size_t j = 0; j < count; ++j) {
      if (recv[j] != (float)(j % 64) * (float)nranks + rankSum) ++wrong;
    }
  }
  PMPI_Reduce(mine, times, calls, MPI_DOUBLE, MPI_MAX, 0, comm);
  PMPI_Reduce(myFaults, faults, calls, MPI_LONG_LONG, MPI_SUM, 0, comm);
  PMPI_Allreduce(&wrong, &wrongAll, 1, MPI_LONG_LONG, MPI_SUM, comm);
  MPI_Comm_free(&comm);
  return wrongAll;
}

int main(int argc, char** argv) {
  size_t sizes[16] = {64 << 10, 4 << 20};
  int nsizes = 2, calls = 200, trials = 5;
  const char* csvPath = NULL;
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int bad = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-s")) {
      char* p = argv[i + 1];
      for (nsizes = 0; *p && nsizes < 16; ++nsizes) {
        sizes[nsizes] = parseBytes(p, &p);
        if (*p == ',')
          ++p;
        else if (*p)
          bad = 1, p += strlen(p);
      }
    } else if (!strcmp(argv[i], "-n")) {
      calls = atoi(argv[i + 1]);
    } else if (!strcmp(argv[i], "-t")) {
      trials = atoi(argv[i + 1]);
    } else if (!strcmp(argv[i], "-o")) {
      csvPath = argv[i + 1];
    } else {
      bad = 1;
    }
  }
  for (int s = 0; s < nsizes; ++s) bad |= sizes[s] < sizeof(float) || sizes[s] > ((size_t)1 << 30);
  if (bad || nsizes == 0 || calls < 40 || calls > 100000 || trials < 1 || trials > 1000) {
    if (rank == 0) {
      fprintf(
          stderr,
          "mpi-first-calls: bad arguments (-s BYTES[,BYTES...] -n CALLS>=40 -t TRIALS -o CSV)\n");
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  size_t maxBytes = 0;
  for (int s = 0; s < nsizes; ++s) maxBytes = sizes[s] > maxBytes ? sizes[s] : maxBytes;
  const size_t maxCount = maxBytes / sizeof(float);
  float* send = malloc(maxCount * sizeof(float));
  float* recv = malloc(maxCount * sizeof(float));
  double* mine = malloc((size_t)calls * sizeof(double));
  long long* myFaults = malloc((size_t)calls * sizeof(long long));
  /* times[kind][trial][call], faults likewise */
  double* times = malloc(2 * (size_t)trials * (size_t)calls * sizeof(double));
  long long* faults = malloc(2 * (size_t)trials * (size_t)calls * sizeof(long long));
  double* scratch = malloc((size_t)(calls > trials ? calls : trials) * sizeof(double));
  double* perTrial = malloc(4 * (size_t)trials * sizeof(double));
  if (!send || !recv || !mine || !myFaults || !times || !faults || !scratch || !perTrial) {
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  for (size_t i = 0; i < maxCount; ++i) send[i] = (float)(i % 64 + rank);
  FILE* csv = NULL;
  if (rank == 0 && csvPath) {
    csv = fopen(csvPath, "w");
    if (!csv) {
      fprintf(stderr, "mpi-first-calls: cannot write %s\n", csvPath);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    fprintf(csv, "bytes,kind,trial,call,seconds,faults\n");
  }
  if (rank == 0) {
    printf(
        "# mpi-first-calls: %d ranks, float sum, out of place, %d calls per fresh "
        "communicator, %d trials; medians over trials, us\n",
        nranks, calls, trials);
    printf("# %10s %-15s %10s %10s %10s %10s %12s\n", "bytes", "kind", "call0", "c1-19med",
           "c1-19max", "steady", "c1-19max/st");
  }
  long long wrongTotal = 0;
  for (int s = 0; s < nsizes; ++s) {
    const size_t count = sizes[s] / sizeof(float);
    for (int t = 0; t < trials; ++t) {
      for (int k = 0; k < 2; ++k) {
        const int kind = (t % 2 == 0) ? k : 1 - k;
        const size_t at = ((size_t)kind * (size_t)trials + (size_t)t) * (size_t)calls;
        wrongTotal +=
            runTrial(kind, send, recv, count, calls, mine, myFaults, times + at, faults + at);
      }
    }
    if (rank != 0) continue;
    for (int kind = 0; kind < 2; ++kind) {
      /* Per trial: call 0, median and max of 1-19, steady; then medians. */
      double* call0 = perTrial;
      double* med = perTrial + trials;
      double* mx = perTrial + 2 * trials;
      double* steady = perTrial + 3 * trials;
      for (int t = 0; t < trials; ++t) {
        const size_t at = ((size_t)kind * (size_t)trials + (size_t)t) * (size_t)calls;
        const double* v = times + at;
        if (csv) {
          for (int i = 0; i < calls; ++i) {
            fprintf(csv, "%zu,%s,%d,%d,%.9f,%lld\n", sizes[s], kKindNames[kind], t, i, v[i],
                    faults[at + (size_t)i]);
          }
        }
        call0[t] = v[0];
        mx[t] = maxOf(v + 1, 19);
        memcpy(scratch, v + 1, 19 * sizeof(double));
        med[t] = median(scratch, 19);
        memcpy(scratch, v + calls / 2, (size_t)(calls - calls / 2) * sizeof(double));
        steady[t] = median(scratch, calls - calls / 2);
      }
      const double c0 = median(call0, trials), m = median(med, trials), x = median(mx, trials),
                   st = median(steady, trials);
      printf("  %10zu %-15s %10.1f %10.1f %10.1f %10.1f %12.2f\n", sizes[s], kKindNames[kind],
             c0 * 1e6, m * 1e6, x * 1e6, st * 1e6, x / st);
    }
    fflush(stdout);
  }
  if (rank == 0) printf("# wrong elements: %lld\n", wrongTotal);
  if (csv) fclose(csv);
  free(send);
  free(recv);
  free(mine);
  free(myFaults);
  free(times);
  free(faults);
  free(scratch);
  free(perTrial);
  MPI_Finalize();
  return wrongTotal == 0 ? 0 : 1;
}
