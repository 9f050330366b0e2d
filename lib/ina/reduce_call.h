// One allreduce through the switch (InaClient::start), in place: the buffer
// holds this worker's input, then the rack sum; or, as a reduce to the port
// or a reduce-scatter, the sum only where this worker is the port.
//
// int32 adds exactly. float32 / float16 / bfloat16 go through block floating
// point (quantize.h, with its error bound): the exponent every worker uses
// for slice i comes back with the result of the slice that used the same
// slot one window earlier, so a call on floats starts with a window of
// exponent-only slices (the prologue).
//
// Slices the switch cannot deliver — slots preempted (NACK), int32 overflow,
// NaN/Inf in the input — are listed in InaCallResult::hostSlices and left
// holding this worker's input. Workers may disagree on that list (one got a
// result before the preemption, another did not), so the caller must take
// the union over the rack and aggregate those slices on the host for every
// worker.
#ifndef RINA_LIB_INA_REDUCE_CALL_H_
#define RINA_LIB_INA_REDUCE_CALL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "ina/datagram_pump.h"
#include "ina/slice_window.h"
#include "ina/switch_calls.h"
#include "rina/rina.h"

namespace rina::ina {

class ReduceCall : public PumpCall, private SliceWindow::Source {
 public:
  // Checks the call and attaches it to the pump; *out stays null when there
  // is nothing to send (no elements). Types: int32, float32, float16, bfloat16.
  static Status create(DatagramPump& pump, void* buffer, size_t count, rinaDataType_t type,
                       const InaCallOptions& call, std::unique_ptr<ReduceCall>* out);
  ~ReduceCall() override;

  // One pass that never blocks (SliceWindow::pump); the first error ends the
  // call and stays its status().
  Status progress(bool* moved);
  // progress() until done, sleeping on the socket between passes.
  Status run();
  bool done() const { return !status_.ok() || window_.done(); }
  // Data slices [0, n) may go to the switch; later ones wait for a larger
  // n (InaClient::limitReduce).
  void setSendLimit(uint32_t n) { window_.setSendLimit(prologue_ + n); }
  const Status& status() const { return status_; }
  int waitMs() const { return window_.waitMs(); }
  // Data slice i is final here: the sum arrived, an acknowledgement did (a
  // slice another worker ports; the buffer keeps the input), or it is left
  // to the host (sliceOnHost: the input is kept).
  bool sliceFinal(uint32_t i) const;
  bool sliceOnHost(uint32_t i) const;
  // The status and the result; after an error hostSlices also lists every
  // slice that never became final.
  Status finish(InaCallResult* result);

  const char* name() const override { return "allreduce"; }
  bool holdsSlots(uint32_t first, uint32_t count) const override;
  uint32_t seqBegin() const override { return window_.base(); }
  uint32_t seqEnd() const override { return window_.base() + window_.total(); }
  void onAnswer(const Header& h, const uint8_t* payload) override;
  void onStray(const Header& h) override;

 private:
  ReduceCall(DatagramPump& pump, uint32_t base, uint32_t total, uint32_t firstSlot, uint32_t slots);
  void build(uint32_t r, InFlight& e) override;
  void skip(uint32_t r) override;
  // Whether this worker flags datagram r TO_PORT: the port of a data slice;
  // for exponent-only datagrams (nobody needs their zero payload) worker 0.
  bool flagsToPort(uint32_t r) const;
  // Whether data slice i's sum comes to this worker (else an acknowledgement).
  bool getsSum(uint32_t i) const;
  // Data slice i goes as a port marker: the sum comes without this worker's
  // values, which it adds on receive.
  bool marker(uint32_t i) const { return markers_ && roles_ && (*roles_)[i] == kSlicePort; }
  size_t sliceFirst(uint32_t i) const;
  size_t sliceLen(uint32_t i) const;
  // Data slice i as float (plus the upstream partial): float32 without one
  // is read where it lies, anything else is converted into scratch_[0, n).
  const float* floatsOf(uint32_t i);
  // Data slice i's own exponent (sliceExponent), read from the input the
  // first time it is asked for, with every slice before it.
  int8_t localExponent(uint32_t i);
  // The sum for data slice i arrived: into the buffer.
  void store(uint32_t i, const Header& h, const uint8_t* payload);

  DatagramPump& pump_;
  SliceWindow window_;  // datagram r is seq base + r; data slice i is r = prologue_ + i
  Status status_;
  void* buffer_ = nullptr;
  const void* input_ = nullptr;  // InaCallOptions::input, else the buffer
  const void* upstream_ = nullptr;
  size_t count_ = 0;
  rinaDataType_t type_ = rinaInt32;
  bool quantized_ = false;
  bool toPortOnly_ = false;
  bool isPort_ = false;
  const std::vector<uint8_t>* roles_ = nullptr;
  bool markers_ = false;
  bool markerPrologue_ = false;
  const std::vector<SliceSpan>* spans_ = nullptr;
  uint32_t P_ = 0;  // elements per slice
  uint32_t slices_ = 0;
  uint32_t prologue_ = 0;
  std::vector<int8_t> localExp_;  // per data slice, [0, expKnown_) read
  uint32_t expKnown_ = 0;
  std::vector<int8_t> sharedExp_;  // per data slice, from the switch
  std::vector<bool> host_;         // per data slice
  std::vector<bool> final_;        // per data slice: result, ack or host
  std::vector<float> scratch_;
  std::vector<int32_t> ints_;
};

}  // namespace rina::ina

#endif  // RINA_LIB_INA_REDUCE_CALL_H_
