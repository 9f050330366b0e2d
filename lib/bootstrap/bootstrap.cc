#include "bootstrap/bootstrap.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <random>

#include "core/log.h"

namespace rina::bootstrap {
namespace {

struct Hello {
  uint32_t magic;
  uint32_t version;
  uint64_t commId;
  int32_t nranks;
  int32_t rank;
  PeerInfo info;
  char schedule[kScheduleBytes];  // NUL-terminated
};

enum ReplyCode : uint32_t {
  kOk = 0,
  kWrongComm = 1,
  kWrongSize = 2,
  kDuplicateRank = 3,
  kBadRank = 4,
  kIncomplete = 5,  // the root gave up waiting for the other ranks
};

struct Reply {
  uint32_t magic;
  uint32_t code;
  int32_t nranks;   // -1: not known yet
  int32_t arrived;  // ranks the root had when it answered
};

constexpr std::chrono::milliseconds kVerdictGrace{2000};

const char* replyText(uint32_t code) {
  switch (code) {
    case kWrongComm: return "its communicator id does not match the root's";
    case kWrongSize: return "its nranks differs from the other ranks'";
    case kDuplicateRank: return "another process already joined with this rank";
    case kBadRank: return "the rank is out of range";
    case kIncomplete:
      return "not every rank arrived before the root's deadline";
    default: return "unknown reason";
  }
}

uint64_t randomCommId() {
  std::random_device rd;
  uint64_t id = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return id ^ (static_cast<uint64_t>(getpid()) << 16);
}

}  // namespace

Status createUniqueId(const std::string& ifnameSpec, int64_t timeout, rinaUniqueId* out) {
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
  RootService::startDetached(std::move(listen), data.commId, 10 * timeout, timeout);
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
                          std::unique_ptr<RootService>* out) {
  Fd listen;
  PackedAddr bound;
  Status s = listenOn(addr, true, &listen, &bound);
  if (!s.ok()) return s.prepend("RINA_COMM_ID root: ");
  *out = std::make_unique<RootService>(std::move(listen), commId, timeout);
  RINA_INFO("bootstrap root serving RINA_COMM_ID on %s", bound.str().c_str());
  return {};
}

namespace {

void serveRendezvous(int listenFd, uint64_t commId, int64_t firstWaitMs, int64_t waitMs,
                     const std::atomic<bool>* stop);

}  // namespace

void RootService::startDetached(Fd listen, uint64_t commId, int64_t firstWaitMs, int64_t waitMs) {
  std::thread([fd = std::move(listen), commId, firstWaitMs, waitMs] {
    serveRendezvous(fd.get(), commId, firstWaitMs, waitMs, nullptr);
  }).detach();
}

RootService::RootService(Fd listen, uint64_t commId, int64_t waitMs) : listen_(std::move(listen)) {
  thread_ = std::thread([this, commId, waitMs] {
    serveRendezvous(listen_.get(), commId, waitMs, waitMs, &stop_);
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
           const std::atomic<bool>* stop)
      : listenFd_(listenFd),
        commId_(commId),
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
    uint32_t code = kOk;
    if (hello.commId != commId_) code = kWrongComm;
    else if (nranks_ >= 0 && hello.nranks != nranks_)
      code = kWrongSize;
    else if (hello.nranks <= 0 || hello.rank < 0 || hello.rank >= hello.nranks) code = kBadRank;
    else if (nranks_ >= 0 && conns_[hello.rank].valid())
      code = kDuplicateRank;
    if (code != kOk) {
      RINA_WARN("bootstrap root: refused rank %d from %s: %s", hello.rank, p.peer.c_str(),
                replyText(code));
      Reply r{kMagic, code, nranks_, arrived_};
      (void)sendAll(p.fd.get(), &r, sizeof(r), deadlineAfterMs(1000));
      return;
    }
    if (nranks_ < 0) {
      nranks_ = hello.nranks;
      conns_.resize(nranks_);
      peers_.resize(nranks_);
      table_.resize(nranks_);
      deadline_ = deadlineAfterMs(waitMs_);
    }
    table_[hello.rank] = hello.info;
    if (hello.rank == 0) std::memcpy(schedule_, hello.schedule, sizeof schedule_);
    conns_[hello.rank] = std::move(p.fd);
    peers_[hello.rank] = p.peer;
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
    Reply r{kMagic, kIncomplete, nranks_, arrived_};
    for (int q = 0; q < nranks_; ++q) {
      if (conns_[q].valid()) (void)sendAll(conns_[q].get(), &r, sizeof(r), deadlineAfterMs(1000));
    }
  }

  void answer() {
    Reply ok{kMagic, kOk, nranks_, arrived_};
    for (int r = 0; r < nranks_; ++r) {
      Deadline d = deadlineAfterMs(waitMs_);
      Status s = sendAll(conns_[r].get(), &ok, sizeof(ok), d);
      if (s.ok()) s = sendAll(conns_[r].get(), table_.data(), table_.size() * sizeof(PeerInfo), d);
      if (s.ok()) s = sendAll(conns_[r].get(), schedule_, sizeof schedule_, d);
      if (!s.ok()) {
        RINA_WARN("bootstrap root: could not answer rank %d (%s): %s", r, peers_[r].c_str(),
                  s.message().c_str());
      }
    }
  }

  const int listenFd_;
  const uint64_t commId_;
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
};

void serveRendezvous(int listenFd, uint64_t commId, int64_t firstWaitMs, int64_t waitMs,
                     const std::atomic<bool>* stop) {
  RootLoop(listenFd, commId, firstWaitMs, waitMs, stop).run();
}

}  // namespace

Status rendezvous(const IdData& id, int rank, int nranks, const PeerInfo& mine,
                  const std::string& schedule, Deadline deadline, std::vector<PeerInfo>* table,
                  std::string* rankZeroSchedule) {
  Hello hello{};
  if (schedule.size() >= sizeof hello.schedule) {
    return errorf(rinaInvalidArgument,
                  "rank %d: the knobs that shape the schedule take %zu bytes as text, more than "
                  "the bootstrap carries (%zu); a long RINA_RACKS can go in RINA_TOPO_FILE",
                  rank, schedule.size(), sizeof hello.schedule - 1);
  }
  Fd conn;
  Status s = connectTo(id.root, deadline, &conn);
  if (!s.ok()) return s.prepend("bootstrap: rank " + std::to_string(rank) + ": root: ");
  hello.magic = kMagic;
  hello.version = kVersion;
  hello.commId = id.commId;
  hello.nranks = nranks;
  hello.rank = rank;
  hello.info = mine;
  std::memcpy(hello.schedule, schedule.data(), schedule.size());
  s = sendAll(conn.get(), &hello, sizeof(hello), deadline);
  // The root gives up on missing ranks at its own deadline and says how many
  // came; a little longer here lets that verdict, not a bare timeout, arrive.
  Reply reply{};
  if (s.ok()) s = recvAll(conn.get(), &reply, sizeof(reply), deadline + kVerdictGrace);
  if (!s.ok()) {
    return s.prepend("bootstrap: rank " + std::to_string(rank) + ": root " + id.root.str() + ": ");
  }
  if (reply.magic != kMagic) {
    return errorf(rinaRemoteError, "bootstrap: rank %d: %s answered with a wrong magic", rank,
                  id.root.str().c_str());
  }
  if (reply.code == kIncomplete) {
    return errorf(rinaTimeout,
                  "bootstrap: rank %d: root %s gave up waiting: %d of %d ranks arrived before its "
                  "deadline (RINA_TIMEOUT_MS after the first)",
                  rank, id.root.str().c_str(), reply.arrived, reply.nranks);
  }
  if (reply.code != kOk) {
    return errorf(rinaInvalidUsage, "bootstrap: rank %d: root %s refused this rank: %s", rank,
                  id.root.str().c_str(), replyText(reply.code));
  }
  table->resize(nranks);
  s = recvAll(conn.get(), table->data(), table->size() * sizeof(PeerInfo), deadline);
  if (!s.ok()) return s.prepend("bootstrap: rank " + std::to_string(rank) + ": address table: ");
  char theirs[kScheduleBytes];
  s = recvAll(conn.get(), theirs, sizeof theirs, deadline);
  if (!s.ok()) return s.prepend("bootstrap: rank " + std::to_string(rank) + ": schedule knobs: ");
  rankZeroSchedule->assign(theirs, strnlen(theirs, sizeof theirs));
  return {};
}

}  // namespace rina::bootstrap
