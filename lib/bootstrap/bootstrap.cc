#include "bootstrap/bootstrap.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <functional>
#include <random>

#include "core/log.h"
#include "wire/ctrl_auth.h"

namespace rina::bootstrap {
namespace {

constexpr std::chrono::milliseconds kVerdictGrace{2000};

const char* replyText(uint32_t code) {
  switch (code) {
    case kWrongComm:
      return "its communicator id does not match the root's";
    case kWrongSize:
      return "its nranks differs from the other ranks'";
    case kDuplicateRank:
      return "another process already joined with this rank";
    case kBadRank:
      return "the rank is out of range";
    case kIncomplete:
      return "not every rank arrived before the root's deadline";
    case kBadSecret:
      return "its hello is not signed with the root's secret (RINA_COMM_SECRET_FILE unset or "
             "different on this rank)";
    default:
      return "unknown reason";
  }
}

uint64_t randomCommId() {
  std::random_device rd;
  uint64_t id = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return id ^ (static_cast<uint64_t>(getpid()) << 16);
}

// Equal strings of equal length, in time that does not depend on where
// they differ.
bool sameMac(const char* a, const char* b) {
  unsigned char diff = 0;
  for (size_t i = 0; i < kMacChars; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string helloMac(const std::string& secret, const char* rootNonce, Hello hello) {
  std::memset(hello.mac, 0, sizeof hello.mac);
  std::string message = "rina bootstrap hello ";
  message.append(rootNonce, kNonceChars);
  message.append(reinterpret_cast<const char*>(&hello), sizeof hello);
  return ina::hmacSha256Hex(secret, message);
}

std::string replyMac(const std::string& secret, const char* rankNonce, const char* rootNonce,
                     const Reply& reply, const std::vector<PeerInfo>& table, const char* schedule) {
  std::string message = "rina bootstrap reply ";
  message.append(rankNonce, kNonceChars);
  message.append(rootNonce, kNonceChars);
  message.append(reinterpret_cast<const char*>(&reply), sizeof reply);
  message.append(reinterpret_cast<const char*>(table.data()), table.size() * sizeof(PeerInfo));
  message.append(schedule, kScheduleBytes);
  return ina::hmacSha256Hex(secret, message);
}

void freshNonce(char* out) {
  const std::string hex = ina::randomHex(kNonceChars / 2);
  std::memcpy(out, hex.data(), kNonceChars);
}

}  // namespace

Status readCommSecret(const std::string& path, std::string* secret) {
  secret->clear();
  if (path.empty()) return {};
  std::string error;
  if (!ina::readSecretFile(path, secret, &error)) {
    return errorf(rinaInvalidArgument, "RINA_COMM_SECRET_FILE: %s", error.c_str());
  }
  return {};
}

Status createUniqueId(const std::string& ifnameSpec, int64_t timeout, const std::string& secret,
                      rinaUniqueId* out) {
  PackedAddr addr;
  std::string ifname;
  RINA_TRY(chooseListenAddress(ifnameSpec, &addr, &ifname));
  Fd listen;
  PackedAddr bound;
  RINA_TRY(listenOn(addr, false, &listen, &bound));
  IdData data{kMagic, kVersion, randomCommId(), bound};
  std::memset(out, 0, sizeof(*out));
  std::memcpy(out->internal, &data, sizeof(data));
  // The first rank may come much later than the id is made (a job launcher
  // in between); after it, everyone must arrive within the timeout.
  RootService::startDetached(std::move(listen), data.commId, 10 * timeout, timeout, secret);
  RINA_INFO("bootstrap root listening on %s (%s)", bound.str().c_str(), ifname.c_str());
  return {};
}

Status resolveId(const rinaUniqueId& user, const std::string& env, IdData* out, bool* fromEnv) {
  if (!env.empty()) {
    PackedAddr root;
    Status s = parseHostPort(env, &root);
    if (!s.ok()) return s.prepend("RINA_COMM_ID: ");
    *out = IdData{kMagic, kVersion, std::hash<std::string>{}(env) | 1, root};
    *fromEnv = true;
    return {};
  }
  std::memcpy(out, user.internal, sizeof(*out));
  *fromEnv = false;
  if (out->magic != kMagic || out->version != kVersion) {
    return errorf(rinaInvalidArgument,
                  "unique id is not from rinaGetUniqueId (magic %08x, version %u)", out->magic,
                  out->version);
  }
  return {};
}

Status RootService::start(const PackedAddr& addr, uint64_t commId, int64_t timeout,
                          const std::string& secret, std::unique_ptr<RootService>* out) {
  Fd listen;
  PackedAddr bound;
  Status s = listenOn(addr, true, &listen, &bound);
  if (!s.ok()) return s.prepend("RINA_COMM_ID root: ");
  *out = std::make_unique<RootService>(std::move(listen), commId, timeout, secret);
  if (secret.empty()) {
    // The id is the hash of RINA_COMM_ID: whoever knows the address knows it.
    RINA_INFO(
        "bootstrap root serving RINA_COMM_ID on %s without RINA_COMM_SECRET_FILE: anyone "
        "who reaches this port can join as a rank",
        bound.str().c_str());
  } else {
    RINA_INFO(
        "bootstrap root serving RINA_COMM_ID on %s; ranks must prove they hold "
        "RINA_COMM_SECRET_FILE's secret",
        bound.str().c_str());
  }
  return {};
}

namespace {

void serveRendezvous(int listenFd, uint64_t commId, int64_t firstWaitMs, int64_t waitMs,
                     const std::string& secret, const std::atomic<bool>* stop);

}  // namespace

void RootService::startDetached(Fd listen, uint64_t commId, int64_t firstWaitMs, int64_t waitMs,
                                const std::string& secret) {
  std::thread([fd = std::move(listen), commId, firstWaitMs, waitMs, secret] {
    serveRendezvous(fd.get(), commId, firstWaitMs, waitMs, secret, nullptr);
  }).detach();
}

RootService::RootService(Fd listen, uint64_t commId, int64_t waitMs, const std::string& secret)
    : listen_(std::move(listen)) {
  thread_ = std::thread([this, commId, waitMs, secret] {
    serveRendezvous(listen_.get(), commId, waitMs, waitMs, secret, &stop_);
  });
}

RootService::~RootService() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

namespace {

// The root's side of the rendezvous: one thread serves the listening socket,
// the connections that have not yet sent a whole hello, and the ranks that
// have, all at once (poll). A connection that does not complete its hello
// within kHelloWaitMs (or RINA_TIMEOUT_MS if shorter) is dropped with a WARN
// naming its address and never holds a rank's place; at most kMaxPending
// such connections are kept (the oldest goes first).
constexpr int64_t kHelloWaitMs = 5000;
constexpr size_t kMaxPending = 64;

std::string peerAddressOf(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "an unknown address";
  return PackedAddr::fromSockaddr(reinterpret_cast<sockaddr*>(&ss)).str();
}

class RootLoop {
 public:
  RootLoop(int listenFd, uint64_t commId, int64_t firstWaitMs, int64_t waitMs,
           const std::string& secret, const std::atomic<bool>* stop)
      : listenFd_(listenFd),
        commId_(commId),
        secret_(secret),
        waitMs_(waitMs),
        stop_(stop),
        deadline_(deadlineAfterMs(firstWaitMs)),
        firstWaitMs_(firstWaitMs) {}

  void run() {
    // accept4 below must not block when a connection went away between poll
    // and accept.
    Status s = setNonBlocking(listenFd_);
    if (!s.ok()) {
      RINA_WARN("bootstrap root: %s", s.message().c_str());
      return;
    }
    while (nranks_ < 0 || arrived_ < nranks_) {
      if (stop_ && stop_->load()) return;
      if (Clock::now() >= deadline_) return giveUp();
      dropLate();
      if (!pollOnce()) return giveUp();
    }
    answer();
  }

 private:
  struct Pending {
    Fd fd;
    std::string peer;
    Hello hello{};
    size_t got = 0;
    Deadline deadline;
    char nonce[kNonceChars];  // the challenge's
  };

  // Waits for something on any socket (at most 50 ms, to see stop_) and
  // handles it. False on a failure of poll itself.
  bool pollOnce() {
    std::vector<pollfd> fds;
    const bool listening = Clock::now() >= acceptPausedUntil_;
    fds.push_back({listening ? listenFd_ : -1, POLLIN, 0});
    for (const Pending& p : pending_) fds.push_back({p.fd.get(), POLLIN, 0});
    for (const Fd& c : conns_) fds.push_back({c.get(), POLLIN, 0});
    Deadline wake = std::min(deadline_, deadlineAfterMs(50));
    for (const Pending& p : pending_) wake = std::min(wake, p.deadline);
    int rc = poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(msUntil(wake), 1)));
    if (rc < 0 && errno != EINTR) {
      RINA_WARN("bootstrap root: poll: %s", std::strerror(errno));
      return false;
    }
    if (rc <= 0) return true;
    // Ranks already in: a legitimate one sends nothing more until the table
    // is sent, so anything readable (end of stream, bytes) frees its place.
    for (size_t r = 0; r < conns_.size(); ++r) {
      const pollfd& p = fds[1 + pending_.size() + r];
      if (p.fd >= 0 && p.revents) leave(static_cast<int>(r));
    }
    // Pending connections, from the back so erasing keeps the indices.
    for (size_t i = pending_.size(); i-- > 0;) {
      if (fds[1 + i].revents) readHello(i);
    }
    if (fds[0].revents & POLLIN) acceptAll();
    return true;
  }

  void acceptAll() {
    for (int k = 0; k < 16; ++k) {
      int fd = accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE) {
          // Out of descriptors: make room, or stop listening for a moment
          // (the kernel keeps the backlog) instead of spinning.
          if (!pending_.empty()) {
            drop(0, "out of file descriptors; dropped the oldest connection without a hello");
          } else {
            acceptPausedUntil_ = deadlineAfterMs(100);
          }
        }
        return;
      }
      if (pending_.size() >= kMaxPending) {
        drop(0, "more than " + std::to_string(kMaxPending) +
                    " connections without a hello; dropped the oldest");
      }
      Pending p;
      p.fd = Fd(fd);
      p.peer = peerAddressOf(fd);
      p.deadline = deadlineAfterMs(std::min(waitMs_, kHelloWaitMs));
      Challenge c{kMagic, kVersion, secret_.empty() ? 0u : 1u, 0, {}};
      freshNonce(c.nonce);
      std::memcpy(p.nonce, c.nonce, kNonceChars);
      // A fresh socket's buffer takes these 48 bytes at once.
      if (send(fd, &c, sizeof c, MSG_NOSIGNAL | MSG_DONTWAIT) != static_cast<ssize_t>(sizeof c)) {
        RINA_WARN("bootstrap root: dropped the connection from %s: could not send the challenge",
                  p.peer.c_str());
        continue;
      }
      pending_.push_back(std::move(p));
      readHello(pending_.size() - 1);  // it may be there already
    }
  }

  void drop(size_t i, const std::string& why) {
    RINA_WARN("bootstrap root: dropped the connection from %s: %s", pending_[i].peer.c_str(),
              why.c_str());
    pending_.erase(pending_.begin() + static_cast<ptrdiff_t>(i));
  }

  void dropLate() {
    const Deadline now = Clock::now();
    for (size_t i = pending_.size(); i-- > 0;) {
      const Pending& p = pending_[i];
      if (now < p.deadline) continue;
      drop(i, p.got == 0
                  ? "it sent nothing in " + std::to_string(std::min(waitMs_, kHelloWaitMs)) + " ms"
                  : "it sent " + std::to_string(p.got) + " of the " +
                        std::to_string(sizeof(Hello)) + " bytes of a hello in " +
                        std::to_string(std::min(waitMs_, kHelloWaitMs)) + " ms");
    }
  }

  void readHello(size_t i) {
    Pending& p = pending_[i];
    char* into = reinterpret_cast<char*>(&p.hello) + p.got;
    ssize_t n = recv(p.fd.get(), into, sizeof(Hello) - p.got, MSG_DONTWAIT);
    if (n == 0) return drop(i, "it closed the connection before a whole hello");
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      return drop(i, std::string("recv: ") + std::strerror(errno));
    }
    p.got += static_cast<size_t>(n);
    if (p.got < sizeof(Hello)) return;
    Pending done = std::move(p);
    pending_.erase(pending_.begin() + static_cast<ptrdiff_t>(i));
    admit(std::move(done));
  }

  void admit(Pending p) {
    const Hello& hello = p.hello;
    if (hello.magic != kMagic || hello.version != kVersion) {
      RINA_WARN(
          "bootstrap root: dropped the connection from %s: not a rina rank of this version "
          "(magic %08x, version %u)",
          p.peer.c_str(), hello.magic, hello.version);
      return;
    }
    // The secret first: nothing else of an unsigned hello is believed (a
    // claimed nranks or rank included).
    uint32_t code = kOk;
    if (!secret_.empty() && !sameMac(helloMac(secret_, p.nonce, hello).c_str(), hello.mac)) {
      code = kBadSecret;
    } else if (hello.commId != commId_)
      code = kWrongComm;
    else if (nranks_ >= 0 && hello.nranks != nranks_)
      code = kWrongSize;
    else if (hello.nranks <= 0 || hello.rank < 0 || hello.rank >= hello.nranks)
      code = kBadRank;
    else if (nranks_ >= 0 && conns_[hello.rank].valid())
      code = kDuplicateRank;
    if (code != kOk) {
      RINA_WARN("bootstrap root: refused rank %d from %s: %s", hello.rank, p.peer.c_str(),
                replyText(code));
      Reply r{kMagic, code, nranks_, arrived_, 0};
      (void)sendAll(p.fd.get(), &r, sizeof(r), deadlineAfterMs(1000));
      return;
    }
    if (nranks_ < 0) {
      nranks_ = hello.nranks;
      conns_.resize(nranks_);
      peers_.resize(nranks_);
      rankNonces_.resize(nranks_);
      rootNonces_.resize(nranks_);
      table_.resize(nranks_);
      deadline_ = deadlineAfterMs(waitMs_);
    }
    table_[hello.rank] = hello.info;
    if (hello.rank == 0) std::memcpy(schedule_, hello.schedule, sizeof schedule_);
    conns_[hello.rank] = std::move(p.fd);
    peers_[hello.rank] = p.peer;
    std::memcpy(rankNonces_[hello.rank].data(), hello.nonce, kNonceChars);
    std::memcpy(rootNonces_[hello.rank].data(), p.nonce, kNonceChars);
    ++arrived_;
  }

  // A rank's connection ended (or it sent more than its hello) before the
  // table went out: its place is free for a new try.
  void leave(int rank) {
    RINA_WARN("bootstrap root: rank %d (%s) left before every rank arrived; its place is free",
              rank, peers_[rank].c_str());
    conns_[rank].reset();
    --arrived_;
  }

  void giveUp() {
    if (nranks_ < 0) {
      RINA_WARN("bootstrap root: no rank arrived within %lld ms; giving up",
                static_cast<long long>(firstWaitMs_));
      return;
    }
    std::string missing;
    for (int r = 0; r < nranks_; ++r) {
      if (conns_[r].valid()) continue;
      if (missing.size() > 200) {
        missing += ", ...";
        break;
      }
      missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    RINA_WARN(
        "bootstrap root: %d of %d ranks arrived within %lld ms of the first; giving up "
        "(missing: %s)",
        arrived_, nranks_, static_cast<long long>(waitMs_), missing.c_str());
    Reply r{kMagic, kIncomplete, nranks_, arrived_, 0};
    for (int q = 0; q < nranks_; ++q) {
      if (conns_[q].valid()) (void)sendAll(conns_[q].get(), &r, sizeof(r), deadlineAfterMs(1000));
    }
  }

  void answer() {
    Reply ok{kMagic, kOk, nranks_, arrived_, randomCommId() | 1};
    for (int r = 0; r < nranks_; ++r) {
      Deadline d = deadlineAfterMs(waitMs_);
      Status s = sendAll(conns_[r].get(), &ok, sizeof(ok), d);
      if (s.ok()) s = sendAll(conns_[r].get(), table_.data(), table_.size() * sizeof(PeerInfo), d);
      if (s.ok()) s = sendAll(conns_[r].get(), schedule_, sizeof schedule_, d);
      if (s.ok() && !secret_.empty()) {
        const std::string mac =
            replyMac(secret_, rankNonces_[r].data(), rootNonces_[r].data(), ok, table_, schedule_);
        s = sendAll(conns_[r].get(), mac.data(), kMacChars, d);
      }
      if (!s.ok()) {
        RINA_WARN("bootstrap root: could not answer rank %d (%s): %s", r, peers_[r].c_str(),
                  s.message().c_str());
      }
    }
  }

  const int listenFd_;
  const uint64_t commId_;
  const std::string secret_;  // empty: none
  const int64_t waitMs_;
  const std::atomic<bool>* stop_;
  Deadline deadline_;
  const int64_t firstWaitMs_;
  Deadline acceptPausedUntil_{};
  std::vector<Pending> pending_;
  int nranks_ = -1;
  int arrived_ = 0;
  std::vector<Fd> conns_;           // per rank, once its hello is taken
  std::vector<std::string> peers_;  // their addresses
  std::vector<PeerInfo> table_;
  char schedule_[kScheduleBytes] = {};  // rank 0's
  // Per rank: the nonces of its hello and of its connection's challenge.
  std::vector<std::array<char, kNonceChars>> rankNonces_;
  std::vector<std::array<char, kNonceChars>> rootNonces_;
};

void serveRendezvous(int listenFd, uint64_t commId, int64_t firstWaitMs, int64_t waitMs,
                     const std::string& secret, const std::atomic<bool>* stop) {
  RootLoop(listenFd, commId, firstWaitMs, waitMs, secret, stop).run();
}

Status checkScheduleFits(int rank, const std::string& schedule) {
  if (schedule.size() >= sizeof(Hello::schedule)) {
    return errorf(rinaInvalidArgument,
                  "rank %d: the knobs that shape the schedule take %zu bytes as text, more than "
                  "the bootstrap carries (%zu); a long RINA_RACKS can go in RINA_TOPO_FILE",
                  rank, schedule.size(), sizeof(Hello::schedule) - 1);
  }
  return {};
}

// The root's challenge: from a rina root of this version, which holds a
// secret when this rank has one.
Status readChallenge(const Fd& conn, const std::string& where, const std::string& secret,
                     Deadline deadline, Challenge* challenge) {
  Status s = recvAll(conn.get(), challenge, sizeof *challenge, deadline);
  if (!s.ok()) return s.prepend(where + ": challenge: ");
  if (challenge->magic != kMagic || challenge->version != kVersion) {
    return errorf(rinaRemoteError,
                  "%s is not a rina bootstrap root of this version (magic %08x, version %u; "
                  "this rank speaks %u)",
                  where.c_str(), challenge->magic, challenge->version, kVersion);
  }
  if (!secret.empty() && challenge->secret == 0) {
    return errorf(rinaInvalidUsage,
                  "%s holds no secret, but RINA_COMM_SECRET_FILE is set on this rank: it does not "
                  "take this root's table",
                  where.c_str());
  }
  return {};
}

// This rank's hello, signed over the challenge's nonce when there is a
// secret.
Hello helloFor(const IdData& id, int rank, int nranks, const PeerInfo& mine,
               const std::string& schedule, const std::string& secret, const Challenge& challenge) {
  Hello hello{};
  hello.magic = kMagic;
  hello.version = kVersion;
  hello.commId = id.commId;
  hello.nranks = nranks;
  hello.rank = rank;
  hello.info = mine;
  std::memcpy(hello.schedule, schedule.data(), schedule.size());
  freshNonce(hello.nonce);
  if (!secret.empty()) {
    const std::string mac = helloMac(secret, challenge.nonce, hello);
    std::memcpy(hello.mac, mac.data(), kMacChars);
  }
  return hello;
}

// The root's verdict on this rank: every rank arrived and this one is
// taken, or why not.
Status readVerdict(const Fd& conn, const std::string& where, int nranks, Deadline deadline,
                   Reply* reply) {
  // The root gives up on missing ranks at its own deadline and says how many
  // came; a little longer here lets that verdict, not a bare timeout, arrive.
  Status s = recvAll(conn.get(), reply, sizeof(*reply), deadline + kVerdictGrace);
  if (!s.ok()) return s.prepend(where + ": ");
  if (reply->magic != kMagic) {
    return errorf(rinaRemoteError, "%s answered with a wrong magic", where.c_str());
  }
  if (reply->code == kIncomplete) {
    return errorf(rinaTimeout,
                  "%s gave up waiting: %d of %d ranks arrived before its deadline "
                  "(RINA_TIMEOUT_MS after the first)",
                  where.c_str(), reply->arrived, reply->nranks);
  }
  if (reply->code != kOk) {
    return errorf(rinaInvalidUsage, "%s refused this rank: %s", where.c_str(),
                  replyText(reply->code));
  }
  if (reply->nranks != nranks) {
    return errorf(rinaRemoteError, "%s answered for %d ranks, this rank is one of %d",
                  where.c_str(), reply->nranks, nranks);
  }
  return {};
}

// After a verdict of ok: the address table, rank 0's schedule knobs and,
// with a secret, the root's proof over them (a table without it is not
// taken).
Status readTable(const Fd& conn, const std::string& where, const std::string& secret,
                 const Hello& hello, const Challenge& challenge, const Reply& reply,
                 Deadline deadline, std::vector<PeerInfo>* table,
                 char (&schedule)[kScheduleBytes]) {
  table->resize(reply.nranks);
  Status s = recvAll(conn.get(), table->data(), table->size() * sizeof(PeerInfo), deadline);
  if (!s.ok()) return s.prepend(where + ": address table: ");
  s = recvAll(conn.get(), schedule, sizeof schedule, deadline);
  if (!s.ok()) return s.prepend(where + ": schedule knobs: ");
  if (secret.empty()) return {};
  char mac[kMacChars];
  s = recvAll(conn.get(), mac, sizeof mac, deadline);
  if (!s.ok()) return s.prepend(where + ": the root's proof of the secret: ");
  const std::string want = replyMac(secret, hello.nonce, challenge.nonce, reply, *table, schedule);
  if (!sameMac(want.c_str(), mac)) {
    table->clear();
    return errorf(rinaRemoteError,
                  "%s did not prove it holds RINA_COMM_SECRET_FILE's secret; its table is not "
                  "taken (an impostor, or a root with another secret)",
                  where.c_str());
  }
  return {};
}

}  // namespace

Status rendezvous(const IdData& id, int rank, int nranks, const PeerInfo& mine,
                  const std::string& schedule, const std::string& secret, Deadline deadline,
                  std::vector<PeerInfo>* table, std::string* rankZeroSchedule, uint64_t* peerId) {
  RINA_TRY(checkScheduleFits(rank, schedule));
  const std::string where = "bootstrap: rank " + std::to_string(rank) + ": root " + id.root.str();
  Fd conn;
  Status s = connectTo(id.root, deadline, &conn);
  if (!s.ok()) return s.prepend("bootstrap: rank " + std::to_string(rank) + ": root: ");
  Challenge challenge{};
  RINA_TRY(readChallenge(conn, where, secret, deadline, &challenge));
  const Hello hello = helloFor(id, rank, nranks, mine, schedule, secret, challenge);
  s = sendAll(conn.get(), &hello, sizeof(hello), deadline);
  if (!s.ok()) return s.prepend(where + ": ");
  Reply reply{};
  RINA_TRY(readVerdict(conn, where, nranks, deadline, &reply));
  char theirs[kScheduleBytes];
  RINA_TRY(readTable(conn, where, secret, hello, challenge, reply, deadline, table, theirs));
  rankZeroSchedule->assign(theirs, strnlen(theirs, sizeof theirs));
  *peerId = reply.peerId;
  return {};
}

}  // namespace rina::bootstrap
