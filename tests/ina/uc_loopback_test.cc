// The INA client's RDMA UC backend against a real rina-switchd: each worker's
// InaClient posts its slices through a software NIC (soft_uc_nic.h), which
// sends the RoCEv2 packets a UC queue pair would to the switch's RoCE port;
// the switch answers the workers' UDP sockets in the RoCEv2 layout. Results
// are compared with serial sums. Only the ibv_post_send layer is simulated.
#include <gtest/gtest.h>

#include <cstring>

#include "ina/uc_sender.h"
#include "ina_harness.h"
#include "int32_reference.h"
#include "soft_uc_nic.h"

namespace rina::ina::testing {
namespace {

constexpr size_t kCount = 5000;  // not a multiple of the payload: a short last slice

// Workers whose index is in `uc` send through a software NIC; the others by UDP.
RackOptions ucRack(const SwitchdProcess& sw, uint16_t job, std::vector<int> uc) {
  RackOptions ro;
  ro.job = job;
  ro.slots = 16;
  ro.client.udpFallback = false;  // a refused grant must fail the test, not hide
  const Endpoint roce = sw.roce();
  ro.sender = [roce, uc](int worker) -> std::unique_ptr<InaSender> {
    if (std::find(uc.begin(), uc.end(), worker) == uc.end()) return nullptr;
    // PSNs start far from any seq: the switch must not care.
    return makeUcSender(std::make_unique<SoftUcNic>(roce, 2048, 0xABC000u + 977u * worker),
                        roce.addr);
  };
  return ro;
}

TEST(InaUcLoopback, Int32ExactThroughUcWrites) {
  SwitchdProcess sw({"--slots", "64", "--payload", "256", "--roce-port", "0"});
  ASSERT_TRUE(sw.ready());
  ASSERT_NE(sw.roce().port, 0);
  const int k = 3;
  std::unique_ptr<Rack> rack;
  Status s = Rack::create(sw, k, ucRack(sw, 31, {0, 1, 2}), &rack);
  ASSERT_TRUE(s.ok()) << s.message();
  for (int w = 0; w < k; ++w) EXPECT_STREQ(rack->client(w).senderName(), "rdma-uc");
  for (uint32_t round = 0; round < 3; ++round) {  // several windows, both slot sets
    auto in = int32Inputs(k, kCount, 40 + round);
    auto buf = in;
    std::vector<Status> st;
    std::vector<InaCallResult> res;
    rack->allreduce(buf, kCount, rinaInt32, &st, &res);
    for (int w = 0; w < k; ++w) {
      ASSERT_TRUE(st[w].ok()) << st[w].message();
      EXPECT_TRUE(res[w].hostSlices.empty());
    }
    expectInt32Sum(in, buf, kCount, "uc");
  }
  EXPECT_GT(sw.statsField("roce_received"), 0);
  EXPECT_EQ(sw.statsField("roce_malformed"), 0);
  ASSERT_TRUE(rack->ctrl().release(31, RackOptions{}.token).ok());
}

// Lost packets: resent slices leave with new PSNs (a UC requester numbers
// every packet), NACK-free recovery relies on the switch answering a
// duplicate at the member's registered address, not at the NIC's UDP port.
TEST(InaUcLoopback, LossIsRecoveredAndFloatsStayWithinTheBound) {
  SwitchdProcess sw({"--slots", "64", "--payload", "256", "--roce-port", "0", "--drop-rate", "0.05",
                     "--seed", "3"});
  ASSERT_TRUE(sw.ready());
  const int k = 4;
  std::unique_ptr<Rack> rack;
  Status s = Rack::create(sw, k, ucRack(sw, 32, {0, 1, 2, 3}), &rack);
  ASSERT_TRUE(s.ok()) << s.message();
  auto in = int32Inputs(k, 40000, 9);
  auto buf = in;
  std::vector<Status> st;
  std::vector<InaCallResult> res;
  rack->allreduce(buf, 40000, rinaInt32, &st, &res);
  uint64_t resent = 0;
  for (int w = 0; w < k; ++w) {
    ASSERT_TRUE(st[w].ok()) << st[w].message();
    resent += res[w].stats.retransmissions;
  }
  expectInt32Sum(in, buf, 40000, "lossy uc");
  EXPECT_GT(resent, 0u) << "5% loss should have forced resends";

  // float32: quantized with exponents that ride in the immediate.
  std::vector<std::vector<uint8_t>> fin(k, std::vector<uint8_t>(kCount * 4));
  for (int w = 0; w < k; ++w) {
    for (size_t i = 0; i < kCount; ++i) {
      float v = static_cast<float>((i * 7 + w * 13) % 101) * 0.25f - 12.0f;
      std::memcpy(fin[w].data() + 4 * i, &v, 4);
    }
  }
  auto fbuf = fin;
  rack->allreduce(fbuf, kCount, rinaFloat32, &st, &res);
  for (int w = 0; w < k; ++w) ASSERT_TRUE(st[w].ok()) << st[w].message();
  for (size_t i = 0; i < kCount; ++i) {
    // Quarter steps of at most 13 in magnitude quantize exactly: the sum is exact.
    float want = 0;
    for (int w = 0; w < k; ++w) want += static_cast<float>((i * 7 + w * 13) % 101) * 0.25f - 12.0f;
    for (int w = 0; w < k; ++w) {
      float got;
      std::memcpy(&got, fbuf[w].data() + 4 * i, 4);
      ASSERT_EQ(got, want) << "worker " << w << " elem " << i;
    }
  }
  ASSERT_TRUE(rack->ctrl().release(32, RackOptions{}.token).ok());
}

// A rack where some workers send through UC and others by UDP: the switch
// answers the job in the RoCEv2 layout, which the UDP workers read too.
TEST(InaUcLoopback, MixedRackOfUcAndUdpWorkers) {
  SwitchdProcess sw({"--slots", "64", "--payload", "256", "--roce-port", "0"});
  ASSERT_TRUE(sw.ready());
  const int k = 3;
  std::unique_ptr<Rack> rack;
  Status s = Rack::create(sw, k, ucRack(sw, 33, {1}), &rack);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_STREQ(rack->client(0).senderName(), "udp");
  EXPECT_STREQ(rack->client(1).senderName(), "rdma-uc");
  auto in = int32Inputs(k, kCount, 77);
  auto buf = in;
  std::vector<Status> st;
  std::vector<InaCallResult> res;
  rack->allreduce(buf, kCount, rinaInt32, &st, &res);
  for (int w = 0; w < k; ++w) ASSERT_TRUE(st[w].ok()) << st[w].message();
  expectInt32Sum(in, buf, kCount, "mixed");
  ASSERT_TRUE(rack->ctrl().release(33, RackOptions{}.token).ok());
}

// The switchd default payload (64) fits; the auto-started switch's 2048 does
// not fit this software NIC's 2048-byte MTU (with the token word), and a
// rack that insists on RDMA is told why.
TEST(InaUcLoopback, PayloadAboveTheMtuIsRefusedAtTheGrant) {
  SwitchdProcess sw({"--slots", "64", "--payload", "2048", "--roce-port", "0"});
  ASSERT_TRUE(sw.ready());
  RackOptions ro = ucRack(sw, 34, {0, 1});
  std::unique_ptr<Rack> rack;
  Status s = Rack::create(sw, 2, ro, &rack);
  EXPECT_EQ(s.code(), rinaInvalidUsage);
  EXPECT_NE(s.message().find("more than the path MTU (2048 bytes)"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace rina::ina::testing
