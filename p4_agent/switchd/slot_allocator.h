// ESA-style slot allocation: which job owns each aggregator slot, and which
// window of slots a new request gets, preempting other jobs when memory is
// short. Pure bookkeeping; the controller applies the result to the data plane.
#ifndef RINA_P4_AGENT_SWITCHD_SLOT_ALLOCATOR_H_
#define RINA_P4_AGENT_SWITCHD_SLOT_ALLOCATOR_H_

#include <cstdint>
#include <functional>
#include <vector>

namespace rina::switchd {

struct SlotRange {
  uint32_t begin = 0;
  uint32_t end = 0;  // exclusive
  uint32_t size() const { return end - begin; }
};

// A piece taken from another job.
struct Preemption {
  uint16_t job = 0;
  SlotRange range;
};

class SlotAllocator {
 public:
  // Cost of taking one slot now owned by `owner` (never 0 here): < 0 means
  // it may not be taken. Free slots and the requester's own slots cost 0.
  using PreemptCost = std::function<int(uint16_t owner)>;

  explicit SlotAllocator(uint32_t totalSlots) : owner_(totalSlots, 0) {}

  // Grants `job` one contiguous window: the longest takeable one up to
  // `wanted` slots, and among windows of that length the cheapest (free slots
  // first, then the cheapest victims). Slots the job held before are released
  // first. Returns an empty range when no slot can be had.
  SlotRange allocate(uint16_t job, uint32_t wanted, const PreemptCost& cost,
                     std::vector<Preemption>* preempted);
  void release(uint16_t job);

  uint16_t owner(uint32_t slot) const { return owner_[slot]; }
  uint32_t ownedBy(uint16_t job) const;
  uint32_t freeSlots() const { return ownedBy(0); }
  uint32_t total() const { return static_cast<uint32_t>(owner_.size()); }

 private:
  std::vector<uint16_t> owner_;  // 0 = free
};

}  // namespace rina::switchd

#endif  // RINA_P4_AGENT_SWITCHD_SLOT_ALLOCATOR_H_
