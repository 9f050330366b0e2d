#include "perf/local_launcher.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <vector>

#include "perf/rank_group.h"

namespace rina::perf {
namespace {

using Clock = std::chrono::steady_clock;

// After SIGTERM, how long children get before SIGKILL.
constexpr auto kTermGrace = std::chrono::seconds(3);

void ignoreSignal(int) {}

struct Child {
  pid_t pid = -1;
  bool running = false;
};

// Waits for SIGCHLD (blocked in the caller) until deadline; false on timeout.
bool waitForChildSignal(const sigset_t& childSignal, Clock::time_point deadline) {
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) {
    return false;
  }
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
  const timespec timeout{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  while (true) {
    if (sigtimedwait(&childSignal, nullptr, &timeout) == SIGCHLD) {
      return true;
    }
    if (errno != EINTR) {
      return false;  // EAGAIN: timed out
    }
  }
}

// Reaps every child that has ended; returns the first failure seen (0: none)
// in *failure, and whether a child ended with a verdict of wrong results.
// Once we are stopping the children, their deaths by our signals are quiet.
void reapEnded(std::vector<Child>& children, bool stopping, int* failure, bool* wrongResults) {
  for (size_t rank = 0; rank < children.size(); ++rank) {
    Child& child = children[rank];
    int status = 0;
    if (!child.running || waitpid(child.pid, &status, WNOHANG) != child.pid) {
      continue;
    }
    child.running = false;
    int code = 0;
    if (WIFSIGNALED(status)) {
      code = 128 + WTERMSIG(status);
      if (stopping && (WTERMSIG(status) == SIGTERM || WTERMSIG(status) == SIGKILL)) {
        continue;
      }
      std::fprintf(stderr, "rina-allreduce-perf: rank %zu (pid %d) killed by signal %d\n", rank,
                   static_cast<int>(child.pid), WTERMSIG(status));
    } else if (WIFEXITED(status)) {
      code = WEXITSTATUS(status);
    }
    if (code == kExitWrongResults) {
      *wrongResults = true;
    } else if (code != 0 && *failure == 0) {
      *failure = code;
      std::fprintf(stderr, "rina-allreduce-perf: rank %zu exited with %d; stopping the others\n",
                   rank, code);
    }
  }
}

bool anyRunning(const std::vector<Child>& children) {
  for (const Child& child : children) {
    if (child.running) {
      return true;
    }
  }
  return false;
}

void signalRunning(const std::vector<Child>& children, int signal) {
  for (const Child& child : children) {
    if (child.running) {
      kill(child.pid, signal);
    }
  }
}

}  // namespace

int runForkedRanks(int nranks, int timeoutSeconds, const std::function<int(int rank)>& body) {
  // SIGCHLD is blocked and waited for with sigtimedwait; a handler (not
  // SIG_IGN) keeps children reapable.
  struct sigaction action {};
  struct sigaction oldAction {};
  action.sa_handler = ignoreSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGCHLD, &action, &oldAction);
  sigset_t childSignal;
  sigset_t oldMask;
  sigemptyset(&childSignal);
  sigaddset(&childSignal, SIGCHLD);
  sigprocmask(SIG_BLOCK, &childSignal, &oldMask);

  std::fflush(nullptr);  // or children would print the parent's buffered output again
  const pid_t parent = getpid();
  std::vector<Child> children(static_cast<size_t>(nranks));
  int failure = 0;
  for (int rank = 0; rank < nranks && failure == 0; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) {
      sigprocmask(SIG_SETMASK, &oldMask, nullptr);
      sigaction(SIGCHLD, &oldAction, nullptr);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) {
        _exit(kExitError);  // the parent died before prctl
      }
      const int code = body(rank);
      std::fflush(nullptr);
      _exit(code);  // not exit(): the parent's atexit handlers are not ours
    }
    if (pid < 0) {
      std::perror("rina-allreduce-perf: fork");
      failure = kExitError;
      break;
    }
    children[static_cast<size_t>(rank)] = Child{pid, true};
  }

  // Stages after a failure: SIGTERM, then SIGKILL, each with kTermGrace.
  enum class Stopping { kNo, kTerminated, kKilled } stopping = Stopping::kNo;
  auto deadline = Clock::now() + std::chrono::seconds(timeoutSeconds);
  bool wrongResults = false;
  while (anyRunning(children)) {
    if (failure != 0 && stopping == Stopping::kNo) {
      signalRunning(children, SIGTERM);
      stopping = Stopping::kTerminated;
      deadline = Clock::now() + kTermGrace;
    }
    const bool signalled = waitForChildSignal(childSignal, deadline);
    reapEnded(children, stopping != Stopping::kNo, &failure, &wrongResults);
    if (signalled || !anyRunning(children)) {
      continue;
    }
    if (stopping == Stopping::kNo) {
      std::fprintf(stderr, "rina-allreduce-perf: timeout after %d s; killing the ranks\n",
                   timeoutSeconds);
      failure = kExitTimeout;
    } else if (stopping == Stopping::kTerminated) {
      signalRunning(children, SIGKILL);
      stopping = Stopping::kKilled;
      deadline = Clock::now() + kTermGrace;
    } else {
      std::fprintf(stderr, "rina-allreduce-perf: ranks survived SIGKILL; not waiting longer\n");
      break;
    }
  }

  sigprocmask(SIG_SETMASK, &oldMask, nullptr);
  sigaction(SIGCHLD, &oldAction, nullptr);
  if (failure != 0) {
    return failure;
  }
  return wrongResults ? kExitWrongResults : kExitOk;
}

}  // namespace rina::perf
