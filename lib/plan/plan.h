// A plan for the rina algorithm: how each INA rack takes part (on its switch,
// on its hosts, or its hosts autonomous: rack_modes.h), ring order over
// members, the port worker of each chunk in every rack that aggregates, the
// spine of each inter-rack hop, and the link model's predicted times of
// ring, hier and rina, which RINA_ALGO=auto chooses by. Rank 0
// makes it (makePlan, a pure function of the network and its rates) and
// broadcasts serialize()'s bytes; every rank switches at the same collective.
// Everything is in ranks, so a plan means the same on every rank.
#ifndef RINA_LIB_PLAN_PLAN_H_
#define RINA_LIB_PLAN_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "plan/link_model.h"
#include "plan/network.h"
#include "plan/rack_modes.h"

namespace rina::plan {

struct Plan {
  // One per INA rack of two or more ranks.
  struct RackPorts {
    int agent = 0;               // the INA rack's lowest rank
    std::vector<int> portRanks;  // per chunk: the rank that is its port; empty if autonomous
    RackMode mode = RackMode::kSwitch;
    bool operator==(const RackPorts&) const = default;
  };
  uint64_t epoch = 0;         // bumped by every re-plan
  std::vector<int> ring;      // the agent rank of each member, in ring order
  std::vector<int> hopSpine;  // per hop ring[k] -> ring[k+1]: spine, -1 inside a rack
  std::vector<RackPorts> ports;
  double bottleneckMbit = 0;  // slowest hop, spine sharing included (inf: unknown)
  bool exactOrder = false;    // ring order proven optimal
  bool exactPaths = false;    // spine choice proven optimal for that order
  std::string reason;         // why this plan was made (logged, broadcast)
  // The link model's predictions at the rates the plan was made from:
  // every rank picks the same algorithm for a size from them (RINA_ALGO=auto).
  struct Predicted {
    Cost ring, hier, rina;
    double stepLatencySec = 0;
    bool operator==(const Predicted&) const = default;
  };
  Predicted predicted;

  // The mode of the INA rack whose agent is `agent` (kSwitch if the plan
  // does not name it).
  RackMode modeOf(int agent) const;

  std::vector<uint8_t> serialize() const;
  // rinaInvalidUsage on bytes that are not a whole, well-formed plan
  // (bad magic or version, truncated, trailing bytes, counts that disagree).
  static Status deserialize(const uint8_t* data, size_t size, Plan* out);

  // One line for RINA_DEBUG=INFO: "plan #3 (reason): ring 0[ina] -> 4 -> ...".
  std::string describe() const;
  bool operator==(const Plan&) const = default;
};

struct PlanOptions {
  // Chunks per rack port assignment; 0: subRings of the plan's members
  // (rina's sub-rings, what the algorithm takes a port per).
  int chunks = 0;
  uint64_t epoch = 0;
  std::string reason = "initial";
  // The plan in use, if any: its ring order stays while no order has a
  // better bottleneck, and its spine per pair of racks while no choice is
  // strictly better (no flip-flop between equal choices at every re-plan).
  const Plan* previous = nullptr;
  // With a previous plan: its racks' modes, ring order and each rack's port
  // split stay unless the new choice is better at these rates by more than
  // this fraction (the predicted time, the ring's bottleneck, the rack's
  // busiest host link). Measured rates move by tens of percent from one
  // check to the next on a busy host; a plan that followed them would move
  // traffic and reconnect for nothing. PlanSync passes RINA_PLAN_THRESHOLD.
  double keepMargin = 0;
  ModelOptions model = {};
  double bytes = 64 << 20;  // the size the racks' modes are chosen for
  bool forceIna = false;    // every INA rack on its switch (RINA_PLAN_INA=on)
  // Members in rank order, every hop on any spine: no ring search (beyond
  // what a plan can order in time at run time).
  bool rackOrder = false;
};

// The racks' modes (rack_modes.h; the previous plan's stay within
// keepMargin), ring order over the members they make (plan/ring_order.h),
// then spines for the inter-rack hops (plan/paths.h; each hop's own rate
// per spine from hopRatesBySpine, so a path measured slow is avoided), then
// ports per chunk from the modes' port shares (plan/ports.h).
// validateNetwork first. *choice, unless null, gets the modes' choice (for
// its log line, describeChoice).
Status makePlan(const Network& net, const PlanOptions& options, Plan* out,
                RackChoice* choice = nullptr);

// rina's sub-rings for members of these sizes: the lcm of the sizes when
// that is at most 12 (every worker ports an equal share), else the largest
// size. The plan makes that many port choices per aggregating rack.
int subRings(const std::vector<int>& memberSizes);

}  // namespace rina::plan

#endif  // RINA_LIB_PLAN_PLAN_H_
