// RINA_TCP_CONGESTION: a name the kernel has is set on every peer socket
// (read back with getsockopt), one it refuses fails init naming the knob,
// the value and the kernel's list.
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "api/handle.h"
#include "core/config.h"
#include "core/socket.h"
#include "rank_harness.h"

namespace rina::testing {
namespace {

std::string firstLine(const char* path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// A congestion control this process may set that is not the kernel's
// default (so reading it back shows the knob, not the default); "" if none.
std::string otherThanDefault() {
  const std::string def = firstLine("/proc/sys/net/ipv4/tcp_congestion_control");
  // Root may set any available one; others only the allowed ones.
  const char* list = geteuid() == 0 ? "/proc/sys/net/ipv4/tcp_available_congestion_control"
                                    : "/proc/sys/net/ipv4/tcp_allowed_congestion_control";
  std::istringstream names(firstLine(list));
  std::string name;
  while (names >> name) {
    if (name != def) return name;
  }
  return "";
}

std::string congestionOf(int fd) {
  char name[32] = {0};
  socklen_t len = sizeof name;
  if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return "";
  return std::string(name, strnlen(name, sizeof name));
}

// This process's connected TCP sockets whose congestion control is `name`.
int connectedTcpSocketsWith(const std::string& name) {
  int count = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  while (dirent* e = readdir(dir)) {
    const int fd = std::atoi(e->d_name);
    int type = 0, listening = 0;
    socklen_t len = sizeof type;
    if (fd <= 2 || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) continue;
    len = sizeof listening;
    if (type != SOCK_STREAM || getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 ||
        listening) {
      continue;
    }
    sockaddr_storage peer{};
    len = sizeof peer;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;
    if (peer.ss_family == AF_INET && congestionOf(fd) == name) ++count;
  }
  closedir(dir);
  return count;
}

TEST(TcpCongestion, TuneSocketSetsTheNamedOneAndRefusesAnUnknownOne) {
  const std::string other = otherThanDefault();
  if (other.empty()) GTEST_SKIP() << "the kernel offers no congestion control but its default";
  Fd fd(socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_GE(fd.get(), 0);
  ASSERT_TRUE(tuneSocket(fd.get(), 0, other).ok());
  EXPECT_EQ(congestionOf(fd.get()), other);
  const Status bad = tuneSocket(fd.get(), 0, "no-such-cc");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), rinaInvalidArgument);
  EXPECT_NE(bad.message().find("RINA_TCP_CONGESTION=no-such-cc"), std::string::npos)
      << bad.message();
  EXPECT_NE(bad.message().find("tcp_available_congestion_control"), std::string::npos)
      << bad.message();
  // Unchanged by the refused name; an empty name leaves it too.
  EXPECT_EQ(congestionOf(fd.get()), other);
  ASSERT_TRUE(tuneSocket(fd.get(), 0, "").ok());
  EXPECT_EQ(congestionOf(fd.get()), other);
}

// Both ends of the ranks' TCP connection (no shared memory) use the knob's
// congestion control, and the allreduce over them is right.
TEST(TcpCongestion, PeerSocketsUseTheKnob) {
  const std::string other = otherThanDefault();
  if (other.empty()) GTEST_SKIP() << "the kernel offers no congestion control but its default";
  config::Options o;
  o.tcpCongestion = other;
  o.shmDisable = true;
  o.algo = "ring";
  o.timeoutMs = 20000;
  runThreads(2, o, [&](int rank, rinaComm_t comm) {
    std::vector<int32_t> buf(4096, rank + 1);
    ASSERT_EQ(rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaInt32, rinaSum, comm),
              rinaSuccess)
        << rinaCommGetLastError(comm);
    for (int32_t v : buf) ASSERT_EQ(v, 3);
    // Both ranks' ends of their connection, while both communicators live.
    EXPECT_GE(connectedTcpSocketsWith(other), 2) << "rank " << rank;
    // Neither rank destroys its communicator before the other has counted.
    int32_t one = 1;
    ASSERT_EQ(rinaAllReduce(&one, &one, 1, rinaInt32, rinaSum, comm), rinaSuccess)
        << rinaCommGetLastError(comm);
  });
}

TEST(TcpCongestion, UnknownNameFailsInitNamingTheKnob) {
  config::Options o;
  o.tcpCongestion = "no-such-cc";
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
  rinaComm_t comm = nullptr;
  EXPECT_EQ(api::commInitRank(&comm, 1, id, 0, o), rinaInvalidArgument);
  const std::string error = rinaCommGetLastError(nullptr);
  EXPECT_NE(error.find("rank 0: RINA_TCP_CONGESTION=no-such-cc"), std::string::npos) << error;
  EXPECT_NE(error.find(firstLine("/proc/sys/net/ipv4/tcp_available_congestion_control")),
            std::string::npos)
      << error;
  EXPECT_EQ(comm, nullptr);
}

}  // namespace
}  // namespace rina::testing
