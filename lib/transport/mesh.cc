#include "transport/mesh.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>

#include "core/log.h"
#include "transport/shm_connection.h"
#include "transport/socket_connection.h"
#include "transport/striped_connection.h"
#include "transport/verbs/rdma_setup.h"

namespace rina::transport {

bool needsSpineConnection(const bootstrap::PeerInfo& connector, const bootstrap::PeerInfo& acceptor,
                          int spine) {
  return spine >= 0 && spine < connector.spineCount && spine < acceptor.spineCount &&
         spine < bootstrap::kMaxSpineAddrs && !(acceptor.spine[spine] == acceptor.listen);
}

int defaultSpineOf(const bootstrap::PeerInfo& acceptor, int spines) {
  const int most =
      std::min({spines, static_cast<int>(acceptor.spineCount), bootstrap::kMaxSpineAddrs});
  for (int s = 0; s < most; ++s) {
    if (acceptor.spine[s] == acceptor.listen) return s;
  }
  return -1;
}

bool sameHost(const MeshOptions& opt, int peer) {
  return std::strncmp(opt.table[opt.rank].host, opt.table[peer].host,
                      sizeof(opt.table[peer].host)) == 0;
}

void readHello(Fd& fd, int rank, uint64_t commId, uint64_t successorId, Deadline deadline,
               PeerHello* hello, const char** refusal) {
  static thread_local std::string why;
  Status s = recvAll(fd.get(), hello, sizeof(*hello), deadline);
  if (!s.ok()) why = s.message();
  *refusal = !s.ok()                      ? why.c_str()
             : hello->magic != kPeerMagic ? "wrong magic"
             : hello->commId != commId && (successorId == 0 || hello->commId != successorId)
                 ? "wrong communicator id"
             // A successor's hello is addressed by the rank this one has
             // there, known only once the successor forms: it checks `to`
             // when it takes the arrival (nextArrival).
             : hello->commId == commId && hello->to != rank ? "addressed to another rank"
                                                            : nullptr;
}

namespace {

constexpr int kMaxSocketsPerPeer = 8;

struct PeerReply {
  uint32_t magic;
  int32_t usesShm;
  int32_t usesRdma;  // both offered and no shared memory: verbs::RdmaSetup
};

struct Pending {
  int peer;
  int spine = -1;
  std::vector<Fd> fds;  // fds[0] carries the hello reply and liveness
  ShmSegment segment;   // offered to the peer, when on one host
  uint32_t stripeBytes = 0;
  bool useShm = false;  // accepting side: decided by socket 0's hello
  bool useRdma = false;
};

Status makeConnection(const MeshOptions& opt, Pending& pend, bool useShm,
                      std::unique_ptr<Connection>* out) {
  const int peer = pend.peer;
  if (useShm) {
    *out = std::make_unique<ShmConnection>(peer, opt.rank < peer, std::move(pend.segment),
                                           std::move(pend.fds[0]), opt.table[peer].pid);
    RINA_INFO("connected to rank %d over shm", peer);
    return {};
  }
  for (Fd& fd : pend.fds) RINA_TRY(setNonBlocking(fd.get()));
  if (pend.fds.size() == 1) {
    *out = std::make_unique<SocketConnection>(peer, std::move(pend.fds[0]));
    if (pend.spine >= 0) {
      RINA_INFO("connected to rank %d over spine %d (socket)", peer, pend.spine);
    } else {
      RINA_INFO("connected to rank %d over socket", peer);
    }
    return {};
  }
  std::vector<std::unique_ptr<SocketConnection>> socks;
  for (Fd& fd : pend.fds) socks.push_back(std::make_unique<SocketConnection>(peer, std::move(fd)));
  RINA_INFO("connected to rank %d over %zu sockets, %u-byte stripes", peer, socks.size(),
            pend.stripeBytes);
  *out = std::make_unique<StripedConnection>(peer, std::move(socks), pend.stripeBytes);
  return {};
}

// Files a finished connection under its peer (default) or (peer, spine).
void keep(Pending& pend, std::unique_ptr<Connection> conn,
          std::map<int, std::unique_ptr<Connection>>* out, SpineConnections* spineOut) {
  if (pend.spine < 0) {
    (*out)[pend.peer] = std::move(conn);
  } else {
    (*spineOut)[{pend.peer, pend.spine}] = std::move(conn);
  }
}

// The spines over which this pair gets connections of its own.
std::vector<int> spinePaths(const MeshOptions& opt, int peer) {
  std::vector<int> out;
  if (!opt.spinePeers.count(peer)) return out;
  const bootstrap::PeerInfo& lo = opt.table[std::min(opt.rank, peer)];
  const bootstrap::PeerInfo& hi = opt.table[std::max(opt.rank, peer)];
  for (int s = 0; s < bootstrap::kMaxSpineAddrs; ++s) {
    if (needsSpineConnection(lo, hi, s)) out.push_back(s);
  }
  return out;
}

}  // namespace

Status tunePeerSocket(const MeshOptions& opt, int fd) {
  return tuneSocket(fd, opt.socketBufBytes, opt.knobs.tcpCongestion);
}

namespace {

std::string where(const MeshOptions& opt, int peer, const char* what, int spine = -1) {
  return "rank " + std::to_string(opt.rank) + ": " + what + " peer " + std::to_string(peer) +
         (spine >= 0 ? " over spine " + std::to_string(spine) : "") + ": ";
}

using Key = std::pair<int, int>;  // (peer, spine); spine -1: the pair's default connection

// The connections this rank accepts: from every lower peer, its default one
// and one per spine path.
std::set<Key> expectedConnections(const MeshOptions& opt) {
  std::set<Key> expected;
  for (int p : opt.peers) {
    if (p >= opt.rank) continue;
    expected.insert({p, -1});
    for (int s : spinePaths(opt, p)) expected.insert({p, s});
  }
  return expected;
}

// One socket to peer p over spine s: no shared memory or RDMA (another
// host's NIC).
Status connectOverSpine(const MeshOptions& opt, int p, int s, std::vector<Pending>* outgoing) {
  Pending pend{p, s, {}, ShmSegment(), 0};
  pend.fds.emplace_back();
  Status c = connectTo(opt.table[p].spine[s], opt.deadline, &pend.fds[0]);
  if (!c.ok()) return c.prepend(where(opt, p, "connecting to", s));
  c = tunePeerSocket(opt, pend.fds[0].get());
  if (!c.ok()) return c.prepend(where(opt, p, "socket to", s));
  PeerHello hello{kPeerMagic, opt.rank, p, 0, opt.commId, {}, 0, 1, 0, 0, s, kMeshHello, 0};
  c = sendAll(pend.fds[0].get(), &hello, sizeof(hello), opt.deadline);
  if (!c.ok()) return c.prepend(where(opt, p, "hello to", s));
  outgoing->push_back(std::move(pend));
  return {};
}

// A peer on this host is offered a segment (the hello's fifoBytes); one that
// cannot be made leaves the pair on TCP.
void offerSharedMemory(const MeshOptions& opt, int p, PeerHello* hello, Pending* pend) {
  if (!opt.shmEnabled || !sameHost(opt, p)) return;
  std::snprintf(hello->shmName, sizeof(hello->shmName), "/rina-%d-%016" PRIx64 "-%d-%d", getpid(),
                opt.commId, opt.rank, p);
  Status c = ShmSegment::create(hello->shmName, opt.fifoBytes, &pend->segment);
  if (c.ok()) {
    hello->fifoBytes = opt.fifoBytes;
  } else {
    RINA_WARN("rank %d: shared memory to rank %d unavailable, using TCP: %s", opt.rank, p,
              c.message().c_str());
  }
}

// Over TCP: how many sockets the pair gets, and the stripe of every
// pipeline slice each socket carries.
void chooseSockets(const MeshOptions& opt, PeerHello* hello, Pending* pend) {
  int n = opt.socketsPerPeer > 0 ? opt.socketsPerPeer : autoSocketsFor(pend->fds[0].get());
  hello->nsocks = static_cast<uint16_t>(std::clamp(n, 1, kMaxSocketsPerPeer));
  size_t stripe = (opt.sliceBytes / hello->nsocks + 63) / 64 * 64;
  hello->stripeBytes = static_cast<uint32_t>(std::clamp<size_t>(stripe, 256, 1 << 20));
  pend->stripeBytes = hello->stripeBytes;
}

// The pair's default connection to a higher peer p: its first socket, the
// offer (shared memory, or sockets and stripes, and RDMA), then the other
// sockets; each socket says the hello.
Status connectDefault(const MeshOptions& opt, int p, bool rdmaOffered,
                      std::vector<Pending>* outgoing) {
  Pending pend{p, -1, {}, ShmSegment(), 0};
  pend.fds.emplace_back();
  Status s = connectTo(opt.table[p].listen, opt.deadline, &pend.fds[0]);
  if (!s.ok()) return s.prepend(where(opt, p, "connecting to"));
  s = tunePeerSocket(opt, pend.fds[0].get());
  if (!s.ok()) return s.prepend(where(opt, p, "socket to"));
  PeerHello hello{kPeerMagic, opt.rank, p, 0, opt.commId, {}, 0, 1, 0, 0, -1, kMeshHello, 0};
  offerSharedMemory(opt, p, &hello, &pend);
  if (hello.fifoBytes == 0) chooseSockets(opt, &hello, &pend);
  hello.rdmaOffered = hello.fifoBytes == 0 && rdmaOffered ? 1 : 0;
  for (uint16_t i = 0; i < hello.nsocks; ++i) {
    if (i > 0) {
      pend.fds.emplace_back();
      s = connectTo(opt.table[p].listen, opt.deadline, &pend.fds[i]);
      if (!s.ok()) return s.prepend(where(opt, p, "connecting another socket to"));
      s = tunePeerSocket(opt, pend.fds[i].get());
      if (!s.ok()) return s.prepend(where(opt, p, "socket to"));
    }
    hello.sockIndex = i;
    s = sendAll(pend.fds[i].get(), &hello, sizeof(hello), opt.deadline);
    if (!s.ok()) return s.prepend(where(opt, p, "hello to"));
  }
  outgoing->push_back(std::move(pend));
  return {};
}

// This rank opens the connections to every higher peer: one per spine path,
// then the default one.
Status connectToHigherRanks(const MeshOptions& opt, const verbs::RdmaSetup& rdma,
                            std::vector<Pending>* outgoing) {
  for (int p : opt.peers) {
    if (p <= opt.rank) continue;
    for (int s : spinePaths(opt, p)) RINA_TRY(connectOverSpine(opt, p, s, outgoing));
    RINA_TRY(connectDefault(opt, p, rdma.offered(), outgoing));
  }
  return {};
}

// The next arriving socket and its hello: one the channel code accepted
// earlier (its hello read and checked), or a fresh one from any listening
// socket, whose hello is read here (*refusal: why it is not taken). A
// channel's socket goes to the channel code (*handedOver).
Status nextArrival(const MeshOptions& opt, const std::vector<int>& listenFds,
                   const std::set<Key>& expected, Fd* fd, PeerHello* hello, const char** refusal,
                   bool* handedOver) {
  if (opt.arrivals && !opt.arrivals->mesh.empty()) {
    *fd = std::move(opt.arrivals->mesh.front().fd);
    *hello = opt.arrivals->mesh.front().hello;
    opt.arrivals->mesh.pop_front();
    // Filed while another communicator (the one this one replaces) served
    // the socket: it may be that one's.
    if (hello->commId != opt.commId) {
      *refusal = "a connection of another communicator";
    } else if (hello->to != opt.rank) {
      *refusal = "addressed to another rank";
    }
    return {};
  }
  Status s = acceptFromAny(listenFds.data(), listenFds.size(), opt.deadline, opt.abort, fd);
  if (!s.ok()) {
    const auto [first, spine] = *expected.begin();
    return s.prepend("rank " + std::to_string(opt.rank) + ": waiting for " +
                     std::to_string(expected.size()) + " connection(s), first from rank " +
                     std::to_string(first) +
                     (spine >= 0 ? " over spine " + std::to_string(spine) : "") + ": ");
  }
  readHello(*fd, opt.rank, opt.commId, opt.successorId,
            std::min(opt.deadline, deadlineAfterMs(5000)), hello, refusal);
  if (!*refusal && hello->kind != kMeshHello) {
    if (opt.arrivals) {
      auto& queue = hello->kind == kChannelHello ? opt.arrivals->channels : opt.arrivals->notices;
      queue.push_back(Arrival{std::move(*fd), *hello});
      *handedOver = true;
      return {};
    }
    *refusal = "a point-to-point channel or notice, which this set-up does not take";
  }
  return {};
}

// Why a mesh socket's hello is not taken; null when it is.
const char* refusalOf(const PeerHello& hello, const std::set<Key>& expected,
                      const std::map<Key, Pending>& incoming) {
  const char* refusal =
      hello.kind != kMeshHello                     ? "unknown kind of connection"
      : !expected.count({hello.from, hello.spine}) ? "unexpected rank or spine"
      : hello.nsocks < 1 || hello.nsocks > kMaxSocketsPerPeer || hello.sockIndex >= hello.nsocks
          ? "bad socket count"
      : hello.nsocks > 1 && (hello.stripeBytes < 64 || hello.stripeBytes % 64) ? "bad stripe size"
                                                                               : nullptr;
  if (refusal) return refusal;
  auto known = incoming.find({hello.from, hello.spine});
  if (known != incoming.end() &&
      (known->second.fds.size() != hello.nsocks || known->second.fds[hello.sockIndex].get() >= 0)) {
    return "socket count or index disagrees with the peer's other sockets";
  }
  return nullptr;
}

// Socket 0's hello decides the pair's transport: the offered shared memory
// when it maps, else RDMA when both sides have it (default connections
// only), else TCP.
void chooseTransport(const MeshOptions& opt, bool rdmaOffered, PeerHello* hello, Pending* pend) {
  hello->shmName[sizeof(hello->shmName) - 1] = '\0';
  if (hello->fifoBytes != 0) {
    Status o = ShmSegment::open(hello->shmName, &pend->segment);
    if (o.ok()) {
      // Both sides have it mapped: the name goes now, so no crash from
      // here on can leave it behind.
      shm_unlink(hello->shmName);
      pend->useShm = true;
    } else {
      RINA_WARN("rank %d: cannot map rank %d's shared memory, using TCP: %s", opt.rank, hello->from,
                o.message().c_str());
    }
  }
  pend->useRdma = !pend->useShm && hello->spine < 0 && hello->rdmaOffered != 0 && rdmaOffered;
}

// Files an accepted socket in its place among the pair's sockets.
Pending& fileSocket(const MeshOptions& opt, bool rdmaOffered, Fd fd, PeerHello* hello,
                    std::map<Key, Pending>* incoming) {
  Pending& pend = (*incoming)[{hello->from, hello->spine}];
  if (pend.fds.empty()) {
    pend.peer = hello->from;
    pend.spine = hello->spine;
    pend.fds.resize(hello->nsocks);
    pend.stripeBytes = hello->stripeBytes;
  }
  pend.fds[hello->sockIndex] = std::move(fd);
  if (hello->sockIndex == 0) chooseTransport(opt, rdmaOffered, hello, &pend);
  return pend;
}

bool allSocketsIn(const Pending& pend) {
  return std::all_of(pend.fds.begin(), pend.fds.end(), [](const Fd& f) { return f.get() >= 0; });
}

// Every socket of an accepted pair is in: the reply says what the pair
// uses, then its connection is made (or left to RdmaSetup).
Status answerPeer(const MeshOptions& opt, Pending& pend, verbs::RdmaSetup* rdma,
                  std::map<int, std::unique_ptr<Connection>>* out, SpineConnections* spineOut) {
  PeerReply reply{kPeerMagic, pend.useShm ? 1 : 0, pend.useRdma ? 1 : 0};
  Status s = sendAll(pend.fds[0].get(), &reply, sizeof(reply), opt.deadline);
  if (!s.ok()) return s.prepend(where(opt, pend.peer, "reply to", pend.spine));
  if (reply.usesRdma) {
    rdma->add(pend.peer, std::move(pend.fds[0]));
    return {};
  }
  std::unique_ptr<Connection> conn;
  RINA_TRY(makeConnection(opt, pend, pend.useShm, &conn));
  keep(pend, std::move(conn), out, spineOut);
  return {};
}

// This rank accepts the connections of every lower peer. A pair is complete
// when all its sockets are in; socket 0's hello decides shared memory and
// gets the reply.
Status acceptFromLowerRanks(const MeshOptions& opt, verbs::RdmaSetup* rdma,
                            std::map<int, std::unique_ptr<Connection>>* out,
                            SpineConnections* spineOut) {
  std::set<Key> expected = expectedConnections(opt);
  std::map<Key, Pending> incoming;
  std::vector<int> listenFds{opt.listenFd};
  listenFds.insert(listenFds.end(), opt.spineListenFds.begin(), opt.spineListenFds.end());
  while (!expected.empty()) {
    Fd fd;
    PeerHello hello{};
    const char* refusal = nullptr;
    bool handedOver = false;
    RINA_TRY(nextArrival(opt, listenFds, expected, &fd, &hello, &refusal, &handedOver));
    if (handedOver) continue;
    if (!refusal) refusal = refusalOf(hello, expected, incoming);
    if (refusal) {
      RINA_WARN("rank %d: refused a peer connection (%s)", opt.rank, refusal);
      continue;
    }
    const Key key{hello.from, hello.spine};
    Status t = tunePeerSocket(opt, fd.get());
    if (!t.ok()) return t.prepend(where(opt, hello.from, "socket from", hello.spine));
    Pending& pend = fileSocket(opt, rdma->offered(), std::move(fd), &hello, &incoming);
    if (!allSocketsIn(pend)) continue;
    RINA_TRY(answerPeer(opt, pend, rdma, out, spineOut));
    expected.erase(key);
    incoming.erase(key);
  }
  return {};
}

// A connection this rank opened, once the peer's reply says what it took.
Status takeReply(const MeshOptions& opt, Pending& pend, verbs::RdmaSetup* rdma,
                 std::map<int, std::unique_ptr<Connection>>* out, SpineConnections* spineOut) {
  PeerReply reply{};
  Status s = recvAll(pend.fds[0].get(), &reply, sizeof(reply), opt.deadline);
  if (s.ok() && reply.magic != kPeerMagic) s = errorf(rinaRemoteError, "wrong magic in reply");
  if (!s.ok()) return s.prepend(where(opt, pend.peer, "not accepted by", pend.spine));
  pend.segment.unlink();  // both sides have it mapped (or it is unused)
  if (reply.usesRdma && pend.spine < 0) {
    rdma->add(pend.peer, std::move(pend.fds[0]));
    return {};
  }
  if (reply.usesRdma || (reply.usesShm && pend.spine >= 0)) {
    return errorf(rinaRemoteError, "%sanswered a spine connection with shm or RDMA",
                  where(opt, pend.peer, "peer", pend.spine).c_str());
  }
  std::unique_ptr<Connection> conn;
  RINA_TRY(makeConnection(opt, pend, reply.usesShm != 0, &conn));
  keep(pend, std::move(conn), out, spineOut);
  return {};
}

}  // namespace

// Lower ranks connect, higher ranks accept: every rank first opens its
// connections to the peers above it, then accepts those from below, then
// reads the replies to its own.
Status buildMesh(const MeshOptions& opt, std::map<int, std::unique_ptr<Connection>>* out,
                 SpineConnections* spineOut) {
  SpineConnections unusedSpines;
  if (!spineOut) spineOut = &unusedSpines;
  verbs::RdmaSetup rdma;
  RINA_TRY(rdma.init(opt.rank, opt.knobs));
  std::vector<Pending> outgoing;
  RINA_TRY(connectToHigherRanks(opt, rdma, &outgoing));
  RINA_TRY(acceptFromLowerRanks(opt, &rdma, out, spineOut));
  for (Pending& pend : outgoing) RINA_TRY(takeReply(opt, pend, &rdma, out, spineOut));
  return rdma.finish(opt.deadline, out);
}

}  // namespace rina::transport
