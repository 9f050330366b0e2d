#include "ina/gather_call.h"

#include <algorithm>
#include <cstring>

#include "core/log.h"
#include "rina/ina_wire.h"
#include "wire/wire_kernels.h"

namespace rina::ina {
GatherCall::~GatherCall() { pump_.detach(*this); }

Status GatherCall::create(DatagramPump& pump, void* buffer, const InaGatherOptions& options,
                          std::unique_ptr<GatherCall>* out) {
  out->reset();
  RINA_TRY(pump.needGrant("all-gather"));
  if (!options.slices || (!buffer && !options.slices->empty())) {
    return errorf(rinaInvalidArgument, "all-gather without %s", buffer ? "slices" : "a buffer")
        .prepend(pump.context());
  }
  const uint32_t n = pump.options().fanIn;
  uint32_t slots = options.slots;
  RINA_TRY(pump.claimSlots("all-gather", options.firstSlot, &slots));
  const uint32_t share = slots / n;
  if (share == 0) {
    return errorf(rinaInvalidUsage,
                  "a rack all-gather needs a slot per worker; it has %u slots for %u workers",
                  slots, n)
        .prepend(pump.context());
  }
  const size_t maxBytes = kWordBytes * pump.grant().payloadElems;
  std::vector<std::vector<uint32_t>> byRoot(n);
  for (size_t i = 0; i < options.slices->size(); ++i) {
    const GatherSlice& s = (*options.slices)[i];
    if (s.bytes == 0 || s.bytes > maxBytes || s.root >= n) {
      return errorf(rinaInvalidArgument,
                    "all-gather slice %zu has %u bytes (1 to %zu) and root %u (of %u workers)", i,
                    s.bytes, maxBytes, s.root, n)
          .prepend(pump.context());
    }
    byRoot[s.root].push_back(static_cast<uint32_t>(i));
  }
  size_t maxJ = 0;
  for (const auto& r : byRoot) maxJ = std::max(maxJ, r.size());
  uint32_t base = 0;
  RINA_TRY(pump.takeSeqs(uint64_t{maxJ} * n, &base));

  std::unique_ptr<GatherCall> g(new GatherCall(pump));
  g->buffer_ = static_cast<uint8_t*>(buffer);
  g->slices_ = options.slices;
  g->ready_ = options.ready;
  g->n_ = n;
  g->me_ = pump.options().worker;
  g->share_ = share;
  g->first_ = options.firstSlot;
  g->base_ = base;
  g->span_ = static_cast<uint32_t>(maxJ * n);
  g->byRoot_ = std::move(byRoot);
  g->have_.assign(options.slices->size(), false);
  for (uint32_t i : g->byRoot_[g->me_]) g->have_[i] = true;
  pump.freeSlots(g->slotOf(g->me_, 0), share);
  g->words_.assign(pump.grant().payloadElems, 0);
  g->lastEcho_ = Clock::now();
  g->loss_.start(g->lastEcho_);
  g->nextLossScan_ = g->lastEcho_;
  g->stats_.slices = options.slices->size();
  g->stats_.smallestWindow = UINT32_MAX;
  for (uint32_t port = 0; port < pump.congestion().ports(); ++port) {
    g->stats_.smallestWindow = std::min(g->stats_.smallestWindow, pump.congestion().limit(port));
  }
  pump.attach(*g);
  *out = std::move(g);
  return Status();
}

bool GatherCall::holdsSlots(uint32_t first, uint32_t count) const {
  return first_ < first + count && first < first_ + n_ * share_;
}

void GatherCall::onAnswer(const Header& h, const uint8_t* payload) {
  if (h.type != Type::kResult) return;
  const uint32_t off = h.seq - base_;
  const uint32_t w = off % n_, j = off / n_;
  const uint32_t P = pump_.grant().payloadElems;
  // A root's own slice comes back as an acknowledgement (elems 0; an older
  // switch echoes the whole slice); everyone else's with its payload.
  if (off >= span_ || j >= byRoot_[w].size() || h.slot != pump_.grant().base + slotOf(w, j) ||
      h.shadow != ((j / share_) % 2 == 1) || (h.elems != P && (w != me_ || h.elems != 0))) {
    stats_.staleResults++;
    return;
  }
  const uint32_t i = byRoot_[w][j];
  if (w == me_) {
    InFlight& e = pump_.slot(slotOf(me_, j));
    if (!e.busy || e.seq != h.seq) {
      stats_.staleResults++;
      bool undone = false;
      if (pump_.lateCopy(h, &undone)) {
        stats_.lateAnswers++;
        stats_.windowUndos += undone ? 1 : 0;
      }
      return;
    }
    const Clock::time_point now = pump_.answerTime();
    const uint32_t port = pump_.portOf(e.slot);
    pump_.sampleRtt(e, now);
    pump_.congestion().done(port, true);
    e.busy = false;
    ownEchoed_++;
    lastEcho_ = now;
    loss_.answered(e, now);
    nextLossScan_ = now;  // look at the rest in flight on the next pass
    stats_.results++;
    pump_.noteResult();
    return;
  }
  if (have_[i]) {
    stats_.staleResults++;
    return;
  }
  const GatherSlice& s = (*slices_)[i];
  loadWire(payload, P, words_.data());
  std::memcpy(buffer_ + s.offset, words_.data(), s.bytes);
  have_[i] = true;
  stats_.results++;
  pump_.noteResult();
}

Status GatherCall::progress(bool* moved) {
  *moved = false;
  if (status_.ok()) status_ = pass(moved);
  return status_;
}

Status GatherCall::pass(bool* moved) {
  Clock::time_point now = Clock::now();
  CongestionWindow& cw = pump_.congestion();
  const size_t fullBytes = kHeaderBytes + kWordBytes * pump_.grant().payloadElems;
  // Send what the window, the pacer and the caller allow.
  batch_.clear();
  paced_ = false;
  const std::vector<uint32_t>& mine = byRoot_[me_];
  bool idle = true;
  for (uint32_t k = 0; k < share_; ++k) idle &= !pump_.slot(slotOf(me_, k)).busy;
  while (nextOwn_ < mine.size()) {
    const uint32_t j = nextOwn_;
    const uint32_t w = slotOf(me_, j);
    InFlight& e = pump_.slot(w);
    const uint32_t i = mine[j];
    if (e.busy || (ready_ && !ready_(i))) break;
    if (!cw.canSend(pump_.portOf(w))) break;
    if (!pump_.pacer().take(fullBytes, now)) {
      paced_ = true;
      break;
    }
    const GatherSlice& s = (*slices_)[i];
    const Header h = pump_.header(Type::kBcast, w, (j / share_) % 2 == 1, base_ + j * n_ + me_);
    std::fill(words_.begin(), words_.end(), 0);
    std::memcpy(words_.data(), buffer_ + s.offset, s.bytes);
    e.bytes.resize(kHeaderBytes + kWordBytes * words_.size());
    encodeHeader(h, e.bytes);
    storeWire(words_.data(), words_.size(), e.bytes.data() + kHeaderBytes);
    e.seq = h.seq;
    e.slot = w;
    e.busy = true;
    e.retransmitted = false;
    e.fastResent = false;
    e.lateCounted = false;
    cw.sent(pump_.portOf(w));
    batch_.push_back(&e);
    nextOwn_++;
  }
  if (!batch_.empty()) {
    // A send after a quiet spell (waiting for the caller) starts the
    // switch's clock, and the ports' timers, afresh.
    if (idle) {
      lastEcho_ = now;
      loss_.start(now);
    }
    RINA_TRY(pump_.send(batch_, "rack all-gather: "));
    for (InFlight* e : batch_) e->firstSentAt = e->sentAt;
    stats_.datagramsSent += batch_.size();
    for (const InFlight* e : batch_) stats_.bytesSent += e->bytes.size();
    *moved = true;
    now = Clock::now();
  }
  // Take what arrived (answers of a call running beside it too), then
  // resend what is lost; the switch answering nothing for the timeout while
  // something is outstanding means it is gone.
  const uint64_t before = stats_.results + stats_.staleResults;
  pump_.receive();
  if (stats_.results + stats_.staleResults != before) *moved = true;
  now = Clock::now();
  busy_.clear();
  for (uint32_t k = 0; k < share_; ++k) {
    InFlight& e = pump_.slot(slotOf(me_, k));
    if (e.busy) busy_.push_back(&e);
  }
  const InaClientOptions& o = pump_.options();
  if (!busy_.empty() && now - lastEcho_ > std::chrono::milliseconds(o.switchTimeoutMs)) {
    return errorf(rinaTimeout,
                  "rack all-gather: no answer from the switch for %d ms (%u of %zu own slices "
                  "echoed, %llu retransmissions)",
                  o.switchTimeoutMs, ownEchoed_, own(),
                  static_cast<unsigned long long>(stats_.retransmissions))
        .prepend(pump_.context());
  }
  batch_.clear();
  if (!busy_.empty() && now >= nextLossScan_) {
    const LossRecovery::Found found = loss_.find(busy_, now, &batch_);
    nextLossScan_ = found.next;
    stats_.fastRetransmissions += found.fast;
    stats_.windowCuts += found.cuts;
    if (found.timerFired) pump_.backoff();
    for (uint32_t port = 0; port < pump_.congestion().ports(); ++port) {
      stats_.smallestWindow = std::min(stats_.smallestWindow, pump_.congestion().limit(port));
    }
  }
  if (!batch_.empty()) {
    stats_.retransmissions += batch_.size();
    for (const InFlight* e : batch_) stats_.bytesSent += e->bytes.size();
    RINA_TRY(pump_.send(batch_, "rack all-gather: "));
    *moved = true;
  }
  return Status();
}

int GatherCall::waitMs() const {
  const Clock::time_point now = Clock::now();
  int64_t waitUs = 50000;
  bool outstanding = false;
  for (uint32_t k = 0; k < share_; ++k) outstanding |= pump_.slot(slotOf(me_, k)).busy;
  if (outstanding) waitUs = std::clamp<int64_t>(microsBetween(now, nextLossScan_), 0, waitUs);
  if (paced_) {
    const size_t fullBytes = kHeaderBytes + kWordBytes * pump_.grant().payloadElems;
    waitUs = std::min(waitUs, pump_.pacer().waitUs(fullBytes, now));
  }
  return static_cast<int>(waitUs / 1000 + 1);
}

Status GatherCall::finish(InaGatherResult* result) {
  *result = InaGatherResult{};
  for (uint32_t i = 0; i < have_.size(); ++i) {
    if (!have_[i]) result->missingSlices.push_back(i);
  }
  if (!result->missingSlices.empty()) {
    RINA_INFO("%srack all-gather: %zu of %zu slices did not arrive", pump_.context().c_str(),
              result->missingSlices.size(), have_.size());
  }
  result->stats = stats_;
  pump_.endCall(&result->stats);
  return status_;
}

}  // namespace rina::ina
