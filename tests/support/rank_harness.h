// Runs N ranks of a test as threads of this process (fast, debuggable) or as
// forked processes (separate address spaces, killable), Gloo-style.
#ifndef RINA_TESTS_SUPPORT_RANK_HARNESS_H_
#define RINA_TESTS_SUPPORT_RANK_HARNESS_H_

#include <functional>
#include <string>
#include <vector>

#include "core/config.h"
#include "rina/rina.h"

namespace rina::testing {

// Sets (or with nullptr, unsets) an environment variable and makes rina
// re-read its configuration; restores the old value when destroyed.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();

 private:
  std::string name_;
  bool had_;
  std::string old_;
};

// Creates a unique id, starts n threads that each init their rank, run fn,
// and destroy the communicator. Failures inside fn use gtest macros.
void runThreads(int n, const std::function<void(int rank, rinaComm_t comm)>& fn);
// The same with the communicators' knobs given (api::commInitRank) instead
// of read from the environment.
void runThreads(int n, const config::Options& options,
                const std::function<void(int rank, rinaComm_t comm)>& fn);

// For test binaries whose tests assert that the switch carried the calls
// (no fallback): a loaded machine can starve the switch process for longer
// than the default RINA_INA_TIMEOUT_MS (2 s), and the rack then falls back,
// right but not what the test checks. Call it from a static initializer:
// every test of the binary starts with RINA_INA_TIMEOUT_MS=60000 unless the
// environment set it; a test of the fallback itself sets its own short one
// with ScopedEnv.
bool useGenerousInaTimeout();

// A barrier for forked ranks (runProcesses): made before the fork, in
// memory the children share; arriveAndWait returns false after timeoutMs.
class ProcessBarrier {
 public:
  explicit ProcessBarrier(int parties);
  ~ProcessBarrier();
  ProcessBarrier(const ProcessBarrier&) = delete;
  ProcessBarrier& operator=(const ProcessBarrier&) = delete;
  bool arriveAndWait(int timeoutMs);

 private:
  int parties_;
  int* arrived_;  // shared with the children
};

// Forks n processes that each init their rank and return fn's exit code.
// Children still running after timeoutSec are killed. Returns each child's
// exit code (128 + signal when killed by one).
std::vector<int> runProcesses(int n, const std::function<int(int rank, rinaComm_t comm)>& fn,
                              int timeoutSec);

// For a forked rank: a userfaultfd on one page (never touched, so its
// first write is a fault): the first write there, by this process or by a
// peer's process_vm_writev, waits for the fault's handler, which kills this
// process. So the process dies exactly when a transfer into the buffer
// reaches that page, with everything before it written and nothing after.
// False if the kernel gives no userfaultfd.
bool dieWhenWritten(char* page);
// Whether this kernel (or sandbox) gives a userfaultfd at all.
bool userfaultfdWorks();

}  // namespace rina::testing

#endif  // RINA_TESTS_SUPPORT_RANK_HARNESS_H_
