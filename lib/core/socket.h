// TCP socket plumbing shared by the bootstrap and the socket transport:
// an owning fd, addresses, and send/recv/connect/accept with deadlines.
#ifndef RINA_LIB_CORE_SOCKET_H_
#define RINA_LIB_CORE_SOCKET_H_

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace rina {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// ms milliseconds from now.
Deadline deadlineAfterMs(int64_t ms);
int64_t msUntil(Deadline d);  // clamped at 0

// Owns a file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset();

 private:
  int fd_ = -1;
};

// A socket address in a fixed-size, byte-order-stable form, so it can travel
// inside the unique id and the rendezvous table.
struct PackedAddr {
  uint8_t family = 0;  // AF_INET or AF_INET6
  uint8_t pad = 0;
  uint16_t port = 0;  // network byte order
  uint8_t addr[16] = {};

  static PackedAddr fromSockaddr(const sockaddr* sa);
  sockaddr_storage toSockaddr(socklen_t* len) const;
  std::string str() const;  // "1.2.3.4:5678"
  bool operator==(const PackedAddr&) const = default;
};
static_assert(sizeof(PackedAddr) == 20);

// "host:port" (IPv4, [IPv6] or a name) -> address.
Status parseHostPort(const std::string& text, PackedAddr* out);

// The address to listen on, chosen by spec (RINA_SOCKET_IFNAME's syntax);
// with an empty spec, the first non-loopback IPv4 interface that is up,
// else 127.0.0.1.
Status chooseListenAddress(const std::string& spec, PackedAddr* out, std::string* ifname);

// Bound, listening socket on addr (port 0: any); *bound gets the real port.
Status listenOn(const PackedAddr& addr, bool reuseAddr, Fd* out, PackedAddr* bound);

// Connects, retrying refused connections until the deadline (the peer may
// not be listening yet).
Status connectTo(const PackedAddr& addr, Deadline deadline, Fd* out);

// One attempt, bounded by deadline: a peer that refuses (gone) is
// rinaRemoteError at once, not retried. The socket is left non-blocking.
Status connectOnce(const PackedAddr& addr, Deadline deadline, Fd* out);

// Accepts one connection; abort (may be null) is checked every 50 ms.
Status acceptFrom(int listenFd, Deadline deadline, const std::atomic<bool>* abort, Fd* out);
// The same on whichever of several listening sockets has one first.
Status acceptFromAny(const int* listenFds, size_t count, Deadline deadline,
                     const std::atomic<bool>* abort, Fd* out);

// Whole-buffer blocking I/O on a (blocking or non-blocking) socket.
Status sendAll(int fd, const void* data, size_t len, Deadline deadline);
Status recvAll(int fd, void* data, size_t len, Deadline deadline);

Status setNonBlocking(int fd);
// A data socket: TCP_NODELAY, SO_SNDBUF/SO_RCVBUF (bufBytes > 0) and the
// congestion control named by RINA_TCP_CONGESTION (empty: the kernel's
// default). A name the kernel refuses is an error naming the knob, the
// value and the kernel's available ones, never a silent default.
Status tuneSocket(int fd, int bufBytes, std::string_view congestion = {});

// "hostname/boot-id": equal on two ranks iff they can share memory.
std::string hostIdentity();

}  // namespace rina

#endif  // RINA_LIB_CORE_SOCKET_H_
