#include "sim/flow_engine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace rina::sim {

std::vector<double> maxMinRates(const std::vector<double>& capacity,
                                const std::vector<std::vector<Usage>>& flows) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> rate(flows.size(), kInf);
  // Only links some flow uses take part; index them densely.
  std::unordered_map<int, int> dense;
  std::vector<int> linkOf;
  std::vector<std::vector<int>> flowsOn;
  for (size_t f = 0; f < flows.size(); ++f) {
    for (const Usage& u : flows[f]) {
      if (u.weight <= 0) continue;
      auto [it, fresh] = dense.emplace(u.link, static_cast<int>(linkOf.size()));
      if (fresh) {
        linkOf.push_back(u.link);
        flowsOn.emplace_back();
      }
      flowsOn[it->second].push_back(static_cast<int>(f));
    }
  }
  const size_t nl = linkOf.size();
  std::vector<double> residual(nl), weight(nl, 0.0);
  for (size_t l = 0; l < nl; ++l) residual[l] = capacity[linkOf[l]];
  std::vector<bool> frozen(flows.size(), false);
  for (size_t f = 0; f < flows.size(); ++f) {
    for (const Usage& u : flows[f]) {
      if (u.weight > 0) weight[dense[u.link]] += u.weight;
    }
  }
  double level = 0;
  size_t unfrozen = flows.size();
  while (unfrozen > 0) {
    double delta = kInf;
    for (size_t l = 0; l < nl; ++l) {
      if (weight[l] > 0) delta = std::min(delta, std::max(0.0, residual[l]) / weight[l]);
    }
    if (delta == kInf) break;  // the rest use no link: unbounded
    level += delta;
    std::vector<size_t> full;
    for (size_t l = 0; l < nl; ++l) {
      if (weight[l] <= 0) continue;
      residual[l] -= delta * weight[l];
      // Relative tolerance: capacities span bytes/s from 1e3 to 1e12.
      if (residual[l] <= 1e-12 * capacity[linkOf[l]] ||
          std::max(0.0, residual[l]) / weight[l] <= 1e-12 * level) {
        full.push_back(l);
      }
    }
    for (size_t l : full) {
      for (int f : flowsOn[l]) {
        if (frozen[f]) continue;
        frozen[f] = true;
        --unfrozen;
        rate[f] = level;
        for (const Usage& u : flows[f]) {
          if (u.weight > 0) weight[dense[u.link]] -= u.weight;
        }
      }
      weight[l] = 0;
    }
  }
  return rate;
}

int FlowEngine::addLink(std::string name, double capacity) {
  capacity_.push_back(capacity);
  names_.push_back(std::move(name));
  carried_.push_back(0);
  return static_cast<int>(capacity_.size()) - 1;
}

int FlowEngine::startFlow(std::vector<Usage> usages, double bytes, Callback done) {
  // Merge usages of one link so a flow is one participant per link.
  std::sort(usages.begin(), usages.end(),
            [](const Usage& a, const Usage& b) { return a.link < b.link; });
  std::vector<Usage> merged;
  for (const Usage& u : usages) {
    if (u.weight <= 0) continue;
    if (!merged.empty() && merged.back().link == u.link) {
      merged.back().weight += u.weight;
    } else {
      merged.push_back(u);
    }
  }
  Flow f;
  f.usages = std::move(merged);
  f.left = bytes;
  f.done = std::move(done);
  f.live = true;
  flows_.push_back(std::move(f));
  const int id = static_cast<int>(flows_.size()) - 1;
  live_.push_back(id);
  dirty_ = true;
  return id;
}

double FlowEngine::cancelFlow(int id) {
  if (!active(id)) return 0;
  flows_[id].live = false;
  live_.erase(std::find(live_.begin(), live_.end(), id));
  dirty_ = true;
  return flows_[id].left;
}

void FlowEngine::at(double t, Callback fn) {
  timers_.push(Timer{std::max(t, now_), timerOrder_++, std::move(fn)});
}

void FlowEngine::recompute() {
  std::vector<std::vector<Usage>> usages;
  usages.reserve(live_.size());
  for (int id : live_) usages.push_back(flows_[id].usages);
  std::vector<double> rates = maxMinRates(capacity_, usages);
  for (size_t i = 0; i < live_.size(); ++i) flows_[live_[i]].rate = rates[i];
  dirty_ = false;
  ++recomputations_;
}

void FlowEngine::advanceTo(double t) {
  const double dt = t - now_;
  if (dt > 0) {
    for (int id : live_) {
      Flow& f = flows_[id];
      if (std::isinf(f.rate)) continue;
      const double moved = std::min(f.left, f.rate * dt);
      f.left -= moved;
      for (const Usage& u : f.usages) carried_[u.link] += moved * u.weight;
    }
  }
  now_ = t;
}

bool FlowEngine::run(std::string* error) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  while (!live_.empty() || !timers_.empty()) {
    if (dirty_) recompute();
    double tFlow = kInf;
    for (int id : live_) {
      const Flow& f = flows_[id];
      const double t = std::isinf(f.rate) ? now_ : (f.rate > 0 ? now_ + f.left / f.rate : kInf);
      tFlow = std::min(tFlow, t);
    }
    const double tTimer = timers_.empty() ? kInf : timers_.top().t;
    if (tFlow == kInf && tTimer == kInf) {
      const Flow& stuck = flows_[live_.front()];
      std::string link = "?";
      for (const Usage& u : stuck.usages) {
        if (capacity_[u.link] <= 0) link = names_[u.link];
      }
      *error = "a flow can never finish: it crosses link " + link + " of capacity 0";
      return false;
    }
    if (tTimer <= tFlow) {
      advanceTo(tTimer);
      Callback fn = timers_.top().fn;
      timers_.pop();
      fn();
      continue;
    }
    advanceTo(tFlow);
    // Every flow that is done by now: ties finish together, and what is left
    // after rounding (a time below 1e-12 of the clock) counts as done.
    std::vector<int> finished;
    for (int id : live_) {
      const Flow& f = flows_[id];
      if (std::isinf(f.rate) || f.left <= 0 ||
          (f.rate > 0 && f.left / f.rate <= 1e-12 * std::max(1.0, now_))) {
        finished.push_back(id);
      }
    }
    for (int id : finished) {
      Flow& f = flows_[id];
      for (const Usage& u : f.usages) carried_[u.link] += f.left * u.weight;
      f.left = 0;
      f.live = false;
      live_.erase(std::find(live_.begin(), live_.end(), id));
    }
    dirty_ = true;
    for (int id : finished) {
      Callback done = std::move(flows_[id].done);
      if (done) done();
    }
  }
  return true;
}

}  // namespace rina::sim
