// The RDMA UC backend of the INA client without a device: the write each
// native datagram becomes, the bytes a UC requester would send for it (built
// by the software NIC from the InfiniBand header layout) against
// include/rina/ina_roce.h's table and decoder, the grants the backend refuses,
// the client's UDP fallback, and the backend choice (RINA_INA_TRANSPORT).
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <vector>

#include "ina/ina_client.h"
#include "ina/sender_choice.h"
#include "ina/uc_sender.h"
#include "rina/ina_roce.h"
#include "soft_uc_nic.h"
#include "wire/net.h"

namespace rina::ina::testing {
namespace {

using transport::verbs::UcWriteRequest;

Header sampleHeader() {
  Header h;
  h.type = Type::kData;
  h.flags = kFlagLast | kFlagResend;
  h.job = 0x0BCD;
  h.slot = 0x1234;
  h.shadow = true;
  h.worker = 3;
  h.fanIn = 5;
  h.seq = 0xA1B2C3D4;
  h.exponent = -7;
  h.elems = 4;
  h.token = 0xDEADBEEF01234567ull;
  return h;
}

std::vector<uint8_t> nativeBytes(const Header& h, const std::vector<int32_t>& payload) {
  std::vector<uint8_t> b(kHeaderBytes + 4 * payload.size());
  EXPECT_TRUE(encode(h, payload, b));
  return b;
}

// The table in include/rina/ina_roce.h, byte by byte, for sampleHeader():
// what a NIC sends for the write the UC backend posts.
TEST(InaUc, WriteCarriesTheFieldsWhereInaRoceHPutsThem) {
  const std::vector<int32_t> payload = {1, -2, 0x01020304, -0x7fffffff};
  const std::vector<uint8_t> native = nativeBytes(sampleHeader(), payload);
  UcWriteRequest wr;
  ASSERT_TRUE(ucWriteFor(native, &wr));
  EXPECT_EQ(wr.remoteAddr, 0x00009234A1B2C3D4ull);  // slot 0x1234 | shadow bit 15, seq
  EXPECT_EQ(wr.rkey, 0xDEADBEEFu);                  // token bits 63..32
  EXPECT_EQ(wr.imm, 0x150305F9u);                   // DATA<<4|LAST|RESEND, worker, fan-in, -7
  ASSERT_EQ(wr.payload.size(), 20u);                // DMA length = 4 + 4 x elems
  const uint8_t low[4] = {0x01, 0x23, 0x45, 0x67};  // token bits 31..0 lead the write
  EXPECT_EQ(std::memcmp(wr.payload.data(), low, 4), 0);
  EXPECT_EQ(std::memcmp(wr.payload.data() + 4, native.data() + kHeaderBytes, 16), 0);

  const std::vector<uint8_t> packet = ucWritePacket(0x0BCD, 0x777777, wr);
  const uint8_t expected[36] = {
      0x2B, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x0B, 0xCD,  // opcode, flags, P_Key, QP = job
      0x00, 0x77, 0x77, 0x77,                          // PSN: the NIC's, not the seq
      0x00, 0x00, 0x92, 0x34, 0xA1, 0xB2, 0xC3, 0xD4,  // VA: slot|shadow, seq
      0xDE, 0xAD, 0xBE, 0xEF, 0x00, 0x00, 0x00, 0x14,  // R_Key = token high, DMA length 20
      0x15, 0x03, 0x05, 0xF9,                          // immediate
      0x01, 0x23, 0x45, 0x67};                         // token low
  ASSERT_EQ(packet.size(), roce::kOverheadBytes + 16);
  for (size_t i = 0; i < 36; ++i) EXPECT_EQ(packet[i], expected[i]) << "byte " << i;
  EXPECT_EQ(std::memcmp(packet.data() + 36, native.data() + kHeaderBytes, 16), 0);
}

// Whatever PSN the NIC uses, rina-switchd's decoder sees the datagram the
// client built, and translates it back to the same native bytes.
TEST(InaUc, NicPacketsDecodeToTheClientsDatagramForEveryTypeFlagAndExponent) {
  std::vector<uint8_t> back(kMaxDatagramBytes);
  uint32_t psn = 0xFFFFF0;  // wraps at 2^24 on the way
  for (Type type : {Type::kData, Type::kBcast}) {
    for (uint8_t flags = 0; flags < 16; ++flags) {
      for (int e : {-128, -1, 0, 1, 31, 127}) {
        Header h = sampleHeader();
        h.type = type;
        h.flags = flags;
        h.exponent = static_cast<int8_t>(e);
        h.shadow = (flags & 1) != 0;
        h.fanIn = type == Type::kBcast ? 1 : 5;
        h.worker = type == Type::kBcast ? 0 : 4;
        const std::vector<uint8_t> native = nativeBytes(h, {7, 8, 9, 10});
        UcWriteRequest wr;
        ASSERT_TRUE(ucWriteFor(native, &wr));
        const std::vector<uint8_t> packet = ucWritePacket(h.job, psn++, wr);
        Header got;
        ASSERT_EQ(roce::decode(packet, &got), roce::RoceError::kOk)
            << "flags " << int(flags) << " exponent " << e;
        roce::RoceError err;
        size_t n = roce::toNative(packet, back, &err);
        ASSERT_EQ(n, native.size());
        EXPECT_EQ(std::memcmp(back.data(), native.data(), n), 0)
            << "flags " << int(flags) << " exponent " << e;
        // roce::encode (what switchd sends back) differs only in the PSN.
        std::vector<uint8_t> encoded(packet.size());
        ASSERT_EQ(roce::encode(h, std::vector<int32_t>{7, 8, 9, 10}, encoded), packet.size());
        for (size_t i = 0; i < packet.size(); ++i) {
          if (i >= 9 && i < 12) continue;
          ASSERT_EQ(encoded[i], packet[i]) << "byte " << i;
        }
      }
    }
  }
}

TEST(InaUc, UndecodableDatagramsMakeNoWrite) {
  std::vector<uint8_t> native = nativeBytes(sampleHeader(), {1, 2, 3, 4});
  UcWriteRequest wr;
  native[0] = 0x62;  // magic 5 -> magic 6
  EXPECT_FALSE(ucWriteFor(native, &wr));
  native = nativeBytes(sampleHeader(), {1, 2, 3, 4});
  native.pop_back();  // length disagrees with elems
  EXPECT_FALSE(ucWriteFor(native, &wr));
}

// A UDP socket standing in for the switch's RoCE port.
struct FakeSwitch {
  Fd socket;
  Endpoint at;
  FakeSwitch() {
    EXPECT_TRUE(openUdpSocket({0x7F000001, 0}, 1 << 20, &socket).ok());
    EXPECT_TRUE(boundEndpoint(socket.get(), &at).ok());
  }
  std::vector<uint8_t> next() {
    pollfd p{socket.get(), POLLIN, 0};
    if (poll(&p, 1, 2000) != 1) return {};
    std::vector<uint8_t> b(roce::kMaxDatagramBytes);
    ssize_t n = recv(socket.get(), b.data(), b.size(), 0);
    b.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return b;
  }
};

Grant grantOf(uint16_t job, uint32_t payload, uint16_t ports) {
  Grant g;
  g.job = job;
  g.base = 8;
  g.length = 4;
  g.payloadElems = payload;
  g.port = 9000;
  g.ports = ports;
  return g;
}

TEST(InaUc, GrantsTheNicCannotCarryAreRefusedWithTheFix) {
  FakeSwitch sw;
  auto nic = std::make_unique<SoftUcNic>(sw.at, 4096, 0);
  SoftUcNic* n = nic.get();
  auto sender = makeUcSender(std::move(nic), 0x0A000001);
  Status s = sender->setGrant(grantOf(7, 256, 2));
  EXPECT_EQ(s.code(), rinaInvalidUsage);
  EXPECT_NE(s.message().find("serves job 7 on 2 data ports"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("rina-switchd --threads 1"), std::string::npos) << s.message();
  s = sender->setGrant(grantOf(7, 2048, 1));
  EXPECT_EQ(s.code(), rinaInvalidUsage);
  EXPECT_NE(s.message().find("2048 elements is 8196 bytes, more than the path MTU (4096 bytes)"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("--payload 1023 or less"), std::string::npos) << s.message();
  EXPECT_EQ(n->connects(), 0);
  // The token's low word and 1023 elements fill a 4096-byte MTU exactly; 1024 do not.
  EXPECT_EQ(sender->setGrant(grantOf(7, 1024, 1)).code(), rinaInvalidUsage);
  ASSERT_TRUE(sender->setGrant(grantOf(7, 1023, 1)).ok());
  EXPECT_EQ(n->connects(), 1);
  EXPECT_EQ(n->destQpn(), 7u);
  EXPECT_EQ(n->connectedIpv4(), 0x0A000001u);
}

TEST(InaUc, SendPostsOneWritePerDatagramAndLosesWhatAStuckQueueCannotTake) {
  FakeSwitch sw;
  auto nic = std::make_unique<SoftUcNic>(sw.at, 1024, 5, /*depth=*/2, /*stuck=*/true);
  SoftUcNic* n = nic.get();
  auto sender = makeUcSender(std::move(nic), 0x7F000001);
  ASSERT_TRUE(sender->setGrant(grantOf(0x0BCD, 4, 1)).ok());
  std::vector<std::vector<uint8_t>> datagrams;
  for (uint32_t i = 0; i < 5; ++i) {
    Header h = sampleHeader();
    h.seq = 100 + i;
    datagrams.push_back(nativeBytes(h, {1, 2, 3, static_cast<int32_t>(i)}));
  }
  std::vector<OutDatagram> batch;
  for (const auto& d : datagrams) batch.push_back({d, 9000});
  // Two fit the queue; the rest are lost (the client's timer resends them).
  ASSERT_TRUE(sender->send(batch).ok());
  EXPECT_EQ(n->packets(), 2u);
  for (uint32_t i = 0; i < 2; ++i) {
    std::vector<uint8_t> got = sw.next();
    Header h;
    ASSERT_EQ(roce::decode(got, &h), roce::RoceError::kOk);
    EXPECT_EQ(h.seq, 100 + i);
    EXPECT_EQ(got[11], 5 + i) << "PSNs count per packet";
  }
  std::vector<uint8_t> bad(kHeaderBytes, 0);
  const OutDatagram broken[1] = {{bad, 9000}};
  EXPECT_EQ(sender->send(broken).code(), rinaInternalError);
}

InaClientOptions clientOptions(bool udpFallback) {
  InaClientOptions o;
  o.job = 0x0BCD;
  o.token = 1;
  o.worker = 0;
  o.fanIn = 2;
  o.udpFallback = udpFallback;
  return o;
}

TEST(InaUc, ClientFallsBackToUdpOnAGrantTheNicCannotCarryUnlessRdmaWasRequired) {
  FakeSwitch sw;
  for (bool fallback : {true, false}) {
    std::unique_ptr<InaClient> c;
    ASSERT_TRUE(
        InaClient::create(clientOptions(fallback), &c,
                          makeUcSender(std::make_unique<SoftUcNic>(sw.at, 1024, 0), 0x7F000001))
            .ok());
    EXPECT_STREQ(c->senderName(), "rdma-uc");
    Status s = c->setGrant(grantOf(0x0BCD, 2048, 1));
    if (fallback) {
      ASSERT_TRUE(s.ok()) << s.message();
      EXPECT_STREQ(c->senderName(), "udp");
    } else {
      EXPECT_EQ(s.code(), rinaInvalidUsage);
      EXPECT_STREQ(c->senderName(), "rdma-uc");
    }
  }
  std::unique_ptr<InaClient> c;
  ASSERT_TRUE(
      InaClient::create(clientOptions(false), &c,
                        makeUcSender(std::make_unique<SoftUcNic>(sw.at, 1024, 0), 0x7F000001))
          .ok());
  ASSERT_TRUE(c->setGrant(grantOf(0x0BCD, 255, 1)).ok());  // + the token word: 1024 bytes
  EXPECT_STREQ(c->senderName(), "rdma-uc");
  std::unique_ptr<InaClient> plain;
  ASSERT_TRUE(InaClient::create(clientOptions(true), &plain).ok());
  EXPECT_STREQ(plain->senderName(), "udp");
}

// ---- RINA_INA_TRANSPORT ----

constexpr uint32_t kRemoteSwitch = 0x0A000001;  // 10.0.0.1
constexpr uint32_t kLoopbackSwitch = 0x7F000001;

TEST(InaTransport, UdpWhenAskedOrWhenRdmaCannotReachTheSwitch) {
  const RdmaAvailability none{false,
                              "no RDMA device (ibv_get_device_list: Function not implemented)"};
  const RdmaAvailability mlx{true, "RDMA device mlx5_0 port 1 (first of: mlx5_0)"};
  InaTransportChoice c;
  ASSERT_TRUE(chooseInaTransport("udp", mlx, kRemoteSwitch, &c).ok());
  EXPECT_EQ(c.transport, InaTransport::kUdp);
  EXPECT_EQ(c.why, "RINA_INA_TRANSPORT=udp");
  ASSERT_TRUE(chooseInaTransport("auto", none, kRemoteSwitch, &c).ok());
  EXPECT_EQ(c.transport, InaTransport::kUdp);
  EXPECT_EQ(c.why, none.why);
  ASSERT_TRUE(chooseInaTransport("auto", mlx, kLoopbackSwitch, &c).ok());
  EXPECT_EQ(c.transport, InaTransport::kUdp);
  EXPECT_EQ(c.why, "the switch 127.0.0.1 is on loopback, which no RDMA NIC reaches");
}

TEST(InaTransport, RdmaUcWhenADeviceCanReachTheSwitch) {
  const RdmaAvailability mlx{true, "RDMA device mlx5_0 port 1 (first of: mlx5_0)"};
  InaTransportChoice c;
  ASSERT_TRUE(chooseInaTransport("auto", mlx, kRemoteSwitch, &c).ok());
  EXPECT_EQ(c.transport, InaTransport::kRdmaUc);
  EXPECT_FALSE(c.required);
  EXPECT_EQ(c.why, mlx.why);
  ASSERT_TRUE(chooseInaTransport("rdma", mlx, kRemoteSwitch, &c).ok());
  EXPECT_EQ(c.transport, InaTransport::kRdmaUc);
  EXPECT_TRUE(c.required);
}

TEST(InaTransport, RdmaRequiredButImpossibleOrABadValueIsAnError) {
  const RdmaAvailability none{false,
                              "no RDMA device (ibv_get_device_list: Function not implemented)"};
  const RdmaAvailability mlx{true, "RDMA device mlx5_0 port 1"};
  InaTransportChoice c;
  Status s = chooseInaTransport("rdma", none, kRemoteSwitch, &c);
  EXPECT_EQ(s.code(), rinaSystemError);
  EXPECT_EQ(s.message(),
            "RINA_INA_TRANSPORT=rdma: cannot send INA over RDMA: no RDMA device "
            "(ibv_get_device_list: Function not implemented); unset it (or set udp) to use UDP");
  s = chooseInaTransport("rdma", mlx, kLoopbackSwitch, &c);
  EXPECT_EQ(s.code(), rinaSystemError);
  EXPECT_NE(s.message().find("on loopback"), std::string::npos) << s.message();
  for (const char* bad : {"", "UDP", "roce", "rdma "}) {
    s = chooseInaTransport(bad, mlx, kRemoteSwitch, &c);
    EXPECT_EQ(s.code(), rinaInvalidArgument) << "'" << bad << "'";
    EXPECT_EQ(s.message(), std::string("RINA_INA_TRANSPORT=") + bad + ": give auto, udp or rdma");
  }
}

}  // namespace
}  // namespace rina::ina::testing
