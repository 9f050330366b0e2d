#include "wire/net.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace rina::ina {
namespace {

PackedAddr packed(const Endpoint& e) {
  sockaddr_in sa = e.toSockaddr();
  return PackedAddr::fromSockaddr(reinterpret_cast<const sockaddr*>(&sa));
}

}  // namespace

Status openUdpSocket(const Endpoint& local, int bufferBytes, Fd* out) {
  Fd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return systemErrorf(errno, "UDP socket");
  if (bufferBytes > 0) {
    // Best effort: the kernel caps these at rmem_max / wmem_max, except the
    // FORCE forms (CAP_NET_ADMIN: root in the lab). Fragmented datagrams
    // cost several times their size in receive buffer.
    if (setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &bufferBytes, sizeof bufferBytes) != 0)
      setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &bufferBytes, sizeof bufferBytes);
    if (setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUFFORCE, &bufferBytes, sizeof bufferBytes) != 0)
      setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &bufferBytes, sizeof bufferBytes);
  }
  sockaddr_in sa = local.toSockaddr();
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    return systemErrorf(errno, "bind UDP %s", local.toString().c_str());
  }
  *out = std::move(fd);
  return Status();
}

Status boundEndpoint(int fd, Endpoint* out) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0 || sa.sin_family != AF_INET) {
    return systemErrorf(errno, "getsockname");
  }
  *out = Endpoint::fromSockaddr(sa);
  return Status();
}

Status listenTcp(const Endpoint& local, Fd* out, Endpoint* bound) {
  PackedAddr got;
  RINA_TRY(listenOn(packed(local), true, out, &got));
  return boundEndpoint(out->get(), bound);
}

Status connectTcp(const Endpoint& remote, int timeoutMs, Fd* out) {
  RINA_TRY(connectTo(packed(remote), deadlineAfterMs(timeoutMs), out));
  return tuneSocket(out->get(), 0);
}

Status sendLine(int fd, std::string_view text, int timeoutMs) {
  std::string line(text);
  line += '\n';
  return sendAll(fd, line.data(), line.size(), deadlineAfterMs(timeoutMs));
}

long LineReader::fill(int fd) {
  char buf[4096];
  ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0 && errno == ENOTSOCK) n = ::read(fd, buf, sizeof buf);  // a pipe (set O_NONBLOCK)
  if (n < 0) return (errno == EAGAIN || errno == EINTR) ? -EAGAIN : -errno;
  buffer_.append(buf, static_cast<size_t>(n));
  return n;
}

bool LineReader::nextLine(std::string* line) {
  size_t nl = buffer_.find('\n');
  if (nl == std::string::npos) return false;
  line->assign(buffer_, 0, nl);
  if (!line->empty() && line->back() == '\r') line->pop_back();
  buffer_.erase(0, nl + 1);
  return true;
}

Status readLine(int fd, LineReader& reader, int timeoutMs, std::string* line) {
  Deadline deadline = deadlineAfterMs(timeoutMs);
  while (!reader.nextLine(line)) {
    if (reader.overlong())
      return errorf(rinaRemoteError, "line longer than %zu bytes", LineReader::kMaxLine);
    int64_t left = msUntil(deadline);
    if (left <= 0) return errorf(rinaTimeout, "no complete line within %d ms", timeoutMs);
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno != EINTR) return systemErrorf(errno, "poll");
    if (r <= 0) continue;
    long n = reader.fill(fd);
    if (n == 0) return errorf(rinaRemoteError, "connection closed by peer");
    if (n < 0 && n != -EAGAIN) return systemErrorf(static_cast<int>(-n), "recv");
  }
  return Status();
}

}  // namespace rina::ina
