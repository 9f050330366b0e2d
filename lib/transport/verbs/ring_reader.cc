#include "transport/verbs/ring_reader.h"

#include <algorithm>
#include <cstring>

namespace rina::transport::verbs {

Status RingReader::arrived(uint32_t len) {
  if (len == 0 || len > slotBytes_ || arrived_.size() >= slots_) {
    return errorf(rinaRemoteError, "peer wrote %u bytes with %zu of %u slots full: protocol error",
                  len, arrived_.size(), slots_);
  }
  arrived_.push_back({next_, len, 0});
  next_ = (next_ + 1) % slots_;
  return {};
}

void RingReader::read(void* dst, size_t len, const RecvReduce& r, size_t* moved, uint32_t* freed) {
  *moved = 0;
  *freed = 0;
  char* out = static_cast<char*>(dst);
  const size_t es = r.fn ? r.elemSize : 1;
  // With a reduction, stop before a partial element: it would be written past len.
  while (len - *moved >= es && !arrived_.empty()) {
    Slot& s = arrived_.front();
    const char* src = ring_ + size_t{s.index} * slotBytes_ + s.pos;
    const size_t avail = s.len - s.pos;
    size_t n;
    if (!r.fn) {
      n = std::min(avail, len - *moved);
      std::memcpy(out + *moved, src, n);
      *moved += n;
    } else if (carryLen_ > 0 || avail < es) {
      // An element split across two slots: gather it first.
      n = std::min(es - carryLen_, avail);
      std::memcpy(carry_ + carryLen_, src, n);
      carryLen_ += n;
      if (carryLen_ == es) {
        r.fn(out + *moved, static_cast<const char*>(r.a) + *moved, carry_, 1);
        carryLen_ = 0;
        *moved += es;
      }
    } else {
      n = std::min(avail, len - *moved) / es * es;
      r.fn(out + *moved, static_cast<const char*>(r.a) + *moved, src, n / es);
      *moved += n;
    }
    s.pos += static_cast<uint32_t>(n);
    if (s.pos == s.len) {
      arrived_.pop_front();
      ++*freed;
    }
  }
}

}  // namespace rina::transport::verbs
