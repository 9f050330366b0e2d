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

std::string where(const MeshOptions& opt, int peer, const char* what, int spine = -1) {
  return "rank " + std::to_string(opt.rank) + ": " + what + " peer " + std::to_string(peer) +
         (spine >= 0 ? " over spine " + std::to_string(spine) : "") + ": ";
}

}  // namespace

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

void readHello(Fd& fd, int rank, uint64_t commId, Deadline deadline, PeerHello* hello,
               const char** refusal) {
  static thread_local std::string why;
  Status s = recvAll(fd.get(), hello, sizeof(*hello), deadline);
  if (!s.ok()) why = s.message();
  *refusal = !s.ok()                      ? why.c_str()
             : hello->magic != kPeerMagic ? "wrong magic"
             : hello->commId != commId    ? "wrong communicator id"
             : hello->to != rank          ? "addressed to another rank"
                                          : nullptr;
}

Status buildMesh(const MeshOptions& opt, std::map<int, std::unique_ptr<Connection>>* out,
                 SpineConnections* spineOut) {
  SpineConnections unusedSpines;
  if (!spineOut) spineOut = &unusedSpines;
  verbs::RdmaSetup rdma;
  RINA_TRY(rdma.init(opt.rank, opt.knobs));
  std::vector<Pending> outgoing;
  std::set<std::pair<int, int>> expected;  // (peer, spine)
  for (int p : opt.peers) {
    if (p == opt.rank) continue;
    if (p < opt.rank) {
      expected.insert({p, -1});
      for (int s : spinePaths(opt, p)) expected.insert({p, s});
      continue;
    }
    for (int s : spinePaths(opt, p)) {
      // One socket over spine s: no shared memory or RDMA (another host's NIC).
      Pending pend{p, s, {}, ShmSegment(), 0};
      pend.fds.emplace_back();
      Status c = connectTo(opt.table[p].spine[s], opt.deadline, &pend.fds[0]);
      if (!c.ok()) return c.prepend(where(opt, p, "connecting to", s));
      tuneSocket(pend.fds[0].get(), opt.socketBufBytes);
      PeerHello hello{kPeerMagic, opt.rank, p, 0, opt.commId, {}, 0, 1, 0, 0, s, kMeshHello, 0};
      c = sendAll(pend.fds[0].get(), &hello, sizeof(hello), opt.deadline);
      if (!c.ok()) return c.prepend(where(opt, p, "hello to", s));
      outgoing.push_back(std::move(pend));
    }
    Pending pend{p, -1, {}, ShmSegment(), 0};
    pend.fds.emplace_back();
    Status s = connectTo(opt.table[p].listen, opt.deadline, &pend.fds[0]);
    if (!s.ok()) return s.prepend(where(opt, p, "connecting to"));
    tuneSocket(pend.fds[0].get(), opt.socketBufBytes);
    PeerHello hello{kPeerMagic, opt.rank, p, 0, opt.commId, {}, 0, 1, 0, 0, -1, kMeshHello, 0};
    if (opt.shmEnabled && sameHost(opt, p)) {
      std::snprintf(hello.shmName, sizeof(hello.shmName), "/rina-%d-%016" PRIx64 "-%d-%d", getpid(),
                    opt.commId, opt.rank, p);
      Status c = ShmSegment::create(hello.shmName, opt.fifoBytes, &pend.segment);
      if (c.ok()) {
        hello.fifoBytes = opt.fifoBytes;
      } else {
        RINA_WARN("rank %d: shared memory to rank %d unavailable, using TCP: %s", opt.rank, p,
                  c.message().c_str());
      }
    }
    if (hello.fifoBytes == 0) {
      int n = opt.socketsPerPeer > 0 ? opt.socketsPerPeer : autoSocketsFor(pend.fds[0].get());
      hello.nsocks = static_cast<uint16_t>(std::clamp(n, 1, kMaxSocketsPerPeer));
      // Every socket gets a stripe of each pipeline slice.
      size_t stripe = (opt.sliceBytes / hello.nsocks + 63) / 64 * 64;
      hello.stripeBytes = static_cast<uint32_t>(std::clamp<size_t>(stripe, 256, 1 << 20));
      pend.stripeBytes = hello.stripeBytes;
    }
    hello.rdmaOffered = hello.fifoBytes == 0 && rdma.offered() ? 1 : 0;
    for (uint16_t i = 0; i < hello.nsocks; ++i) {
      if (i > 0) {
        pend.fds.emplace_back();
        s = connectTo(opt.table[p].listen, opt.deadline, &pend.fds[i]);
        if (!s.ok()) return s.prepend(where(opt, p, "connecting another socket to"));
        tuneSocket(pend.fds[i].get(), opt.socketBufBytes);
      }
      hello.sockIndex = i;
      s = sendAll(pend.fds[i].get(), &hello, sizeof(hello), opt.deadline);
      if (!s.ok()) return s.prepend(where(opt, p, "hello to"));
    }
    outgoing.push_back(std::move(pend));
  }

  // A peer is complete when all its sockets are in; socket 0's hello
  // decides shared memory and gets the reply.
  std::map<std::pair<int, int>, Pending> incoming;
  std::vector<int> listenFds{opt.listenFd};
  listenFds.insert(listenFds.end(), opt.spineListenFds.begin(), opt.spineListenFds.end());
  while (!expected.empty()) {
    Fd fd;
    PeerHello hello{};
    const char* refusal = nullptr;
    if (opt.arrivals && !opt.arrivals->mesh.empty()) {
      // Accepted earlier by the channel code, its hello read and checked.
      fd = std::move(opt.arrivals->mesh.front().fd);
      hello = opt.arrivals->mesh.front().hello;
      opt.arrivals->mesh.pop_front();
    } else {
      Status s = acceptFromAny(listenFds.data(), listenFds.size(), opt.deadline, opt.abort, &fd);
      if (!s.ok()) {
        const auto [first, spine] = *expected.begin();
        return s.prepend("rank " + std::to_string(opt.rank) + ": waiting for " +
                         std::to_string(expected.size()) + " connection(s), first from rank " +
                         std::to_string(first) +
                         (spine >= 0 ? " over spine " + std::to_string(spine) : "") + ": ");
      }
      readHello(fd, opt.rank, opt.commId, std::min(opt.deadline, deadlineAfterMs(5000)), &hello,
                &refusal);
      if (!refusal && hello.kind == kChannelHello) {
        if (opt.arrivals) {
          opt.arrivals->channels.push_back(Arrival{std::move(fd), hello});
          continue;
        }
        refusal = "a point-to-point channel, which this set-up does not take";
      }
    }
    if (!refusal) {
      refusal =
          hello.kind != kMeshHello                     ? "unknown kind of connection"
          : !expected.count({hello.from, hello.spine}) ? "unexpected rank or spine"
          : hello.nsocks < 1 || hello.nsocks > kMaxSocketsPerPeer || hello.sockIndex >= hello.nsocks
              ? "bad socket count"
          : hello.nsocks > 1 && (hello.stripeBytes < 64 || hello.stripeBytes % 64)
              ? "bad stripe size"
              : nullptr;
    }
    const std::pair<int, int> key{hello.from, hello.spine};
    auto known = incoming.find(key);
    if (!refusal && known != incoming.end() &&
        (known->second.fds.size() != hello.nsocks ||
         known->second.fds[hello.sockIndex].get() >= 0)) {
      refusal = "socket count or index disagrees with the peer's other sockets";
    }
    if (refusal) {
      RINA_WARN("rank %d: refused a peer connection (%s)", opt.rank, refusal);
      continue;
    }
    Pending& pend = incoming[key];
    tuneSocket(fd.get(), opt.socketBufBytes);
    if (pend.fds.empty()) {
      pend.peer = hello.from;
      pend.spine = hello.spine;
      pend.fds.resize(hello.nsocks);
      pend.stripeBytes = hello.stripeBytes;
    }
    pend.fds[hello.sockIndex] = std::move(fd);
    if (hello.sockIndex == 0) {
      hello.shmName[sizeof(hello.shmName) - 1] = '\0';
      if (hello.fifoBytes != 0) {
        Status o = ShmSegment::open(hello.shmName, &pend.segment);
        if (o.ok()) {
          // Both sides have it mapped: the name goes now, so no crash from
          // here on can leave it behind.
          shm_unlink(hello.shmName);
          pend.useShm = true;
        } else {
          RINA_WARN("rank %d: cannot map rank %d's shared memory, using TCP: %s", opt.rank,
                    hello.from, o.message().c_str());
        }
      }
      pend.useRdma = !pend.useShm && hello.spine < 0 && hello.rdmaOffered != 0 && rdma.offered();
    }
    bool complete =
        std::all_of(pend.fds.begin(), pend.fds.end(), [](const Fd& f) { return f.get() >= 0; });
    if (!complete) continue;
    PeerReply reply{kPeerMagic, pend.useShm ? 1 : 0, pend.useRdma ? 1 : 0};
    Status s = sendAll(pend.fds[0].get(), &reply, sizeof(reply), opt.deadline);
    if (!s.ok()) return s.prepend(where(opt, hello.from, "reply to", hello.spine));
    expected.erase(key);
    if (reply.usesRdma) {
      rdma.add(hello.from, std::move(pend.fds[0]));
    } else {
      std::unique_ptr<Connection> conn;
      RINA_TRY(makeConnection(opt, pend, pend.useShm, &conn));
      keep(pend, std::move(conn), out, spineOut);
    }
    incoming.erase(key);
  }

  for (Pending& pend : outgoing) {
    PeerReply reply{};
    Status s = recvAll(pend.fds[0].get(), &reply, sizeof(reply), opt.deadline);
    if (s.ok() && reply.magic != kPeerMagic) s = errorf(rinaRemoteError, "wrong magic in reply");
    if (!s.ok()) return s.prepend(where(opt, pend.peer, "not accepted by", pend.spine));
    pend.segment.unlink();  // both sides have it mapped (or it is unused)
    if (reply.usesRdma && pend.spine < 0) {
      rdma.add(pend.peer, std::move(pend.fds[0]));
    } else if (reply.usesRdma || (reply.usesShm && pend.spine >= 0)) {
      return errorf(rinaRemoteError, "%sanswered a spine connection with shm or RDMA",
                    where(opt, pend.peer, "peer", pend.spine).c_str());
    } else {
      std::unique_ptr<Connection> conn;
      RINA_TRY(makeConnection(opt, pend, reply.usesShm != 0, &conn));
      keep(pend, std::move(conn), out, spineOut);
    }
  }
  return rdma.finish(opt.deadline, out);
}

}  // namespace rina::transport
