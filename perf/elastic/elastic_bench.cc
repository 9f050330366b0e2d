// rina-elastic-bench: what elastic communicators cost, with ranks as
// processes on this host (results and commands in perf/results/elastic.md).
//
//   rina-elastic-bench recovery [-n 4,8,16] [-r ROUNDS] [-c COUNT]
//     A rank is killed (SIGKILL) in a loop of allreduces of COUNT float32.
//     Per round: detection (the kill to the first survivor's failed call),
//     and the kill to the first exact allreduce on the shrunk communicator
//     on the last survivor to get there (each survivor: its error, revoke,
//     shrink, one allreduce checked against the closed form).
//   rina-elastic-bench shrink [-n 8,16] [-r ROUNDS]
//     rinaCommShrink of n + 1 ranks to n (one rank left out), against
//     destroying an n-rank communicator and making a new one with a new id
//     (rinaGetUniqueId on rank 0 included), alternating round by round.
//   rina-elastic-bench grow [-n 8] [-r ROUNDS]
//     rinaCommGrow of n ranks by one joiner (rinaCommJoin), against
//     destroying the n-rank communicator and making an (n + 1)-rank one with
//     a new id, alternating.
//   rina-elastic-bench revoke [-n 4,8,16] [-r ROUNDS] [-c COUNT]
//     Every rank but the last enters an allreduce of COUNT float32 that the
//     last rank never joins; once all are waiting in it (5 ms after the last
//     one entered), the last rank calls rinaCommRevoke. Per round: the time
//     from the revoke to the last waiting rank's call returning rinaRevoked
//     (any other result fails the round), and the revoke call's own time.
// Times are from a barrier that every rank passes to the last rank's end,
// in ms; each line ends with medians over the rounds.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "rina/rina.h"

namespace {

constexpr int kMaxRanks = 64;

double nowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// What the parent and its forked ranks share.
struct Shared {
  std::atomic<int> arrived[4];  // barriers, by number
  std::atomic<int> looping;     // recovery: ranks past their first call
  std::atomic<int> failures;    // ranks that got something wrong
  double killedAt;
  double start[kMaxRanks];
  double end[kMaxRanks];
  double erred[kMaxRanks];  // recovery: when its call failed (0: never)
  rinaUniqueId ids[2];
};
Shared* shared = nullptr;

void barrier(int which, int parties) {
  shared->arrived[which].fetch_add(1);
  const double deadline = nowMs() + 120000;
  while (shared->arrived[which].load() < parties) {
    if (nowMs() > deadline) {
      fprintf(stderr, "rina-elastic-bench: barrier %d: %d of %d after 120 s\n", which,
              shared->arrived[which].load(), parties);
      _exit(9);
    }
    sched_yield();
  }
}

void fail(int rank, const char* what, rinaComm_t comm) {
  fprintf(stderr, "rank %d: %s: %s\n", rank, what, rinaCommGetLastError(comm));
  shared->failures.fetch_add(1);
  _exit(1);
}

// A helper process serves the unique id's rendezvous (its root thread), so
// the ranks fork from a process without threads.
pid_t idHelper(rinaUniqueId* id) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    rinaUniqueId mine;
    if (rinaGetUniqueId(&mine) != rinaSuccess ||
        write(fds[1], &mine, sizeof mine) != static_cast<ssize_t>(sizeof mine)) {
      _exit(1);
    }
    for (;;) pause();
  }
  close(fds[1]);
  const bool ok = read(fds[0], id, sizeof *id) == static_cast<ssize_t>(sizeof *id);
  close(fds[0]);
  return ok ? pid : -1;
}

// Forks n ranks that init a communicator of n and run fn; waits for them
// (victim: the rank the parent kills once every rank counted itself in
// shared->looping; -1: none). Returns false when a rank failed.
bool runRanks(int n, int joiners, const std::function<void(int, rinaComm_t)>& fn, int victim = -1) {
  for (auto& a : shared->arrived) a.store(0);
  shared->looping.store(0);
  shared->failures.store(0);
  shared->killedAt = 0;
  for (int r = 0; r < kMaxRanks; ++r) shared->start[r] = shared->end[r] = shared->erred[r] = 0;
  rinaUniqueId id;
  const pid_t helper = idHelper(&id);
  if (helper < 0) return false;
  std::vector<pid_t> pids;
  for (int r = 0; r < n + joiners; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      rinaComm_t comm = nullptr;
      if (r < n && rinaCommInitRank(&comm, n, id, r) != rinaSuccess) fail(r, "init", nullptr);
      fn(r, comm);
      _exit(0);
    }
    pids.push_back(pid);
  }
  if (victim >= 0) {
    // Every rank is in the loop: the victim goes now.
    const double deadline = nowMs() + 120000;
    while (shared->looping.load() < n && nowMs() < deadline) sched_yield();
    shared->killedAt = nowMs();
    kill(pids[victim], SIGKILL);
  }
  bool ok = true;
  for (size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    const bool killed = static_cast<int>(i) == victim;
    if (!killed && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) ok = false;
  }
  kill(helper, SIGKILL);
  waitpid(helper, nullptr, 0);
  return ok && shared->failures.load() == 0;
}

double slowest(int from, int to) {
  double t0 = 1e300, t1 = 0;
  for (int r = from; r < to; ++r) {
    t0 = std::min(t0, shared->start[r]);
    t1 = std::max(t1, shared->end[r]);
  }
  return t1 - t0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty()      ? 0
         : v.size() % 2 ? v[v.size() / 2]
                        : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// An allreduce of ones, checked against the closed form (want: the number
// of ranks); false when the call fails, and a wrong sum ends the rank.
bool allreduceOnes(rinaComm_t comm, size_t count, float want) {
  std::vector<float> v(count, 1.0f);
  if (rinaAllReduce(v.data(), v.data(), count, rinaFloat32, rinaSum, comm) != rinaSuccess) {
    return false;
  }
  if (!std::all_of(v.begin(), v.end(), [want](float x) { return x == want; })) {
    fprintf(stderr, "rina-elastic-bench: a wrong sum (want %.0f)\n", want);
    shared->failures.fetch_add(1);
    _exit(1);
  }
  return true;
}

// --- recovery: kill, detect, revoke, shrink, first exact allreduce.
void recovery(const std::vector<int>& sizes, int rounds, size_t count) {
  printf("# recovery: a rank killed in a loop of allreduces of %zu float32; ms from the kill\n",
         count);
  printf("# %5s %6s %12s %14s %10s\n", "ranks", "round", "detected_ms", "first_exact_ms",
         "margin_ms");
  for (int n : sizes) {
    std::vector<double> detected, exact;
    const int victim = n / 2;
    for (int round = 0; round < rounds; ++round) {
      const bool ok = runRanks(
          n, 0,
          [&](int r, rinaComm_t comm) {
            bool first = true;
            while (allreduceOnes(comm, count, static_cast<float>(n))) {
              if (first) shared->looping.fetch_add(1);
              first = false;
            }
            shared->erred[r] = nowMs();
            rinaCommRevoke(comm);
            rinaComm_t next = nullptr;
            if (rinaCommShrink(comm, &victim, 1, &next, RINA_SHRINK_DEFAULT) != rinaSuccess) {
              fail(r, "shrink", comm);
            }
            if (!allreduceOnes(next, count, static_cast<float>(n - 1))) fail(r, "allreduce", next);
            shared->end[r] = nowMs();
            barrier(0, n - 1);  // nobody leaves before everyone is through
            rinaCommDestroy(next);
            rinaCommDestroy(comm);
          },
          victim);
      if (!ok) {
        fprintf(stderr, "rina-elastic-bench: recovery round failed\n");
        exit(1);
      }
      double firstErr = 1e300, lastEnd = 0;
      for (int r = 0; r < n; ++r) {
        if (r == victim) continue;
        firstErr = std::min(firstErr, shared->erred[r]);
        lastEnd = std::max(lastEnd, shared->end[r]);
      }
      detected.push_back(firstErr - shared->killedAt);
      exact.push_back(lastEnd - shared->killedAt);
      printf("  %5d %6d %12.1f %14.1f %10.1f\n", n, round, detected.back(), exact.back(),
             exact.back() - detected.back());
      fflush(stdout);
    }
    printf("  %5d median %10.1f %14.1f %10.1f\n", n, median(detected), median(exact),
           median(exact) - median(detected));
  }
}

// --- revoke: how long calls in flight take to return rinaRevoked.
void revokeLatency(const std::vector<int>& sizes, int rounds, size_t count) {
  printf(
      "# revoke: ranks 0..n-2 wait in an allreduce of %zu float32 that rank n-1 never joins; "
      "rank n-1 revokes; ms from the revoke\n",
      count);
  printf("# %5s %6s %18s %10s\n", "ranks", "round", "last_returned_ms", "call_ms");
  for (int n : sizes) {
    std::vector<double> returned, calls;
    for (int round = 0; round < rounds; ++round) {
      const int revoker = n - 1;
      const bool ok = runRanks(n, 0, [&](int r, rinaComm_t comm) {
        if (!allreduceOnes(comm, count, static_cast<float>(n))) fail(r, "allreduce", comm);
        barrier(0, n);
        if (r != revoker) {
          std::vector<float> v(count, 1.0f);
          shared->looping.fetch_add(1);
          const rinaResult_t rc =
              rinaAllReduce(v.data(), v.data(), count, rinaFloat32, rinaSum, comm);
          shared->end[r] = nowMs();
          if (rc != rinaRevoked) {
            fprintf(stderr, "rank %d: the call in flight returned %d, not rinaRevoked: %s\n", r,
                    static_cast<int>(rc), rinaCommGetLastError(comm));
            shared->failures.fetch_add(1);
          }
        } else {
          const double deadline = nowMs() + 120000;
          while (shared->looping.load() < n - 1 && nowMs() < deadline) sched_yield();
          const double settle = nowMs() + 5;
          while (nowMs() < settle) sched_yield();
          shared->start[r] = nowMs();
          if (rinaCommRevoke(comm) != rinaSuccess) fail(r, "revoke", comm);
          shared->end[r] = nowMs();
        }
        barrier(1, n);
        rinaCommDestroy(comm);
      });
      if (!ok) {
        fprintf(stderr, "rina-elastic-bench: revoke round failed\n");
        exit(1);
      }
      double last = 0;
      for (int r = 0; r < revoker; ++r) last = std::max(last, shared->end[r]);
      returned.push_back(last - shared->start[revoker]);
      calls.push_back(shared->end[revoker] - shared->start[revoker]);
      printf("  %5d %6d %18.2f %10.2f\n", n, round, returned.back(), calls.back());
      fflush(stdout);
    }
    printf("  %5d median %16.2f %10.2f\n", n, median(returned), median(calls));
  }
}

// --- shrink against destroy + create, alternating.
void shrinkVsRecreate(const std::vector<int>& sizes, int rounds) {
  printf(
      "# shrink to n ranks (from n + 1, one left out) against destroy + a new n-rank "
      "communicator with a new id; ms\n");
  printf("# %5s %6s %10s %12s %8s\n", "ranks", "round", "shrink_ms", "recreate_ms", "ratio");
  for (int n : sizes) {
    std::vector<double> shrinks, recreates;
    for (int round = 0; round < rounds; ++round) {
      const bool a = runRanks(n + 1, 0, [&](int r, rinaComm_t comm) {
        const int out = n;  // the last rank
        barrier(0, n + 1);
        if (r == n) {
          barrier(1, n + 1);
          rinaCommDestroy(comm);
          return;
        }
        shared->start[r] = nowMs();
        rinaComm_t next = nullptr;
        if (rinaCommShrink(comm, &out, 1, &next, RINA_SHRINK_DEFAULT) != rinaSuccess) {
          fail(r, "shrink", comm);
        }
        shared->end[r] = nowMs();
        if (!allreduceOnes(next, 1000, static_cast<float>(n))) fail(r, "allreduce", next);
        barrier(1, n + 1);
        rinaCommDestroy(next);
        rinaCommDestroy(comm);
      });
      shrinks.push_back(slowest(0, n));
      const bool b = runRanks(n, 0, [&](int r, rinaComm_t comm) {
        barrier(0, n);
        shared->start[r] = nowMs();
        rinaCommDestroy(comm);
        if (r == 0) {
          if (rinaGetUniqueId(&shared->ids[0]) != rinaSuccess) fail(r, "id", nullptr);
          shared->arrived[2].store(1);
        }
        while (shared->arrived[2].load() == 0) sched_yield();
        rinaComm_t fresh = nullptr;
        if (rinaCommInitRank(&fresh, n, shared->ids[0], r) != rinaSuccess) fail(r, "init", nullptr);
        shared->end[r] = nowMs();
        if (!allreduceOnes(fresh, 1000, static_cast<float>(n))) fail(r, "allreduce", fresh);
        barrier(1, n);
        rinaCommDestroy(fresh);
      });
      recreates.push_back(slowest(0, n));
      if (!a || !b) {
        fprintf(stderr, "rina-elastic-bench: shrink round failed\n");
        exit(1);
      }
      printf("  %5d %6d %10.2f %12.2f %8.3f\n", n, round, shrinks.back(), recreates.back(),
             shrinks.back() / recreates.back());
      fflush(stdout);
    }
    printf("  %5d median %8.2f %12.2f %8.3f\n", n, median(shrinks), median(recreates),
           median(shrinks) / median(recreates));
  }
}

// --- grow by one against destroy + a new (n + 1)-rank communicator.
void growVsReinit(const std::vector<int>& sizes, int rounds) {
  printf(
      "# grow n ranks by one joiner against destroy + a new (n + 1)-rank communicator "
      "with a new id; ms\n");
  printf("# %5s %6s %10s %12s %8s\n", "ranks", "round", "grow_ms", "reinit_ms", "ratio");
  for (int n : sizes) {
    std::vector<double> grows, reinits;
    for (int round = 0; round < rounds; ++round) {
      // One joiner in both: a process that has no communicator yet.
      for (int mode = 0; mode < 2; ++mode) {
        const bool ok = runRanks(n, 1, [&](int r, rinaComm_t comm) {
          barrier(0, n + 1);
          shared->start[r] = nowMs();
          if (r == 0) {
            if (rinaGetUniqueId(&shared->ids[0]) != rinaSuccess) fail(r, "id", nullptr);
            shared->arrived[2].store(1);
          }
          while (shared->arrived[2].load() == 0) sched_yield();
          rinaComm_t next = nullptr;
          if (mode == 0) {
            if (r == n) {
              if (rinaCommJoin(&next, n + 1, shared->ids[0], n) != rinaSuccess) {
                fail(r, "join", nullptr);
              }
            } else if (rinaCommGrow(comm, 1, shared->ids[0], &next) != rinaSuccess) {
              fail(r, "grow", comm);
            }
          } else {
            if (comm) rinaCommDestroy(comm);
            comm = nullptr;
            if (rinaCommInitRank(&next, n + 1, shared->ids[0], r) != rinaSuccess) {
              fail(r, "init", nullptr);
            }
          }
          shared->end[r] = nowMs();
          if (!allreduceOnes(next, 1000, static_cast<float>(n + 1))) fail(r, "allreduce", next);
          barrier(1, n + 1);
          rinaCommDestroy(next);
          if (comm) rinaCommDestroy(comm);
        });
        if (!ok) {
          fprintf(stderr, "rina-elastic-bench: grow round failed\n");
          exit(1);
        }
        (mode == 0 ? grows : reinits).push_back(slowest(0, n + 1));
      }
      printf("  %5d %6d %10.2f %12.2f %8.3f\n", n, round, grows.back(), reinits.back(),
             grows.back() / reinits.back());
      fflush(stdout);
    }
    printf("  %5d median %8.2f %12.2f %8.3f\n", n, median(grows), median(reinits),
           median(grows) / median(reinits));
  }
}

std::vector<int> parseSizes(const char* text) {
  std::vector<int> out;
  for (const char* p = text; *p;) {
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end == p || v < 2 || v > kMaxRanks - 1) {
      fprintf(stderr, "rina-elastic-bench: -n %s: give rank counts from 2 to %d\n", text,
              kMaxRanks - 1);
      exit(2);
    }
    out.push_back(static_cast<int>(v));
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: rina-elastic-bench recovery|revoke|shrink|grow [-n SIZES] [-r ROUNDS] [-c "
            "COUNT]\n");
    return 2;
  }
  const std::string mode = argv[1];
  std::vector<int> sizes = mode == "recovery" || mode == "revoke" ? std::vector<int>{4, 8, 16}
                           : mode == "grow"                       ? std::vector<int>{8}
                                                                  : std::vector<int>{8, 16};
  int rounds = 5;
  size_t count = 1 << 18;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "-n") {
      sizes = parseSizes(argv[i + 1]);
    } else if (flag == "-r") {
      rounds = std::max(1, std::atoi(argv[i + 1]));
    } else if (flag == "-c") {
      count = std::strtoul(argv[i + 1], nullptr, 10);
    } else {
      fprintf(stderr, "rina-elastic-bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  void* p =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 1;
  shared = new (p) Shared();
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) {
    printf("# load average before: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
  }
  if (mode == "recovery") {
    recovery(sizes, rounds, count);
  } else if (mode == "revoke") {
    revokeLatency(sizes, rounds, count);
  } else if (mode == "shrink") {
    shrinkVsRecreate(sizes, rounds);
  } else if (mode == "grow") {
    growVsReinit(sizes, rounds);
  } else {
    fprintf(stderr, "rina-elastic-bench: unknown mode %s\n", mode.c_str());
    return 2;
  }
  if (getloadavg(load, 3) == 3) {
    printf("# load average after: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
  }
  return 0;
}
