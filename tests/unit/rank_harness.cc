#include "rank_harness.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "core/config.h"

namespace rina::testing {

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  const char* old = std::getenv(name);
  had_ = old != nullptr;
  if (had_) old_ = old;
  if (value) setenv(name, value, 1);
  else unsetenv(name);
  config::reloadForTesting();
}

ScopedEnv::~ScopedEnv() {
  if (had_) setenv(name_.c_str(), old_.c_str(), 1);
  else unsetenv(name_.c_str());
  config::reloadForTesting();
}

void runThreads(int n, const std::function<void(int, rinaComm_t)>& fn) {
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess) << rinaCommGetLastError(nullptr);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      rinaComm_t comm = nullptr;
      rinaResult_t rc = rinaCommInitRank(&comm, n, id, r);
      EXPECT_EQ(rc, rinaSuccess) << "rank " << r << ": " << rinaCommGetLastError(nullptr);
      if (rc != rinaSuccess) return;
      fn(r, comm);
      EXPECT_EQ(rinaCommDestroy(comm), rinaSuccess);
    });
  }
  for (auto& t : threads) t.join();
}

std::vector<int> runProcesses(int n, const std::function<int(int, rinaComm_t)>& fn, int timeoutSec) {
  rinaUniqueId id;
  EXPECT_EQ(rinaGetUniqueId(&id), rinaSuccess);
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
  return codes;
}

}  // namespace rina::testing
