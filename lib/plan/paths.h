// The path (spine) of each inter-rack ring hop. Every rack reaches every
// spine over its own uplink, so a peer has one address per spine; hops that
// pick the same spine share its capacity, and hops leaving (entering) a rack
// on the same spine share that uplink (downlink). In a ring all hops move at
// the pace of the slowest, so a shared link of capacity C carrying k hops
// gives each C / k.
//
// Rate of an assignment = min(own rate of every hop, C / k over all shared
// links). assignSpines maximises it: by enumeration when spines^hops is small
// (exact), else greedy (hops with the slowest own rate first, each to the
// spine that leaves the highest bottleneck) followed by single-hop moves
// while the (bottleneck, links at the bottleneck) pair improves.
#ifndef RINA_LIB_PLAN_PATHS_H_
#define RINA_LIB_PLAN_PATHS_H_

#include <vector>

#include "plan/network.h"

namespace rina::plan {

struct SpineHop {
  int fromRack = 0, toRack = 0;  // different racks
  double ownMbit = 0;            // the hop's rate without sharing (0: unknown)
  // Where the hop's own rate depends on the spine (measured paths): its
  // rate over each spine, 0 unknown; empty: ownMbit over every spine.
  std::vector<double> spineMbit = {};
  double on(int spine) const {
    return spine < static_cast<int>(spineMbit.size()) ? spineMbit[spine] : ownMbit;
  }
};

struct SpineAssignment {
  std::vector<int> spine;  // per hop
  double bottleneck = 0;
  bool exact = false;
};

inline constexpr long kExactSpineAssignments = 1 << 16;

double spineAssignmentRate(const Network& net, const std::vector<SpineHop>& hops,
                           const std::vector<int>& spine);

// net.spines() must be >= 1. incumbent (empty, or one spine per hop): the
// assignment in use, kept unless another is strictly better, so equal
// choices do not make plans flip between them.
SpineAssignment assignSpines(const Network& net, const std::vector<SpineHop>& hops,
                             const std::vector<int>& incumbent = {});

}  // namespace rina::plan

#endif  // RINA_LIB_PLAN_PATHS_H_
