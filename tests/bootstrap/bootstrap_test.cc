// The bootstrap root against connections that are not (yet) ranks: idle
// ones, a hello that stops half-way, ranks that never come, ranks and roots
// without the communicator's secret. Ranks are threads of this process;
// results are checked against a closed form.
#include "bootstrap/bootstrap.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "api/handle.h"
#include "core/config.h"
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
  bootstrap::Challenge challenge{};
  ASSERT_TRUE(recvAll(half.get(), &challenge, sizeof challenge, deadlineAfterMs(5000)).ok());
  EXPECT_EQ(challenge.secret, 0u);
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

// A secret file (mode 0600) in a fresh folder, removed with it.
class SecretFile {
 public:
  explicit SecretFile(const std::string& text) {
    char dir[] = "/tmp/rina-secret-XXXXXX";
    if (!mkdtemp(dir)) ADD_FAILURE() << "mkdtemp";
    dir_ = dir;
    path_ = dir_ + "/secret";
    int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    close(fd);
  }
  ~SecretFile() {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

// A port on this host's listening address that was free a moment ago.
std::string freeCommId() {
  PackedAddr addr;
  std::string ifname;
  EXPECT_TRUE(chooseListenAddress("", &addr, &ifname).ok());
  Fd probe;
  PackedAddr bound;
  EXPECT_TRUE(listenOn(addr, true, &probe, &bound).ok());
  return bound.str();
}

config::Options optionsFor(const std::string& commId, const std::string& secretFile,
                           int64_t timeoutMs) {
  config::Options o;
  o.commId = commId;
  o.commSecret = secretFile;
  o.timeoutMs = timeoutMs;
  return o;
}

rinaUniqueId unusedId() {
  rinaUniqueId id;
  std::memset(&id, 0, sizeof id);
  return id;
}

// Inits rank of n with the options and allreduces rank+1 (exact sum).
void joinAndSum(int n, int rank, const config::Options& o) {
  rinaComm_t comm = nullptr;
  ASSERT_EQ(api::commInitRank(&comm, n, unusedId(), rank, o), rinaSuccess)
      << "rank " << rank << ": " << rinaCommGetLastError(nullptr);
  int64_t v = rank + 1;
  ASSERT_EQ(rinaAllReduce(&v, &v, 1, rinaInt64, rinaSum, comm), rinaSuccess)
      << rinaCommGetLastError(comm);
  EXPECT_EQ(v, n * (n + 1) / 2);
  EXPECT_EQ(rinaCommDestroy(comm), rinaSuccess);
}

TEST(BootstrapSecret, RanksThatHoldItJoin) {
  SecretFile secret("correct horse battery staple\n");
  const config::Options o = optionsFor(freeCommId(), secret.path(), 20000);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 3; ++r) ranks.emplace_back([&, r] { joinAndSum(3, r, o); });
  for (auto& t : ranks) t.join();
}

// Without a secret, rank 0 says at INFO that anyone reaching the port can
// join; with one, it does not.
TEST(BootstrapSecret, RootSaysWhenAnyoneCanJoin) {
  SecretFile secret("correct horse battery staple");
  ScopedEnv info("RINA_DEBUG", "INFO");
  for (bool withSecret : {false, true}) {
    const config::Options o = optionsFor(freeCommId(), withSecret ? secret.path() : "", 20000);
    ::testing::internal::CaptureStderr();
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r) ranks.emplace_back([&, r] { joinAndSum(2, r, o); });
    for (auto& t : ranks) t.join();
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(log.find("anyone who reaches this port can join") != std::string::npos, !withSecret)
        << log;
  }
}

// Ranks with another secret or none are refused (and told why), take no
// place, and may not even claim another nranks; the root's WARN names the
// address of a connection whose hello is not signed. The ranks that hold the
// secret then complete.
TEST(BootstrapSecret, RanksWithoutItAreRefusedAndTakeNoPlace) {
  SecretFile right("correct horse battery staple");
  SecretFile wrong("incorrect horse battery staple");
  const std::string commId = freeCommId();
  const config::Options good = optionsFor(commId, right.path(), 20000);
  ::testing::internal::CaptureStderr();
  std::thread rank0([&] { joinAndSum(2, 0, good); });
  for (const auto& [secretFile, nranks] : {std::pair<std::string, int>{wrong.path(), 2}, {"", 5}}) {
    rinaComm_t comm = nullptr;
    EXPECT_EQ(
        api::commInitRank(&comm, nranks, unusedId(), 1, optionsFor(commId, secretFile, 20000)),
        rinaInvalidUsage);
    const std::string e = rinaCommGetLastError(nullptr);
    EXPECT_NE(e.find("not signed with the root's secret"), std::string::npos) << e;
  }
  // By hand: a hello signed with nothing, from an address we know.
  PackedAddr root;
  ASSERT_TRUE(parseHostPort(commId, &root).ok());
  Fd raw;
  ASSERT_TRUE(connectTo(root, deadlineAfterMs(5000), &raw).ok());
  bootstrap::Challenge c{};
  ASSERT_TRUE(recvAll(raw.get(), &c, sizeof c, deadlineAfterMs(5000)).ok());
  EXPECT_EQ(c.secret, 1u);
  bootstrap::Hello h{};
  h.magic = bootstrap::kMagic;
  h.version = bootstrap::kVersion;
  h.commId = std::hash<std::string>{}(commId) | 1;
  h.nranks = 2;
  h.rank = 1;
  std::memset(h.mac, 'a', sizeof h.mac);
  ASSERT_TRUE(sendAll(raw.get(), &h, sizeof h, deadlineAfterMs(5000)).ok());
  bootstrap::Reply reply{};
  ASSERT_TRUE(recvAll(raw.get(), &reply, sizeof reply, deadlineAfterMs(5000)).ok());
  EXPECT_EQ(reply.code, bootstrap::kBadSecret);
  const std::string who = localAddress(raw.get());
  raw.reset();
  std::thread rank1([&] { joinAndSum(2, 1, good); });
  rank0.join();
  rank1.join();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("refused rank 1 from " + who), std::string::npos) << log;
}

// A rank with a secret takes no table from a root that cannot prove it
// holds the same one: an impostor that answers OK with a made-up mac, one
// that says it holds no secret, and a real root with another secret.
TEST(BootstrapSecret, RankRefusesARootWithoutIt) {
  SecretFile right("correct horse battery staple");
  for (int impostorSays : {1, 0}) {
    PackedAddr any;
    std::string ifname;
    ASSERT_TRUE(chooseListenAddress("", &any, &ifname).ok());
    Fd listen;
    PackedAddr bound;
    ASSERT_TRUE(listenOn(any, true, &listen, &bound).ok());
    std::thread impostor([&] {
      Fd conn;
      ASSERT_TRUE(acceptFrom(listen.get(), deadlineAfterMs(20000), nullptr, &conn).ok());
      bootstrap::Challenge c{
          bootstrap::kMagic, bootstrap::kVersion, static_cast<uint32_t>(impostorSays), 0, {}};
      std::memset(c.nonce, '7', sizeof c.nonce);
      ASSERT_TRUE(sendAll(conn.get(), &c, sizeof c, deadlineAfterMs(5000)).ok());
      if (impostorSays == 0) return;  // the rank hangs up
      bootstrap::Hello h{};
      ASSERT_TRUE(recvAll(conn.get(), &h, sizeof h, deadlineAfterMs(5000)).ok());
      bootstrap::Reply ok{bootstrap::kMagic, bootstrap::kOk, 2, 2, 12345};
      std::vector<bootstrap::PeerInfo> table(2, h.info);
      char mac[bootstrap::kMacChars];
      std::memset(mac, '0', sizeof mac);
      Deadline d = deadlineAfterMs(5000);
      ASSERT_TRUE(sendAll(conn.get(), &ok, sizeof ok, d).ok());
      ASSERT_TRUE(sendAll(conn.get(), table.data(), 2 * sizeof(bootstrap::PeerInfo), d).ok());
      ASSERT_TRUE(sendAll(conn.get(), h.schedule, sizeof h.schedule, d).ok());
      (void)sendAll(conn.get(), mac, sizeof mac, d);
    });
    rinaComm_t comm = nullptr;
    EXPECT_NE(
        api::commInitRank(&comm, 2, unusedId(), 1, optionsFor(bound.str(), right.path(), 20000)),
        rinaSuccess);
    const std::string e = rinaCommGetLastError(nullptr);
    EXPECT_NE(e.find(impostorSays ? "did not prove it holds" : "holds no secret"),
              std::string::npos)
        << e;
    impostor.join();
  }
  // A real root with another secret refuses the rank; neither completes.
  SecretFile other("another horse, another battery");
  const std::string commId = freeCommId();
  std::string e0;
  std::thread rank0([&] {
    rinaComm_t comm = nullptr;
    EXPECT_NE(api::commInitRank(&comm, 2, unusedId(), 0, optionsFor(commId, other.path(), 2000)),
              rinaSuccess);
    e0 = rinaCommGetLastError(nullptr);
  });
  rinaComm_t comm = nullptr;
  EXPECT_EQ(api::commInitRank(&comm, 2, unusedId(), 1, optionsFor(commId, right.path(), 2000)),
            rinaInvalidUsage);
  const std::string e1 = rinaCommGetLastError(nullptr);
  EXPECT_NE(e1.find("not signed with the root's secret"), std::string::npos) << e1;
  rank0.join();
  EXPECT_NE(e0.find("1 of 2 ranks"), std::string::npos) << e0;
}

// A secret file others may read is refused, naming the knob.
TEST(BootstrapSecret, FileOthersCanReadIsRefused) {
  SecretFile secret("correct horse battery staple");
  ASSERT_EQ(chmod(secret.path().c_str(), 0644), 0);
  rinaComm_t comm = nullptr;
  EXPECT_EQ(
      api::commInitRank(&comm, 1, unusedId(), 0, optionsFor(freeCommId(), secret.path(), 5000)),
      rinaInvalidArgument);
  const std::string e = rinaCommGetLastError(nullptr);
  EXPECT_NE(e.find("RINA_COMM_SECRET_FILE"), std::string::npos) << e;
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
