// Rack all-gather through the switch: every worker is the root of some
// slices (BCAST, fan-in 1: the switch stores each and multicasts it to the
// rack) and receives everyone else's. Roots never share a slot, so a root's
// window only waits on its own echoes: root w owns slots
// grant.base + w * share .. + share - 1 (share = window / fan-in) and its
// j-th slice is seq base + j * fanIn + w, slot w * share + j % share, set
// (j / share) % 2. A receiver learns root and index from the seq alone.
//
// Loss: a root resends a slice until the switch acknowledges it (a
// header-only RESULT to the root; the switch multicasts its stored copy
// to the others again); a receiver that misses a multicast
// cannot ask the switch for it, so finishGather() lists what never came and
// the caller fetches it from the root over host connections.
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "core/log.h"
#include "ina/gather_call.h"
#include "ina/ina_client.h"
#include "rina/ina_wire.h"

namespace rina::ina {
namespace {

int64_t microsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::microseconds>(b - a).count();
}

}  // namespace

Status InaClient::startGather(void* buffer, const InaGatherOptions& options) {
  gather_.reset();
  gatherStatus_ = Status();
  if (window_ == 0) {
    return errorf(rinaInvalidUsage, "ina: worker %u job %u: all-gather before a slot grant",
                  options_.worker, options_.job);
  }
  if (!options.slices || (!buffer && !options.slices->empty())) {
    return errorf(rinaInvalidArgument, "ina: worker %u job %u: all-gather without %s",
                  options_.worker, options_.job, buffer ? "slices" : "a buffer");
  }
  const uint32_t n = options_.fanIn;
  const uint32_t slots =
      options.slots ? options.slots : window_ - std::min(window_, options.firstSlot);
  if (options.firstSlot + slots > window_) {
    return errorf(rinaInvalidArgument,
                  "ina: worker %u job %u: all-gather slots %u..%u are outside the window of %u",
                  options_.worker, options_.job, options.firstSlot, options.firstSlot + slots,
                  window_);
  }
  const uint32_t share = slots / n;
  if (share == 0) {
    return errorf(rinaInvalidUsage,
                  "ina: worker %u job %u: a rack all-gather needs a slot per worker; it has %u "
                  "slots for %u workers",
                  options_.worker, options_.job, slots, n);
  }
  if (callSlotsOverlap(options.firstSlot, slots)) {
    return errorf(rinaInvalidUsage,
                  "ina: worker %u job %u: all-gather slots %u..%u overlap the call in progress",
                  options_.worker, options_.job, options.firstSlot, options.firstSlot + slots);
  }
  const size_t maxBytes = 4 * size_t{grant_.payloadElems};
  auto g = std::make_unique<GatherCall>();
  g->buffer = static_cast<uint8_t*>(buffer);
  g->slices = options.slices;
  g->ready = options.ready;
  g->n = n;
  g->me = options_.worker;
  g->share = share;
  g->slot0 = options.firstSlot;
  g->byRoot.assign(n, {});
  for (size_t i = 0; i < options.slices->size(); ++i) {
    const GatherSlice& s = (*options.slices)[i];
    if (s.bytes == 0 || s.bytes > maxBytes || s.root >= n) {
      return errorf(rinaInvalidArgument,
                    "ina: worker %u job %u: all-gather slice %zu has %u bytes (1 to %zu) and "
                    "root %u (of %u workers)",
                    options_.worker, options_.job, i, s.bytes, maxBytes, s.root, n);
    }
    g->byRoot[s.root].push_back(static_cast<uint32_t>(i));
  }
  size_t maxJ = 0;
  for (const auto& r : g->byRoot) maxJ = std::max(maxJ, r.size());
  if (uint64_t{nextSeq_} + uint64_t{maxJ} * n >= (uint64_t{1} << 32)) {
    return errorf(rinaInvalidUsage,
                  "ina: worker %u job %u: slice sequence exhausted; REQUEST a fresh grant",
                  options_.worker, options_.job);
  }
  g->base = nextSeq_;
  g->span = static_cast<uint32_t>(maxJ * n);
  nextSeq_ += g->span;
  g->have.assign(options.slices->size(), false);
  for (uint32_t i : g->byRoot[g->me]) g->have[i] = true;
  g->window.assign(share, GatherCall::Own{});
  g->words.assign(grant_.payloadElems, 0);
  g->lastEcho = Clock::now();
  g->stats.slices = options.slices->size();
  // Multicasts that came while this worker was still in its previous call.
  std::deque<std::vector<uint8_t>> early;
  early.swap(early_);
  for (const auto& d : early) {
    if (!keepIfEarly(d.data(), d.size(), g->base + g->span))
      onGatherDatagram(*g, d.data(), d.size());
  }
  gather_ = std::move(g);
  return Status();
}

void InaClient::onGatherDatagram(GatherCall& g, const uint8_t* data, size_t len) {
  Header h;
  if (decode({data, len}, &h) != DecodeError::kOk || h.job != options_.job ||
      h.token != options_.token || h.type != Type::kResult) {
    return;
  }
  const uint32_t off = h.seq - g.base;
  const uint32_t w = off % g.n, j = off / g.n;
  // A root's own slice comes back as an acknowledgement (elems 0; an older
  // switch echoes the whole slice); everyone else's with its payload.
  if (off >= g.span || j >= g.byRoot[w].size() || h.slot != g.slotOf(grant_.base, w, j) ||
      h.shadow != ((j / g.share) % 2 == 1) ||
      (h.elems != grant_.payloadElems && (w != g.me || h.elems != 0))) {
    g.stats.staleResults++;
    return;
  }
  const uint32_t i = g.byRoot[w][j];
  if (w == g.me) {
    GatherCall::Own& e = g.window[j % g.share];
    if (!e.busy || e.j != j) {
      g.stats.staleResults++;
      return;
    }
    const Clock::time_point now = Clock::now();
    if (!e.retransmitted) rto_.sample(microsBetween(e.sentAt, now));
    e.busy = false;
    g.ownEchoed++;
    g.lastEcho = now;
    g.stats.results++;
    return;
  }
  if (g.have[i]) {
    g.stats.staleResults++;
    return;
  }
  const GatherSlice& s = (*g.slices)[i];
  decodePayload(data + kHeaderBytes, grant_.payloadElems, g.words.data());
  std::memcpy(g.buffer + s.offset, g.words.data(), s.bytes);
  g.have[i] = true;
  g.stats.results++;
}

Status InaClient::pumpGather(GatherCall& g, bool* moved) {
  *moved = false;
  const Clock::time_point now = Clock::now();
  // Send what the window and the caller allow.
  std::vector<GatherCall::Own*> batch;
  const std::vector<uint32_t>& mine = g.byRoot[g.me];
  bool idle = true;
  for (const auto& e : g.window) idle &= !e.busy;
  while (g.nextOwn < mine.size()) {
    const uint32_t j = g.nextOwn;
    GatherCall::Own& e = g.window[j % g.share];
    const uint32_t i = mine[j];
    if (e.busy || (g.ready && !g.ready(i))) break;
    const GatherSlice& s = (*g.slices)[i];
    Header h;
    h.type = Type::kBcast;
    h.flags = 0;
    h.job = options_.job;
    h.slot = static_cast<uint16_t>(g.slotOf(grant_.base, g.me, j));
    h.shadow = (j / g.share) % 2 == 1;
    h.worker = options_.worker;
    h.fanIn = options_.fanIn;
    h.seq = g.base + j * g.n + g.me;
    h.elems = static_cast<uint16_t>(grant_.payloadElems);
    h.token = options_.token;
    h.exponent = 0;
    std::fill(g.words.begin(), g.words.end(), 0);
    std::memcpy(g.words.data(), g.buffer + s.offset, s.bytes);
    e.bytes.resize(kHeaderBytes + 4 * g.words.size());
    encode(h, g.words, e.bytes);
    e.j = j;
    e.busy = true;
    e.retransmitted = false;
    batch.push_back(&e);
    g.nextOwn++;
  }
  // Resend what is late; the switch answering nothing for the timeout while
  // something is outstanding means it is gone.
  const auto rto = std::chrono::microseconds(rto_.rtoUs());
  bool late = false, outstanding = false;
  for (auto& e : g.window) {
    if (!e.busy || std::find(batch.begin(), batch.end(), &e) != batch.end()) continue;
    outstanding = true;
    if (now - e.sentAt >= rto) {
      e.bytes[1] |= kFlagResend;
      e.retransmitted = true;
      late = true;
      g.stats.retransmissions++;
      batch.push_back(&e);
    }
  }
  if (outstanding && now - g.lastEcho > std::chrono::milliseconds(options_.switchTimeoutMs)) {
    return errorf(rinaTimeout,
                  "ina: worker %u job %u: rack all-gather: no answer from the switch for %d ms "
                  "(%u of %zu own slices echoed, %llu retransmissions)",
                  options_.worker, options_.job, options_.switchTimeoutMs, g.ownEchoed, g.own(),
                  static_cast<unsigned long long>(g.stats.retransmissions));
  }
  if (late) rto_.backoff();
  if (!batch.empty()) {
    // A send after a quiet spell (waiting for the caller) starts the
    // switch's clock afresh.
    if (idle) g.lastEcho = now;
    std::vector<OutDatagram> out(batch.size());
    for (size_t q = 0; q < batch.size(); ++q) {
      GatherCall::Own* e = batch[q];
      const uint32_t slot = g.slotOf(grant_.base, g.me, e->j);
      out[q] = {e->bytes, static_cast<uint16_t>(grant_.port + slot % grant_.ports)};
      e->sentAt = now;
    }
    Status sent = sender_->send(out);
    if (!sent.ok()) {
      return sent.prepend("ina: worker " + std::to_string(options_.worker) + " job " +
                          std::to_string(options_.job) + ": rack all-gather: ");
    }
    g.stats.datagramsSent += batch.size();
    *moved = true;
  }
  // Take what arrived (results of a call running beside it too).
  const uint64_t before = g.stats.results + g.stats.staleResults;
  receive(active_.get());
  if (g.stats.results + g.stats.staleResults != before) *moved = true;
  return Status();
}

bool InaClient::gatherRootsDone() const {
  return !gatherStatus_.ok() || !gather_ || gather_->ownEchoed == gather_->own();
}

uint32_t InaClient::gatherEnd(const GatherCall& g) { return g.base + g.span; }

bool InaClient::inGather(const GatherCall& g, const uint8_t* data, size_t len) const {
  Header h;
  return decode({data, len}, &h) == DecodeError::kOk && h.seq - g.base < g.span;
}

bool InaClient::gatherSlotsOverlap(const GatherCall& g, uint32_t first, uint32_t count) {
  return g.slot0 < first + count && first < g.slot0 + g.n * g.share;
}

int InaClient::gatherWaitMs() const {
  const GatherCall& g = *gather_;
  int64_t waitUs = 50000;
  const Clock::time_point now = Clock::now();
  for (const auto& e : g.window) {
    if (e.busy) {
      waitUs = std::min<int64_t>(waitUs,
                                 std::max<int64_t>(0, microsBetween(now, e.sentAt) + rto_.rtoUs()));
    }
  }
  return static_cast<int>(waitUs / 1000 + 1);
}

bool InaClient::gatherHas(uint32_t i) const {
  return gather_ && i < gather_->have.size() && gather_->have[i];
}

Status InaClient::finishGather(InaGatherResult* result) {
  *result = InaGatherResult{};
  std::unique_ptr<GatherCall> g = std::move(gather_);
  Status st = gatherStatus_;
  gatherStatus_ = Status();
  if (!g) return st;
  for (uint32_t i = 0; i < g->have.size(); ++i) {
    if (!g->have[i]) result->missingSlices.push_back(i);
  }
  if (!result->missingSlices.empty()) {
    RINA_INFO("ina: worker %u job %u: rack all-gather: %zu of %zu slices did not arrive",
              options_.worker, options_.job, result->missingSlices.size(), g->have.size());
  }
  g->stats.rtoUs = rto_.rtoUs();
  result->stats = g->stats;
  return st;
}

}  // namespace rina::ina
