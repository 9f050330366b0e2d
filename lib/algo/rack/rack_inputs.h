// What the rack algorithms (hier, rina, ps-ina) take from the communicator
// that runs them besides the context: the plan every rank follows, and
// this rank's INA rack. lib/comm implements both (PlanSync, RackAgent); the
// algorithms see only these small seams.
#ifndef RINA_LIB_ALGO_RACK_RACK_INPUTS_H_
#define RINA_LIB_ALGO_RACK_RACK_INPUTS_H_

#include <string>

#include "core/status.h"
#include "ina/switch_calls.h"
#include "plan/plan.h"

namespace rina::algo {

class Context;

class PlanSource {
 public:
  // Collective: the initial plan now, if there is none yet (RINA_ALGO=auto
  // chooses by it before its first rack collective).
  virtual Status start(Context& ctx) = 0;
  // Collective, first thing in every hier / rina allreduce: every rank
  // switches plans before the same collective.
  virtual Status beforeCollective(Context& ctx) = 0;
  // The plan to follow; null: the rack order.
  virtual const plan::Plan* current() const = 0;

 protected:
  ~PlanSource() = default;
};

// What an INA rack's agent tells each worker at the start of a collective
// that uses the switch (its mode; new slots after a preemption). The
// algorithms carry it beside the call check, so it costs no round of its
// own; only RackSwitch reads it.
struct RackStart {
  uint64_t words[5] = {};
};

// The INA side of this rank's rack: the calls on its switch, its mode
// (switch or host aggregation), which every worker of the rack agrees on,
// and the INA counters of rinaCommGetStats, which the rack keeps.
class RackSwitch {
 public:
  // The rack still aggregates through its switch.
  virtual bool active() const = 0;
  // The rack's workers exchange its start (below) at this collective: while
  // the rack uses its switch, and after each plan check while it does not
  // (the agent then tries its switch again). Every worker of the rack
  // answers alike.
  virtual bool startDue() const = 0;
  virtual ina::SwitchCalls& calls() = 0;
  // Counts one switch call of this rank: what it did on the wire, and the
  // slices it left to the hosts that this rank sums.
  virtual void countCall(const ina::InaCallStats& s, size_t hostSlices) = 0;
  // Counts slices summed on the hosts apart from a call (the rack's union
  // of those no worker may keep, counted at the agent).
  virtual void countHostSlices(size_t n) = 0;
  // At the start of a collective that uses the switch, the agent applies
  // what the switch told it (a preemption: new slots) and writes what every
  // worker is to be told; each worker then takes it from the agent (rank
  // agent) with takeStart.
  virtual Status startAsAgent(Context& ctx, RackStart* out) = 0;
  virtual Status takeStart(Context& ctx, const RackStart& in, int agent) = 0;
  // This rack stops using the switch for this and every later collective.
  // The rank that saw the failure logs it at WARN; every worker counts it.
  virtual void fallBack(Context& ctx, const std::string& why, bool seenHere) = 0;

 protected:
  ~RackSwitch() = default;
};

// What one allreduce takes besides its buffers.
struct RackInputs {
  PlanSource* plans = nullptr;  // hier and rina; null: the rack order
  RackSwitch* rack = nullptr;   // null outside an INA rack of two or more
};

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_RACK_RACK_INPUTS_H_
