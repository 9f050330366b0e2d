// The life of a rack's INA job around its switch: slots given back after a
// fallback, a dead local switch reaped and noticed, a switch that answers
// without progress, and RINA_SWITCH=auto's switch living exactly as long
// as its communicator. Ranks are threads (rank_harness.h) or processes; every
// result is checked against a serial sum.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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
#include "rank_harness.h"
#include "rina/ina_wire.h"
#include "wire/ctrl_auth.h"
#include "wire/ctrl_protocol.h"
#include "wire/net.h"

namespace rina::testing {
namespace {

using Clock = std::chrono::steady_clock;

int32_t input(int rank, int call, size_t i) {
  return static_cast<int32_t>((rank * 7919 + call * 104729 + i * 31) % 2001) - 1000;
}

// One allreduce of `count` int32 on this rank, checked against the serial
// sum of every rank's input; out of place the send buffer must come back
// untouched.
void exactAllreduce(rinaComm_t comm, int rank, int n, int call, size_t count, bool inPlace = true) {
  std::vector<int32_t> buf(count), out(count, 0x5A5A5A5A);
  for (size_t i = 0; i < count; ++i) buf[i] = input(rank, call, i);
  int32_t* result = inPlace ? buf.data() : out.data();
  ASSERT_EQ(rinaAllReduce(buf.data(), result, count, rinaInt32, rinaSum, comm), rinaSuccess)
      << "rank " << rank << " call " << call << ": " << rinaCommGetLastError(comm);
  for (size_t i = 0; i < count; ++i) {
    int32_t want = 0;
    for (int r = 0; r < n; ++r) want += input(r, call, i);
    ASSERT_EQ(result[i], want) << "rank " << rank << " call " << call << " element " << i;
    if (!inPlace) {
      ASSERT_EQ(buf[i], input(rank, call, i)) << "rank " << rank << "'s send buffer";
    }
  }
}

rinaCommStats_t statsOf(rinaComm_t comm) {
  rinaCommStats_t s{};
  s.size = sizeof s;
  EXPECT_EQ(rinaCommGetStats(comm, &s), rinaSuccess);
  return s;
}

using ina::testing::jsonField;
using ina::testing::SecretDir;

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

// How the fake switch below answers each datagram.
enum class Answers {
  kStale,      // with a result for a seq of an older call
  kDuplicate,  // the first datagram rightly, then every one with that answer again
  kNack,       // with a NACK of its seq (every slot preempted)
};

// A switch that answers every datagram and never makes progress: a UDP
// data port and a CTRL port that grants every REGISTER and REQUEST 64 slots
// of 64 elements there. Counts what it received.
class FakeSwitch {
 public:
  explicit FakeSwitch(Answers mode) : mode_(mode) {
    Fd listener;
    ok_ = ina::openUdpSocket({0x7F000001, 0}, 1 << 20, &data_).ok() &&
          ina::listenTcp({0x7F000001, 0}, &listener, &control_).ok();
    sockaddr_in me{};
    socklen_t len = sizeof me;
    ok_ = ok_ && getsockname(data_.get(), reinterpret_cast<sockaddr*>(&me), &len) == 0;
    dataPort_ = ntohs(me.sin_port);
    if (ok_) {
      dataThread_ = std::thread([this] { serveData(); });
      ctrlThread_ = std::thread([this, l = std::move(listener)]() mutable { serveCtrl(l); });
    }
  }
  ~FakeSwitch() {
    stop_ = true;
    if (dataThread_.joinable()) dataThread_.join();
    if (ctrlThread_.joinable()) ctrlThread_.join();
  }
  bool ok() const { return ok_; }
  const ina::Endpoint& control() const { return control_; }
  ina::Grant grant(uint16_t job) const {
    ina::Grant g;
    g.job = job;
    g.base = 0;
    g.length = kSlots;
    g.payloadElems = kPayload;
    g.port = dataPort_;
    g.ports = 1;
    return g;
  }
  uint64_t received() const { return received_; }

  static constexpr uint32_t kSlots = 64;
  static constexpr uint32_t kPayload = 64;

 private:
  void serveData() {
    std::vector<uint8_t> in(65536), out(65536), first;
    while (!stop_) {
      pollfd p{data_.get(), POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      sockaddr_in from{};
      socklen_t len = sizeof from;
      ssize_t n =
          recvfrom(data_.get(), in.data(), in.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
      ina::Header h;
      if (n <= 0 ||
          ina::decode(std::span<const uint8_t>(in.data(), n), &h) != ina::DecodeError::kOk) {
        continue;
      }
      received_++;
      std::vector<int32_t> payload(h.elems);
      std::memcpy(payload.data(), in.data() + ina::kHeaderBytes, 4 * size_t{h.elems});
      ina::Header r = h;
      r.type = ina::Type::kResult;
      r.flags = 0;
      size_t bytes = 0;
      if (mode_ == Answers::kNack) {
        r.type = ina::Type::kNack;
        r.elems = 0;
        bytes = ina::encode(r, {}, out);
      } else if (mode_ == Answers::kStale) {
        r.seq = h.seq - 1000;  // wraps: long before this call's seqs
        bytes = ina::encode(r, payload, out);
      } else {
        if (first.empty()) {  // a fan-in of 1: the sum is the datagram's payload
          first.resize(65536);
          first.resize(ina::encode(r, payload, first));
        }
        bytes = first.size();
        std::memcpy(out.data(), first.data(), bytes);
      }
      (void)sendto(data_.get(), out.data(), bytes, 0, reinterpret_cast<sockaddr*>(&from), len);
    }
  }
  void serveCtrl(Fd& listener) {
    std::vector<Fd> conns;
    std::vector<ina::LineReader> readers;
    while (!stop_) {
      std::vector<pollfd> fds{{listener.get(), POLLIN, 0}};
      for (const Fd& c : conns) fds.push_back({c.get(), POLLIN, 0});
      if (poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        int c = accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) {
          conns.emplace_back(c);
          readers.emplace_back();
        }
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        std::string line;
        if (!ina::readLine(fds[i].fd, readers[i - 1], 100, &line).ok()) continue;
        ina::CtrlRequest req;
        std::string error, reply = "ERR unknown";
        if (ina::parseCtrlRequest(line, &req, &error)) {
          if (req.verb == ina::CtrlVerb::kRegister || req.verb == ina::CtrlVerb::kRequest) {
            reply = ina::formatGrant(grant(req.job));
          } else if (req.verb == ina::CtrlVerb::kRelease) {
            reply = "OK";
          }
        }
        (void)ina::sendLine(fds[i].fd, reply, 1000);
      }
    }
  }

  const Answers mode_;
  bool ok_ = false;
  Fd data_;
  uint16_t dataPort_ = 0;
  ina::Endpoint control_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> received_{0};
  std::thread dataThread_, ctrlThread_;
};

constexpr int kInaTimeoutMs = 300;

// One worker (fan-in 1) reducing through the fake switch, its result and
// how long the call took.
Status reduceThrough(FakeSwitch& sw, size_t count, ina::InaCallResult* result, int64_t* tookMs) {
  ina::InaClientOptions o;
  o.job = 7;
  o.token = 0x1234567887654321ull;
  o.switchTimeoutMs = kInaTimeoutMs;
  std::unique_ptr<ina::InaClient> client;
  RINA_TRY(ina::InaClient::create(o, &client));
  RINA_TRY(client->setGrant(sw.grant(7)));
  std::vector<int32_t> buf(count, 3);
  const Clock::time_point start = Clock::now();
  Status s = client->allreduce(buf.data(), count, rinaInt32, {}, result);
  *tookMs = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  return s;
}

// A switch that answers every datagram and every resend, but never with the
// answer the call waits for (stale seqs, a duplicate of an answer taken):
// the call ends with rinaTimeout after RINA_INA_TIMEOUT_MS without progress,
// not later, and not never.
TEST(InaNoProgress, StaleAndDuplicateAnswersEndTheCallWithATimeout) {
  for (Answers mode : {Answers::kStale, Answers::kDuplicate}) {
    FakeSwitch sw(mode);
    ASSERT_TRUE(sw.ok());
    ina::InaCallResult result;
    int64_t tookMs = 0;
    const size_t count = 64 * 1000;  // 1000 slices over 64 slots
    Status s = reduceThrough(sw, count, &result, &tookMs);
    const int m = static_cast<int>(mode);
    EXPECT_EQ(s.code(), rinaTimeout) << "mode " << m << ": " << s.message();
    EXPECT_GE(tookMs, kInaTimeoutMs) << "mode " << m;
    EXPECT_LT(tookMs, 10 * kInaTimeoutMs) << "mode " << m;
    EXPECT_GT(result.stats.staleResults, 0u) << "mode " << m;
    EXPECT_GT(result.stats.retransmissions, 0u) << "mode " << m << ": resends kept coming";
    EXPECT_GT(sw.received(), FakeSwitch::kSlots) << "mode " << m;
  }
}

// A switch that NACKs every slot: each slot is lost once, the call sends
// nothing more on it and ends at once with every slice left to the hosts (it
// neither spins nor waits for the timeout).
TEST(InaNoProgress, NackedSlotsEndTheCallWithEverySliceOnTheHosts) {
  FakeSwitch sw(Answers::kNack);
  ASSERT_TRUE(sw.ok());
  ina::InaCallResult result;
  int64_t tookMs = 0;
  const size_t count = 64 * 1000;
  Status s = reduceThrough(sw, count, &result, &tookMs);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(result.hostSlices.size(), 1000u);
  EXPECT_EQ(result.stats.nacks, FakeSwitch::kSlots);
  EXPECT_LE(sw.received(), FakeSwitch::kSlots + result.stats.retransmissions);
  EXPECT_LT(tookMs, kInaTimeoutMs);
}

// The same switches under a communicator: the rack falls back (stale
// answers: after RINA_INA_TIMEOUT_MS; NACKs: when the grant it asked for
// after the first NACKs brings nothing but NACKs again) and every allreduce
// is exact.
// The rack alone (one switch call per allreduce) and the rack as a member of
// the ring beside an autonomous rank, in and out of place (the first call,
// the one that falls back, out of place: its slices start from the send
// buffer on the hosts).
TEST(InaNoProgress, RackFallsBackAndStaysExact) {
  // A fallen-back rack tries its switch again at a plan check; this switch
  // never sums, so checks come only every 1000 collectives here.
  ScopedEnv planCheck("RINA_PLAN_CHECK_EVERY", "1000");
  for (const char* racks : {"2:ina", "2:ina,1"}) {
    for (Answers mode : {Answers::kStale, Answers::kNack}) {
      FakeSwitch sw(mode);
      ASSERT_TRUE(sw.ok());
      config::Options o = optionsFor(2, sw.control().toString(), "");
      o.racks = racks;
      o.inaTimeoutMs = kInaTimeoutMs;
      const int n = racks == std::string("2:ina") ? 2 : 3;
      std::vector<rinaCommStats_t> after(n);
      runThreads(n, o, [&](int rank, rinaComm_t comm) {
        for (int k = 0; k < 4; ++k) exactAllreduce(comm, rank, n, k, 20000, k % 2 == 1);
        after[rank] = statsOf(comm);
      });
      for (int r = 0; r < 2; ++r) {
        EXPECT_EQ(after[r].inaFallbacks, 1u)
            << racks << " mode " << static_cast<int>(mode) << " rank " << r;
      }
    }
  }
}

// A switch that takes the rack back at every try but never sums: the agent
// backs off, trying again 1, 2, 4, 8, 16, 32 plan checks after each such
// fallback instead of at the next check (each try costs a collective its
// INA timeout, or here its NACKs). With a check at most before every
// collective, 41 allreduces leave room for at most 6 returns (1 + 2 + 4 +
// 8 + 16 > 31); trying at every check gave more than twice that. The rack
// keeps trying (2 returns at least) and every allreduce is exact.
TEST(InaNoProgress, ReturnsToASwitchThatNeverSumsBackOff) {
  ScopedEnv planCheck("RINA_PLAN_CHECK_EVERY", "1");
  FakeSwitch sw(Answers::kNack);
  ASSERT_TRUE(sw.ok());
  config::Options o = optionsFor(2, sw.control().toString(), "");
  o.racks = "2:ina";
  o.inaTimeoutMs = kInaTimeoutMs;
  std::vector<rinaCommStats_t> after(2);
  runThreads(2, o, [&](int rank, rinaComm_t comm) {
    for (int k = 0; k < 41; ++k) exactAllreduce(comm, rank, 2, k, 2000, false);
    after[rank] = statsOf(comm);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_GE(after[r].inaReturns, 2u) << "rank " << r;
    EXPECT_LE(after[r].inaReturns, 6u) << "rank " << r;
    EXPECT_EQ(after[r].inaFallbacks, after[r].inaReturns + 1) << "rank " << r;
  }
}

// The command line of a process, its arguments joined by blanks.
std::string commandLine(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::replace(text.begin(), text.end(), '\0', ' ');
  return text;
}

// RINA_SWITCH=auto: communicators made on threads that then end keep their
// switch (it lives as long as the communicator, not the thread that made
// it), sized for the job (RINA_INA_SLOTS); allreduces on other threads go
// through it and are exact; rinaCommDestroy stops it.
TEST(RackAutoSwitch, LivesAsLongAsTheCommunicatorNotItsThread) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv sw("RINA_SWITCH", "auto");
  ScopedEnv racks("RINA_RACKS", "2:ina");
  ScopedEnv algo("RINA_ALGO", "rina");
  ScopedEnv slots("RINA_INA_SLOTS", "128");
  ScopedEnv inaTimeout("RINA_INA_TIMEOUT_MS",
                       "60000");  // a loaded machine must not cause a fallback
  ASSERT_TRUE(switchdChildren().empty());
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
  std::vector<rinaComm_t> comms(2, nullptr);
  {
    std::vector<std::thread> init;
    for (int r = 0; r < 2; ++r) {
      init.emplace_back([&, r] {
        EXPECT_EQ(rinaCommInitRank(&comms[r], 2, id, r), rinaSuccess)
            << "rank " << r << ": " << rinaCommGetLastError(nullptr);
      });
    }
    for (auto& t : init) t.join();  // the threads that made the communicators end here
  }
  ASSERT_TRUE(comms[0] && comms[1]);
  const std::vector<pid_t> pids = switchdChildren();
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_NE(commandLine(pids[0]).find("--slots 128"), std::string::npos) << commandLine(pids[0]);
  std::vector<rinaCommStats_t> after(2);
  {
    std::vector<std::thread> use;
    for (int r = 0; r < 2; ++r) {
      use.emplace_back([&, r] {
        for (int k = 0; k < 3; ++k) exactAllreduce(comms[r], r, 2, k, 20000);
        after[r] = statsOf(comms[r]);
        EXPECT_EQ(rinaCommDestroy(comms[r]), rinaSuccess);
      });
    }
    for (auto& t : use) t.join();
  }
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(after[r].inaFallbacks, 0u) << "rank " << r;
    EXPECT_GE(after[r].inaCalls, 3u) << "rank " << r << ": the allreduces did not use the switch";
  }
  EXPECT_TRUE(switchdChildren().empty()) << "rinaCommDestroy left its switch running";
}

// The entries of a folder, without . and ..
std::vector<std::string> entriesOf(const std::string& folder) {
  std::vector<std::string> out;
  DIR* d = opendir(folder.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      out.push_back(e->d_name);
    }
  }
  closedir(d);
  return out;
}

// A rank process that owns a RINA_SWITCH=auto switch is SIGKILLed: its
// switch ends with it, and nothing of its secret is left in TMPDIR.
TEST(RackAutoSwitch, KilledRankLeavesNoSwitchAndNoSecret) {
  char tmp[] = "/tmp/rina-lifecycle-tmp-XXXXXX";
  ASSERT_NE(mkdtemp(tmp), nullptr);
  ScopedEnv tmpdir("TMPDIR", tmp);
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv sw("RINA_SWITCH", "auto");
  ScopedEnv racks("RINA_RACKS", "2:ina");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t rank = fork();
  ASSERT_GE(rank, 0);
  if (rank == 0) {  // two ranks (threads) of one communicator; the agent's switch is ours
    close(fds[0]);
    rinaUniqueId id;
    if (rinaGetUniqueId(&id) != rinaSuccess) _exit(2);
    rinaComm_t comms[2] = {nullptr, nullptr};
    std::thread other([&] { (void)rinaCommInitRank(&comms[1], 2, id, 1); });
    const rinaResult_t rc = rinaCommInitRank(&comms[0], 2, id, 0);
    other.join();
    const std::vector<pid_t> pids = switchdChildren();
    const pid_t sent = rc == rinaSuccess && comms[1] && pids.size() == 1 ? pids[0] : -1;
    if (write(fds[1], &sent, sizeof sent) != static_cast<ssize_t>(sizeof sent)) _exit(3);
    for (;;) pause();
  }
  close(fds[1]);
  pid_t switchPid = -1;
  pollfd p{fds[0], POLLIN, 0};
  const bool heard = poll(&p, 1, 60000) == 1 && read(fds[0], &switchPid, sizeof switchPid) ==
                                                    static_cast<ssize_t>(sizeof switchPid);
  close(fds[0]);
  const int pidfd = switchPid > 0 ? static_cast<int>(syscall(SYS_pidfd_open, switchPid, 0)) : -1;
  kill(rank, SIGKILL);
  waitpid(rank, nullptr, 0);
  ASSERT_TRUE(heard) << "the rank process did not say its switch's pid";
  ASSERT_GT(switchPid, 0) << "the rank process did not start one switch";
  ASSERT_GE(pidfd, 0) << strerror(errno);
  pollfd ended{pidfd, POLLIN, 0};
  EXPECT_EQ(poll(&ended, 1, 10000), 1) << "rina-switchd pid " << switchPid << " outlived its rank";
  close(pidfd);
  const std::vector<std::string> left = entriesOf(tmp);
  for (const std::string& e : left) {
    ADD_FAILURE() << "left in TMPDIR: " << e;
    const std::string path = std::string(tmp) + "/" + e;
    unlink((path + "/auth").c_str());
    rmdir(path.c_str());
  }
  rmdir(tmp);
}

}  // namespace
}  // namespace rina::testing
