// An IPv4 address and port in host byte order: the compact form the INA
// data plane keeps per rack member (the P4 programs hold the same pair).
// Pure (no sockets, no rina/core) so rina-switchd's pipeline and the fuzzers
// use it alone.
#ifndef RINA_LIB_WIRE_ENDPOINT_H_
#define RINA_LIB_WIRE_ENDPOINT_H_

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace rina::ina {

struct Endpoint {
  uint32_t addr = 0;
  uint16_t port = 0;

  bool operator==(const Endpoint&) const = default;
  sockaddr_in toSockaddr() const;
  static Endpoint fromSockaddr(const sockaddr_in& sa);
  std::string toString() const;       // "127.0.0.1:9000"
  std::string addressString() const;  // "127.0.0.1"
};

// Parses "a.b.c.d:port" (port 0..65535). False on anything else.
bool parseEndpoint(std::string_view text, Endpoint* out);

}  // namespace rina::ina

#endif  // RINA_LIB_WIRE_ENDPOINT_H_
