// The life of a rack's INA job around its switch: slots given back after a
// fallback, a dead local switch reaped and noticed. Ranks are threads (rank_harness.h) or
// processes; every result is checked against a serial sum.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "core/config.h"
#include "ina/ctrl_client.h"
#include "ina_harness.h"
#include "inanet/ctrl_auth.h"
#include "rank_harness.h"

namespace rina::testing {
namespace {

using Clock = std::chrono::steady_clock;

int32_t input(int rank, int call, size_t i) {
  return static_cast<int32_t>((rank * 7919 + call * 104729 + i * 31) % 2001) - 1000;
}

// One allreduce of `count` int32 on this rank, checked against the serial
// sum of every rank's input.
void exactAllreduce(rinaComm_t comm, int rank, int n, int call, size_t count) {
  std::vector<int32_t> buf(count);
  for (size_t i = 0; i < count; ++i) buf[i] = input(rank, call, i);
  ASSERT_EQ(rinaAllReduce(buf.data(), buf.data(), count, rinaInt32, rinaSum, comm), rinaSuccess)
      << "rank " << rank << " call " << call << ": " << rinaCommGetLastError(comm);
  for (size_t i = 0; i < count; ++i) {
    int32_t want = 0;
    for (int r = 0; r < n; ++r) want += input(r, call, i);
    ASSERT_EQ(buf[i], want) << "rank " << rank << " call " << call << " element " << i;
  }
}

rinaCommStats_t statsOf(rinaComm_t comm) {
  rinaCommStats_t s{};
  s.size = sizeof s;
  EXPECT_EQ(rinaCommGetStats(comm, &s), rinaSuccess);
  return s;
}

// A private folder with a fresh admin secret file.
class SecretDir {
 public:
  SecretDir() {
    char dir[] = "/tmp/rina-lifecycle-test-XXXXXX";
    if (mkdtemp(dir)) dir_ = dir;
    std::string error;
    ok_ = !dir_.empty() && ina::writeSecretFile(file(), &error);
  }
  ~SecretDir() {
    unlink(file().c_str());
    rmdir(dir_.c_str());
  }
  bool ok() const { return ok_; }
  std::string file() const { return dir_ + "/auth"; }

 private:
  std::string dir_;
  bool ok_ = false;
};

// A number field of a JSON reply ("slots_used"), -1 when absent.
long long jsonField(const std::string& json, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  size_t at = json.find(key);
  if (at == std::string::npos) return -1;
  return std::atoll(json.c_str() + at + key.size());
}

// The knobs of ranks that use the switch at `control` for one INA rack of n,
// with its admin secret given through the options (not the environment).
config::Options optionsFor(int n, const std::string& control, const std::string& authFile) {
  config::Options o = config::environment();
  o.racks = std::to_string(n) + ":ina";
  o.switches = control;
  o.switchAuth = authFile;
  // Long enough that a loaded machine does not starve the switch into a
  // fallback before the test stops it (it waits this long once).
  o.inaTimeoutMs = 3000;
  o.inaSlots = 128;
  o.algo = "rina";
  return o;
}

// A switch frozen (SIGSTOP) until the rack falls back, then thawed: the
// agent has given the job's 128 slots back (a signed RELEASE: the switch has
// an admin secret, which the agent knows from its options alone), while the
// communicator lives on, and every result stays exact.
TEST(RackLifecycle, FrozenSwitchGetsTheSlotsBackAfterTheFallback) {
  SecretDir secret;
  ASSERT_TRUE(secret.ok());
  ina::testing::SwitchdProcess sw({"--slots", "256", "--auth-file", secret.file()});
  ASSERT_TRUE(sw.ready());
  ScopedEnv noEnvSecret("RINA_SWITCH_AUTH_FILE", nullptr);
  std::unique_ptr<ina::CtrlClient> admin;
  ASSERT_TRUE(ina::CtrlClient::connect(sw.control(), 5000, &admin, secret.file()).ok());
  auto stats = [&] {
    std::string reply;
    Status s = admin->query("STATS", &reply);
    EXPECT_TRUE(s.ok()) << s.message();
    return reply;
  };
  std::barrier sync(2);
  std::vector<rinaCommStats_t> after(2);
  long long job = -1;
  runThreads(2, optionsFor(2, sw.control().toString(), secret.file()),
             [&](int rank, rinaComm_t comm) {
               exactAllreduce(comm, rank, 2, 0, 5000);
               EXPECT_EQ(statsOf(comm).inaFallbacks, 0u) << "rank " << rank;
               sync.arrive_and_wait();
               if (rank == 0) {
                 const std::string before = stats();
                 EXPECT_EQ(jsonField(before, "slots_used"), 128) << before;
                 job = jsonField(before, "job");
                 sw.pause();
               }
               sync.arrive_and_wait();
               exactAllreduce(comm, rank, 2, 1, 5000);  // times out on the switch, falls back
               after[rank] = statsOf(comm);
               sync.arrive_and_wait();
               if (rank == 0) {
                 sw.resume();
                 // Each STATS is a round trip through the switch's control
                 // loop, which takes the agent's queued RELEASE in the same
                 // or the next pass.
                 std::string now;
                 const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
                 for (int i = 0; i < 1000 && Clock::now() < deadline; ++i) {
                   now = stats();
                   if (jsonField(now, "slots_used") == 0) break;
                 }
                 EXPECT_EQ(jsonField(now, "slots_used"), 0) << now;
                 EXPECT_EQ(jsonField(now, "releases"), 1) << now;
                 std::string entries;
                 Status s = admin->query("ENTRIES job=" + std::to_string(job), &entries);
                 EXPECT_FALSE(s.ok()) << "job " << job << " still has entries: " << entries;
               }
               sync.arrive_and_wait();
               exactAllreduce(comm, rank, 2, 2, 5000);
             });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(after[r].inaFallbacks, 1u) << "rank " << r;
}

// The pids of this process's children that run this build's rina-switchd.
std::vector<pid_t> switchdChildren() {
  std::vector<pid_t> out;
  DIR* proc = opendir("/proc");
  if (!proc) return out;
  while (dirent* d = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(d->d_name));
    if (pid <= 0) continue;
    std::ifstream f(std::string("/proc/") + d->d_name + "/stat");
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) != 2 || ppid != getpid()) {
      continue;
    }
    char exe[4096] = {0};
    ssize_t len =
        readlink((std::string("/proc/") + d->d_name + "/exe").c_str(), exe, sizeof exe - 1);
    // A zombie has no executable left: count every child named rina-switchd.
    if ((len > 0 && std::string(exe, len) == RINA_SWITCHD_PATH) ||
        stat.find("(rina-switchd)") != std::string::npos) {
      out.push_back(pid);
    }
  }
  closedir(proc);
  return out;
}

// Whether pid is gone from the process table (reaped), waited for up to
// timeoutMs.
bool reapedWithin(pid_t pid, int timeoutMs) {
  const std::string path = "/proc/" + std::to_string(pid);
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  struct stat st {};
  while (stat(path.c_str(), &st) == 0) {
    if (Clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// RINA_SWITCH=auto's switch killed under a live communicator: the agent's
// process reaps it at once (no zombie), the rack falls back at its next
// collective with a WARN naming the switch's pid and how it ended, and the
// results stay exact.
TEST(RackLifecycle, KilledAutoSwitchIsReapedAndTheRackFallsBack) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv sw("RINA_SWITCH", "auto");
  ScopedEnv racks("RINA_RACKS", "2:ina");
  ScopedEnv algo("RINA_ALGO", "rina");
  // Only the switch's death may make the rack fall back, not a loaded
  // machine starving it.
  ScopedEnv inaTimeout("RINA_INA_TIMEOUT_MS", "60000");
  ScopedEnv debug("RINA_DEBUG", "WARN");
  ASSERT_TRUE(switchdChildren().empty());
  std::barrier sync(2);
  pid_t victim = -1;
  std::vector<rinaCommStats_t> after(2);
  ::testing::internal::CaptureStderr();
  runThreads(2, [&](int rank, rinaComm_t comm) {
    exactAllreduce(comm, rank, 2, 0, 5000);
    sync.arrive_and_wait();
    if (rank == 0) {
      const std::vector<pid_t> pids = switchdChildren();
      ASSERT_EQ(pids.size(), 1u);
      victim = pids[0];
      ASSERT_EQ(kill(victim, SIGKILL), 0);
      EXPECT_TRUE(reapedWithin(victim, 5000)) << "rina-switchd pid " << victim << " left a zombie";
    }
    sync.arrive_and_wait();
    exactAllreduce(comm, rank, 2, 1, 5000);
    exactAllreduce(comm, rank, 2, 2, 5000);
    after[rank] = statsOf(comm);
  });
  const std::string err = ::testing::internal::GetCapturedStderr();
  for (int r = 0; r < 2; ++r) EXPECT_EQ(after[r].inaFallbacks, 1u) << "rank " << r;
  const std::string named = "pid " + std::to_string(victim);
  size_t at = err.find(named);
  ASSERT_NE(at, std::string::npos) << err;
  const size_t lineStart = err.rfind('\n', at) == std::string::npos ? 0 : err.rfind('\n', at);
  const std::string line = err.substr(lineStart, err.find('\n', at) - lineStart);
  EXPECT_NE(line.find("WARN"), std::string::npos) << line;
  EXPECT_NE(line.find("signal 9"), std::string::npos) << line;
  EXPECT_TRUE(switchdChildren().empty());
}

}  // namespace
}  // namespace rina::testing
