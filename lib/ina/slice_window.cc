#include "ina/slice_window.h"

#include <algorithm>

namespace rina::ina {
namespace {

// A port marker (header-only) is resent at full size, zeros under TO_PORT:
// the same contribution, and the switch answers no datagram with more bytes
// than it carries, so a header-only resend would never bring the sum.
void padPortMarker(InFlight& e, uint32_t payloadElems) {
  Header h;
  if (e.bytes.size() != kHeaderBytes || decode(e.bytes, &h) != DecodeError::kOk ||
      !isPortMarker(h)) {
    return;
  }
  h.elems = static_cast<uint16_t>(payloadElems);
  const std::vector<int32_t> zeros(payloadElems, 0);
  e.bytes.assign(kHeaderBytes + kWordBytes * payloadElems, 0);
  encode(h, zeros, e.bytes);
}

}  // namespace

SliceWindow::SliceWindow(DatagramPump& pump, uint32_t base, uint32_t total, uint32_t firstSlot,
                         uint32_t slots)
    : pump_(pump),
      base_(base),
      total_(total),
      first_(firstSlot),
      count_(slots),
      limit_(total),
      loss_(pump) {}

void SliceWindow::setSendLimit(uint32_t r) {
  if (limitDropped_) return;
  r = std::min(r, total_);
  if (r > limit_) heldSince_ = {};
  limit_ = r;
}

void SliceWindow::begin() {
  pump_.freeSlots(first_, count_);
  lastProgress_ = Clock::now();
  nextTimeoutScan_ = lastProgress_;
  loss_.start(lastProgress_);
  stats_.smallestWindow = UINT32_MAX;
  for (uint32_t p = 0; p < pump_.congestion().ports(); ++p) {
    stats_.smallestWindow = std::min(stats_.smallestWindow, pump_.congestion().limit(p));
  }
}

InaCallStats SliceWindow::finalStats() {
  if (busySince_ != Clock::time_point{}) {
    stats_.busyNs +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - busySince_).count();
    busySince_ = {};
  }
  InaCallStats s = stats_;
  pump_.endCall(&s);
  return s;
}

Status SliceWindow::pump(Source& source, bool* moved) {
  const uint32_t completedBefore = completed_;
  CongestionWindow& cw = pump_.congestion();
  const size_t fullBytes = kHeaderBytes + kWordBytes * pump_.grant().payloadElems;
  Clock::time_point now = Clock::now();
  batch_.clear();
  paced_ = false;
  // Nothing in flight (a send limit held the window): the switch's clock
  // starts again with the next datagram.
  const bool idle = nextToSend_ == completed_;
  while (nextToSend_ < limit_) {
    const uint32_t r = nextToSend_;
    const uint32_t w = slotOf(base_ + r);
    InFlight& e = pump_.slot(w);
    if (e.busy) break;
    if (pump_.slotLost(w)) {
      nextToSend_++;
      source.skip(r);
      completed_++;
      continue;
    }
    const uint32_t port = pump_.portOf(w);
    if (!cw.canSend(port)) break;
    if (!pump_.pacer().take(fullBytes, now)) {
      paced_ = true;
      break;
    }
    nextToSend_++;
    e.seq = base_ + r;
    e.slot = w;
    source.build(r, e);
    e.busy = true;
    e.retransmitted = false;
    e.fastResent = false;
    e.lateCounted = false;
    cw.sent(port);
    batch_.push_back(&e);
  }
  if (nextToSend_ == limit_ && limit_ < total_ && !paced_) {
    if (heldSince_ == Clock::time_point{}) {
      heldSince_ = now;
    } else if (now - heldSince_ > std::chrono::milliseconds(pump_.options().switchTimeoutMs / 4)) {
      limitDropped_ = true;
      limit_ = total_;
    }
  }
  if (!batch_.empty()) {
    stats_.datagramsSent += batch_.size();
    for (const InFlight* e : batch_) stats_.bytesSent += e->bytes.size();
    RINA_TRY(pump_.send(batch_));
    for (InFlight* e : batch_) e->firstSentAt = e->sentAt;
    now = Clock::now();
    if (idle) lastProgress_ = now;
    nextTimeoutScan_ =
        std::min(nextTimeoutScan_, now + std::chrono::microseconds(pump_.rto().rtoUs()));
  }
  const bool sent = !batch_.empty();
  if (!done()) {
    pump_.receive();
    RINA_TRY(resendLate());
  }
  *moved = sent || completed_ != completedBefore;
  // Busy while a datagram is in flight (held back by the send limit or the
  // caller, the window is idle and its time is not the switch's).
  const bool inFlight = nextToSend_ > completed_;
  if (inFlight && busySince_ == Clock::time_point{}) {
    busySince_ = now;
  } else if (!inFlight && busySince_ != Clock::time_point{}) {
    stats_.busyNs +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - busySince_).count();
    busySince_ = {};
  }
  return Status();
}

Status SliceWindow::run(Source& source) {
  while (!done()) {
    bool moved = false;
    RINA_TRY(pump(source, &moved));
    if (done() || moved) continue;
    pump_.waitReadable(waitMs());
  }
  return Status();
}

int SliceWindow::waitMs() const {
  const Clock::time_point now = Clock::now();
  int64_t waitUs = std::max<int64_t>(0, microsBetween(now, nextTimeoutScan_));
  if (paced_) {
    const size_t fullBytes = kHeaderBytes + kWordBytes * pump_.grant().payloadElems;
    waitUs = std::min(waitUs, pump_.pacer().waitUs(fullBytes, now));
  }
  return static_cast<int>(std::min<int64_t>(waitUs / 1000 + 1, 50));
}

void SliceWindow::noteLateCopy(const Header& h) {
  bool undone = false;
  if (!pump_.lateCopy(h, &undone)) return;
  stats_.lateAnswers++;
  stats_.windowUndos += undone ? 1 : 0;
}

SliceWindow::Answer SliceWindow::take(const Header& h, uint32_t* r) {
  *r = h.seq - base_;
  const uint32_t w = slotOf(h.seq);
  InFlight& e = pump_.slot(w);
  if (*r >= total_ || !e.busy || e.seq != h.seq || h.slot != pump_.grant().base + w) {
    stats_.staleResults++;
    noteLateCopy(h);
    return Answer::kStale;
  }
  const Clock::time_point now = pump_.answerTime();
  const uint32_t port = pump_.portOf(w);
  e.busy = false;
  completed_++;
  lastProgress_ = now;
  answered_ = true;
  pump_.congestion().done(port, h.type != Type::kNack);
  if (h.type == Type::kNack) {
    // Preempted: this slot is gone for the rest of the grant.
    stats_.nacks++;
    pump_.loseSlot(w);
    return Answer::kNack;
  }
  stats_.results++;
  pump_.noteResult();
  pump_.sampleRtt(e, now);
  loss_.answered(e, now);
  return Answer::kResult;
}

Status SliceWindow::resendLate() {
  const Clock::time_point now = Clock::now();
  if (now < nextTimeoutScan_ && !answered_) return Status();
  answered_ = false;
  busy_.clear();
  for (uint32_t w = first_; w < first_ + count_; ++w) {
    if (pump_.slot(w).busy) busy_.push_back(&pump_.slot(w));
  }
  const InaClientOptions& o = pump_.options();
  if (!busy_.empty() && now - lastProgress_ > std::chrono::milliseconds(o.switchTimeoutMs)) {
    const InFlight* oldest =
        *std::min_element(busy_.begin(), busy_.end(), [](const InFlight* a, const InFlight* b) {
          return static_cast<int32_t>(a->seq - b->seq) < 0;
        });
    return errorf(rinaTimeout,
                  "ina: worker %u job %u: no answer from the switch for %d ms, waiting for slot %u "
                  "seq %u (%u of %u slices done, %llu retransmissions, %llu stale answers)",
                  o.worker, o.job, o.switchTimeoutMs, pump_.grant().base + oldest->slot,
                  oldest->seq, completed_, total_,
                  static_cast<unsigned long long>(stats_.retransmissions),
                  static_cast<unsigned long long>(stats_.staleResults));
  }
  batch_.clear();
  const LossRecovery::Found found = loss_.find(busy_, now, &batch_);
  for (InFlight* e : batch_) padPortMarker(*e, pump_.grant().payloadElems);
  stats_.fastRetransmissions += found.fast;
  stats_.windowCuts += found.cuts;
  if (!batch_.empty()) {
    if (found.timerFired) pump_.backoff();
    stats_.retransmissions += batch_.size();
    for (const InFlight* e : batch_) stats_.bytesSent += e->bytes.size();
    RINA_TRY(pump_.send(batch_));
  }
  for (uint32_t port = 0; port < pump_.congestion().ports(); ++port) {
    stats_.smallestWindow = std::min(stats_.smallestWindow, pump_.congestion().limit(port));
  }
  nextTimeoutScan_ = found.next;
  return Status();
}

}  // namespace rina::ina
