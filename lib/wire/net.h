// Socket pieces of INA on top of core/socket.h: UDP sockets for the data
// plane, TCP for CTRL (listen/connect by Endpoint), and newline-framed
// messages with deadlines.
#ifndef RINA_LIB_WIRE_NET_H_
#define RINA_LIB_WIRE_NET_H_

#include <string>
#include <string_view>

#include "core/socket.h"
#include "core/status.h"
#include "wire/endpoint.h"

namespace rina::ina {

// A non-blocking UDP socket bound to `local` (port 0: any).
Status openUdpSocket(const Endpoint& local, int bufferBytes, Fd* out);
// The IPv4 address a socket is bound to.
Status boundEndpoint(int fd, Endpoint* out);
// A listening TCP socket (SO_REUSEADDR); *bound gets the real port.
Status listenTcp(const Endpoint& local, Fd* out, Endpoint* bound);
// Connects within timeoutMs; TCP_NODELAY.
Status connectTcp(const Endpoint& remote, int timeoutMs, Fd* out);
// Sends text + '\n' within timeoutMs.
Status sendLine(int fd, std::string_view text, int timeoutMs);

// Accumulates bytes from a stream and yields complete '\n'-terminated lines.
class LineReader {
 public:
  static constexpr size_t kMaxLine = 64 * 1024;
  // Reads what is available once (never blocks): bytes read, 0 at EOF,
  // -EAGAIN if nothing is available, else -errno.
  long fill(int fd);
  // Takes the next complete line (without '\n'); false if none yet.
  bool nextLine(std::string* line);
  // True when more than kMaxLine bytes arrived without a newline.
  bool overlong() const { return buffer_.size() > kMaxLine; }
  // Bytes held (complete lines and a partial one), and whether a complete
  // line is among them.
  size_t buffered() const { return buffer_.size(); }
  bool hasLine() const { return buffer_.find('\n') != std::string::npos; }

 private:
  std::string buffer_;
};

// Reads one line, waiting at most timeoutMs (rinaTimeout; rinaRemoteError
// when the peer closes).
Status readLine(int fd, LineReader& reader, int timeoutMs, std::string* line);

}  // namespace rina::ina

#endif  // RINA_LIB_WIRE_NET_H_
