// TCP connection to one peer (non-blocking socket). Receives that reduce go
// through a staging buffer; a partial trailing element waits there for the
// rest of its bytes.
#ifndef RINA_LIB_TRANSPORT_SOCKET_CONNECTION_H_
#define RINA_LIB_TRANSPORT_SOCKET_CONNECTION_H_

#include <memory>

#include "core/socket.h"
#include "transport/connection.h"

namespace rina::transport {

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

 private:
  Status recvSome(void* dst, size_t len, size_t* got);

  Fd fd_;
  char* staging_ = nullptr;  // kStagingBytes, 64-byte aligned
  size_t staged_ = 0;        // bytes of a partial element kept from last call
};

// Shared by shm connections too: a peer socket has hung up if it reports
// HUP/ERR or reads EOF.
Status checkSocketAlive(int fd, int peer);

}  // namespace rina::transport

#endif  // RINA_LIB_TRANSPORT_SOCKET_CONNECTION_H_
