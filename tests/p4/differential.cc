#include "p4/differential.h"

#include <algorithm>
#include <cstdio>

#include "rina/ina_wire.h"

namespace rina::p4test {
namespace {

constexpr uint16_t kSentinelJob = 65000;
constexpr uint64_t kSentinelToken = 0x5e5e5e5e5e5e5e5eull;
constexpr uint16_t kSentinelSlot = 8000;  // never granted (the controllers grant 0..63)
constexpr uint16_t kDataPort = 9100;

std::string notices(const std::vector<ina::PreemptNotice>& n) {
  std::string s;
  for (const auto& p : n) {
    s += " PREEMPT job=" + std::to_string(p.job) + " base=" + std::to_string(p.base) +
         " length=" + std::to_string(p.length);
  }
  return s;
}

}  // namespace

// rina-switchd's data plane for the reference controller: one pipeline.
class Differential::PipelinePlane : public switchd::DataPlane {
 public:
  explicit PipelinePlane(switchd::Pipeline& p) : p_(p) {}
  void installJob(const switchd::JobEntry& job) override { p_.installJob(job); }
  void removeJob(uint16_t job) override { p_.removeJob(job); }
  void assignSlots(uint32_t begin, uint32_t end, uint16_t job) override {
    p_.assignSlots(begin, end, job);
  }
  uint64_t lastActivityMs(uint16_t job) const override { return p_.lastActivityMs(job); }
  std::string countersJson() const override { return "{}"; }

 private:
  switchd::Pipeline& p_;
};

Differential::Differential(FilesSwitch& sw, const Mac& switchMac, uint32_t switchAddr,
                           const bmv2::NeighborMap& hosts)
    : switch_(sw),
      switchMac_(switchMac),
      switchAddr_(switchAddr),
      hosts_(hosts),
      pipeline_(switchd::PipelineConfig{bmv2::kProgramSlots, bmv2::kProgramPayloadElems, 0, 1}) {
  sentinel_.mac = {0x02, 0, 0, 0, 0x5e, 0x5e};
  sentinel_.ep = {switchAddr_ - 1, 4999};
  hosts_[sentinel_.ep.addr] = sentinel_.mac;
  switchd::ControllerOptions co{
      kManagedSlots, bmv2::kProgramPayloadElems, kDataPort, 1, kIdleMs, false, 255};
  pipelinePlane_ = std::make_unique<PipelinePlane>(pipeline_);
  reference_ = std::make_unique<switchd::Controller>(co, *pipelinePlane_);
  bmv2::Bmv2DataPlaneOptions bo;
  bo.totalSlots = kManagedSlots;
  bo.neighbors = hosts_;
  bo.resolveWaitMs = 0;
  bo.activityRefreshMs = 0;
  bo.clockMs = [this] { return nowMs_; };
  bo.onFailure = [this](const Status& s) {
    if (bmv2Failure_.ok()) bmv2Failure_ = s;
  };
  bmv2Plane_ = std::make_unique<bmv2::Bmv2DataPlane>(sw.cli(), bo);
  underTest_ = std::make_unique<switchd::Controller>(co, *bmv2Plane_);
}

Differential::~Differential() = default;

Status Differential::prepare() {
  RINA_TRY(bmv2Plane_->prepare());
  return handle("REGISTER job=" + std::to_string(kSentinelJob) +
                " token=" + std::to_string(kSentinelToken) +
                " fanin=1 priority=255 slots=1 members=" + sentinel_.ep.toString());
}

Status Differential::control(const std::string& line, std::string* reply) {
  RINA_TRY(sync());
  return handle(line, reply);
}

Status Differential::handle(const std::string& line, std::string* reply) {
  std::vector<ina::PreemptNotice> na, nb;
  uint16_t ra = 0, rb = 0;
  std::string a = reference_->handle(line, nowMs_, &na, &ra);
  std::string b = underTest_->handle(line, nowMs_, &nb, &rb);
  if (!bmv2Failure_.ok()) return bmv2Failure_.prepend("'" + line + "': BMv2: ");
  if (a != b || notices(na) != notices(nb)) {
    return errorf(rinaInternalError,
                  "'%s': rina-switchd's controller answered '%s'%s, the BMv2 one '%s'%s",
                  line.c_str(), a.c_str(), notices(na).c_str(), b.c_str(), notices(nb).c_str());
  }
  if (ra) jobs_.push_back(ra);
  if (reply) *reply = a;
  return {};
}

Status Differential::send(const Host& from, std::span<const uint8_t> datagram,
                          const std::string& what, const IpFields& ipIn) {
  IpFields ip = ipIn;
  if (ip.identification == 0) ip.identification = ipId_++;
  const ina::Endpoint swEp{switchAddr_, kDataPort};
  switchd::Output out;
  pipeline_.process(datagram, from.ep, nowMs_, &out);
  for (const switchd::OutMessage& m : out.messages()) {
    auto mac = hosts_.find(m.to.addr);
    if (mac == hosts_.end()) {
      return errorf(rinaInternalError, "%s: rina-switchd answered %s, not a test host",
                    what.c_str(), m.to.toString().c_str());
    }
    expected_.push_back(udpFrame(mac->second, switchMac_, swEp, m.to,
                                 std::span<const uint8_t>(out.bytes(m), m.length)));
    causes_.push_back(sent_.size());
  }
  sent_.push_back(what);
  ++datagrams_;
  return switch_.send(udpFrame(switchMac_, from.mac, from.ep, swEp, datagram, ip));
}

Status Differential::sendOther(const Frame& frame, const std::string& what) {
  sent_.push_back(what + " (not an INA datagram)");
  return switch_.send(frame);
}

Status Differential::sync() {
  ina::Header h;
  h.type = ina::Type::kData;
  h.job = kSentinelJob;
  h.slot = kSentinelSlot;
  h.fanIn = 1;
  h.seq = ++sentinelSeq_;
  h.elems = static_cast<uint16_t>(bmv2::kProgramPayloadElems);
  h.token = kSentinelToken;
  std::vector<int32_t> zeros(h.elems, 0);
  std::vector<uint8_t> d(ina::kHeaderBytes + 4 * zeros.size());
  ina::encode(h, zeros, d);
  const size_t at = expected_.size();
  RINA_TRY(send(sentinel_, d, "sentinel " + std::to_string(h.seq)));
  if (expected_.size() != at + 1) {
    return errorf(rinaInternalError, "rina-switchd did not answer the sentinel with one NACK");
  }
  const Frame want = expected_.back();
  std::vector<Frame> got;
  RINA_TRY(switch_.waitFor(
      "the NACK of sentinel " + std::to_string(h.seq),
      [&](const std::vector<Frame>& frames) {
        return std::find(frames.begin() + std::min(checked_, frames.size()), frames.end(), want) !=
               frames.end();
      },
      &got));
  return sample();
}

// BMv2's activity is a counter the controller samples: sampled here at the
// clock the datagrams were sent at, it moves when rina-switchd's did.
Status Differential::sample() {
  for (uint16_t job : jobs_) bmv2Plane_->lastActivityMs(job);
  return bmv2Failure_;
}

Status Differential::advanceClock(uint64_t ms) {
  RINA_TRY(sync());
  nowMs_ += ms;
  return {};
}

Status Differential::check(const std::string& phase, bool closesPhase) {
  RINA_TRY(sync());
  std::vector<Frame> got;
  RINA_TRY(switch_.waitFor(
      "every answer up to the phase's sentinel",
      [&](const std::vector<Frame>& frames) {
        return std::find(frames.begin() + std::min(checked_, frames.size()), frames.end(),
                         expected_.back()) != frames.end();
      },
      &got));
  const size_t sentinelAt =
      std::find(got.begin() + std::min(checked_, got.size()), got.end(), expected_.back()) -
      got.begin();
  const size_t end = std::max(sentinelAt + 1, expected_.size());
  for (size_t i = checked_; i < end; ++i) {
    const bool haveGot = i <= sentinelAt, haveWant = i < expected_.size();
    if (haveGot && haveWant && got[i] == expected_[i]) continue;
    std::string msg = phase + ": answer " + std::to_string(i - checked_) + " of the phase (" +
                      std::to_string(i) + " in all) differs";
    if (haveWant) msg += "; rina-switchd sent it for " + sent_[causes_[i]];
    if (haveGot && haveWant) {
      msg += "; first differing byte " + std::to_string(firstDifference(got[i], expected_[i]));
    }
    // The datagrams between the last equal answer's and this one's: one of
    // them drew the difference.
    const size_t from = i > 0 ? causes_[i - 1] + 1 : 0;
    const size_t to = haveWant ? causes_[i] : sent_.size() - 1;
    msg += "\n  datagrams since the last equal answer:";
    for (size_t k = from; k <= to && k < sent_.size(); ++k) msg += "\n    " + sent_[k];
    msg += "\n  rina-switchd (" + std::to_string(expected_.size() - checked_) +
           " answers in the phase):\n" + (haveWant ? hexDump(expected_[i]) : "(none)");
    msg += "\n  BMv2 (" + std::to_string(sentinelAt + 1 - checked_) + " answers):\n" +
           (haveGot ? hexDump(got[i]) : "(none)");
    return errorf(rinaInternalError, "%s", msg.c_str());
  }
  checked_ = expected_.size();
  if (closesPhase) {
    lastPhaseDatagrams_ = datagrams_ - phaseStartDatagrams_;
    lastPhaseAnswers_ = expected_.size() - phaseStartAnswers_;
    phaseStartDatagrams_ = datagrams_;
    phaseStartAnswers_ = expected_.size();
  }
  return {};
}

Status Differential::compareCounters(std::string* summary) {
  RINA_TRY(sync());
  std::vector<uint64_t> verdicts, malformed;
  RINA_TRY(bmv2Plane_->readCounters(&verdicts, &malformed));
  const switchd::PipelineStats& s = pipeline_.stats();
  std::string diff;
  summary->clear();
  for (size_t i = 0; i < verdicts.size(); ++i) {
    const uint64_t want = s.verdicts[i].get();
    const char* name = switchd::verdictName(static_cast<switchd::Verdict>(i));
    *summary += std::string(summary->empty() ? "" : " ") + name + "=" + std::to_string(want);
    if (verdicts[i] != want) {
      diff += std::string(" ") + name + ": rina-switchd " + std::to_string(want) + ", BMv2 " +
              std::to_string(verdicts[i]) + ";";
    }
  }
  for (size_t i = 1; i < malformed.size(); ++i) {
    const uint64_t want = s.malformed[i].get();
    const char* name = ina::decodeErrorName(static_cast<ina::DecodeError>(i));
    *summary += std::string(" malformed_") + name + "=" + std::to_string(want);
    if (malformed[i] != want) {
      diff += std::string(" malformed ") + name + ": rina-switchd " + std::to_string(want) +
              ", BMv2 " + std::to_string(malformed[i]) + ";";
    }
  }
  if (!diff.empty()) return errorf(rinaInternalError, "counters differ:%s", diff.c_str());
  return {};
}

}  // namespace rina::p4test
