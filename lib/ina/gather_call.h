// Rack all-gather through the switch (InaClient::startGather): every worker
// is the root of some slices (BCAST, fan-in 1: the switch stores each and
// multicasts it to the rack) and receives everyone else's. Roots never
// share a slot, so a root's window only waits on its own echoes: root w owns
// the call's slots first + w * share .. + share - 1 (share = slots / fan-in)
// and its j-th slice is seq base + j * fanIn + w, slot first + w * share +
// j % share, set (j / share) % 2. A receiver learns root and index from the
// seq alone.
//
// Loss: a root resends a slice until the switch acknowledges it (a
// header-only RESULT to the root; the switch multicasts its stored copy to
// the others again), when it is lost as loss_recovery.h tells; its first
// sends keep to the pump's congestion window and pacer (congestion.h). A receiver that misses a
// multicast cannot ask the switch for it, so finish() lists what never came and the caller fetches
// it from the root over host connections.
#ifndef RINA_LIB_INA_GATHER_CALL_H_
#define RINA_LIB_INA_GATHER_CALL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/socket.h"
#include "core/status.h"
#include "ina/datagram_pump.h"
#include "ina/loss_recovery.h"
#include "ina/switch_calls.h"

namespace rina::ina {

class GatherCall : public PumpCall {
 public:
  // Checks the call and attaches it to the pump (with the multicasts that
  // came while this worker was still in its previous call).
  static Status create(DatagramPump& pump, void* buffer, const InaGatherOptions& options,
                       std::unique_ptr<GatherCall>* out);
  ~GatherCall() override;

  // One pass that never blocks: sends this worker's slices the window and
  // ready() allow, resends the late ones, takes what arrived. The first
  // error ends the call and stays its status().
  Status progress(bool* moved);
  const Status& status() const { return status_; }
  // Slice i is in the buffer here.
  bool has(uint32_t i) const { return i < have_.size() && have_[i]; }
  // This worker's own slices all came back (or the call failed).
  bool rootsDone() const { return !status_.ok() || ownEchoed_ == own(); }
  int waitMs() const;
  Status finish(InaGatherResult* result);

  const char* name() const override { return "all-gather"; }
  bool holdsSlots(uint32_t first, uint32_t count) const override;
  uint32_t seqBegin() const override { return base_; }
  uint32_t seqEnd() const override { return base_ + span_; }
  void onAnswer(const Header& h, const uint8_t* payload) override;

 private:
  explicit GatherCall(DatagramPump& pump) : pump_(pump), loss_(pump) {}
  Status pass(bool* moved);
  // The window slot of root w's j-th slice.
  uint32_t slotOf(uint32_t w, uint32_t j) const { return first_ + w * share_ + j % share_; }
  size_t own() const { return byRoot_[me_].size(); }

  DatagramPump& pump_;
  Status status_;
  uint8_t* buffer_ = nullptr;
  const std::vector<GatherSlice>* slices_ = nullptr;
  std::function<bool(uint32_t)> ready_;
  uint32_t n_ = 1, me_ = 0, share_ = 1, base_ = 0, span_ = 0;
  uint32_t first_ = 0;                         // first window slot of the call
  std::vector<std::vector<uint32_t>> byRoot_;  // slice indices of each root, in order
  std::vector<bool> have_;                     // per slice: in the buffer here
  uint32_t nextOwn_ = 0, ownEchoed_ = 0;
  Clock::time_point lastEcho_;
  LossRecovery loss_;  // this root's slices
  Clock::time_point nextLossScan_;
  bool paced_ = false;
  InaCallStats stats_;
  std::vector<int32_t> words_;
  std::vector<InFlight*> batch_;
  std::vector<InFlight*> busy_;
};

}  // namespace rina::ina

#endif  // RINA_LIB_INA_GATHER_CALL_H_
