#include "ina/slice_window.h"

#include <algorithm>

namespace rina::ina {
namespace {

// Results for later slices of the same switch port (thread), this many
// slices ahead, while one is outstanding mean it was lost: every worker
// sends in seq order, so a switch thread completes its slots in order.
constexpr int32_t kReorderSlices = 3;

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
  e.bytes.assign(kHeaderBytes + 4 * size_t{payloadElems}, 0);
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
      highestResult_(pump.grant().ports, 0) {}

void SliceWindow::begin() {
  pump_.freeSlots(first_, count_);
  lastProgress_ = Clock::now();
  nextTimeoutScan_ = lastProgress_;
}

Status SliceWindow::pump(Source& source, bool* moved) {
  const uint32_t completedBefore = completed_;
  batch_.clear();
  while (nextToSend_ < total_) {
    const uint32_t r = nextToSend_;
    const uint32_t w = slotOf(base_ + r);
    InFlight& e = pump_.slot(w);
    if (e.busy) break;
    nextToSend_++;
    if (pump_.slotLost(w)) {
      source.skip(r);
      completed_++;
      continue;
    }
    e.seq = base_ + r;
    e.slot = w;
    source.build(r, e);
    e.busy = true;
    e.retransmitted = false;
    e.fastResent = false;
    batch_.push_back(&e);
  }
  if (!batch_.empty()) {
    stats_.datagramsSent += batch_.size();
    for (const InFlight* e : batch_) stats_.bytesSent += e->bytes.size();
    RINA_TRY(pump_.send(batch_));
    nextTimeoutScan_ =
        std::min(nextTimeoutScan_, Clock::now() + std::chrono::microseconds(pump_.rto().rtoUs()));
  }
  const bool sent = !batch_.empty();
  if (!done()) {
    pump_.receive();
    RINA_TRY(resendLate());
  }
  *moved = sent || completed_ != completedBefore;
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
  const int64_t waitUs = std::max<int64_t>(0, microsBetween(Clock::now(), nextTimeoutScan_));
  return static_cast<int>(std::min<int64_t>(waitUs / 1000 + 1, 50));
}

SliceWindow::Answer SliceWindow::take(const Header& h, uint32_t* r) {
  *r = h.seq - base_;
  const uint32_t w = slotOf(h.seq);
  InFlight& e = pump_.slot(w);
  if (*r >= total_ || !e.busy || e.seq != h.seq || h.slot != pump_.grant().base + w) {
    stats_.staleResults++;
    return Answer::kStale;
  }
  const Clock::time_point now = Clock::now();
  e.busy = false;
  completed_++;
  lastProgress_ = now;
  if (h.type == Type::kNack) {
    // Preempted: this slot is gone for the rest of the grant.
    stats_.nacks++;
    pump_.loseSlot(w);
    return Answer::kNack;
  }
  stats_.results++;
  pump_.noteResult();
  pump_.sampleRtt(e, now);
  uint32_t& highest = highestResult_[pump_.portOf(w)];
  if (highest == 0 || static_cast<int32_t>(h.seq - highest) > 0) {
    highest = h.seq;
    newResults_ = true;
  }
  return Answer::kResult;
}

Status SliceWindow::resendLate() {
  const Clock::time_point now = Clock::now();
  if (now < nextTimeoutScan_ && !newResults_) return Status();
  newResults_ = false;
  const auto rto = std::chrono::microseconds(pump_.rto().rtoUs());
  const int32_t ports = pump_.grant().ports;
  batch_.clear();
  size_t timedOut = 0;
  Clock::time_point earliest = now + rto;
  const InFlight* oldest = nullptr;
  for (uint32_t w = first_; w < first_ + count_; ++w) {
    InFlight& e = pump_.slot(w);
    if (!e.busy) continue;
    if (!oldest || static_cast<int32_t>(e.seq - oldest->seq) < 0) oldest = &e;
    const bool late = now - e.sentAt >= rto;
    // Only slots of the same switch thread (port) complete in order.
    const uint32_t highest = highestResult_[pump_.portOf(w)];
    const bool overtaken = !e.fastResent && highest != 0 &&
                           static_cast<int32_t>(highest - e.seq) > kReorderSlices * ports;
    if (late || overtaken) {
      padPortMarker(e, pump_.grant().payloadElems);
      DatagramPump::markResent(e);
      e.fastResent = true;  // at most one early resend per send; then the RTO
      timedOut += late ? 1 : 0;
      stats_.fastRetransmissions += late ? 0 : 1;
      batch_.push_back(&e);
      earliest = std::min(earliest, now + rto);
    } else {
      earliest = std::min(earliest, e.sentAt + rto);
    }
  }
  const InaClientOptions& o = pump_.options();
  if (oldest && now - lastProgress_ > std::chrono::milliseconds(o.switchTimeoutMs)) {
    return errorf(rinaTimeout,
                  "ina: worker %u job %u: no answer from the switch for %d ms, waiting for slot %u "
                  "seq %u (%u of %u slices done, %llu retransmissions, %llu stale answers)",
                  o.worker, o.job, o.switchTimeoutMs, pump_.grant().base + oldest->slot,
                  oldest->seq, completed_, total_,
                  static_cast<unsigned long long>(stats_.retransmissions),
                  static_cast<unsigned long long>(stats_.staleResults));
  }
  if (!batch_.empty()) {
    if (timedOut) pump_.backoff();
    stats_.retransmissions += batch_.size();
    for (const InFlight* e : batch_) stats_.bytesSent += e->bytes.size();
    RINA_TRY(pump_.send(batch_));
  }
  nextTimeoutScan_ = earliest;
  return Status();
}

}  // namespace rina::ina
