// Which racks aggregate: per INA rack, whether rina sums it on its switch
// (one ring member), on its hosts (one member) or makes every host a ring
// member of its own, and each aggregating rack's port shares, chosen by the
// link model (link_model.h) for the smallest predicted time; with it the
// predicted times of the flat ring, hier and rina that RINA_ALGO=auto
// chooses by.
//
// The choice is exact for the model. Every term of it grows with the
// number of ring members M, and a rack that aggregates adds 1 member where
// its autonomous hosts add k. So for a bound T the racks that must be
// autonomous follow by a fixed point: start with every INA rack
// aggregating (its better of switch and hosts), make autonomous every rack
// whose term exceeds T at the current M (it would at any larger M too),
// recount M, repeat; T is feasible when every term then fits. The least
// feasible T is found by bisection, O(hosts) per pass.
#ifndef RINA_LIB_PLAN_RACK_MODES_H_
#define RINA_LIB_PLAN_RACK_MODES_H_

#include <string>
#include <vector>

#include "core/status.h"
#include "plan/link_model.h"
#include "plan/network.h"

namespace rina::plan {

struct ChoiceOptions {
  ModelOptions model = {};
  double bytes = 64 << 20;  // the size the choice is made for (latency against bandwidth)
  bool forceIna = false;    // every INA rack of two or more on its switch (RINA_PLAN_INA=on)
  // The modes in use: kept unless the best choice is faster by more than
  // keepMargin (a fraction) at these rates; empty or not fitting: none.
  std::vector<RackMode> previous;
  double keepMargin = 0;
};

struct RackChoice {
  std::vector<RackMode> modes;              // per rack; racks without a choice: kAutonomous
  std::vector<std::vector<double>> shares;  // per rack: port share per host; empty if autonomous
  int64_t members = 0;                      // ring members under modes
  Cost rina;                                // with modes and shares
  Cost forcedIna;  // every INA rack of two or more on its switch (best shares)
  Cost ring;       // the flat ring
  Cost hier;       // every rack of two or more on its hosts (INA racks: shares of rina)
};

// The default modes: every INA rack of two or more on its switch, every
// other host autonomous (rina before the choice; RINA_PLAN_INA=on).
std::vector<RackMode> switchModes(const Network& net);

// The best modes for options.bytes (rinaInvalidArgument from validateNetwork).
Status chooseRackModes(const Network& net, const ChoiceOptions& options, RackChoice* out);

// The best shares of every aggregating rack under modes, and what they cost.
Cost bestShares(const Network& net, const std::vector<RackMode>& modes, const ModelOptions& options,
                std::vector<std::vector<double>>* shares);

// For RINA_DEBUG=INFO: each INA rack's options (its predicted rina time at
// `bytes` in each mode, the other racks as chosen) and the choice, then the
// predicted times of rina, rina with INA forced, the flat ring and hier:
// "rack r1 (INA, 2 hosts): switch 301.2 ms, hosts 301.2 ms, autonomous
// 280.4 ms -> autonomous; ...; at 64 MiB: rina 280.4 ms (INA forced 301.2
// ms), ring 293.6 ms, hier 390.0 ms".
std::string describeChoice(const Network& net, const RackChoice& choice, double bytes,
                           const ModelOptions& options);

}  // namespace rina::plan

#endif  // RINA_LIB_PLAN_RACK_MODES_H_
