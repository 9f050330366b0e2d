#include "ina/broadcast_call.h"

#include <algorithm>
#include <cstring>
#include <span>

#include "core/log.h"
#include "ina/slice_window.h"
#include "rina/ina_wire.h"
#include "wire/wire_kernels.h"

namespace rina::ina {
namespace {

// The root: its slices as padded words through a SliceWindow over the
// whole window.
class BroadcastRoot : public PumpCall, private SliceWindow::Source {
 public:
  BroadcastRoot(DatagramPump& pump, const uint8_t* buffer, size_t bytes, uint32_t base,
                uint32_t slices)
      : pump_(pump),
        window_(pump, base, slices, 0, pump.window()),
        P_(pump.grant().payloadElems),
        words_(size_t{slices} * P_, 0),
        missing_(slices, false) {
    std::memcpy(words_.data(), buffer, bytes);
    window_.stats().slices = slices;
    window_.begin();
    pump_.attach(*this);
  }
  ~BroadcastRoot() override { pump_.detach(*this); }

  Status run(InaBroadcastResult* result) {
    RINA_TRY(window_.run(*this));
    for (uint32_t i = 0; i < missing_.size(); ++i) {
      if (missing_[i]) result->missingSlices.push_back(i);
    }
    result->stats = window_.finalStats();
    return Status();
  }

  const char* name() const override { return "broadcast"; }
  uint32_t seqBegin() const override { return window_.base(); }
  uint32_t seqEnd() const override { return window_.base() + window_.total(); }
  void onAnswer(const Header& h, const uint8_t*) override {
    if (h.type != Type::kResult && h.type != Type::kNack) return;
    uint32_t r = 0;
    // A RESULT is the switch's acknowledgement (an older switch echoes the
    // whole slice); a NACK leaves the slice to the hosts.
    if (window_.take(h, &r) == SliceWindow::Answer::kNack) missing_[r] = true;
  }
  void onStray(const Header& h) override {
    if (h.type != Type::kResult && h.type != Type::kNack) return;
    window_.stats().staleResults++;
    window_.noteLateCopy(h);
  }

 private:
  void build(uint32_t r, InFlight& e) override {
    Header h = pump_.header(Type::kBcast, e.slot, window_.shadowOf(e.seq), e.seq);
    h.flags = r + 1 == window_.total() ? kFlagLast : 0;
    e.bytes.resize(kHeaderBytes + kWordBytes * P_);
    encodeHeader(h, e.bytes);
    storeWire(words_.data() + size_t{r} * P_, P_, e.bytes.data() + kHeaderBytes);
  }
  void skip(uint32_t r) override { missing_[r] = true; }

  DatagramPump& pump_;
  SliceWindow window_;
  uint32_t P_;
  std::vector<int32_t> words_;
  std::vector<bool> missing_;
};

class BroadcastReceiver : public PumpCall {
 public:
  BroadcastReceiver(DatagramPump& pump, uint8_t* buffer, size_t bytes, uint32_t base,
                    uint32_t slices)
      : pump_(pump),
        buffer_(buffer),
        bytes_(bytes),
        base_(base),
        slices_(slices),
        P_(pump.grant().payloadElems),
        got_(slices, false),
        words_(P_),
        last_(Clock::now()) {
    pump_.attach(*this);
  }
  ~BroadcastReceiver() override { pump_.detach(*this); }

  Status run(int quietMs, InaBroadcastResult* result) {
    while (have_ < slices_) {
      const int limitMs = have_ == 0 ? pump_.options().switchTimeoutMs : quietMs;
      const int64_t leftMs =
          limitMs -
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last_).count();
      if (leftMs <= 0) break;
      pump_.waitReadable(static_cast<int>(std::min<int64_t>(leftMs, 50)));
      pump_.receive();
    }
    stats_.slices = slices_;
    for (uint32_t i = 0; i < slices_; ++i) {
      if (!got_[i]) result->missingSlices.push_back(i);
    }
    if (have_ < slices_) {
      RINA_INFO("%sbroadcast seq %u..%u: %u of %u slices did not arrive", pump_.context().c_str(),
                base_, base_ + slices_ - 1, slices_ - have_, slices_);
    }
    result->stats = stats_;
    return Status();
  }

  const char* name() const override { return "broadcast"; }
  uint32_t seqBegin() const override { return base_; }
  uint32_t seqEnd() const override { return base_ + slices_; }
  void onAnswer(const Header& h, const uint8_t* payload) override {
    if (h.type != Type::kResult || h.elems != P_) return;
    const uint32_t i = h.seq - base_;
    if (got_[i] || h.slot != pump_.grant().base + h.seq % pump_.window()) {
      stats_.staleResults++;
      return;
    }
    loadWire(payload, P_, words_.data());
    const size_t first = size_t{i} * kWordBytes * P_;
    std::memcpy(buffer_ + first, words_.data(), std::min(kWordBytes * P_, bytes_ - first));
    got_[i] = true;
    ++have_;
    stats_.results++;
    pump_.noteResult();
    last_ = Clock::now();
  }
  void onStray(const Header& h) override {
    if (h.type == Type::kResult && h.elems == P_) stats_.staleResults++;
  }

 private:
  DatagramPump& pump_;
  uint8_t* buffer_;
  size_t bytes_;
  uint32_t base_, slices_, P_;
  std::vector<bool> got_;
  std::vector<int32_t> words_;
  uint32_t have_ = 0;
  Clock::time_point last_;
  InaCallStats stats_;
};

}  // namespace

Status broadcastThroughSwitch(DatagramPump& pump, void* buffer, size_t bytes, bool isRoot,
                              int quietMs, InaBroadcastResult* result) {
  *result = InaBroadcastResult{};
  RINA_TRY(pump.needGrant("broadcast"));
  if (bytes == 0) return Status();
  if (!buffer) return errorf(rinaInvalidArgument, "ina: null buffer");
  const size_t slices = sliceCount(bytes, kWordBytes * pump.grant().payloadElems);
  if (slices > (1u << 30)) return errorf(rinaInvalidArgument, "ina: buffer too large");
  uint32_t base = 0;
  RINA_TRY(pump.takeSeqs(slices, &base));
  const uint32_t n = static_cast<uint32_t>(slices);
  if (isRoot)
    return BroadcastRoot(pump, static_cast<const uint8_t*>(buffer), bytes, base, n).run(result);
  return BroadcastReceiver(pump, static_cast<uint8_t*>(buffer), bytes, base, n)
      .run(quietMs, result);
}

}  // namespace rina::ina
