#include "wire/endpoint.h"

#include <arpa/inet.h>

#include <charconv>
#include <cstdio>

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

}  // namespace rina::ina
