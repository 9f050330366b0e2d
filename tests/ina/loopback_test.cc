// k workers reducing through one rina-switchd on loopback; results compared
// with serial sums computed here.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <thread>

#include "float_reference.h"
#include "ina/quantize.h"
#include "ina_harness.h"
#include "int32_reference.h"
#include "rina/ina_wire.h"

namespace rina::ina::testing {
namespace {

constexpr size_t kCount = 3000;  // not a multiple of the payload: a short last slice

uint64_t totalRetransmissions(const std::vector<InaCallResult>& results) {
  uint64_t n = 0;
  for (const auto& r : results) n += r.stats.retransmissions;
  return n;
}

void expectAllOk(const std::vector<Status>& statuses, const std::vector<InaCallResult>& results) {
  for (size_t w = 0; w < statuses.size(); ++w) {
    ASSERT_TRUE(statuses[w].ok()) << statuses[w].message();
    EXPECT_TRUE(results[w].hostSlices.empty()) << "worker " << w;
  }
}

TEST(InaLoopback, Int32ExactForOneToEightWorkers) {
  SwitchdProcess sw({"--slots", "256"});
  ASSERT_TRUE(sw.ready());
  for (int k = 1; k <= 8; ++k) {
    RackOptions ro;
    ro.job = static_cast<uint16_t>(10 + k);
    ro.slots = 32;
    std::unique_ptr<Rack> rack;
    Status s = Rack::create(sw, k, ro, &rack);
    ASSERT_TRUE(s.ok()) << s.message();
    auto in = int32Inputs(k, kCount, 100 + k);
    auto buf = in;
    std::vector<Status> st;
    std::vector<InaCallResult> res;
    rack->allreduce(buf, kCount, rinaInt32, &st, &res);
    expectAllOk(st, res);
    expectInt32Sum(in, buf, kCount);
    EXPECT_EQ(res[0].stats.slices, (kCount + 63) / 64);
    ASSERT_TRUE(rack->ctrl().release(ro.job, ro.token).ok());
  }
}

TEST(InaLoopback, Float32WithinBoundForOneToEightWorkers) {
  SwitchdProcess sw({"--slots", "256"});
  ASSERT_TRUE(sw.ready());
  for (int k = 1; k <= 8; ++k) {
    RackOptions ro;
    ro.job = static_cast<uint16_t>(20 + k);
    ro.slots = 32;
    std::unique_ptr<Rack> rack;
    Status s = Rack::create(sw, k, ro, &rack);
    ASSERT_TRUE(s.ok()) << s.message();
    auto in = floatInputs(k, kCount, 200 + k);
    auto buf = asBytes(in);
    std::vector<Status> st;
    std::vector<InaCallResult> res;
    // Twice: the second call continues the slice sequence on the same slots.
    for (int round = 0; round < 2; ++round) {
      buf = asBytes(in);
      rack->allreduce(buf, kCount, rinaFloat32, &st, &res);
      expectAllOk(st, res);
      expectFloatSumWithinBound(in, asFloats(buf), 64, 0x1p-24);
    }
    ASSERT_TRUE(rack->ctrl().release(ro.job, ro.token).ok());
  }
}

// A float call's prologue as port markers: each worker sends its window of
// exponent-only datagrams header-only, and the sums stay within the bound.
// With no resend, a worker's bytes are exactly the prologue's headers and
// the data slices at full size.
TEST(InaLoopback, Float32PrologueAsMarkersSendsHeadersOnly) {
  SwitchdProcess sw({"--slots", "256"});
  ASSERT_TRUE(sw.ready());
  const int k = 3;
  RackOptions ro;
  ro.slots = 32;
  ro.markerPrologue = true;
  std::unique_ptr<Rack> rack;
  ASSERT_TRUE(Rack::create(sw, k, ro, &rack).ok());
  const uint32_t P = rack->grant().payloadElems;
  auto in = floatInputs(k, kCount, 333);
  std::vector<Status> st;
  std::vector<InaCallResult> res;
  for (int round = 0; round < 2; ++round) {
    auto buf = asBytes(in);
    rack->allreduce(buf, kCount, rinaFloat32, &st, &res);
    expectAllOk(st, res);
    expectFloatSumWithinBound(in, asFloats(buf), 64, 0x1p-24);
    for (int w = 0; w < k; ++w) {
      const InaCallStats& c = res[w].stats;
      const uint64_t slices = sliceCount(kCount, P);
      EXPECT_EQ(c.datagramsSent, ro.slots + slices) << "worker " << w;
      const uint64_t firstSends = ro.slots * kHeaderBytes + slices * (kHeaderBytes + 4 * P);
      if (c.retransmissions == 0) {
        EXPECT_EQ(c.bytesSent, firstSends) << "worker " << w;
      } else {
        EXPECT_GT(c.bytesSent, firstSends) << "worker " << w;
      }
    }
  }
}

// BCAST: the root's bytes reach every worker bit for bit; under loss a
// receiver lists exactly the slices it lacks (everything else must match).
TEST(InaLoopback, BroadcastDeliversRootBytesAndListsWhatIsMissing) {
  for (const char* drop : {"0", "0.05"}) {
    SwitchdProcess sw({"--slots", "64", "--drop-rate", drop, "--seed", "3"});
    ASSERT_TRUE(sw.ready());
    RackOptions ro;
    ro.job = 77;
    ro.slots = 16;
    std::unique_ptr<Rack> rack;
    Status s = Rack::create(sw, 3, ro, &rack);
    ASSERT_TRUE(s.ok()) << s.message();
    const size_t bytes = 64 * 4 * 40 + 13;  // 41 slices, the last one short
    for (int round = 0; round < 2; ++round) {
      std::vector<std::vector<uint8_t>> bufs(3, std::vector<uint8_t>(bytes, 0xEE));
      for (size_t i = 0; i < bytes; ++i) bufs[1][i] = static_cast<uint8_t>(i * 13 + round);
      const std::vector<uint8_t> want = bufs[1];
      std::vector<Status> st;
      std::vector<InaBroadcastResult> res;
      rack->broadcast(bufs, bytes, 1, &st, &res);
      for (int w = 0; w < 3; ++w) ASSERT_TRUE(st[w].ok()) << st[w].message();
      EXPECT_TRUE(res[1].missingSlices.empty());
      EXPECT_EQ(bufs[1], want);  // the root's buffer is unchanged
      size_t missing = 0;
      for (int w : {0, 2}) {
        std::vector<bool> lacks(41, false);
        for (uint32_t i : res[w].missingSlices) lacks[i] = true;
        missing += res[w].missingSlices.size();
        for (size_t i = 0; i < bytes; ++i) {
          if (lacks[i / 256]) continue;
          ASSERT_EQ(bufs[w][i], want[i]) << "drop " << drop << " worker " << w << " byte " << i;
        }
      }
      if (std::string(drop) == "0") {
        EXPECT_EQ(missing, 0u);
      }
    }
  }
}

TEST(InaLoopback, HalfBfloat16AndUpstreamPartial) {
  SwitchdProcess sw({"--slots", "64", "--payload", "256"});
  ASSERT_TRUE(sw.ready());
  const int k = 4;
  RackOptions ro;
  ro.slots = 16;
  std::unique_ptr<Rack> rack;
  ASSERT_TRUE(Rack::create(sw, k, ro, &rack).ok());
  EXPECT_EQ(rack->grant().payloadElems, 256u);
  auto in = floatInputs(k, kCount, 300);
  for (rinaDataType_t type : {rinaFloat16, rinaBfloat16}) {
    // Inputs rounded to the type first, so the reference sees what was sent.
    std::vector<std::vector<uint8_t>> buf(k, std::vector<uint8_t>(kCount * 2));
    std::vector<std::vector<float>> exactIn(k, std::vector<float>(kCount));
    for (int w = 0; w < k; ++w) {
      storeFromFloat(in[w].data(), kCount, type, 0, buf[w].data());
      loadAsFloat(buf[w].data(), type, 0, kCount, exactIn[w].data());
    }
    std::vector<Status> st;
    std::vector<InaCallResult> res;
    rack->allreduce(buf, kCount, type, &st, &res);
    expectAllOk(st, res);
    std::vector<std::vector<float>> out(k, std::vector<float>(kCount));
    for (int w = 0; w < k; ++w) loadAsFloat(buf[w].data(), type, 0, kCount, out[w].data());
    expectFloatSumWithinBound(exactIn, out, 256, type == rinaFloat16 ? 0x1p-11 : 0x1p-8);
  }
  // int32 with an upstream partial added by the port (worker 2).
  auto ints = int32Inputs(k, kCount, 301);
  auto up = int32Inputs(1, kCount, 302);
  auto buf = ints;
  std::vector<Status> st;
  std::vector<InaCallResult> res;
  rack->allreduce(buf, kCount, rinaInt32, &st, &res, {nullptr, nullptr, up[0].data()});
  expectAllOk(st, res);
  ints.push_back(up[0]);
  expectInt32Sum(ints, buf, kCount);
}

TEST(InaLoopback, ReduceToPortLeavesOthersWithTheirInput) {
  SwitchdProcess sw({"--slots", "64", "--drop-rate", "0.02"});
  ASSERT_TRUE(sw.ready());
  RackOptions ro;
  ro.slots = 16;
  std::unique_ptr<Rack> rack;
  ASSERT_TRUE(Rack::create(sw, 3, ro, &rack).ok());
  for (rinaDataType_t type : {rinaInt32, rinaFloat32}) {
    auto in =
        type == rinaInt32 ? int32Inputs(3, kCount, 800) : asBytes(floatInputs(3, kCount, 801));
    auto buf = in;
    std::vector<Status> st;
    std::vector<InaCallResult> res;
    rack->allreduce(buf, kCount, type, &st, &res, {}, /*port=*/1);
    expectAllOk(st, res);
    EXPECT_EQ(buf[0], in[0]);
    EXPECT_EQ(buf[2], in[2]);
    if (type == rinaInt32) {
      expectInt32Sum(in, {buf[1]}, kCount);
    } else {
      expectFloatSumWithinBound(asFloats(in), asFloats({buf[1]}), 64, 0x1p-24);
    }
  }
  EXPECT_GT(sw.statsField("completed"), 0);
}

// Per-slice ports: each slice's sum reaches its port only (the others keep
// their input there), and a kSliceAll slice reaches every worker. Float32 on
// small integers, so quantized sums are exact and compared as int32. With
// port markers too: a port sends its slices header-only and adds its own
// values to the others' sum.
TEST(InaLoopback, ReduceScatterSendsEachSliceToItsPort) {
  SwitchdProcess sw({"--slots", "64", "--drop-rate", "0.02"});
  ASSERT_TRUE(sw.ready());
  RackOptions ro;
  ro.slots = 16;
  std::unique_ptr<Rack> rack;
  ASSERT_TRUE(Rack::create(sw, 3, ro, &rack).ok());
  const size_t P = rack->grant().payloadElems;
  const size_t count = 5 * P + P / 2;  // 6 slices, the last one short
  // Slice owners: 0, 0, all, 1, 2, 2.
  const int owner[6] = {0, 0, -1, 1, 2, 2};
  std::vector<std::vector<uint8_t>> roles(3, std::vector<uint8_t>(6));
  for (int w = 0; w < 3; ++w) {
    for (int i = 0; i < 6; ++i) {
      roles[w][i] = owner[i] < 0 ? kSliceAll : owner[i] == w ? kSlicePort : kSliceOther;
    }
  }
  for (const bool markers : {false, true})
    for (rinaDataType_t type : {rinaInt32, rinaFloat32}) {
      std::vector<std::vector<uint8_t>> in(3, std::vector<uint8_t>(count * 4));
      for (int w = 0; w < 3; ++w) {
        for (size_t i = 0; i < count; ++i) {
          int32_t v = static_cast<int32_t>((i * 7 + static_cast<size_t>(w) * 1000) % 4096) - 2048;
          if (type == rinaFloat32) {
            float f = static_cast<float>(v);
            std::memcpy(in[w].data() + 4 * i, &f, 4);
          } else {
            std::memcpy(in[w].data() + 4 * i, &v, 4);
          }
        }
      }
      auto buf = in;
      std::vector<Status> st;
      std::vector<InaCallResult> res;
      rack->reduceScatter(buf, count, type, roles, &st, &res, markers);
      expectAllOk(st, res);
      auto valueAt = [&](const std::vector<uint8_t>& b, size_t i) -> int64_t {
        if (type == rinaInt32) return int32At(b, i);
        float f;
        std::memcpy(&f, b.data() + 4 * i, 4);
        return static_cast<int64_t>(f);
      };
      for (size_t i = 0; i < count; ++i) {
        int64_t sum = 0;
        for (int w = 0; w < 3; ++w) sum += valueAt(in[w], i);
        const int o = owner[i / P];
        for (int w = 0; w < 3; ++w) {
          const int64_t want = o < 0 || o == w ? sum : valueAt(in[w], i);
          ASSERT_EQ(valueAt(buf[w], i), want)
              << "type " << type << " markers " << markers << " worker " << w << " elem " << i;
        }
      }
    }
}

// What port markers save: with no loss, a worker of a reduce-scatter over
// 3 workers sends 20 bytes for each slice it ports and 20 + 4 P for every
// other one (int32: no exponent prologue), against 20 + 4 P for all of
// them without markers; the sums are the same.
TEST(InaLoopback, PortMarkersSendHeadersOnlyForOwnSlices) {
  SwitchdProcess sw({"--slots", "64"});
  ASSERT_TRUE(sw.ready());
  RackOptions ro;
  ro.slots = 16;
  std::unique_ptr<Rack> rack;
  ASSERT_TRUE(Rack::create(sw, 3, ro, &rack).ok());
  const size_t P = rack->grant().payloadElems;
  const size_t slices = 9, count = slices * P;
  std::vector<std::vector<uint8_t>> roles(3, std::vector<uint8_t>(slices));
  for (int w = 0; w < 3; ++w) {
    for (size_t i = 0; i < slices; ++i) roles[w][i] = i % 3 == size_t(w) ? kSlicePort : kSliceOther;
  }
  std::vector<std::vector<uint8_t>> in(3, std::vector<uint8_t>(count * 4));
  for (int w = 0; w < 3; ++w) {
    for (size_t i = 0; i < count; ++i) {
      const int32_t v = static_cast<int32_t>(i * 31 + static_cast<size_t>(w) * 7) - 5000;
      std::memcpy(in[w].data() + 4 * i, &v, 4);
    }
  }
  std::vector<uint64_t> bytesWith(3), bytesWithout(3);
  for (const bool markers : {false, true}) {
    auto buf = in;
    std::vector<Status> st;
    std::vector<InaCallResult> res;
    rack->reduceScatter(buf, count, rinaInt32, roles, &st, &res, markers);
    expectAllOk(st, res);
    for (size_t i = 0; i < count; ++i) {
      const int port = static_cast<int>(i / P % 3);
      int32_t sum = 0;
      for (int w = 0; w < 3; ++w) sum += int32At(in[w], i);
      ASSERT_EQ(int32At(buf[port], i), sum) << "markers " << markers << " elem " << i;
    }
    for (int w = 0; w < 3; ++w) {
      if (res[w].stats.retransmissions != 0) GTEST_SKIP() << "a resend on loopback: no count";
      (markers ? bytesWith : bytesWithout)[w] = res[w].stats.bytesSent;
    }
  }
  const uint64_t full = kHeaderBytes + 4 * P;
  for (int w = 0; w < 3; ++w) {
    EXPECT_EQ(bytesWithout[w], slices * full) << "worker " << w;
    EXPECT_EQ(bytesWith[w], slices / 3 * kHeaderBytes + (slices - slices / 3) * full)
        << "worker " << w;
  }
}

// With results lost on the way down, a port that sent a header-only marker
// resends it at full size (zeros): the switch answers no datagram with more
// bytes than it carries, so only that brings the port its sum. Every sum is
// exact and none falls to the hosts.
TEST(InaLoopback, PortMarkersResentAtFullSizeGetTheirSumsUnderLoss) {
  SwitchdProcess sw({"--slots", "64", "--send-drop-rate", "0.2", "--seed", "5"});
  ASSERT_TRUE(sw.ready());
  RackOptions ro;
  ro.slots = 16;
  ro.client.switchTimeoutMs = 4000;
  std::unique_ptr<Rack> rack;
  ASSERT_TRUE(Rack::create(sw, 3, ro, &rack).ok());
  const size_t P = rack->grant().payloadElems;
  const size_t slices = 30, count = slices * P;
  std::vector<std::vector<uint8_t>> roles(3, std::vector<uint8_t>(slices));
  for (int w = 0; w < 3; ++w) {
    for (size_t i = 0; i < slices; ++i) roles[w][i] = i % 3 == size_t(w) ? kSlicePort : kSliceOther;
  }
  auto in = int32Inputs(3, count, 91);
  auto buf = in;
  std::vector<Status> st;
  std::vector<InaCallResult> res;
  rack->reduceScatter(buf, count, rinaInt32, roles, &st, &res, true);
  expectAllOk(st, res);
  for (size_t i = 0; i < count; ++i) {
    const int port = static_cast<int>(i / P % 3);
    int32_t sum = 0;
    for (int w = 0; w < 3; ++w) sum += int32At(in[w], i);
    ASSERT_EQ(int32At(buf[port], i), sum) << "elem " << i;
  }
  EXPECT_GT(totalRetransmissions(res), 0u) << "no result was lost: the test proved nothing";
  EXPECT_EQ(sw.statsField("duplicate_short"), 0);
}

TEST(InaLoopback, ReduceScatterRejectsRolesThatDoNotFit) {
  SwitchdProcess sw({"--slots", "64"});
  ASSERT_TRUE(sw.ready());
  std::unique_ptr<Rack> rack;
  ASSERT_TRUE(Rack::create(sw, 1, RackOptions{}, &rack).ok());
  InaClientOptions o;
  o.switchAddr = sw.data().addr;
  o.job = 1;
  o.token = RackOptions{}.token;
  std::unique_ptr<InaClient> c;
  ASSERT_TRUE(InaClient::create(o, &c).ok());
  ASSERT_TRUE(c->setGrant(rack->grant()).ok());
  const size_t P = rack->grant().payloadElems;
  std::vector<int32_t> buf(2 * P, 1), up(2 * P, 1);
  std::vector<uint8_t> roles(3, kSlicePort);  // 2 slices
  InaCallOptions call;
  call.resultToPortOnly = true;
  call.sliceRoles = &roles;
  InaCallResult res;
  Status s = c->allreduce(buf.data(), buf.size(), rinaInt32, call, &res);
  EXPECT_EQ(s.code(), rinaInvalidArgument);
  EXPECT_NE(s.message().find("3 slice roles for 2 slices"), std::string::npos) << s.message();
  roles.resize(2);
  call.upstreamPartial = up.data();
  s = c->allreduce(buf.data(), buf.size(), rinaInt32, call, &res);
  EXPECT_EQ(s.code(), rinaInvalidArgument);
  EXPECT_NE(s.message().find("upstream"), std::string::npos) << s.message();
  // An input apart from the buffer cannot go with an upstream partial either.
  call.sliceRoles = nullptr;
  call.resultToPortOnly = false;
  const std::vector<int32_t> input(2 * P, 1);
  call.input = input.data();
  s = c->allreduce(buf.data(), buf.size(), rinaInt32, call, &res);
  EXPECT_EQ(s.code(), rinaInvalidArgument);
  EXPECT_NE(s.message().find("an input apart from the buffer and an upstream partial"),
            std::string::npos)
      << s.message();
}

TEST(InaLoopback, Int32OverflowIsReportedAsHostSlice) {
  SwitchdProcess sw({"--slots", "64"});
  ASSERT_TRUE(sw.ready());
  RackOptions ro;
  ro.slots = 8;
  std::unique_ptr<Rack> rack;
  ASSERT_TRUE(Rack::create(sw, 2, ro, &rack).ok());
  auto in = int32Inputs(2, 640, 400);
  int32_t big = INT32_MAX - 10;
  std::memcpy(in[0].data() + 4 * 130, &big, 4);  // slice 2
  std::memcpy(in[1].data() + 4 * 130, &big, 4);
  auto buf = in;
  std::vector<Status> st;
  std::vector<InaCallResult> res;
  rack->allreduce(buf, 640, rinaInt32, &st, &res);
  for (int w = 0; w < 2; ++w) {
    ASSERT_TRUE(st[w].ok()) << st[w].message();
    EXPECT_EQ(res[w].hostSlices, std::vector<uint32_t>{2});
    EXPECT_EQ(int32At(buf[w], 130), big) << "a host slice keeps the worker's input";
  }
  EXPECT_GE(sw.statsField("overflows"), 1);
}

TEST(InaLoopback, CapacityLimitDropsAreRecovered) {
  // A 64-datagram burst allowance, and two workers opening 64-slice windows.
  SwitchdProcess sw({"--slots", "128", "--capacity-pps", "3000"});
  ASSERT_TRUE(sw.ready());
  RackOptions ro;
  ro.slots = 64;
  std::unique_ptr<Rack> rack;
  ASSERT_TRUE(Rack::create(sw, 2, ro, &rack).ok());
  const size_t count = 6400;
  auto in = int32Inputs(2, count, 700);
  auto buf = in;
  std::vector<Status> st;
  std::vector<InaCallResult> res;
  rack->allreduce(buf, count, rinaInt32, &st, &res);
  expectAllOk(st, res);
  expectInt32Sum(in, buf, count);
  EXPECT_GT(sw.statsField("capacity_drops"), 0);
  EXPECT_GT(totalRetransmissions(res), 0u);
}

class InaLoss : public ::testing::TestWithParam<const char*> {};

TEST_P(InaLoss, CorrectUnderInjectedLossAndRetransmissionsCounted) {
  SwitchdProcess sw({"--slots", "128", "--drop-rate", GetParam(), "--seed", "7", "--threads", "2"});
  ASSERT_TRUE(sw.ready());
  const int k = 4;
  RackOptions ro;
  ro.slots = 32;
  ro.client.minRtoUs = 1000;
  std::unique_ptr<Rack> rack;
  ASSERT_TRUE(Rack::create(sw, k, ro, &rack).ok());
  const size_t count = 20000;
  auto in = int32Inputs(k, count, 500);
  auto buf = in;
  std::vector<Status> st;
  std::vector<InaCallResult> res;
  auto t0 = std::chrono::steady_clock::now();
  rack->allreduce(buf, count, rinaInt32, &st, &res);
  expectAllOk(st, res);
  expectInt32Sum(in, buf, count);
  uint64_t intRetx = totalRetransmissions(res);
  auto fin = floatInputs(k, count, 501);
  buf = asBytes(fin);
  rack->allreduce(buf, count, rinaFloat32, &st, &res);
  expectAllOk(st, res);
  expectFloatSumWithinBound(fin, asFloats(buf), 64, 0x1p-24);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(intRetx + totalRetransmissions(res), 0u);
  EXPECT_GT(sw.statsField("injected_drops"), 0);
  EXPECT_GT(sw.statsField("duplicate_resent") + sw.statsField("duplicate_pending"), 0);
  RecordProperty("seconds", std::to_string(seconds));
  RecordProperty("retransmissions", std::to_string(intRetx + totalRetransmissions(res)));
}

INSTANTIATE_TEST_SUITE_P(DropRates, InaLoss, ::testing::Values("0.01", "0.05"));

// A switch that takes fewer datagrams per second than the workers offer
// (--capacity-pps: a token bucket that drops what exceeds it, a link with a
// small queue) makes the workers back off: their windows shrink below the
// granted slots, the sums stay exact, and no slice falls back to the hosts.
TEST(InaLoopback, WorkersBackOffFromASwitchThatDropsWhatItCannotTake) {
  SwitchdProcess sw({"--slots", "128", "--capacity-pps", "20000", "--seed", "5"});
  ASSERT_TRUE(sw.ready());
  const int k = 4;
  RackOptions ro;
  ro.slots = 32;
  std::unique_ptr<Rack> rack;
  ASSERT_TRUE(Rack::create(sw, k, ro, &rack).ok());
  const size_t count = 1024 * size_t{rack->grant().payloadElems};
  auto in = int32Inputs(k, count, 900);
  auto buf = in;
  std::vector<Status> st;
  std::vector<InaCallResult> res;
  rack->allreduce(buf, count, rinaInt32, &st, &res);
  expectAllOk(st, res);
  expectInt32Sum(in, buf, count);
  uint64_t cuts = 0, sent = 0;
  uint32_t smallest = UINT32_MAX;
  for (const InaCallResult& r : res) {
    cuts += r.stats.windowCuts;
    sent += r.stats.datagramsSent;
    smallest = std::min(smallest, r.stats.smallestWindow);
  }
  EXPECT_GT(sw.statsField("capacity_drops"), 0);
  EXPECT_GT(totalRetransmissions(res), 0u);
  EXPECT_GT(cuts, 0u);
  EXPECT_LT(smallest, ro.slots);
  EXPECT_EQ(sent, k * sliceCount(count, rack->grant().payloadElems));
  RecordProperty("window_cuts", std::to_string(cuts));
  RecordProperty("smallest_window", std::to_string(smallest));
}

// Someone who read a job's token and its next seqs off the wire sends
// contributions for workers 0 and 1 ahead of them, from another loopback
// address and from the workers' own address with another port. The switch
// drops every one (they are not from the endpoints the job registered) and
// counts them; the sums stay exact.
TEST(InaLoopback, ForgedContributionsAheadOfTheWorkersAreDroppedAndCounted) {
  SwitchdProcess sw({"--slots", "256"});
  ASSERT_TRUE(sw.ready());
  constexpr int kWorkers = 3;
  RackOptions ro;
  ro.job = 21;
  ro.slots = 32;
  std::unique_ptr<Rack> rack;
  Status s = Rack::create(sw, kWorkers, ro, &rack);
  ASSERT_TRUE(s.ok()) << s.message();
  const uint32_t window = rack->grant().length;
  ASSERT_GT(window, 0u);
  // Twice the window's slices: the call's seqs 1 .. 2 * window cover every set.
  const size_t count = 2 * window * rack->grant().payloadElems;
  const uint32_t forgedSeqs = window;
  const std::pair<uint32_t, uint8_t> forgers[] = {{0x7F000002, 0}, {0x7F000001, 1}};
  for (const auto& [addr, worker] : forgers) {
    int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in local = Endpoint{addr, 0}.toSockaddr();
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local), 0);
    sockaddr_in to = sw.data().toSockaddr();
    std::vector<int32_t> values(rack->grant().payloadElems, 1000);
    std::vector<uint8_t> buf(kMaxDatagramBytes);
    for (uint32_t seq = 1; seq <= forgedSeqs; ++seq) {
      Header h;
      h.job = ro.job;
      h.token = ro.token;
      h.worker = worker;
      h.fanIn = kWorkers;
      h.seq = seq;
      h.slot = static_cast<uint16_t>(rack->grant().base + seq % window);
      h.shadow = (seq / window) % 2 == 1;
      h.elems = static_cast<uint16_t>(values.size());
      size_t n = encode(h, values, buf);
      ASSERT_GT(n, 0u);
      ASSERT_EQ(::sendto(fd, buf.data(), n, 0, reinterpret_cast<sockaddr*>(&to), sizeof to),
                static_cast<ssize_t>(n));
    }
    ::close(fd);
  }
  auto in = int32Inputs(kWorkers, count, 77);
  auto buf = in;
  std::vector<Status> st;
  std::vector<InaCallResult> res;
  rack->allreduce(buf, count, rinaInt32, &st, &res);
  expectAllOk(st, res);
  expectInt32Sum(in, buf, count);
  // Every forged datagram reached the switch before the call began (loopback
  // keeps a socket's order) and was dropped as not from its worker.
  EXPECT_EQ(sw.statsField("bad_source"), 2 * static_cast<long long>(forgedSeqs));
}

// A second agent that picked a job id another job holds (another token) is
// refused with the TAKEN reply, which the client reports as jobTaken, and
// the holder keeps its registration; a refusal for any other reason is not
// reported as taken.
TEST(InaLoopback, RegisterOfALiveJobUnderAnotherTokenIsReportedAsTaken) {
  SwitchdProcess sw({"--slots", "64"});
  ASSERT_TRUE(sw.ready());
  std::unique_ptr<CtrlClient> owner, other;
  ASSERT_TRUE(CtrlClient::connect(sw.control(), 5000, &owner).ok());
  ASSERT_TRUE(CtrlClient::connect(sw.control(), 5000, &other).ok());
  CtrlRequest reg;
  reg.job = 77;
  reg.token = 0xA5A5A5A5DEADBEEFull;
  reg.fanIn = 1;
  reg.priority = 1;
  reg.slots = 8;
  reg.members = {Endpoint{0x7F000001, 7000}};
  Grant g;
  bool taken = true;
  ASSERT_TRUE(owner->registerJob(reg, &g, &taken).ok());
  EXPECT_FALSE(taken);
  CtrlRequest mine = reg;
  mine.token = 0xA5A5A5A5DEADBEEEull;
  mine.members = {Endpoint{0x7F000001, 7001}};
  Status s = other->registerJob(mine, &g, &taken);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(taken) << s.message();
  // The holder's registration is unchanged: its token still releases it.
  std::string entries;
  ASSERT_TRUE(owner->query("ENTRIES job=77", &entries).ok());
  EXPECT_NE(entries.find("\"src_port\":7000"), std::string::npos) << entries;
  // Refused for another reason (fan-in above the limit): not taken.
  CtrlRequest bad = reg;
  bad.job = 78;
  bad.fanIn = 2;  // one member for fan-in 2: malformed
  s = other->registerJob(bad, &g, &taken);
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(taken) << s.message();
  EXPECT_TRUE(owner->release(77, reg.token).ok());
}

namespace limit {

constexpr uint32_t kSlices = 40, kLimit = 10;  // every slice fits in the window

// Passes of c until cond() or an error; an error after 20 s.
Status pumpUntil(InaClient& c, const std::function<bool()>& cond) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!cond()) {
    bool moved = false;
    RINA_TRY(c.progress(&moved));
    if (std::chrono::steady_clock::now() > deadline)
      return errorf(rinaTimeout, "test: no progress in 20 s");
    if (!moved) {
      pollfd p{c.fd(), POLLIN, 0};
      (void)::poll(&p, 1, std::max(1, c.waitMs()));
    }
  }
  return Status();
}

// The rest of c's call: passes until it is done, then finish().
Status finishCall(InaClient& c) {
  Status st = pumpUntil(c, [&] { return c.done(); });
  InaCallResult res;
  Status fin = c.finish(&res);
  return st.ok() ? fin : st;
}

// Two workers on sw with its 64 slots, which take the switch for lost after
// switchTimeoutMs without an answer.
Status twoWorkers(SwitchdProcess& sw, int switchTimeoutMs, std::unique_ptr<Rack>* rack) {
  RackOptions ro;
  ro.slots = 64;
  ro.client.switchTimeoutMs = switchTimeoutMs;
  return Rack::create(sw, 2, ro, rack);
}

// worker(0) and worker(1), each on a thread of its own.
void onTwoThreads(const std::function<void(int)>& worker) {
  std::thread t0(worker, 0), t1(worker, 1);
  t0.join();
  t1.join();
}

bool firstFinal(const InaClient& c) {
  for (uint32_t i = 0; i < kLimit; ++i)
    if (!c.sliceFinal(i)) return false;
  return true;
}

}  // namespace limit

// A send limit (InaClient::limitReduce) holds a worker's later slices back:
// while worker 0 may send only the first kLimit slices, worker 1 (no limit)
// gets their sums and none of the later ones; once the limit rises every
// sum is exact.
TEST(InaLoopback, SendLimitHoldsLaterSlices) {
  using namespace limit;
  SwitchdProcess sw({"--slots", "64"});
  ASSERT_TRUE(sw.ready());
  std::unique_ptr<Rack> rack;
  ASSERT_TRUE(twoWorkers(sw, 8000, &rack).ok());  // the limit would be dropped after 2 s
  const size_t count = size_t{rack->client(0).sliceElems()} * kSlices;
  auto in = int32Inputs(2, count, 91);
  auto out = in;
  std::mutex mu;
  std::condition_variable cv;
  int settled = 0;  // workers that hold the sums of the first kLimit slices
  bool checked = false;
  std::vector<Status> st(2);
  uint32_t laterFinal = 0;
  auto worker = [&](int w) {
    InaClient& c = rack->client(w);
    st[w] = c.start(out[w].data(), count, rinaInt32, InaCallOptions{});
    if (!st[w].ok()) return;
    if (w == 0) c.limitReduce(kLimit);
    st[w] = pumpUntil(c, [&] { return firstFinal(c); });
    std::unique_lock<std::mutex> lock(mu);
    ++settled;
    cv.notify_all();
    cv.wait(lock, [&] { return settled == 2; });
    lock.unlock();
    if (w == 1) {
      // Anything worker 0 sent past its limit would be summed well within
      // this (loopback round trips are microseconds).
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
      while (st[w].ok() && std::chrono::steady_clock::now() < until) {
        bool moved = false;
        st[w] = c.progress(&moved);
        pollfd p{c.fd(), POLLIN, 0};
        (void)::poll(&p, 1, 5);
      }
      for (uint32_t i = kLimit; i < kSlices; ++i) laterFinal += c.sliceFinal(i) ? 1 : 0;
      lock.lock();
      checked = true;
      cv.notify_all();
      lock.unlock();
    } else {
      lock.lock();
      cv.wait(lock, [&] { return checked; });
      lock.unlock();
      c.limitReduce(kSlices);
    }
    const Status fin = finishCall(c);
    if (st[w].ok()) st[w] = fin;
  };
  onTwoThreads(worker);
  for (int w = 0; w < 2; ++w) ASSERT_TRUE(st[w].ok()) << "worker " << w << ": " << st[w].message();
  EXPECT_EQ(laterFinal, 0u) << "slices past the limit were summed while it held";
  expectInt32Sum(in, out, count, "after the limit rose");
}

// A limit that never rises is dropped a quarter of the switch timeout
// after it last held a send back: worker 1, which sent every slice, gets
// every sum instead of taking the wait for worker 0's share as a lost switch.
TEST(InaLoopback, SendLimitThatNeverRisesIsDroppedBeforeRackMatesTimeOut) {
  using namespace limit;
  SwitchdProcess sw({"--slots", "64"});
  ASSERT_TRUE(sw.ready());
  std::unique_ptr<Rack> rack;
  ASSERT_TRUE(twoWorkers(sw, 2000, &rack).ok());
  const size_t count = size_t{rack->client(0).sliceElems()} * kSlices;
  auto in = int32Inputs(2, count, 92);
  auto out = in;
  std::vector<Status> st(2);
  auto worker = [&](int w) {
    InaClient& c = rack->client(w);
    st[w] = c.start(out[w].data(), count, rinaInt32, InaCallOptions{});
    if (!st[w].ok()) return;
    if (w == 0) c.limitReduce(kLimit);
    st[w] = finishCall(c);
  };
  onTwoThreads(worker);
  for (int w = 0; w < 2; ++w) ASSERT_TRUE(st[w].ok()) << "worker " << w << ": " << st[w].message();
  expectInt32Sum(in, out, count, "after the limit was dropped");
}

TEST(InaLoopback, LostSwitchGivesTimeoutNamingWorkerAndJob) {
  auto sw = std::make_unique<SwitchdProcess>(std::vector<std::string>{"--slots", "64"});
  ASSERT_TRUE(sw->ready());
  RackOptions ro;
  ro.job = 77;
  ro.slots = 8;
  ro.client.switchTimeoutMs = 400;
  std::unique_ptr<Rack> rack;
  ASSERT_TRUE(Rack::create(*sw, 2, ro, &rack).ok());
  sw->kill();
  auto in = int32Inputs(2, 1000, 600);
  std::vector<Status> st;
  std::vector<InaCallResult> res;
  auto t0 = std::chrono::steady_clock::now();
  rack->allreduce(in, 1000, rinaInt32, &st, &res);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 3.0);
  for (int w = 0; w < 2; ++w) {
    EXPECT_EQ(st[w].code(), rinaTimeout);
    EXPECT_NE(st[w].message().find("worker " + std::to_string(w) + " job 77"), std::string::npos)
        << st[w].message();
    EXPECT_NE(st[w].message().find("seq"), std::string::npos) << st[w].message();
  }
}

}  // namespace
}  // namespace rina::ina::testing
