// rina-switchd's control loop against clients that misbehave: clients that
// pipeline requests and never read their replies, and more connections than
// the switch has file descriptors. A real job's requests are still answered.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ina_harness.h"

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

}  // namespace
}  // namespace rina::ina::testing
