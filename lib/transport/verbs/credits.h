// Credit accounting for RDMA writes into a peer's receive ring, as pure
// logic. The receiver's ring has `slots` equal slots; the sender may only
// write into a slot the receiver has freed. Counters are cumulative and
// modulo 2^31 (they travel in the 32-bit immediate with the top bit marking
// a credit message), so a lost ordering or a wrapped counter cannot hand out
// a slot twice: a credit update that frees more slots than are in flight is
// a protocol error, never a silent overrun.
#ifndef RINA_LIB_TRANSPORT_VERBS_CREDITS_H_
#define RINA_LIB_TRANSPORT_VERBS_CREDITS_H_

#include <cstdint>

#include "core/status.h"

namespace rina::transport::verbs {

constexpr uint32_t kCounterMask = 0x7fffffffu;  // counters are modulo 2^31
constexpr uint32_t kCreditFlag = 0x80000000u;   // immediate: a credit update

// Slot counts must be powers of two (at most 2^16): they divide 2^31, so
// slot = counter % slots stays consecutive across the counter's wrap.
inline bool validSlotCount(uint32_t slots) {
  return slots != 0 && slots <= (1u << 16) && (slots & (slots - 1)) == 0;
}

// The sender's view of the peer's ring.
class CreditWindow {
 public:
  // start: the counters' initial value (both sides agree; tests use values
  // near the wrap).
  explicit CreditWindow(uint32_t slots, uint32_t start = 0)
      : slots_(slots), sent_(start & kCounterMask), freed_(start & kCounterMask) {}

  uint32_t slots() const { return slots_; }
  uint32_t inFlight() const { return (sent_ - freed_) & kCounterMask; }
  uint32_t available() const { return slots_ - inFlight(); }

  // Takes the next slot; false (and no change) when the ring is full.
  bool take(uint32_t* slot) {
    if (available() == 0) return false;
    *slot = sent_ % slots_;
    sent_ = (sent_ + 1) & kCounterMask;
    return true;
  }

  // The receiver reports its cumulative consumed counter (mod 2^31).
  Status update(uint32_t consumed) {
    uint32_t delta = (consumed - freed_) & kCounterMask;
    if (delta > inFlight()) {
      return errorf(rinaRemoteError,
                    "credit update frees %u slots but only %u are in flight (counter %u, was %u)",
                    delta, inFlight(), consumed & kCounterMask, freed_);
    }
    freed_ = consumed & kCounterMask;
    return {};
  }

 private:
  uint32_t slots_;
  uint32_t sent_;   // slots written, cumulative
  uint32_t freed_;  // slots the receiver has given back, cumulative
};

// The receiver's side: slots fill in order; once consumed they are returned
// in batches (half the ring), or at once when forced (end of a message).
class CreditReturner {
 public:
  explicit CreditReturner(uint32_t slots, uint32_t start = 0)
      : slots_(slots), consumed_(start & kCounterMask), reported_(start & kCounterMask) {}

  uint32_t nextSlot() const { return consumed_ % slots_; }
  void consumedOne() { consumed_ = (consumed_ + 1) & kCounterMask; }
  uint32_t unreported() const { return (consumed_ - reported_) & kCounterMask; }

  // True with the counter to send when an update is due.
  bool due(bool force, uint32_t* counter) {
    uint32_t n = unreported();
    if (n == 0 || (!force && n < (slots_ + 1) / 2)) return false;
    reported_ = consumed_;
    *counter = consumed_;
    return true;
  }

 private:
  uint32_t slots_;
  uint32_t consumed_;
  uint32_t reported_;
};

}  // namespace rina::transport::verbs

#endif  // RINA_LIB_TRANSPORT_VERBS_CREDITS_H_
