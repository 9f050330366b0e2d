#include "ina/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstring>

namespace rina::ina {

sockaddr_in Endpoint::toSockaddr() const {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(addr);
  sa.sin_port = htons(port);
  return sa;
}

Endpoint Endpoint::fromSockaddr(const sockaddr_in& sa) {
  return Endpoint{ntohl(sa.sin_addr.s_addr), ntohs(sa.sin_port)};
}

std::string Endpoint::addressString() const {
  char buf[16];
  snprintf(buf, sizeof buf, "%u.%u.%u.%u", addr >> 24, (addr >> 16) & 0xFF, (addr >> 8) & 0xFF,
           addr & 0xFF);
  return buf;
}

std::string Endpoint::toString() const { return addressString() + ":" + std::to_string(port); }

bool parseEndpoint(std::string_view text, Endpoint* out) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= text.size()) return false;
  std::string host(text.substr(0, colon));
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) != 1) return false;
  std::string_view portText = text.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(portText.data(), portText.data() + portText.size(), port);
  if (ec != std::errc() || end != portText.data() + portText.size() || port > 65535) return false;
  out->addr = ntohl(a.s_addr);
  out->port = static_cast<uint16_t>(port);
  return true;
}

void UniqueFd::reset() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

int openUdpSocket(const Endpoint& local, int bufferBytes, UniqueFd* out) {
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return -errno;
  if (bufferBytes > 0) {
    // Best effort: the kernel caps these at rmem_max / wmem_max.
    setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &bufferBytes, sizeof bufferBytes);
    setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &bufferBytes, sizeof bufferBytes);
  }
  sockaddr_in sa = local.toSockaddr();
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return -errno;
  *out = std::move(fd);
  return 0;
}

int localEndpoint(int fd, Endpoint* out) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return -errno;
  *out = Endpoint::fromSockaddr(sa);
  return 0;
}

int openTcpListener(const Endpoint& local, UniqueFd* out) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return -errno;
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa = local.toSockaddr();
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return -errno;
  if (::listen(fd.get(), 64) != 0) return -errno;
  *out = std::move(fd);
  return 0;
}

int connectTcp(const Endpoint& remote, int timeoutMs, UniqueFd* out) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return -errno;
  sockaddr_in sa = remote.toSockaddr();
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    if (errno != EINPROGRESS) return -errno;
    pollfd p{fd.get(), POLLOUT, 0};
    int r = ::poll(&p, 1, timeoutMs);
    if (r == 0) return -ETIMEDOUT;
    if (r < 0) return -errno;
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return -err;
  }
  int flags = fcntl(fd.get(), F_GETFL);
  fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  int one = 1;
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  *out = std::move(fd);
  return 0;
}

int writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd p{fd, POLLOUT, 0};
        if (::poll(&p, 1, 1000) <= 0) return -ETIMEDOUT;
        continue;
      }
      return -errno;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
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

int readLine(int fd, LineReader& reader, int timeoutMs, std::string* line) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  while (!reader.nextLine(line)) {
    if (reader.overlong()) return -EMSGSIZE;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return -ETIMEDOUT;
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno != EINTR) return -errno;
    if (r <= 0) continue;
    long n = reader.fill(fd);
    if (n == 0) return -ECONNRESET;
    if (n < 0 && n != -EAGAIN) return static_cast<int>(n);
  }
  return 0;
}

}  // namespace rina::ina
