// The datagram pump's hand-off of answers (lib/ina/datagram_pump.h) over
// loopback, with answers written here by hand: each goes to the attached
// call whose seqs hold it; one for a later call is kept and handed to that
// call when it attaches; one for no call is stale; other jobs' and tokens'
// are dropped; the RoCEv2 layout arrives as the native one. And the slot
// claims that keep calls running side by side apart.
#include "ina/datagram_pump.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "rina/ina_roce.h"
#include "rina/ina_wire.h"
#include "wire/net.h"

namespace rina::ina {
namespace {

constexpr uint16_t kJob = 7;
constexpr uint64_t kToken = 0xC0FFEE0000C0FFEEull;
constexpr uint32_t kPayload = 4;

// A call that records what the pump hands it, attached while it lives.
class RecordingCall : public PumpCall {
 public:
  RecordingCall(DatagramPump& pump, uint32_t begin, uint32_t end, uint32_t firstSlot = 0,
                uint32_t slots = 0)
      : pump_(pump), begin_(begin), end_(end), firstSlot_(firstSlot), slots_(slots) {
    pump_.attach(*this);
  }
  ~RecordingCall() override { pump_.detach(*this); }
  const char* name() const override { return "recorder"; }
  bool holdsSlots(uint32_t first, uint32_t count) const override {
    return slots_ != 0 && firstSlot_ < first + count && first < firstSlot_ + slots_;
  }
  uint32_t seqBegin() const override { return begin_; }
  uint32_t seqEnd() const override { return end_; }
  void onAnswer(const Header& h, const uint8_t* payload) override {
    answers.push_back(h);
    std::vector<int32_t> v(h.elems);
    decodePayload(payload, h.elems, v.data());
    payloads.push_back(v);
  }
  void onStray(const Header& h) override { strays.push_back(h.seq); }

  // Answers as (seq, whether its payload is the one result() wrote).
  std::vector<std::pair<uint32_t, bool>> seqs() const {
    std::vector<std::pair<uint32_t, bool>> out;
    for (size_t i = 0; i < answers.size(); ++i) {
      const uint32_t q = answers[i].seq;
      const std::vector<int32_t> want{static_cast<int32_t>(q), static_cast<int32_t>(q + 1),
                                      static_cast<int32_t>(q + 2), static_cast<int32_t>(q + 3)};
      out.emplace_back(q, payloads[i] == want);
    }
    return out;
  }

  std::vector<Header> answers;
  std::vector<std::vector<int32_t>> payloads;
  std::vector<uint32_t> strays;

 private:
  DatagramPump& pump_;
  uint32_t begin_, end_, firstSlot_, slots_;
};

using Seqs = std::vector<std::pair<uint32_t, bool>>;

class PumpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    InaClientOptions o;
    o.job = kJob;
    o.token = kToken;
    o.worker = 0;
    o.fanIn = 2;
    ASSERT_TRUE(DatagramPump::create(o, nullptr, &pump_).ok());
    Grant g;
    g.job = kJob;
    g.base = 0;
    g.length = 16;
    g.payloadElems = kPayload;
    g.port = 9;  // nothing is sent in these tests
    g.ports = 1;
    ASSERT_TRUE(pump_->setGrant(g).ok());
    ASSERT_TRUE(openUdpSocket(Endpoint{0x7F000001, 0}, 1 << 20, &switch_).ok());
  }

  // A RESULT the switch would send for seq, with values seq, seq + 1, ...
  static std::vector<uint8_t> result(uint32_t seq, uint16_t job = kJob, uint64_t token = kToken) {
    Header h;
    h.type = Type::kResult;
    h.job = job;
    h.slot = static_cast<uint16_t>(seq % 16);
    h.fanIn = 2;
    h.seq = seq;
    h.elems = kPayload;
    h.token = token;
    std::vector<int32_t> values(kPayload);
    for (uint32_t k = 0; k < kPayload; ++k) values[k] = static_cast<int32_t>(seq + k);
    std::vector<uint8_t> out(kHeaderBytes + 4 * kPayload);
    EXPECT_EQ(encode(h, values, out), out.size());
    return out;
  }

  void sendToPump(const std::vector<uint8_t>& datagram) {
    sockaddr_in to = pump_->localEndpoint().toSockaddr();
    ASSERT_EQ(::sendto(switch_.get(), datagram.data(), datagram.size(), 0,
                       reinterpret_cast<const sockaddr*>(&to), sizeof to),
              static_cast<ssize_t>(datagram.size()));
  }

  // Receives until `marker` (a call's record of answers) holds a RESULT for
  // seq: datagrams from one socket arrive in order on loopback, so every
  // datagram sent before it has been handed on by then.
  void receiveUntil(const RecordingCall& marker, uint32_t seq) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    auto has = [&] {
      for (const Header& h : marker.answers) {
        if (h.seq == seq) return true;
      }
      return false;
    };
    while (!has() && std::chrono::steady_clock::now() < deadline) {
      pump_->waitReadable(100);
      pump_->receive();
    }
    ASSERT_TRUE(has()) << "the answer for seq " << seq << " did not come within 5 s";
  }

  std::unique_ptr<DatagramPump> pump_;
  Fd switch_;
};

TEST_F(PumpTest, AnswersGoToTheCallOwningTheirSeq) {
  RecordingCall a(*pump_, 10, 20), b(*pump_, 20, 30);
  sendToPump(result(25));
  sendToPump(result(12));
  sendToPump(result(19));
  receiveUntil(a, 19);
  EXPECT_EQ(a.seqs(), (Seqs{{12, true}, {19, true}}));
  EXPECT_EQ(b.seqs(), (Seqs{{25, true}}));
  EXPECT_TRUE(a.strays.empty());
}

TEST_F(PumpTest, AnswersForALaterCallWaitForItToAttach) {
  {
    RecordingCall running(*pump_, 10, 20);
    sendToPump(result(41));  // a rack-mate is ahead: the call after next
    sendToPump(result(30));  // the next call
    sendToPump(result(11));
    receiveUntil(running, 11);
    EXPECT_EQ(running.seqs(), (Seqs{{11, true}}));
    EXPECT_TRUE(running.strays.empty());
  }
  {
    RecordingCall next(*pump_, 30, 40);  // gets what came early for it
    EXPECT_EQ(next.seqs(), (Seqs{{30, true}}));
  }
  RecordingCall after(*pump_, 40, 50);
  EXPECT_EQ(after.seqs(), (Seqs{{41, true}}));
}

TEST_F(PumpTest, AnswersOfFinishedCallsAreStray) {
  RecordingCall a(*pump_, 10, 20), b(*pump_, 20, 30);
  sendToPump(result(3));
  sendToPump(result(12));
  receiveUntil(a, 12);
  EXPECT_EQ(a.strays, std::vector<uint32_t>{3});
  EXPECT_EQ(b.strays, std::vector<uint32_t>{3});
  EXPECT_TRUE(b.answers.empty());
}

TEST_F(PumpTest, OtherJobsTokensAndBrokenDatagramsAreDropped) {
  RecordingCall a(*pump_, 10, 20);
  sendToPump(result(13, kJob + 1));
  sendToPump(result(14, kJob, kToken + 1));
  std::vector<uint8_t> truncated = result(15);
  truncated.resize(kHeaderBytes + 2);
  sendToPump(truncated);
  sendToPump(result(16));
  receiveUntil(a, 16);
  EXPECT_EQ(a.seqs(), (Seqs{{16, true}}));
  EXPECT_TRUE(a.strays.empty());
}

TEST_F(PumpTest, RoceAnswersArriveAsNative) {
  RecordingCall a(*pump_, 10, 20);
  const std::vector<uint8_t> native = result(17);
  std::vector<uint8_t> roce(roce::kMaxDatagramBytes);
  roce.resize(roce::fromNative(native, roce));
  ASSERT_GT(roce.size(), native.size());
  sendToPump(roce);
  receiveUntil(a, 17);
  EXPECT_EQ(a.seqs(), (Seqs{{17, true}}));
  EXPECT_EQ(a.answers[0].type, Type::kResult);
  EXPECT_EQ(a.answers[0].token, kToken);
  EXPECT_EQ(a.answers[0].slot, 1u);
}

TEST_F(PumpTest, CallsClaimSlotsTheOthersDoNotHold) {
  uint32_t slots = 8;
  {
    RecordingCall gather(*pump_, 10, 20, 0, 8);
    Status s = pump_->claimSlots("allreduce", 4, &slots);
    EXPECT_EQ(s.code(), rinaInvalidUsage);
    EXPECT_NE(s.message().find("worker 0 job 7: allreduce slots 4..12 overlap the recorder"),
              std::string::npos)
        << s.message();
    slots = 0;  // the rest of the window
    EXPECT_TRUE(pump_->claimSlots("allreduce", 8, &slots).ok());
    EXPECT_EQ(slots, 8u);
    slots = 9;
    s = pump_->claimSlots("allreduce", 8, &slots);
    EXPECT_EQ(s.code(), rinaInvalidArgument);
    EXPECT_NE(s.message().find("slots 8..17 are outside the window of 16"), std::string::npos)
        << s.message();
  }
  slots = 16;
  EXPECT_TRUE(pump_->claimSlots("allreduce", 0, &slots).ok());
}

TEST_F(PumpTest, CallsBeforeAGrantAreRefused) {
  InaClientOptions o;
  o.job = kJob;
  o.fanIn = 1;
  std::unique_ptr<DatagramPump> fresh;
  ASSERT_TRUE(DatagramPump::create(o, nullptr, &fresh).ok());
  Status s = fresh->needGrant("broadcast");
  EXPECT_EQ(s.code(), rinaInvalidUsage);
  EXPECT_EQ(s.message(), "ina: worker 0 job 7: broadcast before a slot grant");
  EXPECT_TRUE(pump_->needGrant("broadcast").ok());
}

}  // namespace
}  // namespace rina::ina
