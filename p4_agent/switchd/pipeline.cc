#include "switchd/pipeline.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "wire/wire_kernels.h"

namespace rina::switchd {

using ina::DecodeError;
using ina::Header;
using ina::Type;

const char* verdictName(Verdict v) {
  static constexpr const char* kNames[] = {
      "first",          "added",     "completed", "duplicate_pending", "duplicate_resent",
      "stale",          "bcast",     "nack",      "unknown_job",       "bad_token",
      "malformed",      "bad_shape", "bad_slot",  "bad_source",        "unexpected_type",
      "duplicate_short"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(Verdict::kCount));
  return kNames[static_cast<size_t>(v)];
}

std::span<uint8_t> Output::reserve(size_t bytes, uint32_t* offset) {
  if (size_ + bytes > capacity_) {
    // Grows (rarely: the arena is kept across batches); bytes are written
    // before they are read, so nothing is zeroed.
    const size_t capacity = std::max(2 * capacity_, size_ + bytes);
    std::unique_ptr<uint8_t[]> grown = std::make_unique_for_overwrite<uint8_t[]>(capacity);
    if (size_) std::memcpy(grown.get(), arena_.get(), size_);
    arena_ = std::move(grown);
    capacity_ = capacity;
  }
  *offset = static_cast<uint32_t>(size_);
  size_ += bytes;
  return {arena_.get() + *offset, bytes};
}

Pipeline::Pipeline(const PipelineConfig& config)
    : config_(config), activity_(new std::atomic<uint64_t>[0x10000]) {
  uint32_t localSlots = (config_.totalSlots + config_.shards - 1 - config_.shard) / config_.shards;
  owner_.assign(localSlots, 0);
  sets_.assign(2 * static_cast<size_t>(localSlots), SlotSet{});
  // Each set's values start on a cache line (when payloadElems is a
  // multiple of 16, as the default sizes are): the payload kernels' 32-byte
  // stores then never straddle two lines.
  values_ =
      std::make_unique_for_overwrite<int32_t[]>(sets_.size() * config_.payloadElems + kLineElems);
  const auto base = reinterpret_cast<uintptr_t>(values_.get());
  alignedValues_ = values_.get() + (kLineBytes - base % kLineBytes) % kLineBytes / 4;
  for (size_t i = 0; i < 0x10000; ++i) activity_[i].store(0, std::memory_order_relaxed);
}

void Pipeline::installJob(const JobEntry& job) { jobs_[job.id] = job; }

void Pipeline::removeJob(uint16_t job) {
  jobs_.erase(job);
  for (uint32_t l = 0; l < owner_.size(); ++l) {
    if (owner_[l] == job) {
      owner_[l] = 0;
      sets_[2 * l] = SlotSet{};
      sets_[2 * l + 1] = SlotSet{};
    }
  }
}

void Pipeline::assignSlots(uint32_t begin, uint32_t end, uint16_t job) {
  end = std::min(end, config_.totalSlots);
  for (uint32_t s = begin; s < end; ++s) {
    if (!ownsSlot(s)) continue;
    uint32_t l = local(s);
    owner_[l] = job;
    sets_[2 * l] = SlotSet{};
    sets_[2 * l + 1] = SlotSet{};
  }
}

uint16_t Pipeline::owner(uint32_t slot) const {
  return ownsSlot(slot) && slot < config_.totalSlots ? owner_[local(slot)] : 0;
}

Verdict Pipeline::process(std::span<const uint8_t> datagram, const Endpoint& sender, uint64_t nowMs,
                          Output* out, bool answerToMember) {
  Header h;
  DecodeError e = ina::decode(datagram, &h);
  Verdict v;
  if (e != DecodeError::kOk) {
    stats_.malformed[static_cast<size_t>(e)].add();
    v = Verdict::kMalformed;
  } else if (h.type != Type::kData && h.type != Type::kBcast) {
    v = Verdict::kUnexpectedType;
  } else if (auto it = jobs_.find(h.job); it == jobs_.end()) {
    v = Verdict::kUnknownJob;
  } else if (it->second.token != h.token) {
    v = Verdict::kBadToken;
  } else if ((h.elems != config_.payloadElems && !ina::isPortMarker(h)) ||
             h.fanIn != it->second.fanIn) {
    v = Verdict::kBadShape;
  } else if (h.slot >= config_.totalSlots || !ownsSlot(h.slot)) {
    v = Verdict::kBadSlot;
  } else if (!fromMember(it->second, h.worker, sender, answerToMember)) {
    v = Verdict::kBadSource;
  } else {
    const JobEntry& job = it->second;
    const Endpoint& replyTo = job.members[h.worker];
    if (owner_[local(h.slot)] != h.job) {
      emitNack(h, replyTo, out);
      v = Verdict::kNack;
    } else {
      activity_[h.job].store(nowMs, std::memory_order_relaxed);
      v = h.type == Type::kBcast ? broadcast(h, datagram.data(), job, out)
                                 : contribute(h, datagram.data(), job, replyTo, out);
    }
  }
  stats_.verdicts[static_cast<size_t>(v)].add();
  return v;
}

bool Pipeline::fromMember(const JobEntry& job, uint8_t worker, const Endpoint& sender,
                          bool addressOnly) {
  if (worker >= job.members.size()) return false;
  const Endpoint& m = job.members[worker];
  return m.addr == sender.addr && (addressOnly || m.port == sender.port);
}

Pipeline::SlotSet* Pipeline::claimSet(const Header& h, int32_t** values) {
  size_t setIndex = 2 * static_cast<size_t>(local(h.slot)) + (h.shadow ? 1 : 0);
  SlotSet& s = sets_[setIndex];
  *values = alignedValues_ + setIndex * config_.payloadElems;
  if (s.used && s.seq != h.seq) {
    if (static_cast<int32_t>(h.seq - s.seq) < 0) return nullptr;
    s = SlotSet{};
  }
  s.used = true;
  s.seq = h.seq;
  return &s;
}

Verdict Pipeline::contribute(const Header& h, const uint8_t* datagram, const JobEntry& job,
                             const Endpoint& from, Output* out) {
  int32_t* values;
  SlotSet* set = claimSet(h, &values);
  if (!set) return Verdict::kStale;
  SlotSet& s = *set;
  uint32_t bit = 1u << h.worker;
  if (s.bitmap & bit) {
    if (!s.complete) return Verdict::kDuplicatePending;
    // Never answer with more bytes than were sent: a header-only marker
    // that would fetch the full sum gets nothing (clients resend markers at
    // full size).
    const bool full = s.payload && (!s.toPort || h.worker == s.portWorker);
    if (full && h.elems < config_.payloadElems) return Verdict::kDuplicateShort;
    emitResult(h, job, s, values, &from, out);
    return Verdict::kDuplicateResent;
  }
  const uint8_t* payload = datagram + ina::kHeaderBytes;
  uint32_t n = config_.payloadElems;
  const bool completes = s.count + 1 >= job.fanIn;
  uint32_t fullOffset = kNotWritten;
  bool saturated = false;
  if (ina::isPortMarker(h)) {
    // A port marker: its bit, its exponent and TO_PORT, values all zero.
    if (s.count == 0) std::fill(values, values + n, 0);
  } else if (s.count == 0) {
    ina::loadWire(payload, n, values);
  } else if (completes) {
    // The last contribution: its sum goes straight into the result's
    // payload in the same pass (emitResult adds the header).
    std::span<uint8_t> result = out->reserve(ina::kHeaderBytes + 4 * size_t{n}, &fullOffset);
    saturated = ina::addWireSaturatingToWire(values, payload, n, result.data() + ina::kHeaderBytes);
  } else {
    saturated = ina::addWireSaturating(values, payload, n);
  }
  if (saturated && !s.overflow) {
    // Saturated, not wrapped: a wrapped sum would look like a valid result.
    s.overflow = true;
    stats_.overflows.add();
  }
  stats_.contributions.add();
  s.payload |= !ina::isPortMarker(h);
  s.bitmap |= bit;
  s.count++;
  s.exponent = s.count == 1 ? h.exponent : std::max(s.exponent, h.exponent);
  if (h.flags & ina::kFlagToPort) {
    s.toPort = true;
    s.portWorker = h.worker;
  }
  if (!completes) return s.count == 1 ? Verdict::kFirst : Verdict::kAdded;
  s.complete = true;
  emitResult(h, job, s, values, nullptr, out, fullOffset);
  return Verdict::kCompleted;
}

Verdict Pipeline::broadcast(const Header& h, const uint8_t* datagram, const JobEntry& job,
                            Output* out) {
  // Fan-in 1: the single contribution completes the set and is multicast
  // once; a resend of the same seq (the root's acknowledgement was lost) is
  // acknowledged to the root alone, header-only.
  int32_t* values;
  SlotSet* set = claimSet(h, &values);
  if (!set) return Verdict::kStale;
  SlotSet& s = *set;
  if (s.complete) {
    uint32_t len = 0;
    uint32_t off = encodeResult(h, job, s, values, false, ina::kFlagResend, out, &len);
    out->add(job.members[h.worker], off, len);
    stats_.sent.add();
    return Verdict::kBcast;
  }
  s = SlotSet{};  // a BCAST replaces whatever DATA began under the same seq
  s.used = true;
  s.seq = h.seq;
  ina::loadWire(datagram + ina::kHeaderBytes, config_.payloadElems, values);
  s.bitmap = 1u << h.worker;
  s.count = 1;
  s.complete = true;
  s.payload = true;
  s.exponent = h.exponent;
  stats_.contributions.add();
  emitResult(h, job, s, values, nullptr, out);
  return Verdict::kBcast;
}

Header Pipeline::resultHeader(const Header& h, const JobEntry& job, const SlotSet& s,
                              bool withPayload, uint8_t extraFlags) const {
  Header r;
  r.type = Type::kResult;
  r.flags = static_cast<uint8_t>((s.overflow ? ina::kFlagOverflow : 0) | extraFlags);
  r.job = job.id;
  r.slot = h.slot;
  r.shadow = h.shadow;
  r.worker = 0;
  r.fanIn = job.fanIn;
  r.seq = s.seq;
  r.exponent = s.exponent;
  r.elems = withPayload ? static_cast<uint16_t>(config_.payloadElems) : 0;
  r.token = job.token;
  return r;
}

uint32_t Pipeline::encodeResult(const Header& h, const JobEntry& job, const SlotSet& s,
                                const int32_t* values, bool withPayload, uint8_t extraFlags,
                                Output* out, uint32_t* length) {
  const Header r = resultHeader(h, job, s, withPayload, extraFlags);
  uint32_t offset;
  *length = static_cast<uint32_t>(ina::kHeaderBytes + 4 * size_t{r.elems});
  std::span<uint8_t> buf = out->reserve(*length, &offset);
  ina::encodeHeader(r, buf);
  ina::storeWire(values, r.elems, buf.data() + ina::kHeaderBytes);
  return offset;
}

void Pipeline::emitResult(const Header& h, const JobEntry& job, const SlotSet& s,
                          const int32_t* values, const Endpoint* onlyTo, Output* out,
                          uint32_t fullOffset) {
  uint8_t resend = onlyTo ? ina::kFlagResend : 0;
  uint32_t fullLen = 0, ackLen = 0;
  if (onlyTo) {
    bool full = s.payload && (!s.toPort || h.worker == s.portWorker);
    uint32_t len = 0;
    uint32_t off = encodeResult(h, job, s, values, full, resend, out, &len);
    out->add(*onlyTo, off, len);
    stats_.sent.add();
    return;
  }
  // A BCAST's root has the values: it gets an acknowledgement only, as do
  // the members other than a TO_PORT slice's port.
  // A set of port markers alone sums to zero: every member gets the
  // acknowledgement (with the exponent), nobody a payload of zeros.
  const bool bcast = h.type == Type::kBcast;
  uint32_t full = 0;
  if (fullOffset != kNotWritten) {
    fullLen = static_cast<uint32_t>(ina::kHeaderBytes + 4 * size_t{config_.payloadElems});
    ina::encodeHeader(resultHeader(h, job, s, true, resend), out->at(fullOffset, fullLen));
    full = fullOffset;
  } else if (s.payload) {
    full = encodeResult(h, job, s, values, true, resend, out, &fullLen);
  }
  uint32_t ack = s.toPort || bcast || !s.payload
                     ? encodeResult(h, job, s, values, false, resend, out, &ackLen)
                     : 0;
  for (size_t w = 0; w < job.members.size(); ++w) {
    bool withPayload = s.payload && (bcast ? w != h.worker : !s.toPort || w == s.portWorker);
    out->add(job.members[w], withPayload ? full : ack, withPayload ? fullLen : ackLen);
    stats_.sent.add();
  }
}

void Pipeline::emitNack(const Header& h, const Endpoint& to, Output* out) {
  Header r = h;
  r.type = Type::kNack;
  r.flags = 0;
  r.elems = 0;
  uint32_t offset;
  std::span<uint8_t> buf = out->reserve(ina::kHeaderBytes, &offset);
  ina::encode(r, {}, buf);
  out->add(to, offset, ina::kHeaderBytes);
  stats_.sent.add();
}

}  // namespace rina::switchd
