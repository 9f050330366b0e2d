// Batched UDP I/O (lib/wire/udp_batch.h) over loopback: every datagram
// arrives whole, in order per destination, from the sender's address, with
// segmentation offload on or off on either side; runs only join datagrams of
// one destination and length; a refused segmented send falls back to single
// datagrams and still delivers everything.
#include "wire/udp_batch.h"

#include <gtest/gtest.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <vector>

#include "rina/ina_wire.h"
#include "wire/net.h"

namespace rina::ina {
namespace {

struct Socket {
  Fd fd;
  Endpoint at;
};

Socket openLoopback() {
  Socket s;
  EXPECT_TRUE(openUdpSocket(Endpoint{0x7F000001, 0}, 4 << 20, &s.fd).ok());
  EXPECT_TRUE(boundEndpoint(s.fd.get(), &s.at).ok());
  return s;
}

// Datagram k: `len` bytes, each byte a function of (k, position).
std::vector<uint8_t> pattern(uint32_t k, size_t len) {
  std::vector<uint8_t> b(len);
  for (size_t i = 0; i < len; ++i) b[i] = static_cast<uint8_t>(k * 31 + i * 7 + 1);
  return b;
}

struct Received {
  std::vector<std::vector<uint8_t>> datagrams;
  size_t messages = 0;
  uint16_t fromPort = 0;
};

// Reads until `want` datagrams arrived (or 2 s passed).
Received receiveAll(UdpBatchReceiver& rx, int fd, size_t want) {
  Received r;
  for (int i = 0; i < 2000 && r.datagrams.size() < want; ++i) {
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, 1);
    int got = rx.receive(fd);
    if (got <= 0) continue;
    r.messages += static_cast<size_t>(got);
    for (const UdpBatchReceiver::Datagram& d : rx.datagrams()) {
      EXPECT_FALSE(d.truncated);
      r.datagrams.emplace_back(d.data, d.data + d.len);
      r.fromPort = Endpoint::fromSockaddr(rx.from(d)).port;
    }
  }
  return r;
}

struct Case {
  bool segment;
  bool gro;
};

// What gtest prints for GetParam() (instead of the struct's bytes).
void PrintTo(const Case& c, std::ostream* os) {
  *os << (c.segment ? "segmented sends" : "plain sends") << ", GRO " << (c.gro ? "on" : "off");
}

class UdpBatchTest : public ::testing::TestWithParam<Case> {};

TEST_P(UdpBatchTest, RunsArriveWholeAndInOrder) {
  Socket tx = openLoopback(), rxSock = openLoopback();
  const bool gro = GetParam().gro && UdpBatchReceiver::enableGro(rxSock.fd.get());
  UdpBatchReceiver rx(64, kMaxDatagramBytes, gro);
  UdpBatchSender sender(GetParam().segment);
  // 8212-byte datagrams (a full INA slice), a shorter one closing the run,
  // then 20-byte ones (port markers), then more full ones: 3 runs by length.
  std::vector<size_t> lengths;
  for (int i = 0; i < 20; ++i) lengths.push_back(8212);
  lengths.push_back(4000);
  for (int i = 0; i < 10; ++i) lengths.push_back(20);
  for (int i = 0; i < 9; ++i) lengths.push_back(8212);
  std::vector<std::vector<uint8_t>> data;
  std::vector<UdpOut> out;
  for (size_t k = 0; k < lengths.size(); ++k)
    data.push_back(pattern(static_cast<uint32_t>(k), lengths[k]));
  for (const auto& d : data) {
    out.push_back({rxSock.at.toSockaddr(), d.data(), static_cast<uint32_t>(d.size())});
  }
  UdpBatchSender::Result r = sender.send(tx.fd.get(), out, 100);
  EXPECT_EQ(r.dropped, 0u);
  Received got = receiveAll(rx, rxSock.fd.get(), data.size());
  ASSERT_EQ(got.datagrams.size(), data.size());
  for (size_t k = 0; k < data.size(); ++k) EXPECT_EQ(got.datagrams[k], data[k]) << "datagram " << k;
  EXPECT_EQ(got.fromPort, tx.at.port);
  if (GetParam().segment) {
    // At most 7 full slices fit under 64 KiB: 20 + 1 -> 3 messages, 10
    // markers -> 1, 9 -> 2.
    EXPECT_EQ(r.messages, 6u);
    EXPECT_EQ(sender.segmentLimit(), SIZE_MAX);
  } else {
    EXPECT_EQ(r.messages, data.size());
  }
  // A receiver with GRO sees the runs as few messages; without, one each.
  if (gro && GetParam().segment) {
    EXPECT_LT(got.messages, data.size());
  } else if (!gro) {
    EXPECT_EQ(got.messages, data.size());
  }
}

INSTANTIATE_TEST_SUITE_P(Offloads, UdpBatchTest,
                         ::testing::Values(Case{true, true}, Case{true, false}, Case{false, true},
                                           Case{false, false}),
                         [](const auto& p) {
                           return std::string(p.param.segment ? "Segment" : "Plain") +
                                  (p.param.gro ? "Gro" : "NoGro");
                         });

TEST(UdpBatch, RunsNeverCrossDestinations) {
  Socket tx = openLoopback(), a = openLoopback(), b = openLoopback();
  UdpBatchSender sender(true);
  std::vector<std::vector<uint8_t>> data;
  std::vector<UdpOut> out;
  // a a b b a a: three runs of two.
  const Socket* to[] = {&a, &a, &b, &b, &a, &a};
  for (uint32_t k = 0; k < 6; ++k) data.push_back(pattern(k, 1000));
  for (uint32_t k = 0; k < 6; ++k) {
    out.push_back({to[k]->at.toSockaddr(), data[k].data(), 1000});
  }
  UdpBatchSender::Result r = sender.send(tx.fd.get(), out, 100);
  EXPECT_EQ(r.messages, 3u);
  EXPECT_EQ(r.dropped, 0u);
  UdpBatchReceiver rxA(64, 2048, false), rxB(64, 2048, false);
  Received gotA = receiveAll(rxA, a.fd.get(), 4), gotB = receiveAll(rxB, b.fd.get(), 2);
  ASSERT_EQ(gotA.datagrams.size(), 4u);
  ASSERT_EQ(gotB.datagrams.size(), 2u);
  EXPECT_EQ(gotA.datagrams[0], data[0]);
  EXPECT_EQ(gotA.datagrams[1], data[1]);
  EXPECT_EQ(gotA.datagrams[2], data[4]);
  EXPECT_EQ(gotA.datagrams[3], data[5]);
  EXPECT_EQ(gotB.datagrams[0], data[2]);
  EXPECT_EQ(gotB.datagrams[1], data[3]);
}

// The kernel refuses UDP_SEGMENT on a socket without UDP checksums
// (SO_NO_CHECK): the sender lowers its limit to that length and sends the
// run datagram by datagram, losing nothing.
TEST(UdpBatch, RefusedSegmentationFallsBackToSingleDatagrams) {
  Socket tx = openLoopback(), rxSock = openLoopback();
  int one = 1;
  ASSERT_EQ(setsockopt(tx.fd.get(), SOL_SOCKET, SO_NO_CHECK, &one, sizeof one), 0);
  UdpBatchSender sender(true);
  std::vector<std::vector<uint8_t>> data;
  std::vector<UdpOut> out;
  for (uint32_t k = 0; k < 12; ++k) data.push_back(pattern(k, 1200));
  for (const auto& d : data) out.push_back({rxSock.at.toSockaddr(), d.data(), 1200});
  UdpBatchSender::Result r = sender.send(tx.fd.get(), out, 100);
  EXPECT_EQ(r.dropped, 0u);
  EXPECT_EQ(r.messages, data.size());
  EXPECT_EQ(sender.segmentLimit(), 1200u);
  UdpBatchReceiver rx(64, 2048, false);
  Received got = receiveAll(rx, rxSock.fd.get(), data.size());
  ASSERT_EQ(got.datagrams.size(), data.size());
  for (size_t k = 0; k < data.size(); ++k) EXPECT_EQ(got.datagrams[k], data[k]);
  // The limit is per length: with checksums back on, shorter datagrams go
  // as one segmented message again.
  int zero = 0;
  ASSERT_EQ(setsockopt(tx.fd.get(), SOL_SOCKET, SO_NO_CHECK, &zero, sizeof zero), 0);
  std::vector<UdpOut> small;
  for (const auto& d : data) small.push_back({rxSock.at.toSockaddr(), d.data(), 600});
  EXPECT_EQ(sender.send(tx.fd.get(), small, 100).messages, 1u);
  got = receiveAll(rx, rxSock.fd.get(), data.size());
  ASSERT_EQ(got.datagrams.size(), data.size());
  for (size_t k = 0; k < data.size(); ++k) {
    EXPECT_EQ(got.datagrams[k], std::vector<uint8_t>(data[k].begin(), data[k].begin() + 600));
  }
}

// A segment longer than the path MTU (EMSGSIZE; EINVAL on older kernels):
// the run goes as single datagrams, which the kernel sends as IP fragments,
// and every one arrives. Run in a child in its own network namespace, whose
// loopback gets a 1500-byte MTU.
int mtuChild() {
  if (::unshare(CLONE_NEWNET) != 0) return 77;
  int s = ::socket(AF_INET, SOCK_DGRAM, 0);
  ifreq ifr{};
  strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  ifr.ifr_mtu = 1500;
  if (::ioctl(s, SIOCSIFMTU, &ifr) != 0) return 2;
  if (::ioctl(s, SIOCGIFFLAGS, &ifr) != 0) return 3;
  ifr.ifr_flags |= IFF_UP;
  if (::ioctl(s, SIOCSIFFLAGS, &ifr) != 0) return 4;
  ::close(s);
  Socket tx = openLoopback(), rxSock = openLoopback();
  const bool gro = UdpBatchReceiver::enableGro(rxSock.fd.get());
  UdpBatchSender sender(true);
  std::vector<std::vector<uint8_t>> data;
  std::vector<UdpOut> out;
  for (uint32_t k = 0; k < 10; ++k) data.push_back(pattern(k, 8212));
  for (const auto& d : data) out.push_back({rxSock.at.toSockaddr(), d.data(), 8212});
  UdpBatchSender::Result r = sender.send(tx.fd.get(), out, 100);
  if (r.dropped != 0 || r.messages != data.size()) return 5;
  if (sender.segmentLimit() != 8212) return 6;
  UdpBatchReceiver rx(64, kMaxDatagramBytes, gro);
  Received got = receiveAll(rx, rxSock.fd.get(), data.size());
  if (got.datagrams != data) return 7;
  return 0;
}

TEST(UdpBatch, SegmentOverPathMtuFallsBackToFragments) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(mtuChild());
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "no network namespace here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1..4: namespace set-up, 5: send, 6: limit, 7: data";
}

// A datagram longer than the receive buffer is reported truncated, not
// passed on as whole.
TEST(UdpBatch, OversizedDatagramIsMarkedTruncated) {
  Socket tx = openLoopback(), rxSock = openLoopback();
  UdpBatchSender sender(false);
  std::vector<uint8_t> big = pattern(1, 3000);
  UdpOut o{rxSock.at.toSockaddr(), big.data(), 3000};
  ASSERT_EQ(sender.send(tx.fd.get(), {&o, 1}, 100).messages, 1u);
  UdpBatchReceiver rx(4, 1000, false);
  bool seen = false;
  for (int i = 0; i < 2000 && !seen; ++i) {
    pollfd p{rxSock.fd.get(), POLLIN, 0};
    ::poll(&p, 1, 1);
    if (rx.receive(rxSock.fd.get()) <= 0) continue;
    ASSERT_EQ(rx.datagrams().size(), 1u);
    EXPECT_TRUE(rx.datagrams()[0].truncated);
    seen = true;
  }
  EXPECT_TRUE(seen);
}

// Every datagram to a closed port: the sender reports dropped datagrams
// (the ICMP error surfaces on a later send) instead of stalling or failing.
TEST(UdpBatch, ErrorsDropMessagesInsteadOfStalling) {
  Socket tx = openLoopback();
  Endpoint closed;
  {
    Socket gone = openLoopback();
    closed = gone.at;
  }
  // Connected, so the port-unreachable answers come back as ECONNREFUSED.
  sockaddr_in sa = closed.toSockaddr();
  ASSERT_EQ(::connect(tx.fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  UdpBatchSender sender(true);
  std::vector<uint8_t> d = pattern(0, 100);
  std::vector<UdpOut> out(4, UdpOut{closed.toSockaddr(), d.data(), 100});
  size_t dropped = 0, messages = 0;
  for (int round = 0; round < 20; ++round) {
    UdpBatchSender::Result r = sender.send(tx.fd.get(), out, 5);
    dropped += r.dropped;
    messages += r.messages;
    ::poll(nullptr, 0, 1);
  }
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(dropped + 4 * messages, 80u);  // each message is a 4-datagram run
}

}  // namespace
}  // namespace rina::ina
