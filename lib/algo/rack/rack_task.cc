#include "algo/rack/rack_task.h"

#include <poll.h>

#include <algorithm>
#include <cstring>

#include "core/log.h"
#include "reduce/reduce.h"

namespace rina::algo {
namespace {

const char* kindName(uint8_t k) {
  return k == RackTask::kFix        ? "fix"
         : k == RackTask::kGathered ? "gathered"
         : k == RackTask::kRepair   ? "repair"
                                    : "unknown";
}

}  // namespace

RackTask::RackTask(RackCall& call, const Member& m, char* data, std::vector<RackPiece> reduceOrder,
                   std::vector<RackPiece> gatherOrder, std::function<bool(size_t, size_t)> isFinal,
                   const char* input)
    : call_(call),
      m_(m),
      ina_(m.inaRack ? call.rack : nullptr),
      data_(data),
      es_(reduce::dataTypeSize(call.type)),
      reduceOrder_(std::move(reduceOrder)),
      gatherOrder_(std::move(gatherOrder)),
      isFinal_(std::move(isFinal)),
      input_(input) {
  for (int r : m.ranks) {
    if (r != call.ctx.rank()) others_.push_back(r);
  }
  msgOut_.resize(others_.size());
  msgIn_.resize(others_.size());
  wantOut_.resize(others_.size());
  wantIn_.resize(others_.size());
}

RackTask::~RackTask() = default;

bool RackTask::onSwitch() const { return sumsOnSwitch(call_, m_); }

Engine& RackTask::newEngine() {
  sub_ = std::make_unique<Engine>(contextFor(call_.ctx, kAllReduce, call_.seq, call_.steps));
  return *sub_;
}

void RackTask::fallBack(const std::string& why) {
  // Every worker of the rack falls back at the same point; the agent is the
  // one that logs it at WARN.
  if (ina_) ina_->fallBack(call_.ctx, why, call_.ctx.rank() == m_.ranks.front());
}

Status RackTask::start() {
  started_ = Clock::now();
  const bool everyWorker = std::any_of(reduceOrder_.begin(), reduceOrder_.end(),
                                       [](const RackPiece& p) { return p.port == kEveryWorker; });
  if (everyWorker && !onSwitch()) {
    return errorf(rinaInternalError,
                  "rank %d: allreduce #%llu: a rack sum for every worker needs the switch",
                  call_.ctx.rank(), static_cast<unsigned long long>(call_.seq));
  }
  if (reduceOrder_.empty()) {
    allReduced_ = true;
    return startGather();
  }
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
  RINA_TRACE("rank %d: allreduce #%llu: rack phases: %s%s", call_.ctx.rank(),
             static_cast<unsigned long long>(call_.seq), line.c_str(), inaStats_.c_str());
}

void RackTask::noteInaStats(const char* what, const ina::InaCallStats& t) {
  if (logLevel() < LogLevel::kTrace) return;
  char buf[240];
  std::snprintf(buf, sizeof buf,
                "; %s: %llu first sends, %llu resent (%llu fast), %llu late answers, %llu window "
                "cuts, smallest window %u, srtt %lld us, rto %lld us",
                what, static_cast<unsigned long long>(t.datagramsSent),
                static_cast<unsigned long long>(t.retransmissions),
                static_cast<unsigned long long>(t.fastRetransmissions),
                static_cast<unsigned long long>(t.lateAnswers),
                static_cast<unsigned long long>(t.windowCuts), t.smallestWindow,
                static_cast<long long>(t.srttUs), static_cast<long long>(t.rtoUs));
  inaStats_ += buf;
}

// ---------------------------------------------------------------- reduce

Status RackTask::startSwitchReduce() {
  ina::SwitchCalls& client = ina_->calls();
  const size_t P = client.sliceElems();
  const int me = call_.ctx.rank();
  size_t count = 0;
  bool allToEvery = true;
  for (const RackPiece& p : reduceOrder_) {
    firstSpan_.push_back(spans_.size());
    const uint8_t role = p.port == kEveryWorker ? ina::kSliceAll
                         : p.port == me         ? ina::kSlicePort
                                                : ina::kSliceOther;
    allToEvery &= role == ina::kSliceAll;
    for (size_t b = 0; b < p.count; b += P) {
      spans_.push_back(
          ina::SliceSpan{p.begin + b, static_cast<uint32_t>(std::min(P, p.count - b))});
      roles_.push_back(role);
    }
    count = std::max(count, p.begin + p.count);
  }
  if (!input_ && std::find(roles_.begin(), roles_.end(), ina::kSliceAll) != roles_.end()) {
    // A slice summed on the hosts starts from every worker's input: a copy
    // in the communicator's scratch, which grows once and is reused (a
    // fresh allocation would fault in every page of it at every call; DDP
    // runs in place on 25 MiB buckets). Nothing else in a rack call uses it.
    char* saved = call_.ctx.scratch(count * es_);
    if (!saved) {
      return errorf(rinaSystemError, "rank %d: cannot allocate %zu bytes for the input copy", me,
                    count * es_);
    }
    std::memcpy(saved, data_, count * es_);
    input_ = saved;
  }
  firstSpan_.push_back(spans_.size());
  state_.assign(spans_.size(), kPending);
  // The window is split so the all-gather runs beside the reduce-scatter
  // (their traffic goes opposite ways on the host links): each root gets at
  // least one slot of the gather's part. A window too small to split runs
  // the two one after the other.
  const uint32_t W = client.window(), n = static_cast<uint32_t>(m_.ranks.size());
  const uint32_t gatherSlots = !gatherOrder_.empty() && W >= 2 * n ? n * (W / 2 / n) : 0;
  ina::InaCallOptions o;
  if (!allToEvery) {  // sums to every worker alone: the switch's plain allreduce
    o.resultToPortOnly = true;
    o.sliceRoles = &roles_;
    o.portMarkers = call_.portMarkers;
  }
  o.markerPrologue = call_.portMarkers;  // a switch that knows markers (RINA_INA_PORT_MARKERS)
  o.spans = &spans_;
  o.input = input_;
  o.slots = W - gatherSlots;
  Status st = client.start(data_, count, call_.type, o);
  if (st.ok()) limitToRing();
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
      if (roles_[s] != ina::kSliceOther) mine_.push_back(static_cast<uint32_t>(s));
    }
    beginFix();
  }
  return {};
}

void RackTask::exchangeMsgs(uint8_t kind, const std::vector<uint32_t>& counts, int step) {
  Engine& e = newEngine();
  for (size_t i = 0; i < others_.size(); ++i) {
    msgOut_[i] = Msg{};
    msgOut_[i].kind = kind;
    msgOut_[i].fallback = lostSwitch_ ? 1 : 0;
    msgOut_[i].count = counts.empty() ? 0 : counts[i];
    transport::Connection* c = call_.ctx.peer(others_[i]);
    e.sends().push_back(SendItem{
        .conn = c, .data = reinterpret_cast<char*>(&msgOut_[i]), .len = sizeof(Msg), .step = step});
    e.recvs().push_back(RecvItem{
        .conn = c, .dst = reinterpret_cast<char*>(&msgIn_[i]), .len = sizeof(Msg), .step = step});
  }
}

Status RackTask::takeMsg(size_t i, uint8_t kind) {
  const Msg& in = msgIn_[i];
  if (in.magic != kTaskMagic || in.kind != kind) {
    return errorf(rinaInternalError,
                  "rank %d: allreduce #%llu: rank %d sent rack message '%s' where '%s' was due",
                  call_.ctx.rank(), static_cast<unsigned long long>(call_.seq), others_[i],
                  in.magic == kTaskMagic ? kindName(in.kind) : "corrupt", kindName(kind));
  }
  if (in.fallback && !rackFallBack_) {
    rackFallBack_ = true;
    if (why_.empty())
      why_ = "rank " + std::to_string(others_[i]) + " got no answer from the switch";
  }
  return {};
}

void RackTask::beginFix() {
  exchangeMsgs(kFix, std::vector<uint32_t>(others_.size(), static_cast<uint32_t>(mine_.size())), 1);
  phase_ = Phase::kFixHeaders;
}

void RackTask::scanReduced() {
  const ina::SwitchCalls& client = ina_->calls();
  const size_t horizon =
      std::min(state_.size(), scanFrom_ + 2 * size_t{client.grantedSlots()} + 64);
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
  const size_t P = ina_->calls().sliceElems();
  const size_t first = firstSpan_[p] + b / P, last = firstSpan_[p] + (e - 1) / P;
  for (size_t s = first; s <= last; ++s) {
    if (state_[s] != kClean) return false;
  }
  return true;
}

Status RackTask::startHostReduce() {
  phase_ = Phase::kHostReduce;
  hostDone_.assign(reduceOrder_.size(), 0);
  const int me = call_.ctx.rank();
  const reduce::ReduceFn fn = reduce::reduceFunction(call_.type, call_.op);
  Engine& e = newEngine();
  for (size_t p = 0; p < reduceOrder_.size(); ++p) {
    const RackPiece& piece = reduceOrder_[p];
    if (piece.count == 0) continue;
    char* at = data_ + piece.begin * es_;
    const size_t bytes = piece.count * es_;
    if (piece.port == me) {
      for (int q : others_) {
        RecvItem item{.conn = call_.ctx.peer(q),
                      .dst = at,
                      .len = bytes,
                      .reduce = transport::RecvReduce{fn, at, es_},
                      .step = 1,
                      .slice = static_cast<int>(p)};
        item.onDone = [this, p]() -> Status {
          ++hostDone_[p];
          return {};
        };
        e.recvs().push_back(std::move(item));
      }
    } else {
      e.sends().push_back(SendItem{.conn = call_.ctx.peer(piece.port),
                                   .data = at,
                                   .len = bytes,
                                   .step = 1,
                                   .slice = static_cast<int>(p)});
    }
  }
  return {};
}

Status RackTask::exchangeLists(uint8_t kind, const std::vector<const std::vector<uint32_t>*>& out,
                               int step) {
  Engine& e = newEngine();
  for (size_t i = 0; i < others_.size(); ++i) {
    RINA_TRY(takeMsg(i, kind));
    wantIn_[i].resize(msgIn_[i].count);
    transport::Connection* c = call_.ctx.peer(others_[i]);
    if (!out[i]->empty()) {
      e.sends().push_back(SendItem{.conn = c,
                                   .data = reinterpret_cast<const char*>(out[i]->data()),
                                   .len = out[i]->size() * sizeof(uint32_t),
                                   .step = step});
    }
    if (!wantIn_[i].empty()) {
      e.recvs().push_back(RecvItem{.conn = c,
                                   .dst = reinterpret_cast<char*>(wantIn_[i].data()),
                                   .len = wantIn_[i].size() * sizeof(uint32_t),
                                   .step = step});
    }
  }
  return {};
}

Status RackTask::afterFixHeaders() {
  RINA_TRY(
      exchangeLists(kFix, std::vector<const std::vector<uint32_t>*>(others_.size(), &mine_), 1));
  rackFallBack_ |= lostSwitch_;
  phase_ = Phase::kFixLists;
  return {};
}

Status RackTask::afterFixLists() {
  const reduce::ReduceFn fn = reduce::reduceFunction(call_.type, call_.op);
  Engine& e = newEngine();
  everyHost_.clear();
  for (uint32_t s : mine_) {
    if (roles_[s] == ina::kSliceAll) everyHost_.push_back(s);
  }
  // Out of place the switch left these slices of data_ as they were: the
  // port's sum starts from its input, and rack-mates send theirs.
  const char* in = input_ ? input_ : data_;
  for (uint32_t s : mine_) {
    if (roles_[s] == ina::kSlicePort && in != data_) {
      std::memcpy(data_ + spans_[s].first * es_, in + spans_[s].first * es_, spans_[s].len * es_);
    }
  }
  for (size_t i = 0; i < others_.size(); ++i) {
    transport::Connection* c = call_.ctx.peer(others_[i]);
    for (uint32_t s : wantIn_[i]) {
      if (s < spans_.size() && roles_[s] == ina::kSliceAll) {
        everyHost_.push_back(s);  // a rack-mate did not get this sum
        continue;
      }
      if (s >= spans_.size() || roles_[s] != ina::kSliceOther) {
        return errorf(
            rinaInternalError,
            "rank %d: allreduce #%llu: rank %d asked for slice %u, which it does not port",
            call_.ctx.rank(), static_cast<unsigned long long>(call_.seq), others_[i], s);
      }
      e.sends().push_back(SendItem{.conn = c,
                                   .data = in + spans_[s].first * es_,
                                   .len = spans_[s].len * es_,
                                   .step = 1,
                                   .slice = static_cast<int>(s)});
    }
    for (uint32_t s : mine_) {
      if (roles_[s] != ina::kSlicePort) continue;
      char* at = data_ + spans_[s].first * es_;
      e.recvs().push_back(RecvItem{.conn = c,
                                   .dst = at,
                                   .len = spans_[s].len * es_,
                                   .reduce = transport::RecvReduce{fn, at, es_},
                                   .step = 1,
                                   .slice = static_cast<int>(s)});
    }
  }
  std::sort(everyHost_.begin(), everyHost_.end());
  everyHost_.erase(std::unique(everyHost_.begin(), everyHost_.end()), everyHost_.end());
  if (!everyHost_.empty()) addEveryWorkerFix(e);
  phase_ = Phase::kFixData;
  return {};
}

// Workers may disagree on which kEveryWorker slices came back (one got a
// sum before a preemption, another did not), so the union is redone on the
// hosts, from every worker's input, and the agent's sums go to every
// worker: all end with the same bits. The agent counts the union.
void RackTask::addEveryWorkerFix(Engine& e) {
  const reduce::ReduceFn fn = reduce::reduceFunction(call_.type, call_.op);
  for (uint32_t s : everyHost_) {
    std::memcpy(data_ + spans_[s].first * es_, input_ + spans_[s].first * es_, spans_[s].len * es_);
  }
  const int agent = m_.ranks.front();
  if (call_.ctx.rank() == agent) {
    ina_->countHostSlices(everyHost_.size());
    for (int q : others_) {
      for (uint32_t s : everyHost_) {
        char* at = data_ + spans_[s].first * es_;
        e.recvs().push_back(RecvItem{.conn = call_.ctx.peer(q),
                                     .dst = at,
                                     .len = spans_[s].len * es_,
                                     .reduce = transport::RecvReduce{fn, at, es_},
                                     .step = 1,
                                     .slice = static_cast<int>(s)});
      }
    }
    // The sums go back once every input is in.
    const int allIn = static_cast<int>(e.recvs().size()) - 1;
    for (int q : others_) {
      for (uint32_t s : everyHost_) {
        e.sends().push_back(SendItem{.conn = call_.ctx.peer(q),
                                     .data = data_ + spans_[s].first * es_,
                                     .len = spans_[s].len * es_,
                                     .afterRecv = allIn,
                                     .step = 2,
                                     .slice = static_cast<int>(s)});
      }
    }
    return;
  }
  transport::Connection* c = call_.ctx.peer(agent);
  for (uint32_t s : everyHost_) {
    e.sends().push_back(SendItem{.conn = c,
                                 .data = data_ + spans_[s].first * es_,
                                 .len = spans_[s].len * es_,
                                 .step = 1,
                                 .slice = static_cast<int>(s)});
  }
  const int sent = static_cast<int>(e.sends().size()) - 1;
  for (uint32_t s : everyHost_) {
    e.recvs().push_back(RecvItem{.conn = c,
                                 .dst = data_ + spans_[s].first * es_,
                                 .len = spans_[s].len * es_,
                                 .afterSend = sent,
                                 .step = 2,
                                 .slice = static_cast<int>(s)});
  }
}

// ---------------------------------------------------------------- driving

void RackTask::limitToRing() {
  if (!ahead_) return;
  const size_t pieces = std::min(ahead_(), reduceOrder_.size());
  ina_->calls().limitReduce(static_cast<uint32_t>(firstSpan_[pieces]));
}

bool RackTask::pollSwitchReduce(bool* moved) {
  ina::SwitchCalls& client = ina_->calls();
  limitToRing();
  bool progressed = false;
  (void)client.progress(&progressed);  // a failure shows in finish()
  *moved |= progressed;
  if (progressed || client.done()) scanReduced();
  if (!client.done()) return false;
  ina::InaCallResult res;
  Status st = client.finish(&res);
  mark("switch reduce");
  if (!st.ok()) {
    lostSwitch_ = true;
    why_ = st.message();
  }
  // Host slices of kEveryWorker pieces count once, as the rack's union, at
  // the agent (addEveryWorkerFix).
  size_t hostSlices = 0;
  mine_.clear();
  for (uint32_t s : res.hostSlices) {
    state_[s] = kOnHost;
    if (roles_[s] != ina::kSliceOther) mine_.push_back(s);
    if (roles_[s] != ina::kSliceAll) ++hostSlices;
  }
  ina_->countCall(res.stats, hostSlices);
  noteInaStats("switch reduce", res.stats);
  beginFix();
  *moved = true;
  return true;
}

void RackTask::pollSwitchGather(bool* moved) {
  ina::SwitchCalls& client = ina_->calls();
  bool progressed = false;
  (void)client.progress(&progressed);
  *moved |= progressed;
  if (!client.gatherStatus().ok() && !lostSwitch_) {
    lostSwitch_ = true;
    why_ = client.gatherStatus().message();
  }
  if (!client.gatherRootsDone()) return;
  mark("own multicasts");
  exchangeMsgs(kGathered, {}, call_.steps);
  phase_ = Phase::kGatherDone;
  *moved = true;
}

Status RackTask::next(bool* moved) {
  for (;;) {
    if (sub_ && !sub_->finished()) {
      bool progressed = false;
      RINA_TRY(sub_->poll(&progressed));
      *moved |= progressed;
      if (!sub_->finished()) return {};
    }
    switch (phase_) {
      case Phase::kSwitchReduce:
        if (!pollSwitchReduce(moved)) return {};
        break;
      case Phase::kFixHeaders:
        RINA_TRY(afterFixHeaders());
        break;
      case Phase::kFixLists:
        RINA_TRY(afterFixLists());
        break;
      case Phase::kFixData:
        mark("fix");
        for (uint32_t s : mine_) state_[s] = kClean;
        for (uint32_t s : everyHost_) state_[s] = kClean;
        RINA_TRY(startGather());
        *moved = true;
        break;
      case Phase::kHostReduce:
        mark("host reduce");
        allReduced_ = true;
        RINA_TRY(startGather());
        *moved = true;
        break;
      case Phase::kSwitchGather:
        pollSwitchGather(moved);
        return {};  // the next pass polls the exchange and the socket together
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
    (void)ina_->calls().progress(&progressed);
    *moved |= progressed;
  }
  return next(moved);
}

void RackTask::arm(transport::WaitSet& ws, int* timeoutMs) {
  if (phase_ == Phase::kSwitchReduce || gatherActive_) {
    ws.addFd(ina_->calls().fd(), POLLIN);
    *timeoutMs = std::min(*timeoutMs, std::max(1, ina_->calls().waitMs()));
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
