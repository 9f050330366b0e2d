// One peer over several TCP sockets. Each message is cut into stripes of a
// fixed size dealt round-robin over the sockets, starting again at socket 0
// with the next message, so both ends find every byte on the same socket
// without framing. Stripes are a multiple of 64 bytes and messages start on
// a stripe boundary, so no element of any datatype straddles two sockets and
// reduce-on-receive works per socket. Socket 0 carries the liveness check.
//
// It helps where one TCP stream cannot fill the link (a stream is limited by
// one core's protocol processing, ~20-30 Gbit/s): RINA_SOCKET_NSOCKS.
#ifndef RINA_LIB_TRANSPORT_STRIPED_CONNECTION_H_
#define RINA_LIB_TRANSPORT_STRIPED_CONNECTION_H_

#include <memory>
#include <vector>

#include "transport/socket_connection.h"

namespace rina::transport {

class StripedConnection : public Connection {
 public:
  StripedConnection(int peer, std::vector<std::unique_ptr<SocketConnection>> socks,
                    size_t stripeBytes);

  const char* kind() const override { return "socket"; }
  Status trySend(const void* data, size_t len, size_t* moved) override;
  Status tryRecv(void* dst, size_t len, const RecvReduce& r, size_t* moved) override;
  void endMessage(Direction d) override;
  void armWait(WaitSet& ws, bool send, bool recv) override;
  Status checkAlive() override;
  Status checkGone() override;
  // Each socket resyncs on its own; the next message starts at socket 0.
  bool canResync() const override { return true; }
  void beginResync(uint64_t token) override;
  Status pollResync(bool* done) override;
  void armResync(WaitSet& ws) override;

  size_t sockets() const { return socks_.size(); }
  size_t stripeBytes() const { return stripe_; }

 private:
  // Where the next byte of the current message goes, per direction.
  struct Cursor {
    size_t sock = 0;
    size_t inStripe = 0;
  };
  void advance(Cursor& c, size_t bytes);

  std::vector<std::unique_ptr<SocketConnection>> socks_;
  size_t stripe_;
  Cursor send_, recv_;
};

// RINA_SOCKET_NSOCKS=auto: one socket per 25 Gbit/s of the interface that
// carries fd's traffic (from sysfs), at least 1, at most 8; 1 when the speed
// is unknown (loopback, veth without a speed, containers).
int autoSocketsFor(int fd);

}  // namespace rina::transport

#endif  // RINA_LIB_TRANSPORT_STRIPED_CONNECTION_H_
