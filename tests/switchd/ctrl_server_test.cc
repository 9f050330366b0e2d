// rina-switchd's control loop against clients that misbehave: clients that
// pipeline requests and never read their replies, and more connections than
// the switch has file descriptors. A real job's requests are still answered.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "ina/local_switchd.h"
#include "ina_harness.h"
#include "wire/ctrl_auth.h"

namespace rina::ina::testing {
namespace {

// A TCP connection to `to` with a small receive buffer, non-blocking.
Fd rawConnect(const Endpoint& to, int receiveBytes) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fd;
  if (receiveBytes > 0) {
    setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &receiveBytes, sizeof receiveBytes);
  }
  sockaddr_in sa = to.toSockaddr();
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return Fd();
  fcntl(fd.get(), F_SETFL, O_NONBLOCK);
  return fd;
}

// Writes `line` repeatedly until the socket takes no more (the peer stopped
// reading) or `maxBytes` went out. Returns the bytes written.
size_t pipelineUntilFull(int fd, const std::string& line, size_t maxBytes) {
  std::string chunk;
  while (chunk.size() < 64 * 1024) chunk += line;
  size_t sent = 0;
  for (int round = 0; round < 100000 && sent < maxBytes; ++round) {
    ssize_t n = ::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL);
    if (n <= 0) {
      // Full: give the switch a moment to read more, then stop if it is
      // still full (it stopped reading from us or our buffer is full).
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, 200) <= 0) break;
      continue;
    }
    sent += static_cast<size_t>(n);
  }
  return sent;
}

// CPU time (user + system) of a process in clock ticks, from /proc/PID/stat.
long long cpuTicks(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  long long utime = -1, stime = -1;
  // Fields after the command: state is field 3; utime 14, stime 15.
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  return utime < 0 || stime < 0 ? -1 : utime + stime;
}

CtrlRequest registration(uint16_t job, uint64_t token, uint16_t port) {
  CtrlRequest reg;
  reg.verb = CtrlVerb::kRegister;
  reg.job = job;
  reg.token = token;
  reg.fanIn = 1;
  reg.priority = 1;
  reg.slots = 8;
  reg.members = {Endpoint{0x7F000001, port}};
  return reg;
}

// Twenty clients pipeline STATS and never read: their receive buffers and
// the switch's send buffers toward them fill. A job's REGISTER on a fresh
// connection is still granted (within a timeout far below what twenty
// blocked writes cost a loop that waits on each), and so is a STATS.
TEST(InaCtrlServer, ClientsThatDoNotReadDoNotHoldUpARegister) {
  SwitchdProcess sw({"--slots", "64"});
  ASSERT_TRUE(sw.ready());
  constexpr int kSlowClients = 20;
  std::vector<Fd> slow;
  for (int i = 0; i < kSlowClients; ++i) {
    Fd fd = rawConnect(sw.control(), 4096);
    ASSERT_TRUE(fd.valid()) << "slow client " << i;
    size_t sent = pipelineUntilFull(fd.get(), "STATS\n", 4u << 20);
    EXPECT_GT(sent, 0u) << "slow client " << i;
    slow.push_back(std::move(fd));
  }
  std::unique_ptr<CtrlClient> agent;
  ASSERT_TRUE(CtrlClient::connect(sw.control(), 5000, &agent).ok());
  Grant g;
  Status s = agent->registerJob(registration(5, 0x1111222233334444ull, 7100), &g);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(g.job, 5);
  EXPECT_EQ(g.length, 8u);
  std::string stats;
  s = agent->query("STATS", &stats);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_NE(stats.find("\"registrations\":1"), std::string::npos) << stats.substr(0, 200);
}

// A switch limited to 64 file descriptors, with more connections offered
// than it can hold: it keeps accepting (a new client is answered, an idle
// one gives way) and does not spin on the listening socket meanwhile.
TEST(InaCtrlServer, AtItsDescriptorLimitTheSwitchKeepsServingAndDoesNotSpin) {
  SwitchdProcess sw({"--slots", "64"}, {"prlimit", "--nofile=64:64"});
  ASSERT_TRUE(sw.ready());
  std::vector<Fd> idle;
  for (int i = 0; i < 100; ++i) {
    Fd fd = rawConnect(sw.control(), 0);
    ASSERT_TRUE(fd.valid()) << "connection " << i;
    idle.push_back(std::move(fd));
  }
  // A window of 2 s after the flood: a loop that spins on a listener it
  // cannot accept from burns most of it.
  long long before = cpuTicks(sw.pid());
  ASSERT_GE(before, 0);
  auto t0 = std::chrono::steady_clock::now();
  ::poll(nullptr, 0, 2000);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  long long used = cpuTicks(sw.pid()) - before;
  double cpuSeconds = static_cast<double>(used) / static_cast<double>(sysconf(_SC_CLK_TCK));
  EXPECT_LT(cpuSeconds, 0.25 * wall) << "switch used " << cpuSeconds << " s of CPU in " << wall
                                     << " s while at its descriptor limit";
  // A real agent still gets through.
  std::unique_ptr<CtrlClient> agent;
  ASSERT_TRUE(CtrlClient::connect(sw.control(), 5000, &agent).ok());
  Grant g;
  Status s = agent->registerJob(registration(6, 0x5555666677778888ull, 7101), &g);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(g.length, 8u);
}

// A line longer than the protocol allows closes that connection only.
TEST(InaCtrlServer, AnOverlongLineClosesItsConnection) {
  SwitchdProcess sw({"--slots", "64"});
  ASSERT_TRUE(sw.ready());
  Fd fd = rawConnect(sw.control(), 0);
  ASSERT_TRUE(fd.valid());
  std::string junk(kMaxCtrlLineBytes + 2, 'A');
  pipelineUntilFull(fd.get(), junk, junk.size() * 4);
  // The switch closes it: a read sees EOF (or a reset) within the timeout.
  bool closed = false;
  for (int i = 0; i < 100 && !closed; ++i) {
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char c[256];
    ssize_t n = ::recv(fd.get(), c, sizeof c, 0);
    closed = n == 0 || (n < 0 && errno != EAGAIN);
  }
  EXPECT_TRUE(closed);
  EXPECT_NE(sw.query("STATS"), "");
}

// A connection that sends nothing for --ctrl-idle-ms is closed; one that
// registered a job is kept (it receives the job's notices).
TEST(InaCtrlServer, IdleConnectionsAreClosedButAJobsConnectionIsKept) {
  SwitchdProcess sw({"--slots", "64", "--ctrl-idle-ms", "300"});
  ASSERT_TRUE(sw.ready());
  std::unique_ptr<CtrlClient> agent;
  ASSERT_TRUE(CtrlClient::connect(sw.control(), 5000, &agent).ok());
  Grant g;
  ASSERT_TRUE(agent->registerJob(registration(9, 0x1234567812345678ull, 7102), &g).ok());
  Fd idle = rawConnect(sw.control(), 0);
  ASSERT_TRUE(idle.valid());
  bool closed = false;
  for (int i = 0; i < 100 && !closed; ++i) {  // up to 10 s
    pollfd p{idle.get(), POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char c[16];
    ssize_t n = ::recv(idle.get(), c, sizeof c, 0);
    closed = n == 0 || (n < 0 && errno != EAGAIN);
  }
  EXPECT_TRUE(closed) << "an idle connection stayed open";
  // Well past the idle time, the job's connection still works.
  std::string stats;
  Status s = agent->query("STATS", &stats);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(agent->closed());
}

// A private folder with a secret file, removed at the end.
class SecretDir {
 public:
  SecretDir() {
    char dir[] = "/tmp/rina-ctrl-test-XXXXXX";
    if (mkdtemp(dir)) dir_ = dir;
    std::string error;
    if (!dir_.empty())
      ok_ = writeSecretFile(file(), &error) && readSecretFile(file(), &secret_, &error);
  }
  ~SecretDir() {
    unlink(file().c_str());
    unlink(log().c_str());
    rmdir(dir_.c_str());
  }
  bool ok() const { return ok_; }
  std::string file() const { return dir_ + "/auth"; }
  std::string log() const { return dir_ + "/switchd.log"; }
  const std::string& secret() const { return secret_; }

 private:
  std::string dir_, secret_;
  bool ok_ = false;
};

// One request line on a fresh connection (or `fd`), its reply line.
std::string rawRequest(int fd, const std::string& line) {
  if (!sendLine(fd, line, 2000).ok()) return "(send failed)";
  LineReader reader;
  std::string reply;
  if (!readLine(fd, reader, 5000, &reply).ok()) return "(no reply)";
  return reply;
}

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// rina-switchd --auth-file: unsigned REGISTER, RELEASE and ENTRIES are
// refused, a signed one is taken once (a replay on its connection, or on
// another connection, is refused), a client with the secret works, STATS
// shows no token and the switch's log never names one.
TEST(InaCtrlServer, WithASecretAdminRequestsMustBeSignedOnceForTheirConnection) {
  SecretDir dir;
  ASSERT_TRUE(dir.ok());
  const uint64_t token = 0x7A11CE5EC2E70042ull;
  const std::string tokenText = std::to_string(token);
  {
    SwitchdProcess sw({"--slots", "64", "--auth-file", dir.file(), "--stats-interval", "0.05"},
                      {"sh", "-c", "exec \"$@\" 2>" + dir.log(), "sh"});
    ASSERT_TRUE(sw.ready());
    CtrlRequest reg = registration(12, token, 7200);
    const std::string line = formatCtrlRequest(reg);
    Fd a = rawConnect(sw.control(), 0);
    ASSERT_TRUE(a.valid());
    fcntl(a.get(), F_SETFL, 0);  // blocking again: rawRequest waits with poll
    EXPECT_EQ(rawRequest(a.get(), line).rfind("ERR AUTH REGISTER", 0), 0u);
    EXPECT_EQ(rawRequest(a.get(), "ENTRIES job=12").rfind("ERR AUTH", 0), 0u);
    // Signed, but before any challenge on this connection.
    EXPECT_EQ(rawRequest(a.get(), signCtrlRequest(dir.secret(), std::string(32, '0'), 1, line))
                  .rfind("ERR AUTH", 0),
              0u);
    std::string nonce;
    ASSERT_TRUE(parseChallengeReply(rawRequest(a.get(), "CHALLENGE"), &nonce));
    const std::string signedLine = signCtrlRequest(dir.secret(), nonce, 1, line);
    EXPECT_EQ(rawRequest(a.get(), signedLine).rfind("OK GRANT job=12", 0), 0u);
    // Replayed on the same connection, and on another one (its own challenge).
    std::string replay = rawRequest(a.get(), signedLine);
    EXPECT_EQ(replay.rfind("ERR AUTH", 0), 0u) << replay;
    EXPECT_NE(replay.find("replay"), std::string::npos) << replay;
    Fd b = rawConnect(sw.control(), 0);
    ASSERT_TRUE(b.valid());
    fcntl(b.get(), F_SETFL, 0);
    std::string otherNonce;
    ASSERT_TRUE(parseChallengeReply(rawRequest(b.get(), "CHALLENGE"), &otherNonce));
    EXPECT_EQ(rawRequest(b.get(), signedLine).rfind("ERR AUTH", 0), 0u);
    // Signed with a wrong secret.
    EXPECT_EQ(rawRequest(b.get(), signCtrlRequest("not the secret, but long enough", otherNonce, 5,
                                                  "RELEASE job=12 token=" + tokenText))
                  .rfind("ERR AUTH", 0),
              0u);
    // The client with the secret file: ENTRIES and RELEASE go through.
    std::unique_ptr<CtrlClient> admin;
    ASSERT_TRUE(CtrlClient::connect(sw.control(), 5000, &admin, dir.file()).ok());
    std::string entries;
    Status s = admin->query("ENTRIES job=12", &entries);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_NE(entries.find("\"src_port\":7200"), std::string::npos) << entries;
    // STATS without the secret: no token, in decimal or as ENTRIES' words.
    std::string stats = rawRequest(b.get(), "STATS");
    EXPECT_EQ(stats.rfind("OK {", 0), 0u) << stats;
    for (const std::string& t :
         {tokenText, std::to_string(token >> 32), std::to_string(token & 0xFFFFFFFFu)}) {
      EXPECT_EQ(stats.find(t), std::string::npos) << t << " in " << stats;
    }
    // A client without the secret cannot release it.
    std::unique_ptr<CtrlClient> outsider;
    ASSERT_TRUE(CtrlClient::connect(sw.control(), 5000, &outsider, "").ok());
    s = outsider->release(12, token);
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.message().find(tokenText), std::string::npos) << s.message();
    EXPECT_TRUE(admin->release(12, token).ok());
    // Stats lines go on: the log has had a chance to show the job.
    for (int i = 0; i < 100 && readFile(dir.log()).find("\"registrations\":1") == std::string::npos;
         ++i) {
      ::poll(nullptr, 0, 50);
    }
  }
  const std::string log = readFile(dir.log());
  EXPECT_NE(log.find("rina-switchd final"), std::string::npos) << log.substr(0, 400);
  EXPECT_NE(log.find("\"registrations\":1"), std::string::npos);
  for (const std::string& t :
       {tokenText, std::to_string(token >> 32), std::to_string(token & 0xFFFFFFFFu)}) {
    EXPECT_EQ(log.find(t), std::string::npos) << "the switch's log shows token " << t;
  }
  EXPECT_EQ(log.find("no --auth-file"), std::string::npos);
}

// Without --auth-file the switch serves as before and says at start that
// anyone who reaches its control port may register; a client configured
// with a secret refuses such a switch.
TEST(InaCtrlServer, WithoutASecretTheSwitchSaysSoAndASecretClientRefusesIt) {
  SecretDir dir;
  ASSERT_TRUE(dir.ok());
  {
    SwitchdProcess sw({"--slots", "64"}, {"sh", "-c", "exec \"$@\" 2>" + dir.log(), "sh"});
    ASSERT_TRUE(sw.ready());
    std::unique_ptr<CtrlClient> c;
    ASSERT_TRUE(CtrlClient::connect(sw.control(), 5000, &c, dir.file()).ok());
    Grant g;
    Status s = c->registerJob(registration(13, 99, 7201), &g);
    EXPECT_EQ(s.code(), rinaInvalidUsage) << s.message();
    EXPECT_NE(s.message().find("does not authenticate"), std::string::npos) << s.message();
  }
  EXPECT_NE(readFile(dir.log()).find("no --auth-file: anyone who reaches the control port"),
            std::string::npos);
}

// RINA_SWITCH=auto's switch: a fresh secret in a 0600 memory file it
// inherits (nothing on disk), used by a CtrlClient to its port without being
// told; unsigned requests are refused.
TEST(InaCtrlServer, ALocalSwitchHasItsOwnSecretInMemory) {
  std::unique_ptr<LocalSwitchd> sw;
  Status s = LocalSwitchd::start(RINA_SWITCHD_PATH, {"--slots", "64"}, 10000, &sw);
  ASSERT_TRUE(s.ok()) << s.message();
  const std::string proc = "/proc/" + std::to_string(sw->pid());
  std::ifstream f(proc + "/cmdline");
  std::string cmdline((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  const std::string flag = "--auth-file /proc/self/fd/";
  size_t at = cmdline.find(flag);
  ASSERT_NE(at, std::string::npos) << cmdline;
  const std::string fd =
      cmdline.substr(at + flag.size(), cmdline.find(' ', at + flag.size()) - at - flag.size());
  char target[256] = {0};
  ASSERT_GT(readlink((proc + "/fd/" + fd).c_str(), target, sizeof target - 1), 0);
  EXPECT_EQ(std::string(target).rfind("/memfd:rina-switchd-auth", 0), 0u) << target;
  struct stat st {};
  ASSERT_EQ(stat((proc + "/fd/" + fd).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::unique_ptr<CtrlClient> c;
  ASSERT_TRUE(CtrlClient::connect(sw->control(), 5000, &c).ok());
  Grant g;
  s = c->registerJob(registration(14, 1234567, 7202), &g);
  ASSERT_TRUE(s.ok()) << s.message();
  Fd raw = rawConnect(sw->control(), 0);
  ASSERT_TRUE(raw.valid());
  fcntl(raw.get(), F_SETFL, 0);
  EXPECT_EQ(rawRequest(raw.get(), "RELEASE job=14 token=1234567").rfind("ERR AUTH", 0), 0u);
  EXPECT_TRUE(c->release(14, 1234567).ok());
}

// rina-switchctl --auth-file signs; without it ENTRIES is refused.
TEST(InaCtrlServer, SwitchctlSignsWithTheSecretFile) {
  SecretDir dir;
  ASSERT_TRUE(dir.ok());
  SwitchdProcess sw({"--slots", "64", "--auth-file", dir.file()});
  ASSERT_TRUE(sw.ready());
  std::unique_ptr<CtrlClient> admin;
  ASSERT_TRUE(CtrlClient::connect(sw.control(), 5000, &admin, dir.file()).ok());
  Grant g;
  ASSERT_TRUE(admin->registerJob(registration(15, 4242, 7203), &g).ok());
  auto run = [](const std::string& cmd, std::string* out) {
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    if (!p) return -1;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
    int rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  // Quoted for the shell: the build folder's path may have spaces.
  const std::string ctl = std::string("'") + RINA_SWITCHCTL_PATH + "'";
  const std::string at = sw.control().toString();
  std::string out;
  EXPECT_EQ(run(ctl + " " + at + " ENTRIES job=15", &out), 1) << out;
  EXPECT_NE(out.find("ERR AUTH"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(run(ctl + " --auth-file " + dir.file() + " " + at + " ENTRIES job=15", &out), 0) << out;
  EXPECT_NE(out.find("\"src_port\":7203"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(run(ctl + " --auth-file /nonexistent " + at + " STATS", &out), 2) << out;
}

}  // namespace
}  // namespace rina::ina::testing
