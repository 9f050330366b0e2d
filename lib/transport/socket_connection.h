// TCP connection to one peer (non-blocking socket). Receives that reduce go
// through a staging buffer; a partial trailing element waits there for the
// rest of its bytes.
#ifndef RINA_LIB_TRANSPORT_SOCKET_CONNECTION_H_
#define RINA_LIB_TRANSPORT_SOCKET_CONNECTION_H_

#include <memory>

#include "core/socket.h"
#include "transport/connection.h"

namespace rina::transport {

// Shared by shm connections too: a peer socket has hung up if it reports
// HUP/ERR or reads EOF.
Status checkSocketAlive(int fd, int peer);

class SocketConnection : public Connection {
 public:
  SocketConnection(int peer, Fd fd);
  ~SocketConnection() override;

  const char* kind() const override { return "socket"; }
  Status trySend(const void* data, size_t len, size_t* moved) override;
  // One sendmsg of both parts.
  Status trySendGather(const void* first, size_t firstLen, const void* second, size_t secondLen,
                       size_t* moved) override;
  Status tryRecv(void* dst, size_t len, const RecvReduce& r, size_t* moved) override;
  void armWait(WaitSet& ws, bool send, bool recv) override;
  Status checkAlive() override;
  Status checkGone() override { return checkSocketAlive(fd_.get(), peer()); }
  bool canResync() const override { return true; }
  // The new stream starts after a 32-byte marker made of the token, which
  // the receiving end looks for in what arrives (bytes before it are
  // dropped). The token is random per new communicator, so what a call left
  // half way matches it by chance with odds of 2^-128 per position.
  void beginResync(uint64_t token) override;
  Status pollResync(bool* done) override;
  void armResync(WaitSet& ws) override;

 private:
  Status recvSome(void* dst, size_t len, size_t* got);

  Fd fd_;
  char* staging_ = nullptr;  // kStagingBytes, 64-byte aligned
  size_t staged_ = 0;        // bytes of a partial element kept from last call
  // Resync: the marker, how much of it has left, and whether the peer's has come.
  char marker_[32] = {};
  size_t markerSent_ = 0;
  bool markerFound_ = true;
};

}  // namespace rina::transport

#endif  // RINA_LIB_TRANSPORT_SOCKET_CONNECTION_H_
