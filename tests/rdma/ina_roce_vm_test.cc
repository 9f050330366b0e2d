// INA over RoCEv2 against the kernel's RDMA stack, inside the VM of
// tools/rina-rdma-vm: the workers' UC queue pairs on rxe0 write their
// slices to rina-switchd in the namespace rina-sw (10.77.0.2, reached over
// the veth pair), which runs with --roce-raw and writes every answer back
// into the workers' receive rings as RoCEv2 frames it builds whole, ICRC
// included. Outside such a VM every test skips, saying so.
//
// What each asserts:
//   - int32 sums are exact and float32 sums within the documented bound
//     (both against sums computed here), several windows over both slot
//     sets; every answer the switch sent went into a ring (none by UDP),
//     every worker attached, no frame had a bad ICRC;
//   - a frame with a bad ICRC is dropped and counted by the switch, and
//     dropped by the kernel's rxe, while the same frame with the right
//     ICRC is taken by both.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "float_reference.h"
#include "ina/ctrl_client.h"
#include "ina/uc_sender.h"
#include "ina_harness.h"
#include "int32_reference.h"
#include "rina/ina_roce.h"
#include "switchd/roce_frame.h"
#include "transport/verbs/uc_queue_pair.h"
#include "transport/verbs/verbs_context.h"

namespace rina::ina::testing {
namespace {

namespace verbs = transport::verbs;

std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

const std::string kDevice = envOr("RDMA_VM_DEVICE", "rxe0");
const int kGidIndex = std::atoi(envOr("RDMA_VM_GID_INDEX", "1").c_str());
const std::string kSwitchNs = envOr("RDMA_VM_SWITCH_NS", "rina-sw");
const std::string kHostAddr = envOr("RDMA_VM_ADDR", "10.77.0.1");
const std::string kSwitchAddr = envOr("RDMA_VM_SWITCH_ADDR", "10.77.0.2");

#define REQUIRE_RDMA_VM()                                                     \
  do {                                                                        \
    if (verbs::probeDevices().names.empty() ||                                \
        access(("/run/netns/" + kSwitchNs).c_str(), F_OK) != 0) {             \
      GTEST_SKIP() << "no RDMA device or no namespace " << kSwitchNs          \
                   << " here: run inside tools/rina-rdma-vm (ctest -L rdma)"; \
    }                                                                         \
  } while (0)

uint32_t ipv4(const std::string& text) {
  Endpoint e;
  EXPECT_TRUE(parseEndpoint(text + ":1", &e)) << text;
  return e.addr;
}

verbs::VerbsContextPtr openDevice() {
  verbs::TransportChoice choice;
  choice.useVerbs = true;
  choice.device = kDevice;
  verbs::VerbsOptions opt;
  opt.gidIndex = kGidIndex;
  verbs::VerbsContextPtr ctx;
  Status s = verbs::openVerbsContext(choice, opt, &ctx);
  EXPECT_TRUE(s.ok()) << s.message();
  return ctx;
}

// The switch in the second namespace, answering through the NIC path.
std::unique_ptr<SwitchdProcess> startSwitch(uint32_t payload) {
  return std::make_unique<SwitchdProcess>(
      std::vector<std::string>{"--slots", "256", "--payload", std::to_string(payload), "--threads",
                               "1", "--roce-port", "4791", "--roce-raw"},
      std::vector<std::string>{"ip", "netns", "exec", kSwitchNs}, kSwitchAddr);
}

TEST(InaRoceVm, AnswersWrittenIntoTheRingsInt32ExactFloat32WithinTheBound) {
  REQUIRE_RDMA_VM();
  // 1000 elements: the 20-byte header and 4000 bytes of values are one
  // packet at rxe0's path MTU of 4096.
  constexpr uint32_t kPayload = 1000;
  auto sw = startSwitch(kPayload);
  ASSERT_TRUE(sw->ready()) << "rina-switchd did not start in " << kSwitchNs;
  verbs::VerbsContextPtr ctx = openDevice();
  ASSERT_TRUE(ctx);
  const int k = 3;
  RackOptions ro;
  ro.job = 77;
  ro.token = 0x5EC12E7A11CE5EEDull;  // both words matter (R_Key and data)
  ro.slots = 16;
  ro.client.local = Endpoint{ipv4(kHostAddr), 0};
  ro.client.udpFallback = false;  // a refused grant must fail the test
  ro.client.switchTimeoutMs = 20000;
  ro.client.maxRtoUs = 2000000;  // emulation: round trips of tens of ms
  const uint32_t switchAddr = sw->data().addr;
  ro.sender = [ctx, switchAddr](int) -> std::unique_ptr<InaSender> {
    std::unique_ptr<verbs::UcQueuePair> qp;
    Status s = verbs::openUcQueuePair(ctx, &qp);
    EXPECT_TRUE(s.ok()) << s.message();
    return s.ok() ? makeUcSender(std::move(qp), switchAddr) : nullptr;
  };
  std::unique_ptr<Rack> rack;
  Status s = Rack::create(*sw, k, ro, &rack);
  ASSERT_TRUE(s.ok()) << s.message();
  for (int w = 0; w < k; ++w) ASSERT_STREQ(rack->client(w).senderName(), "rdma-uc");

  // 40 slices over a window of 16: both slot sets, several times each.
  const size_t count = 40 * kPayload - 123;
  for (uint32_t round = 0; round < 2; ++round) {
    auto in = int32Inputs(k, count, 7 + round);
    auto buf = in;
    std::vector<Status> st;
    std::vector<InaCallResult> res;
    rack->allreduce(buf, count, rinaInt32, &st, &res);
    for (int w = 0; w < k; ++w) {
      ASSERT_TRUE(st[w].ok()) << st[w].message();
      EXPECT_TRUE(res[w].hostSlices.empty());
    }
    expectInt32Sum(in, buf, count, "int32 through the rings");
  }
  auto fin = floatInputs(k, count, 99);
  auto fbuf = asBytes(fin);
  std::vector<Status> st;
  std::vector<InaCallResult> res;
  rack->allreduce(fbuf, count, rinaFloat32, &st, &res);
  for (int w = 0; w < k; ++w) ASSERT_TRUE(st[w].ok()) << st[w].message();
  expectFloatSumWithinBound(fin, asFloats(fbuf), kPayload, 0x1p-24);

  const long long attached = sw->statsField("roce_attached");
  const long long ringSent = sw->statsField("roce_nic_sent");
  const long long sent = sw->statsField("sent");
  std::printf(
      "switch: %lld attached, %lld answers sent, %lld written into rings, %lld received, "
      "%lld bad ICRC\n",
      attached, sent, ringSent, sw->statsField("roce_received"), sw->statsField("roce_bad_icrc"));
  EXPECT_EQ(attached, k);
  EXPECT_EQ(sw->statsField("roce_attach_refused"), 0);
  EXPECT_GT(sent, 0);
  // Every answer went into a ring (plus one acknowledgement per attach).
  EXPECT_EQ(ringSent, sent + attached);
  EXPECT_EQ(sw->statsField("roce_bad_icrc"), 0);
  EXPECT_EQ(sw->statsField("roce_malformed"), 0);
  ASSERT_TRUE(rack->ctrl().release(ro.job, ro.token).ok());
}

// A raw IPv4 socket that sends whole packets, made in namespace ns (empty:
// this one); it keeps sending from there.
Fd rawSocketIn(const std::string& ns) {
  int fd = -1;
  std::thread([&] {
    if (!ns.empty()) {
      Fd nsFd(open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC));
      if (!nsFd.valid() || setns(nsFd.get(), CLONE_NEWNET) != 0) return;
    }
    fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
  }).join();
  return Fd(fd);
}

bool sendPacket(int fd, std::span<const uint8_t> packet, uint32_t to) {
  sockaddr_in dst = Endpoint{to, 0}.toSockaddr();
  return sendto(fd, packet.data(), packet.size(), 0, reinterpret_cast<sockaddr*>(&dst),
                sizeof dst) == static_cast<ssize_t>(packet.size());
}

TEST(InaRoceVm, BadIcrcIsDroppedAndCountedByTheSwitchAndDroppedByTheNic) {
  REQUIRE_RDMA_VM();
  auto sw = startSwitch(64);
  ASSERT_TRUE(sw->ready());
  // A job whose worker 0 is this host, so that its ring attachment is one
  // the switch takes.
  std::unique_ptr<CtrlClient> ctrl;
  ASSERT_TRUE(CtrlClient::connect(sw->control(), 5000, &ctrl).ok());
  CtrlRequest reg;
  reg.verb = CtrlVerb::kRegister;
  reg.job = 91;
  reg.token = 0xC0FFEE00DEADBEEFull;
  reg.fanIn = 1;
  reg.priority = 1;
  reg.slots = 4;
  reg.members = {Endpoint{ipv4(kHostAddr), 40000}};
  Grant grant;
  Status s = ctrl->registerJob(reg, &grant);
  ASSERT_TRUE(s.ok()) << s.message();

  // The attachment as a UC write, the way the NIC would put it on the wire.
  verbs::VerbsContextPtr ctx = openDevice();
  ASSERT_TRUE(ctx);
  std::unique_ptr<verbs::UcQueuePair> qp;
  ASSERT_TRUE(verbs::openUcQueuePair(ctx, &qp).ok());
  ASSERT_TRUE(qp->connect(sw->data().addr, reg.job).ok());
  verbs::UcReceiveRing ring;
  ASSERT_TRUE(qp->receiveRing(&ring));
  roce::RingAttach a{ring.qpn, ring.psn, ring.addr, ring.rkey, ring.slots, ring.slotBytes};
  int32_t words[roce::kAttachWords];
  roce::encodeAttach(a, words);
  Header h;
  h.type = Type::kCtrl;
  h.job = reg.job;
  h.token = reg.token;
  h.fanIn = 1;
  h.elems = roce::kAttachWords;
  uint8_t native[kHeaderBytes + 4 * roce::kAttachWords];
  ASSERT_GT(encode(h, std::span<const int32_t>(words), native), 0u);
  transport::verbs::UcWriteRequest wr;
  ASSERT_TRUE(ucWriteFor(native, &wr));
  switchd::roce::UcWrite f;
  f.srcAddr = ipv4(kHostAddr);
  f.dstAddr = sw->data().addr;
  f.destQp = reg.job;
  f.psn = 5;
  f.va = wr.remoteAddr;
  f.rkey = wr.rkey;
  f.imm = wr.imm;
  std::vector<uint8_t> packet(switchd::roce::kUcWriteHeaderBytes + wr.payload.size() + 4);
  ASSERT_EQ(switchd::roce::buildUcWrite(f, wr.payload, packet), packet.size());
  ASSERT_TRUE(switchd::roce::icrcValid(packet));

  // To the switch: one bit off in the ICRC, then the right one.
  Fd here = rawSocketIn("");
  ASSERT_TRUE(here.valid()) << "raw socket: " << std::strerror(errno);
  std::vector<uint8_t> bad = packet;
  bad.back() ^= 0x01;
  ASSERT_FALSE(switchd::roce::icrcValid(bad));
  ASSERT_TRUE(sendPacket(here.get(), bad, f.dstAddr));
  ASSERT_TRUE(sendPacket(here.get(), packet, f.dstAddr));
  // The good one is taken (an attachment, acknowledged into the ring), the
  // bad one counted and dropped: the switch handles them in order.
  auto t0 = std::chrono::steady_clock::now();
  while (sw->statsField("roce_attached") < 1 &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)) {
    pollfd p{qp->receiveFd(), POLLIN, 0};
    poll(&p, 1, 100);
  }
  EXPECT_EQ(sw->statsField("roce_attached"), 1);
  EXPECT_EQ(sw->statsField("roce_bad_icrc"), 1);
  EXPECT_EQ(sw->statsField("roce_received"), 1);

  // To the NIC: a write into ring slot 5 with a bad ICRC, then one into
  // slot 6 with the right one, both from the switch's address. rxe takes
  // frames in order: the first to arrive must be slot 6's.
  Fd there = rawSocketIn(kSwitchNs);
  ASSERT_TRUE(there.valid());
  auto toRing = [&](uint32_t slot, uint32_t psn, uint8_t fill) {
    switchd::roce::UcWrite g;
    g.srcAddr = sw->data().addr;
    g.dstAddr = ipv4(kHostAddr);
    g.destQp = ring.qpn;
    g.psn = psn;
    g.va = ring.addr + uint64_t{slot} * ring.slotBytes;
    g.rkey = ring.rkey;
    g.imm = slot;
    std::vector<uint8_t> data(256, fill);
    std::vector<uint8_t> frame(switchd::roce::kUcWriteHeaderBytes + data.size() + 4);
    EXPECT_EQ(switchd::roce::buildUcWrite(g, data, frame), frame.size());
    return frame;
  };
  std::vector<uint8_t> badWrite = toRing(5, ring.psn + 100, 0xAA);
  badWrite[badWrite.size() - 2] ^= 0x10;
  ASSERT_TRUE(sendPacket(there.get(), badWrite, ipv4(kHostAddr)));
  ASSERT_TRUE(sendPacket(there.get(), toRing(6, ring.psn + 101, 0xBB), ipv4(kHostAddr)));
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> got;  // (first byte, bytes)
  t0 = std::chrono::steady_clock::now();
  while (got.size() < 2 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)) {
    ASSERT_TRUE(
        qp->receive([&](std::span<const uint8_t> b) {
            got.push_back({b.empty() ? 0u : b[0], std::vector<uint8_t>(b.begin(), b.end())});
          }).ok());
    // The switch's acknowledgement (a 20-byte CTRL header) and slot 6's write.
    if (got.size() >= 2) break;
    pollfd p{qp->receiveFd(), POLLIN, 0};
    poll(&p, 1, 100);
  }
  ASSERT_EQ(got.size(), 2u) << "the acknowledgement and the good write should have arrived";
  EXPECT_EQ(got[0].second.size(), kHeaderBytes);  // the switch's CTRL acknowledgement
  Header ack;
  ASSERT_EQ(decode(got[0].second, &ack), DecodeError::kOk);
  EXPECT_EQ(ack.type, Type::kCtrl);
  EXPECT_EQ(ack.job, reg.job);
  EXPECT_EQ(got[1].second, std::vector<uint8_t>(256, 0xBB)) << "slot 5's bad frame was taken";
  ASSERT_TRUE(ctrl->release(reg.job, reg.token).ok());
}

}  // namespace
}  // namespace rina::ina::testing
