// A fluid flow engine: links with capacities (bytes/s), flows that cross
// links with weights, max-min fair rates by progressive filling, and an
// event loop that jumps from one flow completion (or timer) to the next and
// recomputes the rates there.
//
// A flow's weight on a link is how many bytes it puts on that link per byte
// of its own progress. A pipelined collective is one flow whose weights are
// its bytes per link divided by its size, so every link it uses advances in
// lock step (the slowest hop paces the pipeline); a weight of 2 takes two
// fair shares, like two TCP connections.
#ifndef RINA_TOOLS_SIM_FLOW_ENGINE_H_
#define RINA_TOOLS_SIM_FLOW_ENGINE_H_

#include <functional>
#include <queue>
#include <string>
#include <vector>

namespace rina::sim {

struct Usage {
  int link = 0;
  double weight = 1;
};

// Max-min fair rates of flows (each a list of usages) over link capacities,
// by progressive filling: all unfrozen flows grow together; a link that
// fills freezes every flow on it. Returns one rate per flow (bytes/s of the
// flow's own progress). A flow with no usage would grow without bound: its
// rate is +infinity.
std::vector<double> maxMinRates(const std::vector<double>& capacity,
                                const std::vector<std::vector<Usage>>& flows);

class FlowEngine {
 public:
  using Callback = std::function<void()>;

  int addLink(std::string name, double capacity);
  void setCapacity(int link, double capacity) {
    capacity_[link] = capacity;
    dirty_ = true;
  }
  double capacity(int link) const { return capacity_[link]; }
  const std::string& linkName(int link) const { return names_[link]; }
  int linkCount() const { return static_cast<int>(capacity_.size()); }

  // Starts a flow of `bytes` now; `done` runs when it has moved them all.
  // Usages on the same link are merged. Returns the flow id.
  int startFlow(std::vector<Usage> usages, double bytes, Callback done);
  // Stops a flow without calling its callback; returns the bytes it had left.
  double cancelFlow(int id);
  bool active(int id) const {
    return id >= 0 && id < static_cast<int>(flows_.size()) && flows_[id].live;
  }
  double rateOf(int id) const { return flows_[id].rate; }

  // Runs `fn` at absolute time t (>= now).
  void at(double t, Callback fn);

  // Processes events until no flow and no timer is left. False (and why in
  // *error) when flows are left that can never finish (a zero-rate link).
  bool run(std::string* error);
  double now() const { return now_; }

  // Bytes carried by each link so far (weight x progress, summed).
  const std::vector<double>& carried() const { return carried_; }
  int rateRecomputations() const { return recomputations_; }

 private:
  struct Flow {
    std::vector<Usage> usages;
    double left = 0;
    double rate = 0;
    Callback done;
    bool live = false;
  };
  struct Timer {
    double t;
    long order;
    Callback fn;
    bool operator>(const Timer& o) const { return t != o.t ? t > o.t : order > o.order; }
  };

  void recompute();
  void advanceTo(double t);

  std::vector<double> capacity_;
  std::vector<std::string> names_;
  std::vector<double> carried_;
  std::vector<Flow> flows_;
  std::vector<int> live_;  // ids of live flows
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  long timerOrder_ = 0;
  double now_ = 0;
  bool dirty_ = false;
  int recomputations_ = 0;
};

}  // namespace rina::sim

#endif  // RINA_TOOLS_SIM_FLOW_ENGINE_H_
