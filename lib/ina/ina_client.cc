#include "ina/ina_client.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <deque>

#include "core/log.h"
#include "ina/gather_call.h"
#include "ina/quantize.h"
#include "rina/ina_roce.h"
#include "rina/ina_wire.h"

namespace rina::ina {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRxBatch = 64;
// Results for later slices of the same switch port (thread), this many
// slices ahead, while one is outstanding mean it was lost: every worker
// sends in seq order, so a switch thread completes its slots in order.
constexpr int32_t kReorderSlices = 3;
// Datagrams of later calls (switch broadcasts) kept while a call runs.
constexpr size_t kMaxEarlyDatagrams = 4096;

int64_t microsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::microseconds>(b - a).count();
}

size_t elementSize(rinaDataType_t type) {
  switch (type) {
    case rinaInt32:
    case rinaFloat32:
      return 4;
    case rinaFloat16:
    case rinaBfloat16:
      return 2;
    default:
      return 0;
  }
}

}  // namespace

// Per-call state: seqs base .. base + total - 1; the first `prologue` carry
// only exponents, seq base + prologue + i is data slice i.
struct InaClient::Call {
  void* buffer = nullptr;
  const void* upstream = nullptr;
  size_t count = 0;
  rinaDataType_t type = rinaInt32;
  bool quantized = false;
  bool toPortOnly = false;  // resultToPortOnly
  bool isPort = false;
  const std::vector<uint8_t>* roles = nullptr;  // InaCallOptions::sliceRoles
  bool markers = false;                         // InaCallOptions::portMarkers
  uint8_t worker = 0;
  bool bcast = false;  // BCAST slices of raw words (broadcast root)
  uint32_t P = 0;
  uint32_t slices = 0;
  uint32_t prologue = 0;
  uint32_t total = 0;
  uint32_t base = 0;
  uint32_t nextToSend = 0;  // relative index
  // This call's part of the window: slots slot0 .. slot0 + win - 1 (indices
  // into entries_ / deadSlots_); seq t uses slot0 + t % win, set (t / win) % 2.
  uint32_t slot0 = 0;
  uint32_t win = 0;
  uint32_t completed = 0;
  // Per switch port (thread): absolute seq of the newest result, 0 = none yet.
  std::vector<uint32_t> highestResult;
  bool newResults = false;                        // since the last retransmit scan
  std::vector<int8_t> localExp;                   // per data slice
  std::vector<int8_t> sharedExp;                  // per data slice, from the switch
  std::vector<bool> host;                         // per data slice
  std::vector<bool> final;                        // per data slice: result, ack or host
  const std::vector<SliceSpan>* spans = nullptr;  // InaCallOptions::spans
  std::vector<float> scratch;
  std::vector<int32_t> ints;
  Clock::time_point lastProgress;
  Clock::time_point nextTimeoutScan;
  InaCallStats stats;

  // Whether this worker flags packet r TO_PORT: the port of a data slice;
  // for exponent-only packets (nobody needs their zero payload) worker 0.
  bool flagsToPort(uint32_t r) const {
    if (!toPortOnly) return false;
    if (!roles) return isPort;
    return isData(r) ? (*roles)[r - prologue] == kSlicePort : worker == 0;
  }
  // Whether data slice i's sum comes to this worker (else an acknowledgement).
  bool getsSum(uint32_t i) const {
    if (!toPortOnly) return true;
    return roles ? (*roles)[i] != kSliceOther : isPort;
  }
  uint32_t slotIndex(uint32_t seq) const { return slot0 + seq % win; }
  size_t sliceFirst(uint32_t i) const { return spans ? (*spans)[i].first : size_t{i} * P; }
  size_t sliceLen(uint32_t i) const {
    return spans ? (*spans)[i].len : std::min<size_t>(P, count - sliceFirst(i));
  }
  bool isData(uint32_t r) const { return r >= prologue; }
  // Data slice i goes as a port marker: the sum comes without this
  // worker's values, which it adds on receive.
  bool marker(uint32_t i) const { return markers && roles && (*roles)[i] == kSlicePort; }
  // Data slice i as float (plus the upstream partial): float32 without one
  // is read where it lies, anything else is converted into scratch[0, n).
  const float* floatsOf(uint32_t i) {
    size_t first = sliceFirst(i), n = sliceLen(i);
    if (type == rinaFloat32 && !upstream) return static_cast<const float*>(buffer) + first;
    loadAsFloat(buffer, type, first, n, scratch.data());
    if (upstream) {
      float* up = scratch.data() + P;  // the second half holds the upstream slice
      loadAsFloat(upstream, type, first, n, up);
      for (size_t k = 0; k < n; ++k) scratch[k] += up[k];
    }
    return scratch.data();
  }
};

InaClient::InaClient(const InaClientOptions& options)
    : options_(options),
      rto_(options.initialRtoUs, options.minRtoUs, options.maxRtoUs),
      rxScratch_(kMaxDatagramBytes) {}

InaClient::~InaClient() = default;

Status InaClient::create(const InaClientOptions& options, std::unique_ptr<InaClient>* out,
                         std::unique_ptr<InaSender> sender) {
  if (options.job == 0 || options.fanIn == 0 || options.fanIn > kMaxFanIn ||
      options.worker >= options.fanIn) {
    return errorf(rinaInvalidArgument, "ina: bad client options: job %u worker %u fan-in %u",
                  options.job, options.worker, options.fanIn);
  }
  std::unique_ptr<InaClient> c(new InaClient(options));
  Status s = openUdpSocket(options.local, options.socketBufferBytes, &c->socket_);
  if (s.ok()) s = boundEndpoint(c->socket_.get(), &c->local_);
  if (s.ok()) {
    const bool gro = UdpBatchReceiver::enableGro(c->socket_.get());
    c->rx_ = std::make_unique<UdpBatchReceiver>(kRxBatch, roce::kMaxDatagramBytes + 4, gro);
  }
  if (!s.ok()) {
    return s.prepend("ina: worker " + std::to_string(options.worker) + " job " +
                     std::to_string(options.job) + ": ");
  }
  c->sender_ = sender ? std::move(sender) : makeUdpSender(c->socket_.get(), options.switchAddr);
  *out = std::move(c);
  return Status();
}

Status InaClient::setGrant(const Grant& grant) {
  if (grant.length == 0 || grant.payloadElems == 0 || grant.payloadElems > kMaxPayloadElems ||
      grant.ports == 0) {
    return errorf(rinaInvalidUsage, "ina: worker %u job %u: no usable grant (length %u)",
                  options_.worker, options_.job, grant.length);
  }
  Status carried = sender_->setGrant(grant);
  if (!carried.ok()) {
    if (!options_.udpFallback) return carried;
    RINA_INFO("ina: worker %u job %u: sending over UDP instead: %s", options_.worker, options_.job,
              carried.message().c_str());
    sender_ = makeUdpSender(socket_.get(), options_.switchAddr);
  }
  grant_ = grant;
  window_ = options_.window ? std::min(options_.window, grant.length) : grant.length;
  deadSlots_.assign(window_, false);
  entries_.assign(window_, Entry{});
  early_.clear();
  // The sequence goes on across grants, so a datagram of an earlier grant
  // still in a socket or in flight can never pass for one of this grant
  // (same slot, same seq). Restart only far from the 32-bit wrap.
  if (nextSeq_ >= (1u << 31)) nextSeq_ = 1;
  return Status();
}

void InaClient::buildSlice(Call& c, uint32_t r, Entry& e) {
  const uint32_t t = c.base + r;
  const uint32_t w = c.slotIndex(t);
  Header h;
  h.type = c.bcast ? Type::kBcast : Type::kData;
  h.flags = static_cast<uint8_t>((r + 1 == c.total ? kFlagLast : 0) |
                                 (c.flagsToPort(r) ? kFlagToPort : 0));
  h.job = options_.job;
  h.slot = static_cast<uint16_t>(grant_.base + w);
  h.shadow = (t / c.win) % 2 == 1;
  h.worker = options_.worker;
  h.fanIn = options_.fanIn;
  h.seq = t;
  h.elems = static_cast<uint16_t>(c.P);
  h.token = options_.token;
  // The exponent rides one window ahead: packet r announces data slice r + W - prologue.
  uint32_t ahead = r + c.win - c.prologue;
  h.exponent = c.quantized ? (ahead < c.slices ? c.localExp[ahead] : kExponentZero) : 0;
  size_t filled = 0;  // ints[0, filled) are this packet's values; the rest are zeros
  const bool marker = c.isData(r) && c.marker(r - c.prologue);
  if (marker) {
    // Header only; a slice the hosts must sum is still marked as below.
    const uint32_t i = r - c.prologue;
    if (c.quantized && c.sharedExp[i] == kExponentHost) c.host[i] = true;
    h.elems = 0;
  } else if (c.isData(r)) {
    uint32_t i = r - c.prologue;
    size_t first = c.sliceFirst(i), n = c.sliceLen(i);
    filled = n;
    if (!c.quantized) {
      const int32_t* in = static_cast<const int32_t*>(c.buffer) + first;
      const int32_t* up = c.upstream ? static_cast<const int32_t*>(c.upstream) + first : nullptr;
      if (!up) {
        std::memcpy(c.ints.data(), in, n * 4);
      } else {
        for (size_t k = 0; k < n; ++k) {  // wraps like the host int32 kernels do
          c.ints[k] =
              static_cast<int32_t>(static_cast<uint32_t>(in[k]) + static_cast<uint32_t>(up[k]));
        }
      }
    } else {
      int8_t E = c.sharedExp[i];
      if (E == kExponentHost) {
        c.host[i] = true;  // still sent (as zeros) to keep the window and exponents moving
        filled = 0;
      } else if (E != kExponentZero) {
        quantize(c.floatsOf(i), n, E, options_.fanIn, c.ints.data());
      } else {
        filled = 0;
      }
    }
  }
  if (!marker) std::fill(c.ints.begin() + static_cast<long>(filled), c.ints.end(), 0);
  e.bytes.resize(kHeaderBytes + 4 * size_t{h.elems});
  encode(h, std::span<const int32_t>(c.ints.data(), h.elems), e.bytes);
  e.seq = t;
  e.slot = w;
  e.busy = true;
  e.retransmitted = false;
  e.fastResent = false;
}

Status InaClient::sendEntries(const std::vector<Entry*>& batch) {
  std::vector<OutDatagram> out(batch.size());
  const Clock::time_point now = Clock::now();
  for (size_t k = 0; k < batch.size(); ++k) {
    Entry* e = batch[k];
    out[k] = {e->bytes, static_cast<uint16_t>(grant_.port + slotPort(e->slot))};
    e->sentAt = now;
  }
  Status s = sender_->send(out);
  if (!s.ok()) {
    return s.prepend("ina: worker " + std::to_string(options_.worker) + " job " +
                     std::to_string(options_.job) + ": ");
  }
  return s;
}

int InaClient::receiveBatch() {
  int got = rx_->receive(socket_.get());
  for (UdpBatchReceiver::Datagram& d : rx_->datagrams()) {
    if (d.truncated) d.len = 0;
    // A RoCEv2 answer (its first byte is the BTH opcode, never a native
    // magic/version byte) is translated in place (the native form is
    // shorter); one that does not parse is dropped.
    if (d.len > 0 && d.data[0] == roce::kOpUcWriteOnlyImm) {
      roce::RoceError err;
      size_t len = roce::toNative({d.data, d.len}, rxScratch_, &err);
      std::memcpy(d.data, rxScratch_.data(), len);
      d.len = static_cast<uint32_t>(len);
    }
  }
  return got;
}

void InaClient::onDatagram(Call& c, const uint8_t* data, size_t len) {
  Header h;
  if (decode({data, len}, &h) != DecodeError::kOk || h.job != options_.job ||
      h.token != options_.token || (h.type != Type::kResult && h.type != Type::kNack)) {
    return;
  }
  uint32_t r = h.seq - c.base;
  uint32_t w = c.slotIndex(h.seq);
  Entry& e = entries_[w];
  if (r >= c.total || !e.busy || e.seq != h.seq || h.slot != grant_.base + w) {
    c.stats.staleResults++;
    return;
  }
  Clock::time_point now = Clock::now();
  e.busy = false;
  c.completed++;
  c.lastProgress = now;
  bool isData = c.isData(r);
  uint32_t i = isData ? r - c.prologue : 0;
  if (isData) c.final[i] = true;
  if (h.type == Type::kNack) {
    // Preempted: this slot is gone for the rest of the grant.
    c.stats.nacks++;
    deadSlots_[w] = true;
    if (isData) c.host[i] = true;
    return;
  }
  c.stats.results++;
  if (!e.retransmitted) rto_.sample(microsBetween(e.sentAt, now));
  uint32_t& highest = c.highestResult[slotPort(w)];
  if (highest == 0 || static_cast<int32_t>(h.seq - highest) > 0) {
    highest = h.seq;
    c.newResults = true;
  }
  uint32_t ahead = r + c.win - c.prologue;
  if (c.quantized && ahead < c.slices) c.sharedExp[ahead] = h.exponent;
  // A broadcast root's slice is acknowledged (the switch sends it the
  // header only; an older switch echoes the same bits).
  if (c.bcast || !isData || c.host[i]) return;
  if (!c.getsSum(i) && h.elems == 0) return;  // acknowledged: the sum went to the port
  if ((h.flags & kFlagOverflow) || h.elems != c.P) {
    c.host[i] = true;
    return;
  }
  size_t first = c.sliceFirst(i), n = c.sliceLen(i);
  const bool marker = c.marker(i);
  if (!c.quantized) {
    int32_t* out = static_cast<int32_t*>(c.buffer) + first;
    if (!marker) {
      decodePayload(data + kHeaderBytes, n, out);
      return;
    }
    decodePayload(data + kHeaderBytes, n, c.ints.data());
    for (size_t k = 0; k < n; ++k) {  // wraps like the host int32 kernels do
      out[k] = static_cast<int32_t>(static_cast<uint32_t>(out[k]) +
                                    static_cast<uint32_t>(c.ints[k]));
    }
    return;
  }
  decodePayload(data + kHeaderBytes, n, c.ints.data());
  int8_t E = c.sharedExp[i];
  // The sum goes to scratch[P, P + n): floatsOf(i) may use scratch[0, n).
  float* sum = c.scratch.data() + c.P;
  if (E == kExponentZero) {
    std::fill(sum, sum + n, 0.0f);
  } else {
    dequantize(c.ints.data(), n, E, options_.fanIn, sum);
  }
  if (marker) {
    const float* own = c.floatsOf(i);
    for (size_t k = 0; k < n; ++k) sum[k] += own[k];
  }
  storeFromFloat(sum, n, c.type, first, c.buffer);
}

void InaClient::receive(Call* c) {
  GatherCall* g = gather_.get();
  // Datagrams past both calls belong to a later one (a broadcast a rack-mate
  // started early) and are kept for it.
  uint32_t end = 0;
  if (c) end = c->base + c->total;
  if (g && (!c || static_cast<int32_t>(gatherEnd(*g) - end) > 0)) end = gatherEnd(*g);
  for (;;) {
    int got = receiveBatch();
    if (got <= 0) return;
    for (const UdpBatchReceiver::Datagram& d : rx_->datagrams()) {
      const uint8_t* data = d.data;
      const size_t len = d.len;
      if (len == 0) continue;
      if (keepIfEarly(data, len, end)) continue;
      if (g && inGather(*g, data, len)) {
        onGatherDatagram(*g, data, len);
      } else if (c) {
        onDatagram(*c, data, len);
      }
    }
    if (got < kRxBatch) return;
  }
}

Status InaClient::retransmit(Call& c) {
  Clock::time_point now = Clock::now();
  if (now < c.nextTimeoutScan && !c.newResults) return Status();
  c.newResults = false;
  const auto rto = std::chrono::microseconds(rto_.rtoUs());
  std::vector<Entry*> resend;
  size_t timedOut = 0;
  Clock::time_point earliest = now + rto;
  const Entry* oldest = nullptr;
  for (uint32_t w = c.slot0; w < c.slot0 + c.win; ++w) {
    Entry& e = entries_[w];
    if (!e.busy) continue;
    if (!oldest || static_cast<int32_t>(e.seq - oldest->seq) < 0) oldest = &e;
    bool late = now - e.sentAt >= rto;
    // Only slots of the same switch thread (port) complete in order.
    uint32_t highest = c.highestResult[slotPort(w)];
    bool overtaken = !e.fastResent && highest != 0 &&
                     static_cast<int32_t>(highest - e.seq) > kReorderSlices * grant_.ports;
    if (late || overtaken) {
      e.bytes[1] |= kFlagResend;
      e.retransmitted = true;
      e.fastResent = true;  // at most one early resend per send; then the RTO
      timedOut += late ? 1 : 0;
      c.stats.fastRetransmissions += late ? 0 : 1;
      resend.push_back(&e);
      earliest = std::min(earliest, now + rto);
    } else {
      earliest = std::min(earliest, e.sentAt + rto);
    }
  }
  if (oldest && now - c.lastProgress > std::chrono::milliseconds(options_.switchTimeoutMs)) {
    uint32_t w = c.slotIndex(oldest->seq);
    return errorf(rinaTimeout,
                  "ina: worker %u job %u: no answer from the switch for %d ms, waiting for slot %u "
                  "seq %u (%u of %u slices done, %llu retransmissions)",
                  options_.worker, options_.job, options_.switchTimeoutMs, grant_.base + w,
                  oldest->seq, c.completed, c.total,
                  static_cast<unsigned long long>(c.stats.retransmissions));
  }
  if (!resend.empty()) {
    if (timedOut) rto_.backoff();
    c.stats.retransmissions += resend.size();
    for (const Entry* e : resend) c.stats.bytesSent += e->bytes.size();
    RINA_TRY(sendEntries(resend));
  }
  c.nextTimeoutScan = earliest;
  return Status();
}

Status InaClient::pump(Call& c, bool* moved) {
  const uint32_t completedBefore = c.completed;
  std::vector<Entry*> batch;
  while (c.nextToSend < c.total) {
    uint32_t r = c.nextToSend;
    uint32_t w = c.slotIndex(c.base + r);
    if (entries_[w].busy) break;
    c.nextToSend++;
    if (deadSlots_[w]) {
      if (c.isData(r)) {
        c.host[r - c.prologue] = true;
        c.final[r - c.prologue] = true;
      }
      c.completed++;
      continue;
    }
    buildSlice(c, r, entries_[w]);
    batch.push_back(&entries_[w]);
  }
  if (!batch.empty()) {
    c.stats.datagramsSent += batch.size();
    for (const Entry* e : batch) c.stats.bytesSent += e->bytes.size();
    RINA_TRY(sendEntries(batch));
    c.nextTimeoutScan =
        std::min(c.nextTimeoutScan, Clock::now() + std::chrono::microseconds(rto_.rtoUs()));
  }
  if (c.completed < c.total) {
    receive(&c);
    RINA_TRY(retransmit(c));
  }
  *moved = !batch.empty() || c.completed != completedBefore;
  return Status();
}

Status InaClient::runCall(Call& c) {
  for (uint32_t w = c.slot0; w < c.slot0 + c.win; ++w) entries_[w].busy = false;
  c.lastProgress = Clock::now();
  c.nextTimeoutScan = c.lastProgress;
  while (c.completed < c.total) {
    bool moved = false;
    RINA_TRY(pump(c, &moved));
    if (c.completed == c.total || moved) continue;
    int64_t waitUs = std::max<int64_t>(0, microsBetween(Clock::now(), c.nextTimeoutScan));
    pollfd p{socket_.get(), POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(std::min<int64_t>(waitUs / 1000 + 1, 50)));
  }
  return Status();
}

Status InaClient::allreduce(void* buffer, size_t count, rinaDataType_t type,
                            const InaCallOptions& call, InaCallResult* result) {
  *result = InaCallResult{};
  RINA_TRY(start(buffer, count, type, call));
  if (!active_) return Status();  // nothing to do
  activeStatus_ = runCall(*active_);
  return finish(result);
}

void InaClient::endCalls() {
  active_.reset();
  gather_.reset();
  activeStatus_ = Status();
  gatherStatus_ = Status();
}

Status InaClient::start(void* buffer, size_t count, rinaDataType_t type,
                        const InaCallOptions& call) {
  active_.reset();
  activeStatus_ = Status();
  if (window_ == 0) {
    return errorf(rinaInvalidUsage, "ina: worker %u job %u: allreduce before a slot grant",
                  options_.worker, options_.job);
  }
  if (elementSize(type) == 0) {
    return errorf(rinaInvalidArgument, "ina: worker %u job %u: datatype %d not supported by INA",
                  options_.worker, options_.job, static_cast<int>(type));
  }
  if (count == 0) return Status();
  if (!buffer) return errorf(rinaInvalidArgument, "ina: null buffer");
  auto owned = std::make_unique<Call>();
  Call& c = *owned;
  c.buffer = buffer;
  c.upstream = call.upstreamPartial;
  c.toPortOnly = call.resultToPortOnly;
  c.isPort = call.isPort;
  c.roles = call.resultToPortOnly ? call.sliceRoles : nullptr;
  c.markers = call.portMarkers;
  c.spans = call.spans;
  c.worker = options_.worker;
  c.count = count;
  c.type = type;
  c.quantized = type != rinaInt32;
  c.P = grant_.payloadElems;
  const size_t slices = c.spans ? c.spans->size() : sliceCount(count, c.P);
  if (slices > (1u << 30)) return errorf(rinaInvalidArgument, "ina: buffer too large");
  c.slices = static_cast<uint32_t>(slices);
  if (c.spans) {
    for (size_t i = 0; i < c.spans->size(); ++i) {
      const SliceSpan& sp = (*c.spans)[i];
      if (sp.len == 0 || sp.len > c.P || sp.first > count || count - sp.first < sp.len) {
        return errorf(rinaInvalidArgument,
                      "ina: worker %u job %u: slice %zu (elements %zu + %u) is empty, longer than "
                      "%u or outside the %zu-element buffer",
                      options_.worker, options_.job, i, sp.first, sp.len, c.P, count);
      }
    }
  }
  if (c.roles && (c.roles->size() != c.slices || c.upstream)) {
    return errorf(
        rinaInvalidArgument, "ina: worker %u job %u: %zu slice roles for %u slices%s",
        options_.worker, options_.job, c.roles->size(), c.slices,
        c.upstream ? " (and an upstream partial, which a reduce-scatter cannot take)" : "");
  }
  if (c.slices == 0) return Status();
  c.slot0 = call.firstSlot;
  c.win = call.slots ? call.slots : window_ - std::min(window_, call.firstSlot);
  if (c.win == 0 || c.slot0 + c.win > window_) {
    return errorf(rinaInvalidArgument,
                  "ina: worker %u job %u: slots %u..%u are outside the window of %u",
                  options_.worker, options_.job, c.slot0, c.slot0 + c.win, window_);
  }
  if (gather_ && gatherSlotsOverlap(*gather_, c.slot0, c.win)) {
    return errorf(rinaInvalidUsage,
                  "ina: worker %u job %u: slots %u..%u overlap the all-gather in progress",
                  options_.worker, options_.job, c.slot0, c.slot0 + c.win);
  }
  c.prologue = c.quantized ? c.win : 0;
  c.total = c.prologue + c.slices;
  if (uint64_t{nextSeq_} + c.total >= (uint64_t{1} << 32)) {
    // Seq 0 means "unused" to the switch, and t % W must not jump at the wrap.
    return errorf(rinaInvalidUsage,
                  "ina: worker %u job %u: slice sequence exhausted; REQUEST a fresh grant",
                  options_.worker, options_.job);
  }
  c.base = nextSeq_;
  nextSeq_ += c.total;
  c.host.assign(c.slices, false);
  c.final.assign(c.slices, false);
  c.highestResult.assign(grant_.ports, 0);
  c.scratch.assign(2 * size_t{c.P}, 0.0f);
  c.ints.assign(c.P, 0);
  c.stats.slices = c.slices;
  if (c.quantized) {
    c.localExp.resize(c.slices);
    c.sharedExp.assign(c.slices, kExponentHost);
    for (uint32_t i = 0; i < c.slices; ++i) {
      c.localExp[i] = sliceExponent(c.floatsOf(i), c.sliceLen(i));
    }
  }
  for (uint32_t w = c.slot0; w < c.slot0 + c.win; ++w) entries_[w].busy = false;
  c.lastProgress = Clock::now();
  c.nextTimeoutScan = c.lastProgress;
  active_ = std::move(owned);
  return Status();
}

Status InaClient::progress(bool* moved) {
  *moved = false;
  const bool running = active_ && activeStatus_.ok() && active_->completed < active_->total;
  if (running) activeStatus_ = pump(*active_, moved);
  if (gather_ && gatherStatus_.ok()) {
    bool gathered = false;
    gatherStatus_ = pumpGather(*gather_, &gathered);
    *moved |= gathered;
  }
  if (!running && !gather_) return activeStatus_;
  return running || !gather_ ? activeStatus_ : gatherStatus_;
}

bool InaClient::callSlotsOverlap(uint32_t first, uint32_t count) const {
  return active_ && !done() && active_->slot0 < first + count &&
         first < active_->slot0 + active_->win;
}

bool InaClient::done() const {
  return !active_ || !activeStatus_.ok() || active_->completed == active_->total;
}

bool InaClient::sliceFinal(uint32_t i) const {
  return active_ && i < active_->slices && (active_->final[i] || !activeStatus_.ok());
}

bool InaClient::sliceOnHost(uint32_t i) const {
  return active_ && i < active_->slices &&
         (active_->host[i] || (!activeStatus_.ok() && !active_->final[i]));
}

int InaClient::waitMs() const {
  int ms = gather_ ? gatherWaitMs() : 50;
  if (!done()) {
    int64_t waitUs = std::max<int64_t>(0, microsBetween(Clock::now(), active_->nextTimeoutScan));
    ms = std::min(ms, static_cast<int>(std::min<int64_t>(waitUs / 1000 + 1, 50)));
  }
  return ms;
}

Status InaClient::finish(InaCallResult* result) {
  *result = InaCallResult{};
  std::unique_ptr<Call> owned = std::move(active_);
  Status st = activeStatus_;
  activeStatus_ = Status();
  if (!owned) return st;
  Call& c = *owned;
  for (uint32_t i = 0; i < c.slices; ++i) {
    if (c.host[i] || (!st.ok() && !c.final[i])) result->hostSlices.push_back(i);
  }
  if (st.ok() && !result->hostSlices.empty()) {
    RINA_INFO("ina: worker %u job %u: %zu of %u slices left to host aggregation (%llu NACKs)",
              options_.worker, options_.job, result->hostSlices.size(), c.slices,
              static_cast<unsigned long long>(c.stats.nacks));
  }
  c.stats.rtoUs = rto_.rtoUs();
  result->stats = c.stats;
  return st;
}

Status InaClient::broadcast(void* buffer, size_t bytes, bool isRoot, int quietMs,
                            InaBroadcastResult* result) {
  *result = InaBroadcastResult{};
  if (window_ == 0) {
    return errorf(rinaInvalidUsage, "ina: worker %u job %u: broadcast before a slot grant",
                  options_.worker, options_.job);
  }
  if (bytes == 0) return Status();
  if (!buffer) return errorf(rinaInvalidArgument, "ina: null buffer");
  const size_t sliceBytes = 4 * size_t{grant_.payloadElems};
  if (sliceCount(bytes, sliceBytes) > (1u << 30)) {
    return errorf(rinaInvalidArgument, "ina: buffer too large");
  }
  const uint32_t slices = static_cast<uint32_t>(sliceCount(bytes, sliceBytes));
  if (uint64_t{nextSeq_} + slices >= (uint64_t{1} << 32)) {
    return errorf(rinaInvalidUsage,
                  "ina: worker %u job %u: slice sequence exhausted; REQUEST a fresh grant",
                  options_.worker, options_.job);
  }
  const uint32_t base = nextSeq_;
  nextSeq_ += slices;
  return isRoot ? broadcastRoot(static_cast<const uint8_t*>(buffer), bytes, base, slices, result)
                : broadcastReceive(static_cast<uint8_t*>(buffer), bytes, base, slices, quietMs,
                                   result);
}

Status InaClient::broadcastRoot(const uint8_t* buffer, size_t bytes, uint32_t base, uint32_t slices,
                                InaBroadcastResult* result) {
  // The slices as padded words. The switch answers each with a header-only
  // RESULT to the root: its acknowledgement.
  std::vector<int32_t> words(size_t{slices} * grant_.payloadElems, 0);
  std::memcpy(words.data(), buffer, bytes);
  Call c;
  c.buffer = words.data();
  c.count = words.size();
  c.type = rinaInt32;
  c.bcast = true;
  c.slot0 = 0;
  c.win = window_;
  c.P = grant_.payloadElems;
  c.slices = slices;
  c.total = slices;
  c.base = base;
  c.host.assign(slices, false);
  c.final.assign(slices, false);
  c.highestResult.assign(grant_.ports, 0);
  c.ints.assign(c.P, 0);
  c.stats.slices = slices;
  RINA_TRY(runCall(c));
  for (uint32_t i = 0; i < slices; ++i) {
    if (c.host[i]) result->missingSlices.push_back(i);
  }
  c.stats.rtoUs = rto_.rtoUs();
  result->stats = c.stats;
  return Status();
}

bool InaClient::keepIfEarly(const uint8_t* data, size_t len, uint32_t end) {
  Header h;
  if (decode({data, len}, &h) != DecodeError::kOk || h.job != options_.job ||
      h.token != options_.token || static_cast<int32_t>(h.seq - end) < 0) {
    return false;
  }
  if (early_.size() < kMaxEarlyDatagrams) early_.emplace_back(data, data + len);
  return true;
}

Status InaClient::broadcastReceive(uint8_t* buffer, size_t bytes, uint32_t base, uint32_t slices,
                                   int quietMs, InaBroadcastResult* result) {
  const size_t P = grant_.payloadElems;
  std::vector<bool> got(slices, false);
  std::vector<int32_t> words(P);
  uint32_t have = 0;
  Clock::time_point last = Clock::now();
  auto handle = [&](const uint8_t* data, size_t len) {
    Header h;
    if (decode({data, len}, &h) != DecodeError::kOk || h.job != options_.job ||
        h.token != options_.token || h.type != Type::kResult || h.elems != P) {
      return;
    }
    uint32_t i = h.seq - base;
    if (i >= slices || got[i] || h.slot != grant_.base + h.seq % window_) {
      result->stats.staleResults++;
      return;
    }
    decodePayload(data + kHeaderBytes, P, words.data());
    size_t first = size_t{i} * 4 * P;
    std::memcpy(buffer + first, words.data(), std::min(4 * P, bytes - first));
    got[i] = true;
    ++have;
    result->stats.results++;
    last = Clock::now();
  };
  // Slices multicast while this worker was still in an earlier call.
  std::deque<std::vector<uint8_t>> early;
  early.swap(early_);
  for (const auto& d : early) {
    if (!keepIfEarly(d.data(), d.size(), base + slices)) handle(d.data(), d.size());
  }
  while (have < slices) {
    int limitMs = have == 0 ? options_.switchTimeoutMs : quietMs;
    int64_t leftMs =
        limitMs -
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last).count();
    if (leftMs <= 0) break;
    pollfd p{socket_.get(), POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(std::min<int64_t>(leftMs, 50)));
    receiveBatch();
    for (const UdpBatchReceiver::Datagram& d : rx_->datagrams()) {
      if (d.len == 0) continue;
      if (keepIfEarly(d.data, d.len, base + slices)) continue;
      handle(d.data, d.len);
    }
  }
  result->stats.slices = slices;
  for (uint32_t i = 0; i < slices; ++i) {
    if (!got[i]) result->missingSlices.push_back(i);
  }
  if (have < slices) {
    RINA_INFO("ina: worker %u job %u: broadcast seq %u..%u: %u of %u slices did not arrive",
              options_.worker, options_.job, base, base + slices - 1, slices - have, slices);
  }
  return Status();
}

}  // namespace rina::ina
