// The receive side of the verbs ring, as pure logic: slots filled by the
// peer's writes arrive in order (each with its length); read() copies or
// reduces them into the caller's buffer. An element split across two slots
// (a sender whose chunks are not element multiples) is gathered first, so a
// reduction always sees whole elements.
#ifndef RINA_LIB_TRANSPORT_VERBS_RING_READER_H_
#define RINA_LIB_TRANSPORT_VERBS_RING_READER_H_

#include <cstddef>
#include <cstdint>
#include <deque>

#include "core/status.h"
#include "transport/connection.h"

namespace rina::transport::verbs {

class RingReader {
 public:
  // firstSlot: where the first write lands (the credit counters' start
  // modulo slots, as the writer's CreditWindow computes it).
  RingReader(const char* ring, uint32_t slots, uint32_t slotBytes, uint32_t firstSlot = 0)
      : ring_(ring), slots_(slots), slotBytes_(slotBytes), next_(firstSlot % slots) {}

  // The peer wrote len bytes into the next slot. Errors on a length that no
  // slot can hold or when every slot is already full (a protocol error).
  Status arrived(uint32_t len);
  size_t pending() const { return arrived_.size(); }

  // Moves up to len bytes (with r.fn: whole elements) into dst; *freed gets
  // the number of slots now fully consumed (their credits can go back).
  void read(void* dst, size_t len, const RecvReduce& r, size_t* moved, uint32_t* freed);

 private:
  struct Slot {
    uint32_t index;
    uint32_t len;
    uint32_t pos;
  };
  const char* ring_;
  uint32_t slots_;
  uint32_t slotBytes_;
  uint32_t next_;  // slot of the next arrival
  std::deque<Slot> arrived_;
  unsigned char carry_[8] = {};
  size_t carryLen_ = 0;
};

}  // namespace rina::transport::verbs

#endif  // RINA_LIB_TRANSPORT_VERBS_RING_READER_H_
