// RackTask's all-gather and repair phases (rack_task.h).
#include <algorithm>

#include "algo/rack/rack_task.h"
#include "core/log.h"

namespace rina::algo {

Status RackTask::beginSwitchGather(uint32_t firstSlot, uint32_t slots) {
  ina::SwitchCalls& client = ina_->calls();
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

bool RackTask::gatherOnSwitch() const {
  // A gather alone moves bytes of any type; after a reduce the rack gathers
  // where it reduced (over the hosts for a type the switch cannot sum).
  return ina_ && ina_->active() && (reduceOrder_.empty() || inaReducible(call_.type, call_.op));
}

Status RackTask::startGather() {
  if (rackFallBack_) fallBack(why_);
  if (gatherActive_ && !gatherOnSwitch()) {
    // The switch gather begun beside the reduce-scatter is given up: the
    // rack fell back, so every worker gathers everything over the hosts.
    ina::InaGatherResult dropped;
    (void)ina_->calls().finishGather(&dropped);
    gatherActive_ = false;
  }
  if (gatherOrder_.empty()) {  // a reduce alone
    finishTask();
    return {};
  }
  if (!gatherOnSwitch()) return startHostGather();
  if (!gatherActive_) {
    Status st = beginSwitchGather(0, 0);
    if (!st.ok()) {
      // A grant too small to give every root a slot: this collective
      // gathers over the hosts (every worker sees the same grant, so all do).
      RINA_INFO("rank %d: %s; the rack all-gather goes over the hosts", call_.ctx.rank(),
                st.message().c_str());
      return startHostGather();
    }
  }
  phase_ = Phase::kSwitchGather;
  return {};
}

Status RackTask::startHostGather() {
  phase_ = Phase::kHostGather;
  const int me = call_.ctx.rank();
  const size_t part = std::max<size_t>(1, call_.ctx.sliceBytes() / es_);
  Engine& e = newEngine();
  for (size_t i = 0; i < gatherOrder_.size(); ++i) {
    const RackPiece& p = gatherOrder_[i];
    for (size_t b = 0; b < p.count; b += part) {
      const size_t n = std::min(part, p.count - b);
      char* at = data_ + (p.begin + b) * es_;
      if (p.port == me) {
        for (int q : others_) {
          SendItem s{.conn = call_.ctx.peer(q),
                     .data = at,
                     .len = n * es_,
                     .step = call_.steps,
                     .slice = static_cast<int>(i)};
          s.ready = [this, i, end = b + n] { return isFinal_(i, end); };
          e.sends().push_back(std::move(s));
        }
      } else {
        e.recvs().push_back(RecvItem{.conn = call_.ctx.peer(p.port),
                                     .dst = at,
                                     .len = n * es_,
                                     .step = call_.steps,
                                     .slice = static_cast<int>(i)});
      }
    }
  }
  return {};
}

Status RackTask::afterGatherDone() {
  ina::SwitchCalls& client = ina_->calls();
  bool moved = false;
  (void)client.progress(&moved);  // what is already in the socket
  ina::InaGatherResult res;
  Status st = client.finishGather(&res);
  gatherActive_ = false;
  if (!st.ok() && !lostSwitch_) {
    lostSwitch_ = true;
    why_ = st.message();
  }
  ina_->countCall(res.stats, res.missingSlices.size());
  noteInaStats("all-gather", res.stats);
  rackFallBack_ |= lostSwitch_;
  std::vector<uint32_t> counts(others_.size());
  for (size_t i = 0; i < others_.size(); ++i) {
    RINA_TRY(takeMsg(i, kGathered));
    const uint8_t root = static_cast<uint8_t>(
        std::find(m_.ranks.begin(), m_.ranks.end(), others_[i]) - m_.ranks.begin());
    wantOut_[i].clear();
    for (uint32_t s : res.missingSlices) {
      if (gatherSlices_[s].root == root) wantOut_[i].push_back(s);
    }
    counts[i] = static_cast<uint32_t>(wantOut_[i].size());
  }
  exchangeMsgs(kRepair, counts, call_.steps);
  phase_ = Phase::kRepairHeaders;
  return {};
}

Status RackTask::afterRepairHeaders() {
  std::vector<const std::vector<uint32_t>*> out;
  for (const auto& w : wantOut_) out.push_back(&w);
  RINA_TRY(exchangeLists(kRepair, out, call_.steps));
  phase_ = Phase::kRepairLists;
  return {};
}

Status RackTask::afterRepairLists() {
  Engine& e = newEngine();
  const uint8_t myRoot = static_cast<uint8_t>(
      std::find(m_.ranks.begin(), m_.ranks.end(), call_.ctx.rank()) - m_.ranks.begin());
  for (size_t i = 0; i < others_.size(); ++i) {
    transport::Connection* c = call_.ctx.peer(others_[i]);
    for (uint32_t s : wantIn_[i]) {
      if (s >= gatherSlices_.size() || gatherSlices_[s].root != myRoot) {
        return errorf(rinaInternalError,
                      "rank %d: allreduce #%llu: rank %d asked for all-gather slice %u, which "
                      "this rank is not the root of",
                      call_.ctx.rank(), static_cast<unsigned long long>(call_.seq), others_[i], s);
      }
      const ina::GatherSlice& g = gatherSlices_[s];
      SendItem item{.conn = c,
                    .data = data_ + g.offset,
                    .len = g.bytes,
                    .step = call_.steps,
                    .slice = static_cast<int>(s)};
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
      e.recvs().push_back(RecvItem{.conn = c,
                                   .dst = data_ + g.offset,
                                   .len = g.bytes,
                                   .step = call_.steps,
                                   .slice = static_cast<int>(s)});
    }
  }
  phase_ = Phase::kRepairData;
  return {};
}

}  // namespace rina::algo
