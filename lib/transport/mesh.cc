#include "transport/mesh.h"

#include <unistd.h>

#include <cinttypes>
#include <cstring>

#include "core/log.h"
#include "transport/shm_connection.h"
#include "transport/socket_connection.h"

namespace rina::transport {
namespace {

constexpr uint32_t kPeerMagic = 0x52504545;  // "RPEE"

struct PeerHello {
  uint32_t magic;
  int32_t from;
  int32_t to;
  uint32_t fifoBytes;  // 0: no shared memory offered
  uint64_t commId;
  char shmName[64];
};

struct PeerReply {
  uint32_t magic;
  int32_t usesShm;
};

struct Pending {
  int peer;
  Fd fd;
  ShmSegment segment;  // offered to the peer, when on one host
};

bool sameHost(const MeshOptions& opt, int peer) {
  return std::strncmp(opt.table[opt.rank].host, opt.table[peer].host,
                      sizeof(opt.table[peer].host)) == 0;
}

Status makeConnection(const MeshOptions& opt, int peer, Fd fd, ShmSegment segment, bool useShm,
                      std::map<int, std::unique_ptr<Connection>>* out) {
  if (useShm) {
    (*out)[peer] = std::make_unique<ShmConnection>(peer, opt.rank < peer, std::move(segment),
                                                   std::move(fd));
  } else {
    RINA_TRY(setNonBlocking(fd.get()));
    (*out)[peer] = std::make_unique<SocketConnection>(peer, std::move(fd));
  }
  RINA_INFO("connected to rank %d over %s", peer, (*out)[peer]->kind());
  return {};
}

}  // namespace

Status buildMesh(const MeshOptions& opt, std::map<int, std::unique_ptr<Connection>>* out) {
  std::vector<Pending> outgoing;
  std::set<int> expected;
  for (int p : opt.peers) {
    if (p == opt.rank) continue;
    if (p < opt.rank) {
      expected.insert(p);
      continue;
    }
    Pending pend{p, Fd(), ShmSegment()};
    Status s = connectTo(opt.table[p].listen, opt.deadline, &pend.fd);
    if (!s.ok()) return s.prepend("rank " + std::to_string(opt.rank) + ": peer " + std::to_string(p) + ": ");
    tuneSocket(pend.fd.get(), opt.socketBufBytes);
    PeerHello hello{kPeerMagic, opt.rank, p, 0, opt.commId, {}};
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
    s = sendAll(pend.fd.get(), &hello, sizeof(hello), opt.deadline);
    if (!s.ok()) return s.prepend("rank " + std::to_string(opt.rank) + ": hello to peer " + std::to_string(p) + ": ");
    outgoing.push_back(std::move(pend));
  }

  while (!expected.empty()) {
    Fd fd;
    Status s = acceptFrom(opt.listenFd, opt.deadline, opt.abort, &fd);
    if (!s.ok()) {
      return s.prepend("rank " + std::to_string(opt.rank) + ": waiting for " +
                       std::to_string(expected.size()) + " peer(s), first rank " +
                       std::to_string(*expected.begin()) + ": ");
    }
    PeerHello hello{};
    s = recvAll(fd.get(), &hello, sizeof(hello), std::min(opt.deadline, deadlineAfterMs(5000)));
    if (!s.ok() || hello.magic != kPeerMagic || hello.commId != opt.commId ||
        hello.to != opt.rank || !expected.count(hello.from)) {
      RINA_WARN("rank %d: refused a peer connection (%s)", opt.rank,
                !s.ok() ? s.message().c_str()
                : hello.magic != kPeerMagic ? "wrong magic"
                : hello.commId != opt.commId ? "wrong communicator id"
                                             : "unexpected rank");
      continue;
    }
    tuneSocket(fd.get(), opt.socketBufBytes);
    hello.shmName[sizeof(hello.shmName) - 1] = '\0';
    ShmSegment segment;
    bool useShm = false;
    if (hello.fifoBytes != 0) {
      Status o = ShmSegment::open(hello.shmName, &segment);
      if (o.ok()) {
        useShm = true;
      } else {
        RINA_WARN("rank %d: cannot map rank %d's shared memory, using TCP: %s", opt.rank,
                  hello.from, o.message().c_str());
      }
    }
    PeerReply reply{kPeerMagic, useShm ? 1 : 0};
    s = sendAll(fd.get(), &reply, sizeof(reply), opt.deadline);
    if (!s.ok()) return s.prepend("rank " + std::to_string(opt.rank) + ": reply to peer " + std::to_string(hello.from) + ": ");
    expected.erase(hello.from);
    RINA_TRY(makeConnection(opt, hello.from, std::move(fd), std::move(segment), useShm, out));
  }

  for (Pending& pend : outgoing) {
    PeerReply reply{};
    Status s = recvAll(pend.fd.get(), &reply, sizeof(reply), opt.deadline);
    if (s.ok() && reply.magic != kPeerMagic) s = errorf(rinaRemoteError, "wrong magic in reply");
    if (!s.ok()) return s.prepend("rank " + std::to_string(opt.rank) + ": peer " + std::to_string(pend.peer) + " did not accept: ");
    pend.segment.unlink();  // both sides have it mapped (or it is unused)
    RINA_TRY(makeConnection(opt, pend.peer, std::move(pend.fd), std::move(pend.segment),
                            reply.usesShm != 0, out));
  }
  return {};
}

}  // namespace rina::transport
