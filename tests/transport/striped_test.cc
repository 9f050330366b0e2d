// Striping over several sockets: where every byte travels (checked against
// the layout computed here from the rule, byte i of a message on socket
// (i / stripe) % n), and reduce-on-receive across stripes and partial reads.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/socket.h"
#include "reduce/reduce.h"
#include "transport/striped_connection.h"

namespace rina::transport {
namespace {

struct Pairs {
  std::vector<int> near;  // our ends (wrapped by the StripedConnection)
  std::vector<int> far;   // raw ends the test reads and writes
};

std::unique_ptr<StripedConnection> makeStriped(int n, size_t stripe, Pairs* pairs) {
  std::vector<std::unique_ptr<SocketConnection>> socks;
  for (int i = 0; i < n; ++i) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    pairs->near.push_back(sv[0]);
    pairs->far.push_back(sv[1]);
    socks.push_back(std::make_unique<SocketConnection>(1, Fd(sv[0])));
  }
  return std::make_unique<StripedConnection>(1, std::move(socks), stripe);
}

void closeFar(Pairs& p) {
  for (int fd : p.far) close(fd);
}

size_t readAvailable(int fd, std::vector<uint8_t>* out) {
  uint8_t buf[65536];
  size_t total = 0;
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n <= 0) break;
    out->insert(out->end(), buf, buf + n);
    total += static_cast<size_t>(n);
  }
  return total;
}

TEST(Striped, EveryByteGoesToItsStripesSocket) {
  const int n = 3;
  const size_t stripe = 256;
  Pairs pairs;
  auto conn = makeStriped(n, stripe, &pairs);
  // Two messages: the second must start again on socket 0.
  for (size_t len : {size_t{1000}, size_t{300}}) {
    std::vector<uint8_t> msg(len);
    for (size_t i = 0; i < len; ++i) msg[i] = static_cast<uint8_t>(i * 7 + len);
    size_t sent = 0;
    while (sent < len) {  // small messages fit the socket buffers at once
      size_t moved = 0;
      ASSERT_TRUE(conn->trySend(msg.data() + sent, len - sent, &moved).ok());
      ASSERT_GT(moved, 0u);
      sent += moved;
    }
    conn->endMessage(Direction::kSend);
    std::vector<std::vector<uint8_t>> got(n);
    for (int s = 0; s < n; ++s) readAvailable(pairs.far[s], &got[s]);
    std::vector<std::vector<uint8_t>> want(n);
    for (size_t i = 0; i < len; ++i) want[(i / stripe) % n].push_back(msg[i]);
    for (int s = 0; s < n; ++s) EXPECT_EQ(got[s], want[s]) << "message " << len << " socket " << s;
  }
  closeFar(pairs);
}

TEST(Striped, ReduceOnReceiveAcrossStripesAndPartialWrites) {
  const int n = 4;
  const size_t stripe = 64;  // 16 floats
  const size_t count = 1000;
  Pairs pairs;
  auto conn = makeStriped(n, stripe, &pairs);
  std::vector<float> incoming(count), mine(count), out(count, -1.0f);
  for (size_t i = 0; i < count; ++i) {
    incoming[i] = static_cast<float>(i) * 0.5f;
    mine[i] = static_cast<float>(i % 13);
  }
  // The far side writes each socket's bytes in odd-sized pieces (3 bytes:
  // elements split between reads), socket by socket in reverse order, so the
  // receiver sees stripes arrive out of order and elements arrive in halves.
  const auto* bytes = reinterpret_cast<const uint8_t*>(incoming.data());
  std::vector<std::vector<uint8_t>> per(n);
  for (size_t i = 0; i < count * sizeof(float); ++i) per[(i / stripe) % n].push_back(bytes[i]);
  RecvReduce red{reduce::reduceFunction(rinaFloat32, rinaSum), mine.data(), sizeof(float)};
  size_t received = 0;
  std::vector<size_t> offset(n, 0);
  for (int round = 0; round < 100000 && received < count * sizeof(float); ++round) {
    for (int s = n - 1; s >= 0; --s) {
      size_t piece = std::min<size_t>(3, per[s].size() - offset[s]);
      if (piece) {
        ASSERT_EQ(write(pairs.far[s], per[s].data() + offset[s], piece), ssize_t(piece));
      }
      offset[s] += piece;
    }
    RecvReduce r = red;
    r.a = reinterpret_cast<const char*>(mine.data()) + received;
    size_t moved = 0;
    ASSERT_TRUE(conn->tryRecv(reinterpret_cast<char*>(out.data()) + received,
                              count * sizeof(float) - received, r, &moved)
                    .ok());
    ASSERT_EQ(moved % sizeof(float), 0u);
    received += moved;
  }
  ASSERT_EQ(received, count * sizeof(float));
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(out[i], incoming[i] + mine[i]) << i;
  }
  closeFar(pairs);
}

TEST(Striped, ClosedSocketMidMessageIsARemoteError) {
  Pairs pairs;
  auto conn = makeStriped(3, 128, &pairs);
  std::vector<uint8_t> stripe(128, 7);
  ASSERT_EQ(write(pairs.far[0], stripe.data(), 128), 128);
  ASSERT_EQ(write(pairs.far[1], stripe.data(), 128), 128);
  close(pairs.far[2]);  // the third stripe never comes
  std::vector<uint8_t> dst(1000);
  size_t got = 0;
  Status s;
  for (int i = 0; i < 10 && s.ok(); ++i) {
    size_t moved = 0;
    s = conn->tryRecv(dst.data() + got, dst.size() - got, RecvReduce{}, &moved);
    got += moved;
  }
  EXPECT_EQ(got, 256u);
  EXPECT_EQ(s.code(), rinaRemoteError);
  EXPECT_NE(s.message().find("peer 1"), std::string::npos) << s.message();
  close(pairs.far[0]);
  close(pairs.far[1]);
}

TEST(Striped, AutoSocketsIsOneOnLoopback) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(autoSocketsFor(fd), 1);  // lo has no speed in sysfs
  EXPECT_EQ(autoSocketsFor(-1), 1);
  close(fd);
}

}  // namespace
}  // namespace rina::transport
