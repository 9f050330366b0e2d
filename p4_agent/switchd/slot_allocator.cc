#include "switchd/slot_allocator.h"

#include <algorithm>
#include <limits>

namespace rina::switchd {

uint32_t SlotAllocator::ownedBy(uint16_t job) const {
  return static_cast<uint32_t>(std::count(owner_.begin(), owner_.end(), job));
}

void SlotAllocator::release(uint16_t job) {
  if (job == 0) return;
  std::replace(owner_.begin(), owner_.end(), job, uint16_t{0});
}

SlotRange SlotAllocator::allocate(uint16_t job, uint32_t wanted, const PreemptCost& cost,
                                  std::vector<Preemption>* preempted) {
  release(job);
  const uint32_t n = total();
  // Per-slot cost, computed once per owner.
  std::vector<int64_t> slotCost(n);
  std::vector<int> ownerCost(0x10000, std::numeric_limits<int>::min());
  uint32_t longestRun = 0, run = 0;
  for (uint32_t s = 0; s < n; ++s) {
    uint16_t o = owner_[s];
    if (o != 0 && ownerCost[o] == std::numeric_limits<int>::min()) ownerCost[o] = cost(o);
    slotCost[s] = o == 0 ? 0 : ownerCost[o];
    run = slotCost[s] < 0 ? 0 : run + 1;
    longestRun = std::max(longestRun, run);
  }
  uint32_t m = std::min(wanted, longestRun);
  if (m == 0) return {};
  // Sliding window of length m over takeable slots; keep the cheapest.
  int64_t best = std::numeric_limits<int64_t>::max();
  uint32_t bestBegin = 0;
  int64_t sum = 0;
  uint32_t begin = 0;  // start of the current takeable run
  for (uint32_t s = 0; s < n; ++s) {
    if (slotCost[s] < 0) {
      begin = s + 1;
      sum = 0;
      continue;
    }
    sum += slotCost[s];
    if (s + 1 - begin > m) {
      sum -= slotCost[s - m];
    }
    if (s + 1 - begin >= m && sum < best) {
      best = sum;
      bestBegin = s + 1 - m;
    }
  }
  SlotRange granted{bestBegin, bestBegin + m};
  for (uint32_t s = granted.begin; s < granted.end; ++s) {
    uint16_t o = owner_[s];
    if (o != 0) {
      if (!preempted->empty() && preempted->back().job == o && preempted->back().range.end == s) {
        preempted->back().range.end = s + 1;
      } else {
        preempted->push_back({o, {s, s + 1}});
      }
    }
    owner_[s] = job;
  }
  return granted;
}

}  // namespace rina::switchd
