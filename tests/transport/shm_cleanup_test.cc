// No shared-memory segment outlives a crash in the shared-memory handshake.
// A child process runs the mesh set-up as rank 0 towards this process
// (rank 1, a bare listening socket): it creates its segment and sends its
// hello, and is killed (SIGKILL) as soon as the hello arrives, before any
// peer mapped the segment. Its segment is then in /dev/shm; the next init
// on this host removes it (its pid is dead) and runs exactly.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/socket.h"
#include "rank_harness.h"
#include "transport/mesh.h"

namespace rina::testing {
namespace {

// Names in /dev/shm that begin with prefix.
std::vector<std::string> segmentsStartingWith(const std::string& prefix) {
  std::vector<std::string> out;
  DIR* d = opendir("/dev/shm");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) out.push_back(e->d_name);
  }
  closedir(d);
  return out;
}

TEST(ShmCleanup, SegmentOfAProcessKilledInTheHandshakeIsRemovedByTheNextInit) {
  PackedAddr addr;
  std::string ifname;
  ASSERT_TRUE(chooseListenAddress("", &addr, &ifname).ok());
  Fd listen;
  bootstrap::PeerInfo peer{};
  ASSERT_TRUE(listenOn(addr, false, &listen, &peer.listen).ok());
  const std::string host = hostIdentity();
  std::strncpy(peer.host, host.c_str(), sizeof(peer.host) - 1);
  peer.pid = getpid();

  // Forked before this process starts any thread.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    transport::MeshOptions opt;
    opt.rank = 0;
    opt.commId = 42;
    opt.table = {peer, peer};
    opt.table[0].pid = getpid();
    opt.peers = {1};
    opt.fifoBytes = 1 << 16;
    opt.deadline = deadlineAfterMs(60000);
    std::map<int, std::unique_ptr<transport::Connection>> conns;
    (void)transport::buildMesh(opt, &conns);
    _exit(1);  // not reached: killed while waiting for the reply
  }
  const std::string prefix = "rina-" + std::to_string(child) + "-";
  Fd conn;
  Status s = acceptFrom(listen.get(), deadlineAfterMs(30000), nullptr, &conn);
  char first = 0;
  // The hello is sent after the segment is made.
  if (s.ok()) s = recvAll(conn.get(), &first, 1, deadlineAfterMs(30000));
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(s.ok()) << s.message();
  const std::vector<std::string> before = segmentsStartingWith(prefix);
  EXPECT_EQ(before.size(), 1u) << "the killed rank's segment, " << prefix << "*";

  runThreads(2, [](int rank, rinaComm_t comm) {
    std::vector<int32_t> v(1 << 16, rank + 1);  // over the one-shot size: the shm pair
    ASSERT_EQ(rinaAllReduce(v.data(), v.data(), v.size(), rinaInt32, rinaSum, comm), rinaSuccess)
        << rinaCommGetLastError(comm);
    for (int32_t x : v) ASSERT_EQ(x, 3);
  });
  const std::vector<std::string> after = segmentsStartingWith(prefix);
  EXPECT_TRUE(after.empty()) << after.size() << " segment(s) of the killed process left, e.g. "
                             << after[0];
  for (const std::string& name : after) shm_unlink(("/" + name).c_str());
  // And this process's own communicators left nothing behind.
  EXPECT_TRUE(segmentsStartingWith("rina-" + std::to_string(getpid()) + "-").empty());
}

}  // namespace
}  // namespace rina::testing
