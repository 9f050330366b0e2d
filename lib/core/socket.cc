#include "core/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "core/log.h"

namespace rina {

Deadline deadlineAfterMs(int64_t ms) { return Clock::now() + std::chrono::milliseconds(ms); }

int64_t msUntil(Deadline d) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(d - Clock::now()).count();
  return left > 0 ? left : 0;
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}

void Fd::reset() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

PackedAddr PackedAddr::fromSockaddr(const sockaddr* sa) {
  PackedAddr p;
  if (sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    p.family = AF_INET;
    p.port = in->sin_port;
    std::memcpy(p.addr, &in->sin_addr, 4);
  } else if (sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    p.family = AF_INET6;
    p.port = in6->sin6_port;
    std::memcpy(p.addr, &in6->sin6_addr, 16);
  }
  return p;
}

sockaddr_storage PackedAddr::toSockaddr(socklen_t* len) const {
  sockaddr_storage ss{};
  if (family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = port;
    std::memcpy(&in6->sin6_addr, addr, 16);
    *len = sizeof(sockaddr_in6);
  } else {
    auto* in = reinterpret_cast<sockaddr_in*>(&ss);
    in->sin_family = AF_INET;
    in->sin_port = port;
    std::memcpy(&in->sin_addr, addr, 4);
    *len = sizeof(sockaddr_in);
  }
  return ss;
}

std::string PackedAddr::str() const {
  char host[INET6_ADDRSTRLEN] = "?";
  inet_ntop(family == AF_INET6 ? AF_INET6 : AF_INET, addr, host, sizeof(host));
  std::string s = family == AF_INET6 ? std::string("[") + host + "]" : host;
  return s + ":" + std::to_string(ntohs(port));
}

Status parseHostPort(const std::string& text, PackedAddr* out) {
  std::string host, port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return errorf(rinaInvalidArgument, "bad address '%s' (want [v6addr]:port)", text.c_str());
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
      return errorf(rinaInvalidArgument, "bad address '%s' (want host:port)", text.c_str());
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || !res) {
    return errorf(rinaInvalidArgument, "cannot resolve '%s': %s", text.c_str(), gai_strerror(rc));
  }
  *out = PackedAddr::fromSockaddr(res->ai_addr);
  freeaddrinfo(res);
  return {};
}

namespace {

// RINA_SOCKET_IFNAME semantics as NCCL_SOCKET_IFNAME: comma-separated
// prefixes; leading ^ excludes; leading = matches names exactly.
bool interfaceMatches(const std::string& spec, const char* name) {
  if (spec.empty()) return std::strncmp(name, "lo", 2) != 0;
  std::string list = spec;
  bool exclude = false, exact = false;
  if (!list.empty() && list[0] == '^') exclude = true, list.erase(0, 1);
  if (!list.empty() && list[0] == '=') exact = true, list.erase(0, 1);
  bool hit = false;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string item =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) {
      if (exact ? item == name : std::strncmp(name, item.c_str(), item.size()) == 0) hit = true;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return exclude ? !hit : hit;
}

}  // namespace

Status chooseListenAddress(const std::string& spec, PackedAddr* out, std::string* ifname) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return systemErrorf(errno, "getifaddrs");
  bool found = false;
  for (int pass = 0; pass < 2 && !found; ++pass) {  // IPv4 first, then IPv6
    for (ifaddrs* i = list; i && !found; i = i->ifa_next) {
      if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
      int fam = i->ifa_addr->sa_family;
      if (fam != (pass == 0 ? AF_INET : AF_INET6)) continue;
      if (fam == AF_INET6 &&
          IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr)) {
        continue;
      }
      if (!interfaceMatches(spec, i->ifa_name)) continue;
      *out = PackedAddr::fromSockaddr(i->ifa_addr);
      out->port = 0;
      *ifname = i->ifa_name;
      found = true;
    }
  }
  freeifaddrs(list);
  if (found) return {};
  if (!spec.empty()) {
    return errorf(rinaInvalidArgument, "RINA_SOCKET_IFNAME=%s matches no interface that is up",
                  spec.c_str());
  }
  PackedAddr lo;
  lo.family = AF_INET;
  uint32_t loop = htonl(INADDR_LOOPBACK);
  std::memcpy(lo.addr, &loop, 4);
  *out = lo;
  *ifname = "lo";
  return {};
}

Status listenOn(const PackedAddr& addr, bool reuseAddr, Fd* out, PackedAddr* bound) {
  Fd fd(socket(addr.family == AF_INET6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return systemErrorf(errno, "socket");
  if (reuseAddr) {
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  }
  socklen_t len = 0;
  sockaddr_storage ss = addr.toSockaddr(&len);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    return systemErrorf(errno, "bind %s", addr.str().c_str());
  }
  if (listen(fd.get(), 1024) != 0) return systemErrorf(errno, "listen %s", addr.str().c_str());
  sockaddr_storage got{};
  socklen_t gotLen = sizeof(got);
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&got), &gotLen);
  *bound = PackedAddr::fromSockaddr(reinterpret_cast<sockaddr*>(&got));
  *out = std::move(fd);
  return {};
}

Status connectTo(const PackedAddr& addr, Deadline deadline, Fd* out) {
  int lastErr = 0;
  auto backoff = std::chrono::milliseconds(1);
  do {
    Fd fd(socket(addr.family == AF_INET6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return systemErrorf(errno, "socket");
    socklen_t len = 0;
    sockaddr_storage ss = addr.toSockaddr(&len);
    if (connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) == 0) {
      *out = std::move(fd);
      return {};
    }
    lastErr = errno;
    if (lastErr != ECONNREFUSED && lastErr != ETIMEDOUT && lastErr != EINTR &&
        lastErr != ECONNRESET && lastErr != EHOSTUNREACH && lastErr != ENETUNREACH) {
      break;
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
  } while (Clock::now() < deadline);
  return Status(
      lastErr == ECONNREFUSED ? rinaRemoteError : rinaSystemError,
      "connect to " + addr.str() + " failed until the deadline: " + std::strerror(lastErr));
}

Status connectOnce(const PackedAddr& addr, Deadline deadline, Fd* out) {
  Fd fd(socket(addr.family == AF_INET6 ? AF_INET6 : AF_INET,
               SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return systemErrorf(errno, "socket");
  socklen_t len = 0;
  sockaddr_storage ss = addr.toSockaddr(&len);
  int err = 0;
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    err = errno;
    while (err == EINPROGRESS || err == EINTR) {
      pollfd p{fd.get(), POLLOUT, 0};
      const int64_t left = msUntil(deadline);
      if (left <= 0) {
        return errorf(rinaTimeout, "connect to %s: no answer before the deadline",
                      addr.str().c_str());
      }
      if (poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000))) <= 0) continue;
      socklen_t errLen = sizeof err;
      getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &errLen);
      break;
    }
  }
  if (err != 0) {
    return Status(err == ECONNREFUSED || err == ECONNRESET ? rinaRemoteError : rinaSystemError,
                  "connect to " + addr.str() + ": " + std::strerror(err));
  }
  *out = std::move(fd);
  return {};
}

Status acceptFrom(int listenFd, Deadline deadline, const std::atomic<bool>* abort, Fd* out) {
  return acceptFromAny(&listenFd, 1, deadline, abort, out);
}

Status acceptFromAny(const int* listenFds, size_t count, Deadline deadline,
                     const std::atomic<bool>* abort, Fd* out) {
  constexpr size_t kMaxFds = 16;
  if (count == 0 || count > kMaxFds) {
    return errorf(rinaInternalError, "accept on %zu listening sockets (1 to %zu)", count, kMaxFds);
  }
  pollfd p[kMaxFds];
  for (;;) {
    if (abort && abort->load()) return errorf(rinaAborted, "aborted while accepting");
    int64_t left = msUntil(deadline);
    if (left <= 0) return errorf(rinaTimeout, "no connection arrived in time");
    for (size_t i = 0; i < count; ++i) p[i] = pollfd{listenFds[i], POLLIN, 0};
    int rc = poll(p, count, static_cast<int>(std::min<int64_t>(left, 50)));
    if (rc < 0 && errno != EINTR) return systemErrorf(errno, "poll on listening socket");
    if (rc <= 0) continue;
    for (size_t i = 0; i < count; ++i) {
      if (!(p[i].revents & POLLIN)) continue;
      int fd = accept4(listenFds[i], nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        *out = Fd(fd);
        return {};
      }
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
        return systemErrorf(errno, "accept");
      }
    }
  }
}

Status sendAll(int fd, const void* data, size_t len, Deadline deadline) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return Status(errno == EPIPE || errno == ECONNRESET ? rinaRemoteError : rinaSystemError,
                    std::string("send: ") + std::strerror(errno));
    }
    int64_t left = msUntil(deadline);
    if (left <= 0) return errorf(rinaTimeout, "send timed out");
    pollfd pf{fd, POLLOUT, 0};
    poll(&pf, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
  }
  return {};
}

Status recvAll(int fd, void* data, size_t len, Deadline deadline) {
  char* p = static_cast<char*>(data);
  while (len > 0) {
    ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return errorf(rinaRemoteError, "connection closed by peer");
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return Status(errno == ECONNRESET ? rinaRemoteError : rinaSystemError,
                    std::string("recv: ") + std::strerror(errno));
    }
    int64_t left = msUntil(deadline);
    if (left <= 0) return errorf(rinaTimeout, "receive timed out");
    pollfd pf{fd, POLLIN, 0};
    poll(&pf, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
  }
  return {};
}

Status setNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return systemErrorf(errno, "fcntl O_NONBLOCK");
  }
  return {};
}

namespace {

constexpr char kAvailableCongestion[] = "/proc/sys/net/ipv4/tcp_available_congestion_control";

std::string firstLineOf(const char* path) {
  std::string line;
  std::ifstream f(path);
  std::getline(f, line);
  return line;
}

}  // namespace

Status tuneSocket(int fd, int bufBytes, std::string_view congestion) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (bufBytes > 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufBytes, sizeof(bufBytes));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufBytes, sizeof(bufBytes));
  }
  if (congestion.empty()) return {};
  const std::string name(congestion);
  if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                 static_cast<socklen_t>(name.size())) != 0) {
    const int err = errno;
    return errorf(rinaInvalidArgument,
                  "RINA_TCP_CONGESTION=%s: the kernel refuses this TCP congestion control (%s); "
                  "available: %s (%s)",
                  name.c_str(), std::strerror(err), firstLineOf(kAvailableCongestion).c_str(),
                  kAvailableCongestion);
  }
  return {};
}

std::string hostIdentity() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string boot;
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::getline(f, boot);
  // The network namespace too: ranks in different namespaces stand for
  // different hosts (the emulated lab) even though they could share memory.
  char netns[64] = {0};
  ssize_t n = readlink("/proc/self/ns/net", netns, sizeof(netns) - 1);
  if (n < 0) netns[0] = '\0';
  return std::string(host) + "/" + boot + "/" + netns;
}

}  // namespace rina
