// Communicators made and destroyed over and over leave nothing behind: no
// file descriptor, no thread, no /dev/shm name, no child process, and the
// resident set stays bounded. Everything is counted from /proc and /dev/shm,
// a view independent of the library's own bookkeeping.
#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "rank_harness.h"

namespace rina::testing {
namespace {

// Entries of a directory whose names pass `keep` (., .. never).
int countEntries(const char* path, const std::function<bool(const char*)>& keep) {
  DIR* d = opendir(path);
  if (!d) return -1;
  int n = 0;
  while (const dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    n += keep(e->d_name) ? 1 : 0;
  }
  closedir(d);
  return n;
}

int openFds() {
  return countEntries("/proc/self/fd", [](const char*) { return true; }) - 1;  // opendir's own
}
int threads() {
  return countEntries("/proc/self/task", [](const char*) { return true; });
}
int shmNamesOfThisProcess() {
  const std::string prefix = "rina-" + std::to_string(getpid()) + "-";
  return countEntries("/dev/shm", [&](const char* name) {
    return std::strncmp(name, prefix.c_str(), prefix.size()) == 0;
  });
}
// Processes whose parent is this one (the local switches RINA_SWITCH=auto starts).
int children() {
  const pid_t self = getpid();
  return countEntries("/proc", [self](const char* name) {
    if (name[0] < '0' || name[0] > '9') return false;
    std::ifstream stat(std::string("/proc/") + name + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos) return false;
    char state = 0;
    int ppid = 0;
    return std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == self;
  });
}
long rssKb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

struct Counts {
  int fds, threads, shm, children;
  bool operator==(const Counts&) const = default;
};
Counts countsNow() { return {openFds(), threads(), shmNamesOfThisProcess(), children()}; }
std::string describe(const Counts& c) {
  return "fds " + std::to_string(c.fds) + ", threads " + std::to_string(c.threads) +
         ", /dev/shm names " + std::to_string(c.shm) + ", children " + std::to_string(c.children);
}

// Threads and sockets of a finished rendezvous end on their own (the
// unique id's root service): wait, bounded, until the counts are back.
Counts settledTo(const Counts& want) {
  Counts now = countsNow();
  for (int i = 0; i < 1000 && !(now == want); ++i) {  // up to 10 s
    poll(nullptr, 0, 10);
    now = countsNow();
  }
  return now;
}

// One communicator of 2 ranks: a one-shot and a larger allreduce, each
// checked against the closed-form sum, then destroyed.
void cycle() {
  runThreads(2, [](int rank, rinaComm_t comm) {
    for (size_t count : {size_t{4}, size_t{20000}}) {
      std::vector<int32_t> v(count, rank + 1);
      ASSERT_EQ(rinaAllReduce(v.data(), v.data(), count, rinaInt32, rinaSum, comm), rinaSuccess)
          << rinaCommGetLastError(comm);
      ASSERT_EQ(v.front(), 3);
      ASSERT_EQ(v.back(), 3);
    }
  });
}

TEST(CommCycles, ThreeHundredCreateDestroyCyclesLeaveNothingBehind) {
  for (int i = 0; i < 5; ++i) cycle();  // first-time allocations (arenas, statics)
  const Counts before = settledTo({openFds(), threads(), 0, 0});
  ASSERT_EQ(before.shm, 0);
  const long rssBefore = rssKb();
  for (int i = 0; i < 300 && !HasFatalFailure(); ++i) cycle();
  const Counts after = settledTo(before);
  EXPECT_EQ(after, before) << "before: " << describe(before) << "; after: " << describe(after);
  // A leak of one communicator's buffers per cycle would be 300 x >= 160 KiB.
  EXPECT_LT(rssKb() - rssBefore, 16 * 1024) << "RSS grew from " << rssBefore << " kB";
}

// The same with a local switch per communicator (RINA_SWITCH=auto): every
// switch process ends with its communicator and is reaped, and its reaper
// thread is gone.
TEST(CommCycles, AutoSwitchCyclesLeaveNoProcessThreadOrDescriptor) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv sw("RINA_SWITCH", "auto");
  ScopedEnv racks("RINA_RACKS", "2:ina");
  ScopedEnv algo("RINA_ALGO", "rina");
  ScopedEnv inaTimeout("RINA_INA_TIMEOUT_MS", "60000");
  cycle();
  const Counts before = settledTo({openFds(), threads(), 0, 0});
  ASSERT_EQ(before.children, 0);
  for (int i = 0; i < 20 && !HasFatalFailure(); ++i) cycle();
  const Counts after = settledTo(before);
  EXPECT_EQ(after, before) << "before: " << describe(before) << "; after: " << describe(after);
}

}  // namespace
}  // namespace rina::testing
