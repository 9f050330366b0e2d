// The datagrams of one call in flight through the switch, in seq order:
// seqs base .. base + total - 1 over the call's slots first .. first +
// count - 1 of the pump's window. Seq t uses slot first + t % count, set
// (t / count) % 2, and goes only after the answer of t - count: the shadow
// set keeps t - count's result for laggards while t aggregates (SwitchML's
// scheme).
//
// First sends go as the pump's congestion window of their switch port and
// its pacer allow (congestion.h); lost datagrams (overtaken by later
// answers of their switch port, or past the port's retransmission timer:
// loss_recovery.h) are resent, and each loss halves the port's window. A
// switch that answers none of the datagrams in flight for switchTimeoutMs
// ends the call with rinaTimeout (stale and duplicate answers are no
// progress, however many resends they follow). A slot the switch NACKed is
// skipped for the rest of the grant: a NACK completes its datagram (its
// slice goes to the hosts) once, so a switch that NACKs every slot ends the
// call at once with every slice on the hosts.
#ifndef RINA_LIB_INA_SLICE_WINDOW_H_
#define RINA_LIB_INA_SLICE_WINDOW_H_

#include <cstdint>
#include <vector>

#include "core/socket.h"
#include "core/status.h"
#include "ina/datagram_pump.h"
#include "ina/loss_recovery.h"

namespace rina::ina {

class SliceWindow {
 public:
  // What the call puts in the window.
  class Source {
   public:
    virtual ~Source() = default;
    // Datagram r (seq base + r) into e.bytes; e.seq and e.slot are set.
    virtual void build(uint32_t r, InFlight& e) = 0;
    // Datagram r will never go: its slot is lost.
    virtual void skip(uint32_t r) = 0;
  };
  enum class Answer { kStale, kNack, kResult };

  SliceWindow(DatagramPump& pump, uint32_t base, uint32_t total, uint32_t firstSlot,
              uint32_t slots);
  // Frees the slots and starts the switch's clock: the call is ready to send.
  void begin();

  uint32_t base() const { return base_; }
  uint32_t total() const { return total_; }
  uint32_t firstSlot() const { return first_; }
  uint32_t slots() const { return count_; }
  bool done() const { return completed_ == total_; }
  bool shadowOf(uint32_t seq) const { return (seq / count_) % 2 == 1; }
  InaCallStats& stats() { return stats_; }
  const InaCallStats& stats() const { return stats_; }
  // The call's stats with the pump's share (timer, drops, window) filled in.
  InaCallStats finalStats();
  // A stale answer: counts it as a late answer when it is the second copy
  // of a datagram this worker resent (DatagramPump::lateCopy).
  void noteLateCopy(const Header& h);

  // Datagrams [0, r) may go first; later ones wait for a larger limit
  // (resends are not held). The limit starts at total(). Rack-mates that
  // sent those slices wait for this worker's share, and a wait of
  // switchTimeoutMs is a lost switch to them: a limit that held the window
  // back for a quarter of that without rising is dropped for the rest of
  // the call.
  void setSendLimit(uint32_t r);

  // One pass that never blocks: sends what the window allows, takes what
  // arrived, resends what is late; *moved when anything went or came.
  Status pump(Source& source, bool* moved);
  // pump() until done, sleeping on the socket between passes.
  Status run(Source& source);
  // How long the caller may sleep on the socket before the next pass.
  int waitMs() const;

  // An answer for one of the window's seqs: kStale (counted) unless it is
  // for the datagram in flight in its slot; else *r is its index and the
  // datagram is done (a NACK loses the slot).
  Answer take(const Header& h, uint32_t* r);

 private:
  uint32_t slotOf(uint32_t seq) const { return first_ + seq % count_; }
  Status resendLate();

  DatagramPump& pump_;
  uint32_t base_, total_, first_, count_;
  uint32_t nextToSend_ = 0;  // relative index
  uint32_t limit_;           // setSendLimit; total_ at first
  bool limitDropped_ = false;
  Clock::time_point heldSince_{};  // the limit last held a send back; {} if not
  Clock::time_point busySince_{};  // a datagram is in flight since; {} if none
  uint32_t completed_ = 0;
  LossRecovery loss_;
  bool answered_ = false;  // since the last scan for lost datagrams
  bool paced_ = false;     // the pacer held the next first send back
  Clock::time_point lastProgress_;
  Clock::time_point nextTimeoutScan_;
  InaCallStats stats_;
  std::vector<InFlight*> batch_;
  std::vector<InFlight*> busy_;  // in resendLate()
};

}  // namespace rina::ina

#endif  // RINA_LIB_INA_SLICE_WINDOW_H_
