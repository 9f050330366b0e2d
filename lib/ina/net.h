// Small POSIX networking pieces shared by the INA host client and
// rina-switchd: IPv4 endpoints, an owning file descriptor, UDP/TCP sockets
// and newline-framed messages. No rina/core dependency (switchd links this
// file on its own), so failures are reported as -errno.
#ifndef RINA_LIB_INA_NET_H_
#define RINA_LIB_INA_NET_H_

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace rina::ina {

// An IPv4 address and port, both in host byte order.
struct Endpoint {
  uint32_t addr = 0;
  uint16_t port = 0;

  bool operator==(const Endpoint&) const = default;
  sockaddr_in toSockaddr() const;
  static Endpoint fromSockaddr(const sockaddr_in& sa);
  std::string toString() const;         // "127.0.0.1:9000"
  std::string addressString() const;    // "127.0.0.1"
};

// Parses "a.b.c.d:port" (port 0..65535). False on anything else.
bool parseEndpoint(std::string_view text, Endpoint* out);

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

// A non-blocking UDP socket bound to `local` (port 0: any). Returns -errno.
int openUdpSocket(const Endpoint& local, int bufferBytes, UniqueFd* out);
// The address a socket is bound to.
int localEndpoint(int fd, Endpoint* out);
// A listening TCP socket (SO_REUSEADDR), blocking.
int openTcpListener(const Endpoint& local, UniqueFd* out);
// Connects with a timeout; the socket is left blocking with TCP_NODELAY.
int connectTcp(const Endpoint& remote, int timeoutMs, UniqueFd* out);
// Writes all of `data`; -errno on failure.
int writeAll(int fd, std::string_view data);

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

 private:
  std::string buffer_;
};

// Reads one line from a blocking socket, waiting at most timeoutMs.
// Returns 0, or -ETIMEDOUT / -ECONNRESET (EOF) / -errno.
int readLine(int fd, LineReader& reader, int timeoutMs, std::string* line);

}  // namespace rina::ina

#endif  // RINA_LIB_INA_NET_H_
