// The bootstrap root against connections that are not (yet) ranks: idle
// ones, a hello that stops half-way, ranks that never come. Ranks are
// threads of this process; results are checked against a closed form.
#include "bootstrap/bootstrap.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/socket.h"
#include "rank_harness.h"

namespace rina::testing {
namespace {

bootstrap::IdData idData(const rinaUniqueId& id) {
  bootstrap::IdData data;
  std::memcpy(&data, id.internal, sizeof(data));
  return data;
}

// "127.0.0.1:port" of this end of a connection: the root names its peer so.
std::string localAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  return PackedAddr::fromSockaddr(reinterpret_cast<sockaddr*>(&ss)).str();
}

// Waits (bounded) until the root closes fd; true if it did.
bool closedByPeer(int fd, int64_t withinMs) {
  Deadline d = deadlineAfterMs(withinMs);
  char c;
  Status s = recvAll(fd, &c, 1, d);
  return !s.ok() && s.code() == rinaRemoteError;
}

// n ranks allreduce rank+1 and must get n(n+1)/2.
void initAndSum(int n, const rinaUniqueId& id) {
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.emplace_back([&, r] {
      rinaComm_t comm = nullptr;
      ASSERT_EQ(rinaCommInitRank(&comm, n, id, r), rinaSuccess)
          << "rank " << r << " of " << n << ": " << rinaCommGetLastError(nullptr);
      std::vector<int64_t> v(1000, r + 1);
      ASSERT_EQ(rinaAllReduce(v.data(), v.data(), v.size(), rinaInt64, rinaSum, comm), rinaSuccess)
          << rinaCommGetLastError(comm);
      for (int64_t x : v) ASSERT_EQ(x, n * (n + 1) / 2);
      EXPECT_EQ(rinaCommDestroy(comm), rinaSuccess);
    });
  }
  for (auto& t : ranks) t.join();
}

// Three connections that send nothing are served beside the ranks: they
// used to be read one after another (5 s each), past the ranks' timeout.
TEST(BootstrapRoot, IdleConnectionsDoNotFailInit) {
  ScopedEnv timeout("RINA_TIMEOUT_MS", "10000");
  for (int n = 2; n <= 4; ++n) {
    rinaUniqueId id;
    ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
    std::vector<Fd> idle(3);
    for (Fd& fd : idle) ASSERT_TRUE(connectTo(idData(id).root, deadlineAfterMs(5000), &fd).ok());
    initAndSum(n, id);
  }
}

// A connection that sends half a hello and stalls is dropped after its own
// deadline (the root closes it, with a WARN naming its address) and takes
// no rank's place: the ranks that come after it all get in.
TEST(BootstrapRoot, StalledHalfHelloIsDroppedAndNamed) {
  ScopedEnv timeout("RINA_TIMEOUT_MS", "4000");
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
  const bootstrap::IdData data = idData(id);
  Fd half;
  ASSERT_TRUE(connectTo(data.root, deadlineAfterMs(5000), &half).ok());
  // The start of a real hello: magic, version, this id's commId.
  struct {
    uint32_t magic, version;
    uint64_t commId;
  } start{bootstrap::kMagic, bootstrap::kVersion, data.commId};
  ASSERT_TRUE(sendAll(half.get(), &start, sizeof start, deadlineAfterMs(2000)).ok());
  const std::string who = localAddress(half.get());
  ::testing::internal::CaptureStderr();
  const bool closed = closedByPeer(half.get(), 30000);
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(closed) << "the root kept a stalled connection open";
  EXPECT_NE(log.find(who), std::string::npos) << "the WARN does not name " << who << ": " << log;
  EXPECT_NE(log.find("dropped"), std::string::npos) << log;
  initAndSum(3, id);
}

// Ranks that never come: those that did get an error that says how many of
// how many arrived (never "-1").
TEST(BootstrapRoot, MissingRanksAreCounted) {
  ScopedEnv timeout("RINA_TIMEOUT_MS", "1500");
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
  std::vector<std::thread> ranks;
  std::vector<std::string> errors(2);
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      rinaComm_t comm = nullptr;
      EXPECT_NE(rinaCommInitRank(&comm, 3, id, r), rinaSuccess);
      errors[r] = rinaCommGetLastError(nullptr);
    });
  }
  for (auto& t : ranks) t.join();
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("2 of 3 ranks"), std::string::npos) << e;
    EXPECT_EQ(e.find("-1"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace rina::testing
