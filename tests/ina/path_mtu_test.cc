// An INA datagram against the path MTU: its size on IP, the most elements
// a path fits (worked by hand: IPv4 20 + UDP 8 + INA header 24 + 4 per
// element), and the route's MTU as the kernel reports it.
#include "ina/path_mtu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "rina/ina_wire.h"

namespace rina::ina {
namespace {

TEST(PathMtu, DatagramSizeOnIp) {
  EXPECT_EQ(inaDatagramIpBytes(2048), 8244u);  // 20 + 8 + 24 + 8192
  EXPECT_EQ(inaDatagramIpBytes(0), 52u);
  EXPECT_EQ(inaDatagramIpBytes(362), 1500u);
}

TEST(PathMtu, MostElementsThatFit) {
  EXPECT_EQ(payloadElemsFitting(1500), 362u);  // (1500 - 52) / 4
  EXPECT_EQ(payloadElemsFitting(1503), 362u);  // a part element does not count
  EXPECT_EQ(payloadElemsFitting(9000), 2237u);
  EXPECT_EQ(payloadElemsFitting(52), 0u);
  EXPECT_EQ(payloadElemsFitting(0), 0u);
  // The decision the rack agent makes: 2048 elements fit 9000, not 1500.
  EXPECT_LE(inaDatagramIpBytes(2048), 9000u);
  EXPECT_GT(inaDatagramIpBytes(2048), 1500u);
  for (uint32_t mtu : {1280u, 1500u, 4000u, 9000u}) {
    EXPECT_LE(inaDatagramIpBytes(payloadElemsFitting(mtu)), mtu) << mtu;
    EXPECT_GT(inaDatagramIpBytes(payloadElemsFitting(mtu) + 1), mtu) << mtu;
  }
}

// The route to 127.0.0.1 leaves by lo: its MTU is lo's, as sysfs says, up
// to the largest IPv4 packet (lo's 65536 is reported as 65535).
TEST(PathMtu, LoopbackRouteHasTheInterfaceMtu) {
  std::ifstream f("/sys/class/net/lo/mtu");
  uint32_t lo = 0;
  if (!(f >> lo)) GTEST_SKIP() << "no /sys/class/net/lo/mtu";
  EXPECT_EQ(pathMtuTowards(0x7F000001), std::min<uint32_t>(lo, 65535));
}

}  // namespace
}  // namespace rina::ina
