#include "ina/path_mtu.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include "core/socket.h"
#include "rina/ina_wire.h"
#include "wire/endpoint.h"

namespace rina::ina {
namespace {

constexpr size_t kIpUdpHeaderBytes = 20 + 8;  // IPv4 without options, UDP

}  // namespace

uint32_t pathMtuTowards(uint32_t addr) {
  Fd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return 0;
  // Connecting a UDP socket sends nothing; it picks the route.
  const sockaddr_in to = Endpoint{addr, 9}.toSockaddr();
  int mtu = 0;
  socklen_t len = sizeof mtu;
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0 ||
      ::getsockopt(fd.get(), IPPROTO_IP, IP_MTU, &mtu, &len) != 0 || mtu <= 0) {
    return 0;
  }
  return static_cast<uint32_t>(mtu);
}

size_t inaDatagramIpBytes(uint32_t payloadElems) {
  return kIpUdpHeaderBytes + kHeaderBytes + kWordBytes * payloadElems;
}

uint32_t payloadElemsFitting(uint32_t mtu) {
  if (mtu <= kIpUdpHeaderBytes + kHeaderBytes) return 0;
  return static_cast<uint32_t>((mtu - kIpUdpHeaderBytes - kHeaderBytes) / kWordBytes);
}

}  // namespace rina::ina
