// rina-switchd aggregating datagrams in the RoCEv2 layout: fake workers (UDP
// sockets) send crafted UC write-with-immediate packets to the switch's RoCE
// port, and the sums that come back (in the same layout) are checked against
// a serial sum of what was sent. No RDMA device is involved.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <random>
#include <vector>

#include "ina/ctrl_client.h"
#include "ina_harness.h"
#include "rina/ina_roce.h"
#include "wire/net.h"

namespace rina::ina::testing {
namespace {

TEST(InaRoceLoopback, SwitchdSumsRoceDatagramsFromSeveralWorkers) {
  SwitchdProcess sw({"--slots", "64", "--roce-port", "0"});
  ASSERT_TRUE(sw.ready());
  ASSERT_NE(sw.roce().port, 0) << "switchd did not report its RoCE port";
  const int k = 3;
  const uint16_t job = 9;
  const uint32_t token = 0x5eed;
  std::vector<Fd> workers(k);
  CtrlRequest reg;
  reg.verb = CtrlVerb::kRegister;
  reg.job = job;
  reg.token = token;
  reg.fanIn = k;
  reg.priority = 1;
  reg.slots = 4;
  for (int w = 0; w < k; ++w) {
    ASSERT_TRUE(openUdpSocket({0x7F000001, 0}, 1 << 20, &workers[w]).ok());
    Endpoint e;
    ASSERT_TRUE(boundEndpoint(workers[w].get(), &e).ok());
    reg.members.push_back(e);
  }
  std::unique_ptr<CtrlClient> ctrl;
  ASSERT_TRUE(CtrlClient::connect(sw.control(), 5000, &ctrl).ok());
  Grant g;
  ASSERT_TRUE(ctrl->registerJob(reg, &g).ok());
  ASSERT_GT(g.length, 0u);
  const uint32_t elems = g.payloadElems;
  const sockaddr_in to = sw.roce().toSockaddr();
  std::mt19937 rng(7);
  std::vector<uint8_t> buf(roce::kMaxDatagramBytes);
  for (uint32_t seq = 0; seq < 24; ++seq) {  // every slot, both sets, several times
    std::vector<int64_t> want(elems, 0);
    for (int w = 0; w < k; ++w) {
      std::vector<int32_t> v(elems);
      for (auto& x : v) x = static_cast<int32_t>(rng() % 2000001) - 1000000;
      for (uint32_t i = 0; i < elems; ++i) want[i] += v[i];
      Header h;
      h.type = Type::kData;
      h.job = job;
      h.token = token;
      h.slot = static_cast<uint16_t>(g.base + seq % g.length);
      h.shadow = (seq / g.length) % 2 == 1;
      h.worker = static_cast<uint8_t>(w);
      h.fanIn = k;
      h.seq = seq;
      h.exponent = 0;
      h.elems = static_cast<uint16_t>(elems);
      size_t len = roce::encode(h, v, buf);
      ASSERT_GT(len, 0u);
      ASSERT_EQ(sendto(workers[w].get(), buf.data(), len, 0, reinterpret_cast<const sockaddr*>(&to),
                       sizeof to),
                static_cast<ssize_t>(len));
    }
    for (int w = 0; w < k; ++w) {
      pollfd p{workers[w].get(), POLLIN, 0};
      ASSERT_EQ(poll(&p, 1, 5000), 1) << "worker " << w << ": no result for seq " << seq;
      ssize_t n = recv(workers[w].get(), buf.data(), buf.size(), 0);
      ASSERT_GT(n, 0);
      Header r;
      ASSERT_EQ(roce::decode({buf.data(), static_cast<size_t>(n)}, &r), roce::RoceError::kOk)
          << "worker " << w << " seq " << seq << ": the answer is not in the RoCEv2 layout";
      EXPECT_EQ(r.type, Type::kResult);
      EXPECT_EQ(r.seq, seq);
      EXPECT_EQ(r.job, job);
      ASSERT_EQ(r.elems, elems);
      std::vector<int32_t> got(elems);
      decodePayload(buf.data() + roce::kHeaderBytes, elems, got.data());
      for (uint32_t i = 0; i < elems; ++i) {
        ASSERT_EQ(got[i], want[i]) << "worker " << w << " seq " << seq << " element " << i;
      }
    }
  }
  // A malformed RoCE datagram is dropped (no answer), the job goes on.
  buf[0] = 0x0B;
  ASSERT_GT(sendto(workers[0].get(), buf.data(), 64, 0, reinterpret_cast<const sockaddr*>(&to),
                   sizeof to),
            0);
  pollfd p{workers[0].get(), POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 200), 0);
  ASSERT_TRUE(ctrl->release(job, token).ok());
}

}  // namespace
}  // namespace rina::ina::testing
