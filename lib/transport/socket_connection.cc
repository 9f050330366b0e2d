#include "transport/socket_connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "transport/wait_set.h"

namespace rina::transport {
namespace {

constexpr size_t kStagingBytes = 256 << 10;

Status socketError(int err, int peer, const char* what) {
  if (err == EPIPE || err == ECONNRESET) {
    return errorf(rinaRemoteError, "peer %d closed the connection (%s: %s)", peer, what,
                  std::strerror(err));
  }
  return systemErrorf(err, "%s to/from peer %d", what, peer);
}

}  // namespace

SocketConnection::SocketConnection(int peer, Fd fd) : Connection(peer), fd_(std::move(fd)) {
  staging_ = static_cast<char*>(std::aligned_alloc(64, kStagingBytes));
}

SocketConnection::~SocketConnection() { std::free(staging_); }

Status SocketConnection::trySend(const void* data, size_t len, size_t* moved) {
  *moved = 0;
  if (len == 0) return {};
  ssize_t n = send(fd_.get(), data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n > 0) {
    *moved = static_cast<size_t>(n);
    return {};
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return {};
  return socketError(errno, peer(), "send");
}

Status SocketConnection::trySendGather(const void* first, size_t firstLen, const void* second,
                                       size_t secondLen, size_t* moved) {
  *moved = 0;
  iovec parts[2] = {{const_cast<void*>(first), firstLen}, {const_cast<void*>(second), secondLen}};
  msghdr m{};
  m.msg_iov = parts;
  m.msg_iovlen = secondLen > 0 ? 2 : 1;
  if (firstLen + secondLen == 0) return {};
  ssize_t n = sendmsg(fd_.get(), &m, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n > 0) {
    *moved = static_cast<size_t>(n);
    return {};
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return {};
  return socketError(errno, peer(), "sendmsg");
}

Status SocketConnection::recvSome(void* dst, size_t len, size_t* got) {
  *got = 0;
  ssize_t n = recv(fd_.get(), dst, len, MSG_DONTWAIT);
  if (n > 0) {
    *got = static_cast<size_t>(n);
    return {};
  }
  if (n == 0) return errorf(rinaRemoteError, "peer %d closed the connection", peer());
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return {};
  return socketError(errno, peer(), "recv");
}

Status SocketConnection::tryRecv(void* dst, size_t len, const RecvReduce& r, size_t* moved) {
  *moved = 0;
  if (len == 0) return {};
  if (!r.fn) return recvSome(dst, len, moved);
  size_t want = std::min(len, kStagingBytes) - staged_;
  size_t got = 0;
  RINA_TRY(recvSome(staging_ + staged_, want, &got));
  staged_ += got;
  size_t whole = staged_ - staged_ % r.elemSize;
  if (whole == 0) return {};
  r.fn(dst, r.a, staging_, whole / r.elemSize);
  staged_ -= whole;
  if (staged_ > 0) std::memmove(staging_, staging_ + whole, staged_);
  *moved = whole;
  return {};
}

void SocketConnection::armWait(WaitSet& ws, bool send, bool recv) {
  short ev = 0;
  if (send) ev |= POLLOUT;
  if (recv) ev |= POLLIN;
  ws.addFd(fd_.get(), ev);
}

Status checkSocketAlive(int fd, int peer) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return {};
  if (p.revents & (POLLERR | POLLHUP | POLLRDHUP)) {
    return errorf(rinaRemoteError, "peer %d hung up (process exited or was killed)", peer);
  }
  return {};
}

void SocketConnection::beginResync(uint64_t token) {
  staged_ = 0;
  const uint64_t words[4] = {0x434e595341414e49ull /* "INAASYNC" */, token, ~token,
                             token * 0x9e3779b97f4a7c15ull};
  std::memcpy(marker_, words, sizeof marker_);
  markerSent_ = 0;
  markerFound_ = false;
}

Status SocketConnection::pollResync(bool* done) {
  while (markerSent_ < sizeof marker_) {
    size_t n = 0;
    RINA_TRY(trySend(marker_ + markerSent_, sizeof marker_ - markerSent_, &n));
    if (n == 0) break;
    markerSent_ += n;
  }
  // Peek, drop what comes before the marker (keeping a tail the marker may
  // begin in), and take the marker itself once it is all there.
  while (!markerFound_) {
    const ssize_t n = recv(fd_.get(), staging_, kStagingBytes, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return errorf(rinaRemoteError, "peer %d closed the connection", peer());
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
      return socketError(errno, peer(), "recv");
    }
    const size_t have = static_cast<size_t>(n);
    const void* at = memmem(staging_, have, marker_, sizeof marker_);
    size_t drop = 0;
    if (at) {
      drop = static_cast<size_t>(static_cast<const char*>(at) - staging_) + sizeof marker_;
      markerFound_ = true;
    } else if (have >= sizeof marker_) {
      drop = have - (sizeof marker_ - 1);
    } else {
      break;
    }
    const ssize_t took = recv(fd_.get(), staging_, drop, MSG_DONTWAIT);
    if (took < 0) return socketError(errno, peer(), "recv");
    if (static_cast<size_t>(took) != drop) {
      return errorf(rinaInternalError, "peer %d: %zd of %zu peeked bytes could be read", peer(),
                    took, drop);
    }
  }
  *done = markerSent_ == sizeof marker_ && markerFound_;
  return {};
}

void SocketConnection::armResync(WaitSet& ws) {
  armWait(ws, markerSent_ < sizeof marker_, !markerFound_);
}

Status SocketConnection::checkAlive() {
  // Data may still be queued before the hang-up; only HUP/ERR with nothing
  // readable is final, and recv() reports EOF itself.
  pollfd p{fd_.get(), POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return {};
  if ((p.revents & (POLLERR | POLLHUP)) && !(p.revents & POLLIN)) {
    return errorf(rinaRemoteError, "peer %d hung up (process exited or was killed)", peer());
  }
  return {};
}

}  // namespace rina::transport
