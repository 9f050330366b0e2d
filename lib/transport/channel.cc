#include "transport/channel.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "core/log.h"
#include "transport/shm_connection.h"
#include "transport/shm_frames.h"
#include "transport/socket_connection.h"

namespace rina::transport {
namespace {

std::string pair(const MeshOptions& opt, int from, int to) {
  std::string s = "rank ";
  s += std::to_string(opt.rank);
  s += ": point-to-point channel ";
  s += std::to_string(from);
  s += " -> ";
  s += std::to_string(to);
  s += ": ";
  return s;
}

}  // namespace

Status openChannel(const MeshOptions& opt, int to, std::unique_ptr<Connection>* out) {
  PeerHello hello{};
  hello.magic = kPeerMagic;
  hello.from = opt.rank;
  hello.to = to;
  hello.commId = opt.commId;
  hello.nsocks = 1;
  hello.spine = -1;
  hello.kind = kChannelHello;
  ShmSegment segment;
  if (opt.shmEnabled && sameHost(opt, to)) {
    std::snprintf(hello.shmName, sizeof(hello.shmName), "/rina-%d-%016" PRIx64 "-%d-%d-p", getpid(),
                  opt.commId, opt.rank, to);
    // The sender is the segment's "lower" side: it writes FIFO 0.
    Status c = ShmSegment::create(hello.shmName, opt.fifoBytes, &segment);
    if (!c.ok()) return c.prepend(pair(opt, opt.rank, to));
    segment.leaveNameToPeer();
    hello.fifoBytes = opt.fifoBytes;
  }
  Fd fd;
  Status s = connectTo(opt.table[to].listen, opt.deadline, &fd);
  if (!s.ok()) return s.prepend(pair(opt, opt.rank, to) + "connecting: ");
  s = tunePeerSocket(opt, fd.get());
  if (!s.ok()) return s.prepend(pair(opt, opt.rank, to));
  s = sendAll(fd.get(), &hello, sizeof(hello), opt.deadline);
  if (!s.ok()) return s.prepend(pair(opt, opt.rank, to) + "hello: ");
  if (hello.fifoBytes != 0) {
    // The peer removes the name once it has mapped the segment, perhaps
    // after this rank has gone: what was sent is still delivered.
    *out = std::make_unique<ShmFrameConnection>(to, true, std::move(segment), std::move(fd),
                                                opt.table[to].pid);
    RINA_INFO("rank %d: opened a point-to-point channel to rank %d over shm", opt.rank, to);
    return {};
  }
  RINA_TRY(setNonBlocking(fd.get()));
  *out = std::make_unique<SocketConnection>(to, std::move(fd));
  RINA_INFO("rank %d: opened a point-to-point channel to rank %d over socket", opt.rank, to);
  return {};
}

Status acceptChannel(const MeshOptions& opt, Arrival arrival, std::unique_ptr<Connection>* out) {
  const PeerHello& hello = arrival.hello;
  const int from = hello.from;
  if (from < 0 || from >= static_cast<int>(opt.table.size()) || from == opt.rank) {
    return errorf(rinaRemoteError, "rank %d: a point-to-point channel claims to come from rank %d",
                  opt.rank, from);
  }
  Status t = tunePeerSocket(opt, arrival.fd.get());
  if (!t.ok()) return t.prepend(pair(opt, from, opt.rank));
  if (hello.fifoBytes != 0) {
    char name[sizeof(hello.shmName)];
    std::memcpy(name, hello.shmName, sizeof(name));
    name[sizeof(name) - 1] = '\0';
    ShmSegment segment;
    Status s = ShmSegment::open(name, &segment);
    if (!s.ok()) return s.prepend(pair(opt, from, opt.rank) + "mapping the peer's segment: ");
    shm_unlink(name);  // both sides have it mapped
    *out = std::make_unique<ShmFrameConnection>(from, false, std::move(segment),
                                                std::move(arrival.fd), opt.table[from].pid);
    RINA_INFO("rank %d: took a point-to-point channel from rank %d over shm", opt.rank, from);
    return {};
  }
  RINA_TRY(setNonBlocking(arrival.fd.get()));
  *out = std::make_unique<SocketConnection>(from, std::move(arrival.fd));
  RINA_INFO("rank %d: took a point-to-point channel from rank %d over socket", opt.rank, from);
  return {};
}

Status acceptArrivalNow(const MeshOptions& opt, int listenFd, Deadline deadline, Arrival* out,
                        bool* got) {
  *got = false;
  pollfd p{listenFd, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN)) return {};
  int fd = accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED) return {};
    return systemErrorf(errno, "rank %d: accept", opt.rank);
  }
  Arrival a{Fd(fd), PeerHello{}};
  const char* refusal = nullptr;
  readHello(a.fd, opt.rank, opt.commId, opt.successorId, deadline, &a.hello, &refusal);
  if (refusal) {
    RINA_WARN("rank %d: refused a peer connection (%s)", opt.rank, refusal);
    return {};
  }
  *out = std::move(a);
  *got = true;
  return {};
}

}  // namespace rina::transport
