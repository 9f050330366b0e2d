// The congestion response of the INA client (lib/ina/congestion.h,
// slice_window.h): the window's arithmetic and the pacer's, on given
// counts and time points; then a client against a switch played by hand in
// the same thread (a UDP socket the test reads and answers), so every
// assertion is on counts of datagrams, never on how long anything took:
//   - a datagram whose later neighbours were answered is resent at once,
//     alone; one such loss keeps the window, a run of them halves it (the
//     next window holds half the slices);
//   - a silent switch gets the oldest datagram alone at each timeout, the
//     window halves once for the event, and an answer that comes twice
//     undoes the cut;
//   - the pacer holds a window back to its burst;
// and every call ends with the exact sums. A test thread descheduled past
// a retransmission timeout makes the client resend more, so counts that a
// late test could raise are bounded below, not pinned.
#include "ina/congestion.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "ina/ina_client.h"
#include "rina/ina_wire.h"
#include "wire/net.h"

namespace rina::ina {
namespace {

using std::chrono::milliseconds;

TEST(CongestionWindow, HalvesOncePerEventGrowsByOnePerWindowAndUndoes) {
  CongestionWindow cw;
  cw.reset({16, 8}, true);
  EXPECT_EQ(cw.limit(0), 16u);
  EXPECT_EQ(cw.limit(1), 8u);
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 16; ++i) cw.sent(0);
  EXPECT_FALSE(cw.canSend(0));
  EXPECT_TRUE(cw.canSend(1));
  // A loss halves port 0 only.
  cw.lost(0, 5, t0, t0 + milliseconds(1), true);
  EXPECT_EQ(cw.limit(0), 8u);
  EXPECT_EQ(cw.limit(1), 8u);
  // Another datagram first sent before that cut: the same event.
  cw.lost(0, 6, t0, t0 + milliseconds(2), true);
  EXPECT_EQ(cw.limit(0), 8u);
  EXPECT_EQ(cw.stats().cuts, 1u);
  // One sent after it: a new event.
  cw.lost(0, 40, t0 + milliseconds(3), t0 + milliseconds(4), true);
  EXPECT_EQ(cw.limit(0), 4u);
  EXPECT_EQ(cw.stats().smallestWindow, 4u);
  // The resend of 40 was not needed: back to 8. Seq 5's cut is not the
  // last one any more, so it cannot be undone.
  cw.spurious(0, 5);
  EXPECT_EQ(cw.limit(0), 4u);
  cw.spurious(0, 40);
  EXPECT_EQ(cw.limit(0), 8u);
  cw.spurious(0, 40);
  EXPECT_EQ(cw.stats().undos, 1u);
  // Additive increase, 1 / window per answer: 8 answers make 8.94, 9 make 9.05.
  for (int i = 0; i < 8; ++i) cw.done(0, true);
  EXPECT_EQ(cw.limit(0), 8u);
  cw.done(0, true);
  EXPECT_EQ(cw.limit(0), 9u);
  EXPECT_EQ(cw.inFlight(0), 7u);
  // NACKs and abandoned datagrams leave flight without growing it.
  for (int i = 0; i < 7; ++i) cw.done(0, false);
  EXPECT_EQ(cw.inFlight(0), 0u);
  EXPECT_EQ(cw.limit(0), 9u);
  // Never below one, never above the port's slots.
  for (int i = 0; i < 10; ++i) {
    cw.lost(0, 100 + i, t0 + milliseconds(10 + 2 * i), t0 + milliseconds(11 + 2 * i), true);
  }
  EXPECT_EQ(cw.limit(0), 1u);
  for (int i = 0; i < 1000; ++i) cw.done(0, true);
  EXPECT_EQ(cw.limit(0), 16u);
}

// An overtaken datagram with no other loss in the last window of first
// sends is a random loss: resent without a cut. A second one within a
// window of sends is a run, which halves; a timeout always does.
TEST(CongestionWindow, AnIsolatedOvertakenLossDoesNotHalve) {
  CongestionWindow cw;
  cw.reset({16}, true);
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 40; ++i) cw.sent(0);
  EXPECT_FALSE(cw.lost(0, 7, t0, t0 + milliseconds(1), false));
  EXPECT_EQ(cw.limit(0), 16u);
  EXPECT_EQ(cw.stats().isolated, 1u);
  // The same seq again (resent twice): still the one loss.
  EXPECT_FALSE(cw.lost(0, 7, t0, t0 + milliseconds(2), false));
  EXPECT_EQ(cw.limit(0), 16u);
  // Another within 16 first sends: a run.
  for (int i = 0; i < 10; ++i) cw.sent(0);
  EXPECT_TRUE(cw.lost(0, 30, t0 + milliseconds(3), t0 + milliseconds(4), false));
  EXPECT_EQ(cw.limit(0), 8u);
  // After 8 first sends (the window now) with no loss, one is isolated again.
  for (int i = 0; i < 8; ++i) cw.sent(0);
  EXPECT_FALSE(cw.lost(0, 60, t0 + milliseconds(5), t0 + milliseconds(6), false));
  EXPECT_EQ(cw.limit(0), 8u);
  // A timeout, even alone, halves.
  for (int i = 0; i < 100; ++i) cw.sent(0);
  EXPECT_TRUE(cw.lost(0, 200, t0 + milliseconds(7), t0 + milliseconds(8), true));
  EXPECT_EQ(cw.limit(0), 4u);
  EXPECT_EQ(cw.stats().cuts, 2u);
  EXPECT_EQ(cw.stats().isolated, 2u);
}

TEST(CongestionWindow, DisabledStaysAtTheSlots) {
  CongestionWindow cw;
  cw.reset({12}, false);
  const Clock::time_point t0 = Clock::now();
  cw.lost(0, 1, t0, t0 + milliseconds(1), true);
  EXPECT_EQ(cw.limit(0), 12u);
  EXPECT_EQ(cw.stats().cuts, 0u);
}

TEST(Pacer, KeepsToItsRateAndBurst) {
  Pacer p;
  p.configure(1000.0, 400.0);  // 1000 bytes/s, bursts of 400
  const Clock::time_point t0 = Clock::now() + milliseconds(1);
  int taken = 0;
  while (p.take(100, t0)) ++taken;
  EXPECT_EQ(taken, 4);
  EXPECT_EQ(p.holds(), 1u);
  EXPECT_EQ(p.waitUs(100, t0), 100000);  // 100 bytes at 1000 bytes/s
  EXPECT_FALSE(p.take(100, t0 + milliseconds(99)));
  EXPECT_TRUE(p.take(100, t0 + milliseconds(100)));
  // A second later the bucket is full again, not fuller.
  taken = 0;
  while (p.take(100, t0 + milliseconds(1100))) ++taken;
  EXPECT_EQ(taken, 4);
  Pacer off;
  EXPECT_TRUE(off.take(1 << 20, t0));
  EXPECT_EQ(off.waitUs(1 << 20, t0), 0);
}

TEST(Pacer, RinaInaPaceParsesOffAutoAndRates) {
  double rate = -1;
  ASSERT_TRUE(paceBytesPerSec("off", 500, &rate).ok());
  EXPECT_EQ(rate, 0);
  ASSERT_TRUE(paceBytesPerSec("auto", 500, &rate).ok());
  EXPECT_EQ(rate, 62.5e6);
  ASSERT_TRUE(paceBytesPerSec("auto", 0, &rate).ok());  // no rate in the topology: off
  EXPECT_EQ(rate, 0);
  ASSERT_TRUE(paceBytesPerSec("2500", 500, &rate).ok());
  EXPECT_EQ(rate, 312.5e6);
  for (const char* bad : {"", "on", "0", "-5", "12x", "1e9"}) {
    const Status s = paceBytesPerSec(bad, 500, &rate);
    EXPECT_EQ(s.code(), rinaInvalidArgument) << bad;
    EXPECT_NE(s.message().find("RINA_INA_PACE"), std::string::npos) << bad;
  }
}

constexpr uint16_t kJob = 9;
constexpr uint64_t kToken = 0x1234000000005678ull;
constexpr uint32_t kPayload = 4;
constexpr uint32_t kSlots = 16;

// One client (fan-in 1: the sum of a slice is the slice) and the switch's
// socket, which the test reads and answers itself.
class HandPlayedSwitch : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(openUdpSocket(Endpoint{0x7F000001, 0}, 1 << 20, &switch_).ok());
    ASSERT_TRUE(boundEndpoint(switch_.get(), &switchAt_).ok());
  }

  void makeClient(double paceBytesPerSec = 0, double paceBurstBytes = 0) {
    InaClientOptions o;
    o.switchAddr = 0x7F000001;
    o.job = kJob;
    o.token = kToken;
    o.worker = 0;
    o.fanIn = 1;
    o.paceBytesPerSec = paceBytesPerSec;
    o.paceBurstBytes = paceBurstBytes;
    o.switchTimeoutMs = 20000;
    ASSERT_TRUE(InaClient::create(o, &client_).ok());
    Grant g;
    g.job = kJob;
    g.base = 0;
    g.length = kSlots;
    g.payloadElems = kPayload;
    g.port = switchAt_.port;
    g.ports = 1;
    ASSERT_TRUE(client_->setGrant(g).ok());
  }

  void start(size_t slices) {
    input_.resize(slices * kPayload);
    for (size_t i = 0; i < input_.size(); ++i) input_[i] = static_cast<int32_t>(i * 7 - 3);
    buffer_ = input_;
    ASSERT_TRUE(client_->start(buffer_.data(), buffer_.size(), rinaInt32, {}).ok());
  }

  // One client pass, then every datagram that reached the switch since.
  std::vector<std::vector<uint8_t>> pass() {
    bool moved = false;
    (void)client_->progress(&moved);
    std::vector<std::vector<uint8_t>> got;
    std::vector<uint8_t> buf(kMaxDatagramBytes);
    for (;;) {
      const ssize_t n = ::recv(switch_.get(), buf.data(), buf.size(), MSG_DONTWAIT);
      if (n <= 0) break;
      got.emplace_back(buf.begin(), buf.begin() + n);
    }
    return got;
  }

  // Passes (sleeping on the client's socket as its waitMs() says) until the
  // switch has received something; at most 2000 passes.
  std::vector<std::vector<uint8_t>> passUntilReceived() {
    for (int i = 0; i < 2000; ++i) {
      std::vector<std::vector<uint8_t>> got = pass();
      if (!got.empty()) return got;
      pollfd p{client_->fd(), POLLIN, 0};
      ::poll(&p, 1, client_->waitMs());
    }
    ADD_FAILURE() << "the client sent nothing in 2000 passes";
    return {};
  }

  // The datagrams of a pass that are first sends, not resends.
  static size_t firstSends(const std::vector<std::vector<uint8_t>>& got) {
    size_t n = 0;
    for (const auto& d : got) n += (headerOf(d).flags & kFlagResend) ? 0 : 1;
    return n;
  }

  static Header headerOf(const std::vector<uint8_t>& d) {
    Header h;
    EXPECT_EQ(decode(d, &h), DecodeError::kOk);
    return h;
  }

  // The switch's answer to a contribution: its own values (fan-in 1).
  void answer(const std::vector<uint8_t>& d) {
    ASSERT_EQ(headerOf(d).type, Type::kData);
    std::vector<uint8_t> out = d;  // type RESULT, no flags: the rest as it came
    out[1] = static_cast<uint8_t>(static_cast<uint8_t>(Type::kResult) << 4);
    sockaddr_in to = client_->localEndpoint().toSockaddr();
    ASSERT_EQ(::sendto(switch_.get(), out.data(), out.size(), 0,
                       reinterpret_cast<const sockaddr*>(&to), sizeof to),
              static_cast<ssize_t>(out.size()));
  }

  // Answers everything until the call is done (at most 5000 passes).
  void answerToTheEnd(std::vector<std::vector<uint8_t>> pending = {}) {
    for (int i = 0; i < 5000 && !client_->done(); ++i) {
      for (const auto& d : pending) answer(d);
      pending = pass();
      if (pending.empty()) {
        pollfd p{client_->fd(), POLLIN, 0};
        ::poll(&p, 1, client_->waitMs());
      }
    }
    ASSERT_TRUE(client_->done());
  }

  InaCallResult finish() {
    InaCallResult r;
    EXPECT_TRUE(client_->finish(&r).ok());
    EXPECT_TRUE(r.hostSlices.empty());
    EXPECT_EQ(buffer_, input_);  // fan-in 1: the sum of each slice is itself
    return r;
  }

  Fd switch_;
  Endpoint switchAt_;
  std::unique_ptr<InaClient> client_;
  std::vector<int32_t> input_, buffer_;
};

TEST_F(HandPlayedSwitch, AnOvertakenDatagramIsResentAloneWithoutACut) {
  makeClient();
  start(48);
  std::vector<std::vector<uint8_t>> first = pass();
  ASSERT_EQ(first.size(), kSlots);
  // The first datagram is lost; the 15 behind it come back.
  const uint32_t lostSeq = headerOf(first[0]).seq;
  for (size_t i = 1; i < first.size(); ++i) answer(first[i]);
  std::vector<std::vector<uint8_t>> resent = passUntilReceived();
  ASSERT_EQ(resent.size(), 1u);
  const Header r = headerOf(resent[0]);
  EXPECT_EQ(r.seq, lostSeq);
  EXPECT_TRUE(r.flags & kFlagResend);
  // Its slot is the next seq's: nothing new goes until it is answered.
  EXPECT_EQ(firstSends(pass()), 0u);
  answer(resent[0]);
  // One loss alone: the next window is whole.
  std::vector<std::vector<uint8_t>> next = passUntilReceived();
  EXPECT_EQ(firstSends(next), kSlots);
  answerToTheEnd(next);
  const InaCallResult res = finish();
  EXPECT_EQ(res.stats.datagramsSent, 48u);
  EXPECT_EQ(res.stats.fastRetransmissions, 1u);
}

TEST_F(HandPlayedSwitch, ARunOfOvertakenDatagramsIsResentAndTheWindowHalves) {
  makeClient();
  start(64);
  std::vector<std::vector<uint8_t>> first = pass();
  ASSERT_EQ(first.size(), kSlots);
  // The first two datagrams are lost; the 14 behind them come back.
  const uint32_t lost0 = headerOf(first[0]).seq, lost1 = headerOf(first[1]).seq;
  for (size_t i = 2; i < first.size(); ++i) answer(first[i]);
  std::vector<std::vector<uint8_t>> resent = passUntilReceived();
  ASSERT_EQ(resent.size(), 2u);
  EXPECT_EQ(headerOf(resent[0]).seq, lost0);
  EXPECT_EQ(headerOf(resent[1]).seq, lost1);
  for (const auto& d : resent) EXPECT_TRUE(headerOf(d).flags & kFlagResend);
  // Their slots are the next seqs': nothing new goes until they are answered.
  EXPECT_EQ(firstSends(pass()), 0u);
  for (const auto& d : resent) answer(d);
  // Now half a window of new slices, and no more.
  std::vector<std::vector<uint8_t>> next = passUntilReceived();
  EXPECT_EQ(firstSends(next), kSlots / 2);
  EXPECT_EQ(firstSends(pass()), 0u);
  answerToTheEnd(next);
  const InaCallResult res = finish();
  EXPECT_EQ(res.stats.datagramsSent, 64u);
  EXPECT_EQ(res.stats.fastRetransmissions, 2u);
  EXPECT_GE(res.stats.retransmissions, 2u);
  EXPECT_GE(res.stats.windowCuts, 1u);
  EXPECT_LE(res.stats.smallestWindow, kSlots / 2);
}

TEST_F(HandPlayedSwitch, ASilentSwitchGetsTheOldestDatagramAloneAtEachTimeout) {
  makeClient();
  start(48);
  std::vector<std::vector<uint8_t>> first = pass();
  ASSERT_EQ(first.size(), kSlots);
  const uint32_t oldest = headerOf(first[0]).seq;
  // Nothing comes back: two timeouts, each resending the oldest alone.
  for (int timeout = 0; timeout < 2; ++timeout) {
    std::vector<std::vector<uint8_t>> resent = passUntilReceived();
    ASSERT_EQ(resent.size(), 1u) << "timeout " << timeout;
    EXPECT_EQ(headerOf(resent[0]).seq, oldest);
    EXPECT_TRUE(headerOf(resent[0]).flags & kFlagResend);
  }
  // The originals were only late: every one is answered, the oldest twice
  // (original and resend), which undoes the cut.
  answer(first[0]);
  answerToTheEnd(first);
  const InaCallResult res = finish();
  EXPECT_EQ(res.stats.datagramsSent, 48u);
  EXPECT_GE(res.stats.retransmissions, 2u);
  EXPECT_EQ(res.stats.fastRetransmissions, 0u);
  // The second timeout is the same congestion event as the first.
  EXPECT_GE(res.stats.windowCuts, 1u);
  EXPECT_LT(res.stats.windowCuts, res.stats.retransmissions);
  EXPECT_LE(res.stats.smallestWindow, kSlots / 2);
  EXPECT_GE(res.stats.lateAnswers, 1u);
  EXPECT_GE(res.stats.windowUndos, 1u);
}

TEST_F(HandPlayedSwitch, ThePacerHoldsAWindowBackToItsBurst) {
  const double datagram = kHeaderBytes + 4.0 * kPayload;
  // Four datagrams at once, then one per 10 s: the first pass sends four.
  makeClient(datagram / 10, 4 * datagram);
  start(4 + 1);
  std::vector<std::vector<uint8_t>> first = pass();
  EXPECT_EQ(first.size(), 4u);
  for (const auto& d : first) answer(d);
  // The window has room; the pacer has none. (The fifth would take 10 s:
  // the call ends here, its slice unsent.)
  EXPECT_EQ(firstSends(pass()), 0u);
  EXPECT_EQ(firstSends(pass()), 0u);
  EXPECT_FALSE(client_->done());
}

}  // namespace
}  // namespace rina::ina
