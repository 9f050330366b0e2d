/*
 * MPI programs whose ranks describe the same data differently (the type
 * signatures match, the datatypes and counts do not), run with
 * LD_PRELOAD=librina_mpi.so: every call must complete, on every rank, with
 * the closed-form result and the MPI library's own (PMPI) result for the
 * same elements. A plain MPI program; when the interposer is preloaded it
 * also checks, through rinaMpiGetCommStats (found with dlsym), that rina ran
 * the calls. Without it, only the allgathers run: Open MPI refuses a
 * predefined op on any derived datatype (MPI_ERR_OP), which rina runs.
 *
 *   mixed_descriptions [-n ELEMENTS]     (per rank; default 40000)
 *
 * Cases, each on a fresh communicator so that the first call is also the one
 * that sets rina up, then again as a later call:
 *   allgather: rank 0 sends 8n MPI_BYTE, the others n MPI_DOUBLE; all receive
 *              n MPI_DOUBLE per rank
 *   allgather after an allreduce (rina already set up on the communicator)
 *   allreduce: even ranks MPI_INT x 2n, odd ranks a contiguous type of 2
 *              MPI_INT x n (sum)
 *   allreduce: rank 0 a vector of n blocks of 2 ints with stride 3 (gaps
 *              that must stay untouched), the others MPI_INT x 2n (sum)
 *   allreduce: rank 1 a vector without gaps (2n blocks of 1 int, stride 1),
 *              the others a contiguous type of n ints x 2 (max)
 * Rank 0 prints "mixed_descriptions: R ranks, C checks, F failures"; the exit
 * code is 0 only when no rank failed a check.
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rinaMpiCommStats's first fields (include/rina/rina_mpi.h): the counts
 * this program reads; the rest is room for the whole struct. */
typedef struct {
  uint64_t handledCalls;
  uint64_t handledBytes;
  double handledSeconds;
  uint64_t delegatedCalls;
  uint64_t rest[32];
} CommStats;
typedef int (*GetStatsFn)(MPI_Comm, CommStats*);

static int rank = 0, nranks = 1, checks = 0, failures = 0;
static GetStatsFn getStats = NULL;

static void check(int ok, const char* what) {
  ++checks;
  if (!ok) {
    ++failures;
    fprintf(stderr, "FAIL rank %d: %s\n", rank, what);
  }
}

static uint64_t handled(MPI_Comm comm) {
  CommStats s;
  memset(&s, 0, sizeof s);
  if (getStats && getStats(comm, &s) != MPI_SUCCESS) check(0, "rinaMpiGetCommStats failed");
  return s.handledCalls;
}

static void checkRouted(MPI_Comm comm, uint64_t before, const char* what) {
  if (!getStats) return;
  char text[320];
  snprintf(text, sizeof text, "%s: not run by rina", what);
  check(handled(comm) == before + 1, text);
}

/* Runs one call and, under the interposer, checks that rina handled it. */
#define ROUTED_BY_RINA(comm, what, call)   \
  do {                                     \
    const uint64_t before = handled(comm); \
    call;                                  \
    checkRouted(comm, before, what);       \
  } while (0)

static MPI_Comm freshComm(const char* name) {
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_name(c, (char*)name);
  return c;
}

/* Block r of the gather holds r * 1e6 + i. */
static void mixedAllgather(MPI_Comm comm, size_t n, const char* what) {
  double* mine = malloc(n * sizeof(double));
  double* got = malloc(n * (size_t)nranks * sizeof(double));
  double* ref = malloc(n * (size_t)nranks * sizeof(double));
  for (size_t i = 0; i < n; ++i) mine[i] = rank * 1e6 + (double)i;
  memset(got, 0, n * (size_t)nranks * sizeof(double));
  int rc = MPI_SUCCESS;
  if (rank == 0) {
    ROUTED_BY_RINA(comm, what,
                   rc = MPI_Allgather(mine, (int)(8 * n), MPI_BYTE, got, (int)n, MPI_DOUBLE, comm));
  } else {
    ROUTED_BY_RINA(comm, what,
                   rc = MPI_Allgather(mine, (int)n, MPI_DOUBLE, got, (int)n, MPI_DOUBLE, comm));
  }
  check(rc == MPI_SUCCESS, what);
  size_t wrong = 0;
  for (int r = 0; r < nranks; ++r) {
    for (size_t i = 0; i < n; ++i) wrong += got[(size_t)r * n + i] != r * 1e6 + (double)i;
  }
  check(wrong == 0, what);
  /* The MPI library's answer to the same mixed call. */
  if (rank == 0) {
    PMPI_Allgather(mine, (int)(8 * n), MPI_BYTE, ref, (int)n, MPI_DOUBLE, comm);
  } else {
    PMPI_Allgather(mine, (int)n, MPI_DOUBLE, ref, (int)n, MPI_DOUBLE, comm);
  }
  check(memcmp(got, ref, n * (size_t)nranks * sizeof(double)) == 0, what);
  free(mine);
  free(got);
  free(ref);
}

/* ints[i] on rank r is (i % 1000) + r, so the sum is n_r * (i % 1000) + sum r. */
static int intInput(int r, size_t i) { return (int)(i % 1000) + r; }

static int intSum(size_t i) { return nranks * (int)(i % 1000) + nranks * (nranks - 1) / 2; }

/* An int sum over 2n ints; describe() picks this rank's datatype and count
 * and says where the data sit (stride: ints between pairs, 2 = packed). */
typedef struct {
  MPI_Datatype type;
  int count;
  size_t stride; /* ints per 2-int pair in memory */
} Description;

static void mixedIntSum(MPI_Comm comm, size_t n, MPI_Op op, Description d, const char* what) {
  const size_t ints = n * d.stride;
  int* send = malloc(ints * sizeof(int));
  int* got = malloc(ints * sizeof(int));
  int* plain = malloc(2 * n * sizeof(int));
  int* ref = malloc(2 * n * sizeof(int));
  for (size_t p = 0; p < n; ++p) {
    for (size_t j = 0; j < d.stride; ++j) {
      /* Data in the first two ints of each pair slot, a marker in any gap. */
      send[p * d.stride + j] = j < 2 ? intInput(rank, 2 * p + j) : -7;
      got[p * d.stride + j] = -9;
    }
  }
  for (size_t i = 0; i < 2 * n; ++i) plain[i] = intInput(rank, i);
  int rc = MPI_SUCCESS;
  ROUTED_BY_RINA(comm, what, rc = MPI_Allreduce(send, got, d.count, d.type, op, comm));
  check(rc == MPI_SUCCESS, what);
  /* The MPI library's answer for the same elements, all ranks as MPI_INT. */
  PMPI_Allreduce(plain, ref, (int)(2 * n), MPI_INT, op, comm);
  size_t wrong = 0, differs = 0, gaps = 0;
  for (size_t p = 0; p < n; ++p) {
    for (size_t j = 0; j < d.stride; ++j) {
      const int v = got[p * d.stride + j];
      if (j >= 2) {
        gaps += v != -9;
        continue;
      }
      const size_t i = 2 * p + j;
      wrong += v != (op == MPI_SUM ? intSum(i) : intInput(nranks - 1, i));
      differs += v != ref[i];
    }
  }
  char text[320];
  snprintf(text, sizeof text, "%s: %zu elements differ from the closed form", what, wrong);
  check(wrong == 0, text);
  snprintf(text, sizeof text, "%s: %zu elements differ from PMPI_Allreduce", what, differs);
  check(differs == 0, text);
  snprintf(text, sizeof text, "%s: %zu ints between the elements were written", what, gaps);
  check(gaps == 0, text);
  free(send);
  free(got);
  free(plain);
  free(ref);
}

int main(int argc, char** argv) {
  size_t n = 40000;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-n")) n = strtoull(argv[i + 1], NULL, 10);
  }
  getStats = (GetStatsFn)dlsym(RTLD_DEFAULT, "rinaMpiGetCommStats");
  if (rank == 0) {
    printf("mixed_descriptions: interposer %s\n", getStats ? "present" : "absent");
  }

  MPI_Datatype pair, pairs, strided, unitVector;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  MPI_Type_contiguous((int)n, MPI_INT, &pairs); /* n ints: 2 of them make 2n */
  MPI_Type_commit(&pairs);
  MPI_Type_vector((int)n, 2, 3, MPI_INT, &strided); /* gaps of one int */
  MPI_Type_commit(&strided);
  MPI_Type_vector((int)(2 * n), 1, 1, MPI_INT, &unitVector); /* no gaps */
  MPI_Type_commit(&unitVector);
  const Description plain = {MPI_INT, (int)(2 * n), 2};

  for (int round = 0; round < 2; ++round) {
    const char* when = round == 0 ? "first call" : "later call";
    char what[160];
    /* A fresh communicator each round: the allgather sets rina up. */
    MPI_Comm a = freshComm("mixed-allgather");
    snprintf(what, sizeof what, "allgather 8n MPI_BYTE / n MPI_DOUBLE, %s", when);
    mixedAllgather(a, n, what);
    snprintf(what, sizeof what, "allgather 8n MPI_BYTE / n MPI_DOUBLE, again after the %s", when);
    mixedAllgather(a, n, what);
    MPI_Comm_free(&a);

    /* Set up by an allreduce first, then the mixed allgather. */
    MPI_Comm b = freshComm("allreduce-then-allgather");
    snprintf(what, sizeof what, "plain MPI_INT sum before the allgather, round %d", round);
    mixedIntSum(b, n, MPI_SUM, plain, what);
    snprintf(what, sizeof what, "allgather after set-up, round %d", round);
    mixedAllgather(b, n, what);
    MPI_Comm_free(&b);

    if (!getStats) continue; /* derived types with MPI_SUM/MPI_MAX: rina only */
    MPI_Comm c = freshComm("mixed-sum");
    const Description twoInts = {pair, (int)n, 2};
    for (int call = 0; call < 2; ++call) {
      snprintf(what, sizeof what, "sum MPI_INT x 2n / contiguous(2 MPI_INT) x n, %s",
               call == 0 ? "first call" : "later call");
      mixedIntSum(c, n, MPI_SUM, rank % 2 == 0 ? plain : twoInts, what);
    }
    MPI_Comm_free(&c);

    MPI_Comm d = freshComm("mixed-gaps");
    const Description gapped = {strided, 1, 3};
    for (int call = 0; call < 2; ++call) {
      snprintf(what, sizeof what, "sum vector with gaps / MPI_INT x 2n, %s",
               call == 0 ? "first call" : "later call");
      mixedIntSum(d, n, MPI_SUM, rank == 0 ? gapped : plain, what);
    }
    MPI_Comm_free(&d);

    MPI_Comm e = freshComm("mixed-max");
    const Description unit = {unitVector, 1, 2}, halves = {pairs, 2, 2};
    for (int call = 0; call < 2; ++call) {
      snprintf(what, sizeof what, "max vector without gaps / contiguous(n MPI_INT) x 2, %s",
               call == 0 ? "first call" : "later call");
      mixedIntSum(e, n, MPI_MAX, rank == 1 ? unit : halves, what);
    }
    MPI_Comm_free(&e);
  }
  MPI_Type_free(&pair);
  MPI_Type_free(&pairs);
  MPI_Type_free(&strided);
  MPI_Type_free(&unitVector);

  int total = 0;
  PMPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("mixed_descriptions: %d ranks, %d checks on rank 0, %d failures\n", nranks, checks,
           total);
  }
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
