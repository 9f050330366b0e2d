// What two ranks exchange over their TCP socket to connect RC queue pairs:
// the QP number, addressing (LID, GID), the first PSN, and where the
// receiver's ring lives (address, rkey, slot size and count). A fixed
// 80-byte little-endian record with a magic and version, checked on decode.
#ifndef RINA_LIB_TRANSPORT_VERBS_QP_INFO_H_
#define RINA_LIB_TRANSPORT_VERBS_QP_INFO_H_

#include <array>
#include <cstdint>

#include "core/status.h"

namespace rina::transport::verbs {

struct QpInfo {
  uint32_t qpn = 0;  // 24 bits
  uint16_t lid = 0;  // InfiniBand; 0 on RoCE
  uint8_t port = 1;
  uint8_t gidIndex = 0;
  std::array<uint8_t, 16> gid{};
  uint32_t psn = 0;       // 24 bits
  uint32_t mtu = 0;       // enum ibv_mtu of the port
  uint64_t ringAddr = 0;  // receive ring, written by the peer
  uint32_t ringRkey = 0;
  uint32_t slotBytes = 0;
  uint32_t slots = 0;        // power of two
  uint32_t creditStart = 0;  // initial counter of both credit windows
};

constexpr size_t kQpInfoBytes = 80;
using QpInfoWire = std::array<uint8_t, kQpInfoBytes>;

QpInfoWire encodeQpInfo(const QpInfo& info);
// Rejects a wrong magic or version, and values no real peer would send.
Status decodeQpInfo(const QpInfoWire& wire, QpInfo* out);

}  // namespace rina::transport::verbs

#endif  // RINA_LIB_TRANSPORT_VERBS_QP_INFO_H_
