// A plan for the rina algorithm: ring order over members, the port worker of
// each chunk in every INA rack, and the spine of each inter-rack hop. Rank 0
// makes it (makePlan, a pure function of the network and its rates) and
// broadcasts serialize()'s bytes; every rank switches at the same collective.
// Everything is in ranks, so a plan means the same on every rank.
#ifndef RINA_LIB_PLAN_PLAN_H_
#define RINA_LIB_PLAN_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "plan/network.h"

namespace rina::plan {

struct Plan {
  struct RackPorts {
    int agent = 0;               // the INA rack's lowest rank
    std::vector<int> portRanks;  // per chunk: the rank that is its port
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

  std::vector<uint8_t> serialize() const;
  // rinaInvalidUsage on bytes that are not a whole, well-formed plan
  // (bad magic or version, truncated, trailing bytes, counts that disagree).
  static Status deserialize(const uint8_t* data, size_t size, Plan* out);

  // One line for RINA_DEBUG=INFO: "plan #3 (reason): ring 0[ina] -> 4 -> ...".
  std::string describe() const;
  bool operator==(const Plan&) const = default;
};

struct PlanOptions {
  int chunks = 0;  // chunks per INA rack port assignment; 0: one per member
  uint64_t epoch = 0;
  std::string reason = "initial";
  // The plan in use, if any: its ring order stays while no order has a
  // better bottleneck, and its spine per pair of racks while no choice is
  // strictly better (no flip-flop between equal choices at every re-plan).
  const Plan* previous = nullptr;
  // With a previous plan: its ring order, and each INA rack's port split,
  // stay unless the new choice is better at these rates by more than this
  // fraction (the ring's bottleneck, the rack's port rate). Measured rates
  // move by tens of percent from one check to the next on a busy host; a
  // plan that followed them would move traffic and reconnect for nothing.
  // PlanSync passes RINA_PLAN_THRESHOLD.
  double keepMargin = 0;
};

// Ring order (plan/ring_order.h), then spines for the inter-rack hops
// (plan/paths.h; each hop's own rate per spine from hopRatesBySpine, so a
// path measured slow is avoided), then ports per chunk (plan/ports.h).
// validateNetwork first.
Status makePlan(const Network& net, const PlanOptions& options, Plan* out);

}  // namespace rina::plan

#endif  // RINA_LIB_PLAN_PLAN_H_
