#include "ina/reduce_call.h"

#include <algorithm>
#include <cstring>

#include "core/log.h"
#include "ina/quantize.h"
#include "rina/ina_wire.h"
#include "wire/wire_kernels.h"

namespace rina::ina {
namespace {

// a + b as the host int32 kernels add: wrapping.
int32_t wrappingAdd(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

}  // namespace

size_t switchElementSize(rinaDataType_t type) {
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

ReduceCall::ReduceCall(DatagramPump& pump, uint32_t base, uint32_t total, uint32_t firstSlot,
                       uint32_t slots)
    : pump_(pump), window_(pump, base, total, firstSlot, slots) {}

ReduceCall::~ReduceCall() { pump_.detach(*this); }

Status ReduceCall::create(DatagramPump& pump, void* buffer, size_t count, rinaDataType_t type,
                          const InaCallOptions& call, std::unique_ptr<ReduceCall>* out) {
  out->reset();
  RINA_TRY(pump.needGrant("allreduce"));
  if (switchElementSize(type) == 0) {
    return errorf(rinaInvalidArgument, "datatype %d not supported by INA", static_cast<int>(type))
        .prepend(pump.context());
  }
  if (count == 0) return Status();
  if (!buffer) return errorf(rinaInvalidArgument, "ina: null buffer");
  if (call.input && call.upstreamPartial) {
    return errorf(rinaInvalidArgument,
                  "ina: an input apart from the buffer and an upstream partial")
        .prepend(pump.context());
  }
  const uint32_t P = pump.grant().payloadElems;
  const size_t slices = call.spans ? call.spans->size() : sliceCount(count, P);
  if (slices > (1u << 30)) return errorf(rinaInvalidArgument, "ina: buffer too large");
  for (size_t i = 0; call.spans && i < slices; ++i) {
    const SliceSpan& sp = (*call.spans)[i];
    if (sp.len == 0 || sp.len > P || sp.first > count || count - sp.first < sp.len) {
      return errorf(rinaInvalidArgument,
                    "slice %zu (elements %zu + %u) is empty, longer than %u or outside the "
                    "%zu-element buffer",
                    i, sp.first, sp.len, P, count)
          .prepend(pump.context());
    }
  }
  const std::vector<uint8_t>* roles = call.resultToPortOnly ? call.sliceRoles : nullptr;
  if (roles && (roles->size() != slices || call.upstreamPartial)) {
    return errorf(rinaInvalidArgument, "%zu slice roles for %zu slices%s", roles->size(), slices,
                  call.upstreamPartial
                      ? " (and an upstream partial, which a reduce-scatter cannot take)"
                      : "")
        .prepend(pump.context());
  }
  if (slices == 0) return Status();
  uint32_t slots = call.slots;
  RINA_TRY(pump.claimSlots("allreduce", call.firstSlot, &slots));
  const bool quantized = type != rinaInt32;
  const uint32_t prologue = quantized ? slots : 0;
  const uint32_t total = prologue + static_cast<uint32_t>(slices);
  uint32_t base = 0;
  RINA_TRY(pump.takeSeqs(total, &base));

  std::unique_ptr<ReduceCall> c(new ReduceCall(pump, base, total, call.firstSlot, slots));
  c->buffer_ = buffer;
  c->input_ = call.input ? call.input : buffer;
  c->upstream_ = call.upstreamPartial;
  c->count_ = count;
  c->type_ = type;
  c->quantized_ = quantized;
  c->toPortOnly_ = call.resultToPortOnly;
  c->isPort_ = call.isPort;
  c->roles_ = roles;
  c->markers_ = call.portMarkers;
  c->markerPrologue_ = call.markerPrologue;
  c->spans_ = call.spans;
  c->P_ = P;
  c->slices_ = static_cast<uint32_t>(slices);
  c->prologue_ = prologue;
  c->host_.assign(slices, false);
  c->final_.assign(slices, false);
  c->scratch_.assign(2 * size_t{P}, 0.0f);
  c->ints_.assign(P, 0);
  c->window_.stats().slices = slices;
  if (quantized) {
    // Each slice's exponent is read at its announcement, one window ahead
    // (localExponent): a pass over the whole input here would hold the
    // first datagram back (16 MiB of float32: about 2 ms of one core).
    c->localExp_.resize(slices);
    c->sharedExp_.assign(slices, kExponentHost);
  }
  c->window_.begin();
  pump.attach(*c);
  *out = std::move(c);
  return Status();
}

Status ReduceCall::progress(bool* moved) {
  *moved = false;
  if (!done()) status_ = window_.pump(*this, moved);
  return status_;
}

Status ReduceCall::run() {
  status_ = window_.run(*this);
  return status_;
}

bool ReduceCall::sliceFinal(uint32_t i) const {
  return i < slices_ && (final_[i] || !status_.ok());
}

bool ReduceCall::sliceOnHost(uint32_t i) const {
  return i < slices_ && (host_[i] || (!status_.ok() && !final_[i]));
}

Status ReduceCall::finish(InaCallResult* result) {
  *result = InaCallResult{};
  for (uint32_t i = 0; i < slices_; ++i) {
    if (host_[i] || (!status_.ok() && !final_[i])) result->hostSlices.push_back(i);
  }
  if (status_.ok() && !result->hostSlices.empty()) {
    RINA_INFO("%s%zu of %u slices left to host aggregation (%llu NACKs)", pump_.context().c_str(),
              result->hostSlices.size(), slices_,
              static_cast<unsigned long long>(window_.stats().nacks));
  }
  result->stats = window_.finalStats();
  return status_;
}

bool ReduceCall::holdsSlots(uint32_t first, uint32_t count) const {
  return !done() && window_.firstSlot() < first + count &&
         first < window_.firstSlot() + window_.slots();
}

bool ReduceCall::flagsToPort(uint32_t r) const {
  if (!toPortOnly_) return false;
  if (!roles_) return isPort_;
  return r >= prologue_ ? (*roles_)[r - prologue_] == kSlicePort : pump_.options().worker == 0;
}

bool ReduceCall::getsSum(uint32_t i) const {
  if (!toPortOnly_) return true;
  return roles_ ? (*roles_)[i] != kSliceOther : isPort_;
}

size_t ReduceCall::sliceFirst(uint32_t i) const {
  return spans_ ? (*spans_)[i].first : size_t{i} * P_;
}

size_t ReduceCall::sliceLen(uint32_t i) const {
  return spans_ ? (*spans_)[i].len : std::min<size_t>(P_, count_ - sliceFirst(i));
}

int8_t ReduceCall::localExponent(uint32_t i) {
  // Datagrams are built in sequence order, resends after their first send,
  // so the exponents read form a prefix that grows by about one a datagram.
  for (; expKnown_ <= i; ++expKnown_) {
    localExp_[expKnown_] = sliceExponent(floatsOf(expKnown_), sliceLen(expKnown_));
  }
  return localExp_[i];
}

const float* ReduceCall::floatsOf(uint32_t i) {
  const size_t first = sliceFirst(i), n = sliceLen(i);
  if (type_ == rinaFloat32 && !upstream_) return static_cast<const float*>(input_) + first;
  loadAsFloat(input_, type_, first, n, scratch_.data());
  if (upstream_) {
    float* up = scratch_.data() + P_;  // the second half holds the upstream slice
    loadAsFloat(upstream_, type_, first, n, up);
    for (size_t k = 0; k < n; ++k) scratch_[k] += up[k];
  }
  return scratch_.data();
}

void ReduceCall::build(uint32_t r, InFlight& e) {
  Header h = pump_.header(Type::kData, e.slot, window_.shadowOf(e.seq), e.seq);
  h.flags = static_cast<uint8_t>((r + 1 == window_.total() ? kFlagLast : 0) |
                                 (flagsToPort(r) ? kFlagToPort : 0));
  // The exponent rides one window ahead: datagram r announces data slice r + W - prologue.
  const uint32_t ahead = r + window_.slots() - prologue_;
  h.exponent = quantized_ ? (ahead < slices_ ? localExponent(ahead) : kExponentZero) : 0;
  size_t filled = 0;  // ints_[0, filled) are this datagram's values; the rest are zeros
  const bool isData = r >= prologue_;
  const uint32_t i = r - prologue_;  // the data slice, if isData
  const bool asMarker = isData && marker(i);
  if (asMarker) {
    // Header only; a slice the hosts must sum is still marked as below.
    if (quantized_ && sharedExp_[i] == kExponentHost) host_[i] = true;
    h.elems = 0;
  } else if (!isData && markerPrologue_) {
    // Its exponent and bit are all it carries.
    h.elems = 0;
    h.flags |= kFlagToPort;
  } else if (isData) {
    const size_t first = sliceFirst(i), n = sliceLen(i);
    filled = n;
    if (!quantized_) {
      const int32_t* in = static_cast<const int32_t*>(input_) + first;
      const int32_t* up = upstream_ ? static_cast<const int32_t*>(upstream_) + first : nullptr;
      if (!up) {
        std::memcpy(ints_.data(), in, n * sizeof(int32_t));
      } else {
        for (size_t k = 0; k < n; ++k) ints_[k] = wrappingAdd(in[k], up[k]);
      }
    } else {
      const int8_t E = sharedExp_[i];
      if (E == kExponentHost) {
        host_[i] = true;  // still sent (as zeros) to keep the window and exponents moving
        filled = 0;
      } else if (E != kExponentZero) {
        quantize(floatsOf(i), n, E, pump_.options().fanIn, ints_.data());
      } else {
        filled = 0;
      }
    }
  }
  if (h.elems != 0) std::fill(ints_.begin() + static_cast<long>(filled), ints_.end(), 0);
  e.bytes.resize(kHeaderBytes + sizeof(int32_t) * size_t{h.elems});
  encodeHeader(h, e.bytes);
  storeWire(ints_.data(), h.elems, e.bytes.data() + kHeaderBytes);
}

void ReduceCall::skip(uint32_t r) {
  if (r < prologue_) return;
  host_[r - prologue_] = true;
  final_[r - prologue_] = true;
}

void ReduceCall::onAnswer(const Header& h, const uint8_t* payload) {
  if (h.type != Type::kResult && h.type != Type::kNack) return;
  uint32_t r = 0;
  const SliceWindow::Answer answer = window_.take(h, &r);
  if (answer == SliceWindow::Answer::kStale) return;
  const bool isData = r >= prologue_;
  const uint32_t i = isData ? r - prologue_ : 0;
  if (isData) final_[i] = true;
  if (answer == SliceWindow::Answer::kNack) {
    if (isData) host_[i] = true;
    return;
  }
  const uint32_t ahead = r + window_.slots() - prologue_;
  if (quantized_ && ahead < slices_) sharedExp_[ahead] = h.exponent;
  if (!isData || host_[i]) return;
  if (!getsSum(i) && h.elems == 0) return;  // acknowledged: the sum went to the port
  if ((h.flags & kFlagOverflow) || h.elems != P_) {
    host_[i] = true;
    return;
  }
  store(i, h, payload);
}

void ReduceCall::onStray(const Header& h) {
  if (h.type != Type::kResult && h.type != Type::kNack) return;
  window_.stats().staleResults++;
  window_.noteLateCopy(h);
}

void ReduceCall::store(uint32_t i, const Header& h, const uint8_t* payload) {
  const size_t first = sliceFirst(i), n = sliceLen(i);
  const bool own = marker(i);  // the sum lacks this worker's values
  if (!quantized_) {
    int32_t* out = static_cast<int32_t*>(buffer_) + first;
    if (!own) {
      loadWire(payload, n, out);
      return;
    }
    loadWire(payload, n, ints_.data());
    const int32_t* in = static_cast<const int32_t*>(input_) + first;
    for (size_t k = 0; k < n; ++k) out[k] = wrappingAdd(in[k], ints_[k]);
    return;
  }
  loadWire(payload, n, ints_.data());
  const int8_t E = sharedExp_[i];
  // The sum goes to scratch_[P, P + n): floatsOf(i) may use scratch_[0, n).
  float* sum = scratch_.data() + P_;
  if (E == kExponentZero) {
    std::fill(sum, sum + n, 0.0f);
  } else {
    dequantize(ints_.data(), n, E, pump_.options().fanIn, sum);
  }
  if (own) {
    const float* mine = floatsOf(i);
    for (size_t k = 0; k < n; ++k) sum[k] += mine[k];
  }
  storeFromFloat(sum, n, type_, first, buffer_);
}

}  // namespace rina::ina
