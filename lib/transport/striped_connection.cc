#include "transport/striped_connection.h"

#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>

namespace rina::transport {

StripedConnection::StripedConnection(int peer, std::vector<std::unique_ptr<SocketConnection>> socks,
                                     size_t stripeBytes)
    : Connection(peer), socks_(std::move(socks)), stripe_(stripeBytes) {}

void StripedConnection::advance(Cursor& c, size_t bytes) {
  c.inStripe += bytes;
  if (c.inStripe == stripe_) {
    c.inStripe = 0;
    c.sock = (c.sock + 1) % socks_.size();
  }
}

Status StripedConnection::trySend(const void* data, size_t len, size_t* moved) {
  *moved = 0;
  const char* p = static_cast<const char*>(data);
  while (*moved < len) {
    size_t want = std::min(len - *moved, stripe_ - send_.inStripe);
    size_t n = 0;
    RINA_TRY(socks_[send_.sock]->trySend(p + *moved, want, &n));
    *moved += n;
    advance(send_, n);
    if (n < want) break;  // this socket is full; the next stripe must wait for it
  }
  return {};
}

Status StripedConnection::tryRecv(void* dst, size_t len, const RecvReduce& r, size_t* moved) {
  *moved = 0;
  char* p = static_cast<char*>(dst);
  while (*moved < len) {
    size_t want = std::min(len - *moved, stripe_ - recv_.inStripe);
    RecvReduce sub = r;
    if (sub.fn) sub.a = static_cast<const char*>(r.a) + *moved;
    size_t n = 0;
    RINA_TRY(socks_[recv_.sock]->tryRecv(p + *moved, want, sub, &n));
    *moved += n;
    advance(recv_, n);
    if (n < want) break;
  }
  return {};
}

void StripedConnection::endMessage(Direction d) {
  (d == Direction::kSend ? send_ : recv_) = Cursor{};
}

void StripedConnection::armWait(WaitSet& ws, bool send, bool recv) {
  // Only the socket holding each direction's next stripe can unblock it.
  if (send) socks_[send_.sock]->armWait(ws, true, false);
  if (recv) socks_[recv_.sock]->armWait(ws, false, true);
}

Status StripedConnection::checkAlive() {
  for (auto& s : socks_) RINA_TRY(s->checkAlive());
  return {};
}

Status StripedConnection::checkGone() {
  for (auto& s : socks_) RINA_TRY(s->checkGone());
  return {};
}

void StripedConnection::beginResync(uint64_t token) {
  send_ = recv_ = Cursor{};
  for (auto& s : socks_) s->beginResync(token);
}

Status StripedConnection::pollResync(bool* done) {
  *done = true;
  for (auto& s : socks_) {
    bool one = false;
    RINA_TRY(s->pollResync(&one));
    *done = *done && one;
  }
  return {};
}

void StripedConnection::armResync(WaitSet& ws) {
  for (auto& s : socks_) s->armResync(ws);
}

int autoSocketsFor(int fd) {
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return 1;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return 1;
  std::string name;
  for (ifaddrs* i = list; i && name.empty(); i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != local.ss_family) continue;
    if (local.ss_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
      auto* b = reinterpret_cast<sockaddr_in*>(&local);
      if (a->sin_addr.s_addr == b->sin_addr.s_addr) name = i->ifa_name;
    } else if (local.ss_family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(i->ifa_addr);
      auto* b = reinterpret_cast<sockaddr_in6*>(&local);
      if (std::memcmp(&a->sin6_addr, &b->sin6_addr, sizeof(in6_addr)) == 0) name = i->ifa_name;
    }
  }
  freeifaddrs(list);
  if (name.empty()) return 1;
  std::ifstream f("/sys/class/net/" + name + "/speed");
  long mbit = 0;
  if (!(f >> mbit) || mbit <= 0) return 1;  // loopback has no speed; veth may report -1
  return static_cast<int>(std::clamp((mbit + 24999) / 25000, 1L, 8L));
}

}  // namespace rina::transport
