#include "algo/rack_task.h"

#include <poll.h>

#include <algorithm>
#include <cstring>

#include "algo/rack_ina.h"
#include "core/log.h"
#include "reduce/reduce.h"

namespace rina::algo {
namespace {

constexpr uint32_t kTaskMagic = 0x5254534b;  // "RTSK"
enum MsgKind : uint8_t { kFix = 1, kGathered, kRepair };

const char* kindName(uint8_t k) {
  return k == kFix ? "fix" : k == kGathered ? "gathered" : k == kRepair ? "repair" : "unknown";
}

void countCall(Communicator& comm, const ina::InaCallStats& s, size_t hostSlices) {
  comm.stats().inaCalls++;
  comm.stats().inaRetransmissions += s.retransmissions;
  comm.stats().inaHostSlices += hostSlices;
}

}  // namespace

// What rack-mates tell each other between phases.
struct RackTask::Msg {
  uint32_t magic = kTaskMagic;
  uint8_t kind = 0;
  uint8_t fallback = 0;  // this rank saw the switch fail
  uint16_t pad = 0;
  uint32_t count = 0;  // slices listed in the message that follows
  uint32_t pad2 = 0;
};

RackTask::RackTask(RackCall& call, const Member& m, char* data, std::vector<RackPiece> reduceOrder,
                   std::vector<RackPiece> gatherOrder, std::function<bool(size_t, size_t)> isFinal)
    : call_(call),
      m_(m),
      ina_(m.inaRack ? call.comm.rackIna() : nullptr),
      data_(data),
      es_(reduce::dataTypeSize(call.type)),
      reduceOrder_(std::move(reduceOrder)),
      gatherOrder_(std::move(gatherOrder)),
      isFinal_(std::move(isFinal)) {
  for (int r : m.ranks) {
    if (r != call.comm.rank()) others_.push_back(r);
  }
  msgOut_.resize(others_.size());
  msgIn_.resize(others_.size());
  wantOut_.resize(others_.size());
  wantIn_.resize(others_.size());
}

RackTask::~RackTask() = default;

bool RackTask::onSwitch() const {
  return ina_ && ina_->active() && inaReducible(call_.type, call_.op);
}

Engine& RackTask::newEngine() {
  sub_ = std::make_unique<Engine>(contextFor(call_.comm, kAllReduce, call_.seq, call_.steps));
  return *sub_;
}

void RackTask::fallBack(const std::string& why) {
  // Every worker of the rack falls back at the same point; the agent is the
  // one that logs it at WARN.
  if (ina_) ina_->fallBack(call_.comm, why, call_.comm.rank() == m_.ranks.front());
}

Status RackTask::start() {
  started_ = Clock::now();
  return onSwitch() ? startSwitchReduce() : startHostReduce();
}

void RackTask::finishTask() {
  mark("done");
  phase_ = Phase::kDone;
  if (logLevel() < LogLevel::kTrace) return;
  std::string line;
  Clock::time_point last = started_;
  for (const auto& [what, at] : marks_) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s %.1f ms", line.empty() ? "" : ", ", what,
                  std::chrono::duration<double, std::milli>(at - last).count());
    line += buf;
    last = at;
  }
  RINA_TRACE("rank %d: allreduce #%llu: rack phases: %s", call_.comm.rank(),
             static_cast<unsigned long long>(call_.seq), line.c_str());
}

// ---------------------------------------------------------------- reduce

Status RackTask::startSwitchReduce() {
  ina::InaClient& client = ina_->client();
  const size_t P = client.sliceElems();
  const int me = call_.comm.rank();
  size_t count = 0;
  for (const RackPiece& p : reduceOrder_) {
    firstSpan_.push_back(spans_.size());
    for (size_t b = 0; b < p.count; b += P) {
      spans_.push_back(
          ina::SliceSpan{p.begin + b, static_cast<uint32_t>(std::min(P, p.count - b))});
      roles_.push_back(p.port == me ? ina::kSlicePort : ina::kSliceOther);
    }
    count = std::max(count, p.begin + p.count);
  }
  firstSpan_.push_back(spans_.size());
  state_.assign(spans_.size(), kPending);
  // The window is split so the all-gather runs beside the reduce-scatter
  // (their traffic goes opposite ways on the host links): each root gets at
  // least one slot of the gather's part. A window too small to split runs
  // the two one after the other.
  const uint32_t W = client.window(), n = static_cast<uint32_t>(m_.ranks.size());
  const uint32_t gatherSlots = W >= 2 * n ? n * (W / 2 / n) : 0;
  ina::InaCallOptions o;
  o.resultToPortOnly = true;
  o.sliceRoles = &roles_;
  o.spans = &spans_;
  o.slots = W - gatherSlots;
  Status st = client.start(data_, count, call_.type, o);
  // A gather that cannot start now is tried again after the reduce-scatter.
  if (st.ok() && gatherSlots) (void)beginSwitchGather(W - gatherSlots, gatherSlots);
  phase_ = Phase::kSwitchReduce;
  if (!st.ok()) {
    // Nothing went to the switch: every slice is the hosts' (and the rack
    // falls back, as after any switch failure).
    lostSwitch_ = true;
    why_ = st.message();
    std::fill(state_.begin(), state_.end(), kOnHost);
    mine_.clear();
    for (size_t s = 0; s < spans_.size(); ++s) {
      if (roles_[s] == ina::kSlicePort) mine_.push_back(static_cast<uint32_t>(s));
    }
    beginFix();
  }
  return {};
}

void RackTask::beginFix() {
  Engine& e = newEngine();
  for (size_t i = 0; i < others_.size(); ++i) {
    msgOut_[i] = Msg{};
    msgOut_[i].kind = kFix;
    msgOut_[i].fallback = lostSwitch_ ? 1 : 0;
    msgOut_[i].count = static_cast<uint32_t>(mine_.size());
    transport::Connection* c = call_.comm.peer(others_[i]);
    e.sends().push_back(SendItem{c, reinterpret_cast<char*>(&msgOut_[i]), sizeof(Msg), -1, 1, 0});
    e.recvs().push_back(
        RecvItem{c, reinterpret_cast<char*>(&msgIn_[i]), sizeof(Msg), {}, -1, 1, 0, {}});
  }
  phase_ = Phase::kFixHeaders;
}

void RackTask::scanReduced() {
  const ina::InaClient& client = ina_->client();
  const size_t horizon =
      std::min(state_.size(), scanFrom_ + 2 * size_t{client.grant().length} + 64);
  for (size_t s = scanFrom_; s < horizon; ++s) {
    if (state_[s] == kPending && client.sliceFinal(static_cast<uint32_t>(s))) {
      state_[s] = client.sliceOnHost(static_cast<uint32_t>(s)) ? kOnHost : kClean;
    }
  }
  while (scanFrom_ < state_.size() && state_[scanFrom_] != kPending) ++scanFrom_;
}

bool RackTask::reduced(size_t p, size_t b, size_t e) const {
  if (e <= b) return true;
  if (spans_.empty()) {
    // Host reduce: the piece is done once every rack-mate's part of it came in.
    return allReduced_ || (p < hostDone_.size() && hostDone_[p] == others_.size());
  }
  const size_t P = ina_->client().sliceElems();
  const size_t first = firstSpan_[p] + b / P, last = firstSpan_[p] + (e - 1) / P;
  for (size_t s = first; s <= last; ++s) {
    if (state_[s] != kClean) return false;
  }
  return true;
}

Status RackTask::startHostReduce() {
  phase_ = Phase::kHostReduce;
  hostDone_.assign(reduceOrder_.size(), 0);
  const int me = call_.comm.rank();
  const reduce::ReduceFn fn =
      reduce::reduceFunction(call_.type, call_.op == rinaAvg ? rinaSum : call_.op);
  Engine& e = newEngine();
  for (size_t p = 0; p < reduceOrder_.size(); ++p) {
    const RackPiece& piece = reduceOrder_[p];
    if (piece.count == 0) continue;
    char* at = data_ + piece.begin * es_;
    const size_t bytes = piece.count * es_;
    if (piece.port == me) {
      for (int q : others_) {
        RecvItem item{call_.comm.peer(q),  at, bytes, transport::RecvReduce{fn, at, es_}, -1, 1,
                      static_cast<int>(p), {}};
        item.onDone = [this, p]() -> Status {
          ++hostDone_[p];
          return {};
        };
        e.recvs().push_back(std::move(item));
      }
    } else {
      e.sends().push_back(
          SendItem{call_.comm.peer(piece.port), at, bytes, -1, 1, static_cast<int>(p)});
    }
  }
  return {};
}

Status RackTask::afterFixHeaders() {
  Engine& e = newEngine();
  for (size_t i = 0; i < others_.size(); ++i) {
    const Msg& in = msgIn_[i];
    if (in.magic != kTaskMagic || in.kind != kFix) {
      return errorf(rinaInternalError,
                    "rank %d: allreduce #%llu: rank %d sent rack message '%s' where 'fix' was due",
                    call_.comm.rank(), static_cast<unsigned long long>(call_.seq), others_[i],
                    in.magic == kTaskMagic ? kindName(in.kind) : "corrupt");
    }
    if (in.fallback && !rackFallBack_) {
      rackFallBack_ = true;
      if (why_.empty())
        why_ = "rank " + std::to_string(others_[i]) + " got no answer from the switch";
    }
    rackFallBack_ |= lostSwitch_;
    wantIn_[i].resize(in.count);
    transport::Connection* c = call_.comm.peer(others_[i]);
    if (!mine_.empty()) {
      e.sends().push_back(
          SendItem{c, reinterpret_cast<const char*>(mine_.data()), 4 * mine_.size(), -1, 1, 0});
    }
    if (in.count) {
      e.recvs().push_back(RecvItem{
          c, reinterpret_cast<char*>(wantIn_[i].data()), 4 * wantIn_[i].size(), {}, -1, 1, 0, {}});
    }
  }
  rackFallBack_ |= lostSwitch_;
  phase_ = Phase::kFixLists;
  return {};
}

Status RackTask::afterFixLists() {
  const reduce::ReduceFn fn =
      reduce::reduceFunction(call_.type, call_.op == rinaAvg ? rinaSum : call_.op);
  Engine& e = newEngine();
  for (size_t i = 0; i < others_.size(); ++i) {
    transport::Connection* c = call_.comm.peer(others_[i]);
    for (uint32_t s : wantIn_[i]) {
      if (s >= spans_.size() || roles_[s] != ina::kSliceOther) {
        return errorf(
            rinaInternalError,
            "rank %d: allreduce #%llu: rank %d asked for slice %u, which it does not port",
            call_.comm.rank(), static_cast<unsigned long long>(call_.seq), others_[i], s);
      }
      e.sends().push_back(SendItem{c, data_ + spans_[s].first * es_, spans_[s].len * es_, -1, 1,
                                   static_cast<int>(s)});
    }
    for (uint32_t s : mine_) {
      char* at = data_ + spans_[s].first * es_;
      e.recvs().push_back(RecvItem{c,
                                   at,
                                   spans_[s].len * es_,
                                   transport::RecvReduce{fn, at, es_},
                                   -1,
                                   1,
                                   static_cast<int>(s),
                                   {}});
    }
  }
  phase_ = Phase::kFixData;
  return {};
}

// ---------------------------------------------------------------- gather

Status RackTask::beginSwitchGather(uint32_t firstSlot, uint32_t slots) {
  ina::InaClient& client = ina_->client();
  const size_t maxBytes = 4 * client.sliceElems();
  gatherSlices_.clear();
  gatherPiece_.clear();
  for (size_t i = 0; i < gatherOrder_.size(); ++i) {
    const RackPiece& p = gatherOrder_[i];
    const uint8_t root = static_cast<uint8_t>(std::find(m_.ranks.begin(), m_.ranks.end(), p.port) -
                                              m_.ranks.begin());
    const size_t bytes = p.count * es_;
    for (size_t b = 0; b < bytes; b += maxBytes) {
      gatherSlices_.push_back(ina::GatherSlice{
          p.begin * es_ + b, static_cast<uint32_t>(std::min(maxBytes, bytes - b)), root});
      gatherPiece_.push_back(i);
    }
  }
  ina::InaGatherOptions o;
  o.slices = &gatherSlices_;
  o.ready = [this](uint32_t s) {
    const size_t i = gatherPiece_[s];
    const size_t end = gatherSlices_[s].offset + gatherSlices_[s].bytes;
    return isFinal_(i, end / es_ - gatherOrder_[i].begin);
  };
  o.firstSlot = firstSlot;
  o.slots = slots;
  Status st = client.startGather(data_, o);
  gatherActive_ = st.ok();
  return st;
}

Status RackTask::startGather() {
  if (rackFallBack_) fallBack(why_);
  if (gatherActive_ && !onSwitch()) {
    // The switch gather begun beside the reduce-scatter is given up: the
    // rack fell back, so every worker gathers everything over the hosts.
    ina::InaGatherResult dropped;
    (void)ina_->client().finishGather(&dropped);
    gatherActive_ = false;
  }
  if (!onSwitch()) return startHostGather();
  if (!gatherActive_) {
    Status st = beginSwitchGather(0, 0);
    if (!st.ok()) {
      // A grant too small to give every root a slot: this collective
      // gathers over the hosts (every worker sees the same grant, so all do).
      RINA_INFO("rank %d: %s; the rack all-gather goes over the hosts", call_.comm.rank(),
                st.message().c_str());
      return startHostGather();
    }
  }
  phase_ = Phase::kSwitchGather;
  return {};
}

Status RackTask::startHostGather() {
  phase_ = Phase::kHostGather;
  const int me = call_.comm.rank();
  const size_t part = std::max<size_t>(1, call_.comm.sliceBytes() / es_);
  Engine& e = newEngine();
  for (size_t i = 0; i < gatherOrder_.size(); ++i) {
    const RackPiece& p = gatherOrder_[i];
    for (size_t b = 0; b < p.count; b += part) {
      const size_t n = std::min(part, p.count - b);
      char* at = data_ + (p.begin + b) * es_;
      if (p.port == me) {
        for (int q : others_) {
          SendItem s{call_.comm.peer(q), at, n * es_, -1, call_.steps, static_cast<int>(i)};
          s.ready = [this, i, end = b + n] { return isFinal_(i, end); };
          e.sends().push_back(std::move(s));
        }
      } else {
        e.recvs().push_back(RecvItem{
            call_.comm.peer(p.port), at, n * es_, {}, -1, call_.steps, static_cast<int>(i), {}});
      }
    }
  }
  return {};
}

Status RackTask::afterGatherDone() {
  ina::InaClient& client = ina_->client();
  bool moved = false;
  (void)client.progress(&moved);  // what is already in the socket
  ina::InaGatherResult res;
  Status st = client.finishGather(&res);
  gatherActive_ = false;
  if (!st.ok() && !lostSwitch_) {
    lostSwitch_ = true;
    why_ = st.message();
  }
  countCall(call_.comm, res.stats, res.missingSlices.size());
  rackFallBack_ |= lostSwitch_;
  Engine& e = newEngine();
  for (size_t i = 0; i < others_.size(); ++i) {
    const Msg& in = msgIn_[i];
    if (in.magic != kTaskMagic || in.kind != kGathered) {
      return errorf(
          rinaInternalError,
          "rank %d: allreduce #%llu: rank %d sent rack message '%s' where 'gathered' was due",
          call_.comm.rank(), static_cast<unsigned long long>(call_.seq), others_[i],
          in.magic == kTaskMagic ? kindName(in.kind) : "corrupt");
    }
    if (in.fallback && !rackFallBack_) {
      rackFallBack_ = true;
      if (why_.empty())
        why_ = "rank " + std::to_string(others_[i]) + " got no answer from the switch";
    }
    const uint8_t root = static_cast<uint8_t>(
        std::find(m_.ranks.begin(), m_.ranks.end(), others_[i]) - m_.ranks.begin());
    wantOut_[i].clear();
    for (uint32_t s : res.missingSlices) {
      if (gatherSlices_[s].root == root) wantOut_[i].push_back(s);
    }
    msgOut_[i] = Msg{};
    msgOut_[i].kind = kRepair;
    msgOut_[i].count = static_cast<uint32_t>(wantOut_[i].size());
    transport::Connection* c = call_.comm.peer(others_[i]);
    e.sends().push_back(
        SendItem{c, reinterpret_cast<char*>(&msgOut_[i]), sizeof(Msg), -1, call_.steps, 0});
    e.recvs().push_back(
        RecvItem{c, reinterpret_cast<char*>(&msgIn_[i]), sizeof(Msg), {}, -1, call_.steps, 0, {}});
  }
  phase_ = Phase::kRepairHeaders;
  return {};
}

Status RackTask::afterRepairHeaders() {
  Engine& e = newEngine();
  for (size_t i = 0; i < others_.size(); ++i) {
    const Msg& in = msgIn_[i];
    if (in.magic != kTaskMagic || in.kind != kRepair) {
      return errorf(
          rinaInternalError,
          "rank %d: allreduce #%llu: rank %d sent rack message '%s' where 'repair' was due",
          call_.comm.rank(), static_cast<unsigned long long>(call_.seq), others_[i],
          in.magic == kTaskMagic ? kindName(in.kind) : "corrupt");
    }
    wantIn_[i].resize(in.count);
    transport::Connection* c = call_.comm.peer(others_[i]);
    if (!wantOut_[i].empty()) {
      e.sends().push_back(SendItem{c, reinterpret_cast<const char*>(wantOut_[i].data()),
                                   4 * wantOut_[i].size(), -1, call_.steps, 0});
    }
    if (in.count) {
      e.recvs().push_back(RecvItem{c,
                                   reinterpret_cast<char*>(wantIn_[i].data()),
                                   4 * wantIn_[i].size(),
                                   {},
                                   -1,
                                   call_.steps,
                                   0,
                                   {}});
    }
  }
  phase_ = Phase::kRepairLists;
  return {};
}

Status RackTask::afterRepairLists() {
  Engine& e = newEngine();
  const uint8_t myRoot = static_cast<uint8_t>(
      std::find(m_.ranks.begin(), m_.ranks.end(), call_.comm.rank()) - m_.ranks.begin());
  for (size_t i = 0; i < others_.size(); ++i) {
    transport::Connection* c = call_.comm.peer(others_[i]);
    for (uint32_t s : wantIn_[i]) {
      if (s >= gatherSlices_.size() || gatherSlices_[s].root != myRoot) {
        return errorf(rinaInternalError,
                      "rank %d: allreduce #%llu: rank %d asked for all-gather slice %u, which "
                      "this rank is not the root of",
                      call_.comm.rank(), static_cast<unsigned long long>(call_.seq), others_[i], s);
      }
      const ina::GatherSlice& g = gatherSlices_[s];
      SendItem item{c, data_ + g.offset, g.bytes, -1, call_.steps, static_cast<int>(s)};
      // A root that lost the switch early may be asked for pieces the ring
      // has not finished yet.
      item.ready = [this, s] {
        const size_t piece = gatherPiece_[s];
        const size_t end = gatherSlices_[s].offset + gatherSlices_[s].bytes;
        return isFinal_(piece, end / es_ - gatherOrder_[piece].begin);
      };
      e.sends().push_back(std::move(item));
    }
    for (uint32_t s : wantOut_[i]) {
      const ina::GatherSlice& g = gatherSlices_[s];
      e.recvs().push_back(
          RecvItem{c, data_ + g.offset, g.bytes, {}, -1, call_.steps, static_cast<int>(s), {}});
    }
  }
  phase_ = Phase::kRepairData;
  return {};
}

// ---------------------------------------------------------------- driving

Status RackTask::next(bool* moved) {
  for (;;) {
    if (sub_ && !sub_->finished()) {
      bool progressed = false;
      RINA_TRY(sub_->poll(&progressed));
      *moved |= progressed;
      if (!sub_->finished()) return {};
    }
    switch (phase_) {
      case Phase::kSwitchReduce: {
        ina::InaClient& client = ina_->client();
        bool progressed = false;
        (void)client.progress(&progressed);  // a failure shows in finish()
        *moved |= progressed;
        if (progressed || client.done()) scanReduced();
        if (!client.done()) return {};
        ina::InaCallResult res;
        Status st = client.finish(&res);
        mark("switch reduce");
        if (!st.ok()) {
          lostSwitch_ = true;
          why_ = st.message();
        }
        countCall(call_.comm, res.stats, res.hostSlices.size());
        mine_.clear();
        for (uint32_t s : res.hostSlices) {
          state_[s] = kOnHost;
          if (roles_[s] == ina::kSlicePort) mine_.push_back(s);
        }
        beginFix();
        *moved = true;
        break;
      }
      case Phase::kFixHeaders:
        RINA_TRY(afterFixHeaders());
        break;
      case Phase::kFixLists:
        RINA_TRY(afterFixLists());
        break;
      case Phase::kFixData:
        mark("fix");
        for (uint32_t s : mine_) state_[s] = kClean;
        RINA_TRY(startGather());
        *moved = true;
        break;
      case Phase::kHostReduce:
        mark("host reduce");
        allReduced_ = true;
        RINA_TRY(startGather());
        *moved = true;
        break;
      case Phase::kSwitchGather: {
        ina::InaClient& client = ina_->client();
        bool progressed = false;
        (void)client.progress(&progressed);
        *moved |= progressed;
        if (!client.gatherStatus().ok() && !lostSwitch_) {
          lostSwitch_ = true;
          why_ = client.gatherStatus().message();
        }
        if (!client.gatherRootsDone()) return {};
        mark("own multicasts");
        Engine& e = newEngine();
        for (size_t i = 0; i < others_.size(); ++i) {
          msgOut_[i] = Msg{};
          msgOut_[i].kind = kGathered;
          msgOut_[i].fallback = lostSwitch_ ? 1 : 0;
          transport::Connection* c = call_.comm.peer(others_[i]);
          e.sends().push_back(
              SendItem{c, reinterpret_cast<char*>(&msgOut_[i]), sizeof(Msg), -1, call_.steps, 0});
          e.recvs().push_back(RecvItem{
              c, reinterpret_cast<char*>(&msgIn_[i]), sizeof(Msg), {}, -1, call_.steps, 0, {}});
        }
        phase_ = Phase::kGatherDone;
        *moved = true;
        return {};  // the next pass polls the exchange and the socket together
      }
      case Phase::kGatherDone:
        mark("rack gathered");
        RINA_TRY(afterGatherDone());
        break;
      case Phase::kRepairHeaders:
        RINA_TRY(afterRepairHeaders());
        break;
      case Phase::kRepairLists:
        RINA_TRY(afterRepairLists());
        break;
      case Phase::kRepairData:
        if (rackFallBack_) fallBack(why_);
        finishTask();
        *moved = true;
        return {};
      case Phase::kHostGather:
        finishTask();
        *moved = true;
        return {};
      case Phase::kDone:
        return {};
    }
  }
}

Status RackTask::progress(bool* moved) {
  *moved = false;
  if (gatherActive_ && phase_ != Phase::kSwitchReduce && phase_ != Phase::kSwitchGather) {
    // The all-gather runs on (and others' multicasts keep coming) while the
    // rack exchanges messages.
    bool progressed = false;
    (void)ina_->client().progress(&progressed);
    *moved |= progressed;
  }
  return next(moved);
}

void RackTask::arm(transport::WaitSet& ws, int* timeoutMs) {
  if (phase_ == Phase::kSwitchReduce || gatherActive_) {
    ws.addFd(ina_->client().fd(), POLLIN);
    *timeoutMs = std::min(*timeoutMs, std::max(1, ina_->client().waitMs()));
  }
  if (sub_ && !sub_->finished()) sub_->arm(ws);
}

Status RackTask::checkAlive() { return sub_ && !sub_->finished() ? sub_->checkAlive() : Status(); }

std::string RackTask::describe() const {
  const char* what = "";
  switch (phase_) {
    case Phase::kSwitchReduce:
      what = "the rack's reduce-scatter through the switch";
      break;
    case Phase::kFixHeaders:
    case Phase::kFixLists:
    case Phase::kFixData:
      what = "the rack's host fix-up of slices the switch did not sum";
      break;
    case Phase::kHostReduce:
      what = "the rack's reduce to its ports over the hosts";
      break;
    case Phase::kSwitchGather:
      what = "the rack's all-gather through the switch";
      break;
    case Phase::kGatherDone:
      what = "the rack-mates' end of the all-gather";
      break;
    case Phase::kRepairHeaders:
    case Phase::kRepairLists:
    case Phase::kRepairData:
      what = "the rack's repair of lost multicasts";
      break;
    case Phase::kHostGather:
      what = "the rack's all-gather over the hosts";
      break;
    case Phase::kDone:
      what = "nothing";
      break;
  }
  std::string out = what;
  if (sub_ && !sub_->finished()) out += " (" + sub_->waitingFor() + ")";
  return out;
}

}  // namespace rina::algo
