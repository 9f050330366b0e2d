#include "rank_harness.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "api/handle.h"
#include "core/config.h"

namespace rina::testing {

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  const char* old = std::getenv(name);
  had_ = old != nullptr;
  if (had_) old_ = old;
  if (value)
    setenv(name, value, 1);
  else
    unsetenv(name);
  config::reloadForTesting();
}

ScopedEnv::~ScopedEnv() {
  if (had_)
    setenv(name_.c_str(), old_.c_str(), 1);
  else
    unsetenv(name_.c_str());
  config::reloadForTesting();
}

bool useGenerousInaTimeout() {
  setenv("RINA_INA_TIMEOUT_MS", "60000", /*overwrite=*/0);
  return true;
}

namespace {

void runThreadsWith(int n, const config::Options* options,
                    const std::function<void(int, rinaComm_t)>& fn) {
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess) << rinaCommGetLastError(nullptr);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      rinaComm_t comm = nullptr;
      rinaResult_t rc = options ? api::commInitRank(&comm, n, id, r, *options)
                                : rinaCommInitRank(&comm, n, id, r);
      EXPECT_EQ(rc, rinaSuccess) << "rank " << r << ": " << rinaCommGetLastError(nullptr);
      if (rc != rinaSuccess) return;
      fn(r, comm);
      EXPECT_EQ(rinaCommDestroy(comm), rinaSuccess);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace

void runThreads(int n, const std::function<void(int, rinaComm_t)>& fn) {
  runThreadsWith(n, nullptr, fn);
}

void runThreads(int n, const config::Options& options,
                const std::function<void(int, rinaComm_t)>& fn) {
  runThreadsWith(n, &options, fn);
}

namespace {

// rinaGetUniqueId starts the bootstrap root's thread. Forking the ranks from a
// process where that thread runs would let a child inherit a lock the thread
// held at the fork (AddressSanitizer's allocator has no fork handlers: the
// child then hangs in its first allocation). So a helper process owns the id
// and its root thread, and the ranks fork from a process without threads.
pid_t uniqueIdHelper(rinaUniqueId* id) {
  int fds[2];
  if (pipe(fds) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return -1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    close(fds[0]);
    rinaUniqueId mine;
    bool ok = rinaGetUniqueId(&mine) == rinaSuccess;
    if (!ok || write(fds[1], &mine, sizeof mine) != static_cast<ssize_t>(sizeof mine)) _exit(1);
    for (;;) pause();  // the root thread serves the rendezvous until the parent kills us
  }
  close(fds[1]);
  ssize_t got = pid > 0 ? read(fds[0], id, sizeof *id) : -1;
  close(fds[0]);
  if (got != static_cast<ssize_t>(sizeof *id)) {
    ADD_FAILURE() << "the unique-id helper process failed";
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    return -1;
  }
  return pid;
}

}  // namespace

ProcessBarrier::ProcessBarrier(int parties) : parties_(parties) {
  void* p = mmap(nullptr, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  arrived_ = p == MAP_FAILED ? nullptr : static_cast<int*>(p);
  if (arrived_) *arrived_ = 0;
}

ProcessBarrier::~ProcessBarrier() {
  if (arrived_) munmap(arrived_, sizeof(int));
}

bool ProcessBarrier::arriveAndWait(int timeoutMs) {
  if (!arrived_) return false;
  __atomic_add_fetch(arrived_, 1, __ATOMIC_SEQ_CST);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  while (__atomic_load_n(arrived_, __ATOMIC_SEQ_CST) < parties_) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

std::vector<int> runProcesses(int n, const std::function<int(int, rinaComm_t)>& fn,
                              int timeoutSec) {
  rinaUniqueId id;
  const pid_t helper = uniqueIdHelper(&id);
  if (helper < 0) return std::vector<int>(n, -1);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      rinaComm_t comm = nullptr;
      if (rinaCommInitRank(&comm, n, id, r) != rinaSuccess) {
        fprintf(stderr, "rank %d: init failed: %s\n", r, rinaCommGetLastError(nullptr));
        _exit(100);
      }
      int code = fn(r, comm);
      rinaCommDestroy(comm);
      _exit(code);
    }
    pids.push_back(pid);
  }
  std::vector<int> codes(n, -1);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSec);
  int left = n;
  while (left > 0) {
    for (int r = 0; r < n; ++r) {
      if (codes[r] != -1) continue;
      int status = 0;
      pid_t got = waitpid(pids[r], &status, WNOHANG);
      if (got == pids[r]) {
        codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        --left;
      }
    }
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < n; ++r) {
        if (codes[r] == -1) kill(pids[r], SIGKILL);
      }
      ADD_FAILURE() << "ranks still running after " << timeoutSec << " s were killed";
      for (int r = 0; r < n; ++r) {
        if (codes[r] != -1) continue;
        int status = 0;
        waitpid(pids[r], &status, 0);
        codes[r] = 128 + SIGKILL;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(helper, SIGKILL);
  waitpid(helper, nullptr, 0);
  return codes;
}

bool dieWhenWritten(char* page) {
  const int uffd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC));
  if (uffd < 0) return false;
  uffdio_api api{};
  api.api = UFFD_API;
  uffdio_register reg{};
  reg.range = {reinterpret_cast<uintptr_t>(page), static_cast<uint64_t>(getpagesize())};
  reg.mode = UFFDIO_REGISTER_MODE_MISSING;
  if (ioctl(uffd, UFFDIO_API, &api) != 0 || ioctl(uffd, UFFDIO_REGISTER, &reg) != 0) {
    close(uffd);
    return false;
  }
  std::thread([uffd] {
    uffd_msg msg;
    if (read(uffd, &msg, sizeof msg) == sizeof msg) raise(SIGKILL);
    _exit(50);  // the handler's read failed: a distinct code, not a pass
  }).detach();
  return true;
}

bool userfaultfdWorks() {
  const int uffd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC));
  if (uffd < 0) return false;
  close(uffd);
  return true;
}

}  // namespace rina::testing
