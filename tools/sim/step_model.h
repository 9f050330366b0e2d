// A step-synchronous model of ring and rina, to bound the error of the
// aggregate model (docs/sim.md, "Error of that choice"): every ring step is its own
// set of chunk-sized flows on the hosts that step actually uses (ports rotate
// per chunk, an INA rack's contributions, result and downstream send move
// together), and a step starts when the previous one is done. The aggregate
// model assumes full overlap between steps, this one none: an implementation
// that pipelines slices across steps lies between the two.
#ifndef RINA_TOOLS_SIM_STEP_MODEL_H_
#define RINA_TOOLS_SIM_STEP_MODEL_H_

#include <string>
#include <vector>

#include "sim/planner.h"
#include "sim/schedule.h"
#include "sim/topology.h"

namespace rina::sim {

struct StepRun {
  double seconds = 0;
  int steps = 0;
};

// One allreduce of `bytes` over all workers with every INA rack usable.
// ring or rina only; false with a message otherwise.
bool stepSynchronousAllreduce(Algorithm algo, const SimTopology& topo, double bytes,
                              double stepLatencySec, Planner& planner, StepRun* out,
                              std::string* error);

}  // namespace rina::sim

#endif  // RINA_TOOLS_SIM_STEP_MODEL_H_
