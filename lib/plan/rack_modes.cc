#include "plan/rack_modes.h"

#include <algorithm>
#include <cstdio>

namespace rina::plan {
namespace {

// The model's terms per rack as functions of the ring's member count M,
// and the least bound T on the predicted time that some choice of modes
// meets (rack_modes.h).
class ModeSearch {
 public:
  ModeSearch(const Network& net, const ChoiceOptions& o) : net_(net), o_(o.model), bytes_(o.bytes) {
    for (size_t r = 0; r < net.racks.size(); ++r) {
      const Network::Rack& rack = net.racks[r];
      if (modeAllowed(rack, RackMode::kSwitch)) {
        choosable_.push_back(static_cast<int>(r));
      } else {
        fixedMembers_ += static_cast<int64_t>(rack.hosts.size());
        fixed_.push_back(static_cast<int>(r));
      }
    }
  }

  const std::vector<int>& choosable() const { return choosable_; }

  // Whether rack i of choosable() aggregates, for the least feasible bound.
  std::vector<bool> best() {
    std::vector<bool> all(choosable_.size(), true), none(choosable_.size(), false);
    double hi = cost(all);
    std::vector<bool> best = all;
    if (const double c = cost(none); c < hi) hi = c, best = none;
    double lo = 0;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
      const double mid = lo + (hi - lo) / 2;
      std::vector<bool> agg;
      if (!fits(mid, &agg)) {
        lo = mid;
        continue;
      }
      // The fixed point's own cost (<= mid) may sit well below mid.
      const double c = cost(agg);
      if (c <= hi) hi = c, best = std::move(agg);
    }
    return best;
  }

  int64_t members(const std::vector<bool>& agg) const {
    int64_t m = fixedMembers_;
    for (size_t i = 0; i < choosable_.size(); ++i) {
      m += agg[i] ? 1 : static_cast<int64_t>(net_.racks[choosable_[i]].hosts.size());
    }
    return m;
  }

  // The better of switch and hosts for choosable rack r at M members: its
  // seconds per byte, and the mode (the switch on a tie).
  double aggregated(int r, int64_t m, RackMode* mode) const {
    const double onSwitch = std::max(bestRackHostTerm(net_, r, RackMode::kSwitch, m, o_, nullptr),
                                     switchTerm(net_, r, m));
    const double onHosts = bestRackHostTerm(net_, r, RackMode::kHosts, m, o_, nullptr);
    *mode = onHosts < onSwitch ? RackMode::kHosts : RackMode::kSwitch;
    return std::min(onSwitch, onHosts);
  }

 private:
  double seconds(double perByte, int64_t m, bool aloneOnSwitch) const {
    return Cost{perByte, rinaSteps(m, aloneOnSwitch)}.seconds(bytes_, o_.stepLatencySec);
  }

  // What does not depend on the choice at M: uplinks, spines, racks that
  // have none (their hosts autonomous).
  double fixedTerm(int64_t m) const {
    double worst = sharedTerm(net_, m);
    for (int r : fixed_) worst = std::max(worst, autonomousTerm(net_, r, m));
    return worst;
  }

  // The predicted time of a choice.
  double cost(const std::vector<bool>& agg) const {
    const int64_t m = members(agg);
    double worst = fixedTerm(m);
    bool aloneOnSwitch = false;
    for (size_t i = 0; i < choosable_.size(); ++i) {
      if (!agg[i]) {
        worst = std::max(worst, autonomousTerm(net_, choosable_[i], m));
        continue;
      }
      RackMode mode;
      worst = std::max(worst, aggregated(choosable_[i], m, &mode));
      aloneOnSwitch |= m == 1 && mode == RackMode::kSwitch;
    }
    return seconds(worst, m, aloneOnSwitch);
  }

  // The fixed point for bound t: the racks that must be autonomous at the
  // fewest members; whether everything then fits.
  bool fits(double t, std::vector<bool>* agg) const {
    agg->assign(choosable_.size(), true);
    int64_t m = members(*agg);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < choosable_.size(); ++i) {
        if (!(*agg)[i]) continue;
        RackMode mode;
        const double a = aggregated(choosable_[i], m, &mode);
        if (seconds(a, m, m == 1 && mode == RackMode::kSwitch) > t) {
          (*agg)[i] = false;
          changed = true;
        }
      }
      m = members(*agg);
    }
    return cost(*agg) <= t;
  }

  const Network& net_;
  ModelOptions o_;
  double bytes_;
  std::vector<int> choosable_, fixed_;
  int64_t fixedMembers_ = 0;
};

std::string ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", seconds * 1e3);
  return buf;
}

std::string sizeName(double bytes) {
  char buf[32];
  if (bytes >= (1 << 20)) {
    std::snprintf(buf, sizeof buf, "%g MiB", bytes / (1 << 20));
  } else {
    std::snprintf(buf, sizeof buf, "%g bytes", bytes);
  }
  return buf;
}

}  // namespace

std::vector<RackMode> switchModes(const Network& net) {
  std::vector<RackMode> modes;
  for (const Network::Rack& r : net.racks) {
    modes.push_back(modeAllowed(r, RackMode::kSwitch) ? RackMode::kSwitch : RackMode::kAutonomous);
  }
  return modes;
}

Cost bestShares(const Network& given, const std::vector<RackMode>& modes,
                const ModelOptions& options, std::vector<std::vector<double>>* shares) {
  Network copy;
  const Network& net = withHostRates(given, &copy);
  int64_t members = 0;
  for (size_t r = 0; r < net.racks.size(); ++r) members += membersOf(net.racks[r], modes[r]);
  shares->assign(net.racks.size(), {});
  for (size_t r = 0; r < net.racks.size(); ++r) {
    if (modes[r] == RackMode::kAutonomous) continue;
    bestRackHostTerm(net, static_cast<int>(r), modes[r], members, options, &(*shares)[r]);
  }
  return rinaCost(net, modes, *shares, options);
}

Status chooseRackModes(const Network& given, const ChoiceOptions& options, RackChoice* out) {
  RINA_TRY(validateNetwork(given));
  Network copy;
  const Network& net = withHostRates(given, &copy);
  RackChoice c;
  const double S = options.bytes, L = options.model.stepLatencySec;
  c.forcedIna = bestShares(net, switchModes(net), options.model, &c.shares);
  c.modes = switchModes(net);
  if (!options.forceIna) {
    ModeSearch search(net, options);
    const std::vector<bool> agg = search.best();
    int64_t m = search.members(agg);
    for (size_t i = 0; i < search.choosable().size(); ++i) {
      const int r = search.choosable()[i];
      RackMode mode = RackMode::kAutonomous;
      if (agg[i]) search.aggregated(r, m, &mode);
      c.modes[r] = mode;
    }
  }
  c.rina = bestShares(net, c.modes, options.model, &c.shares);
  const std::vector<RackMode>& prev = options.previous;
  bool prevFits = prev.size() == net.racks.size() && !options.forceIna;
  for (size_t r = 0; prevFits && r < prev.size(); ++r) {
    // A rack without INA (or of one host) has no choice to keep.
    prevFits = modeAllowed(net.racks[r], prev[r]) &&
               (modeAllowed(net.racks[r], RackMode::kSwitch) || prev[r] == c.modes[r]);
  }
  if (prevFits && prev != c.modes) {
    std::vector<std::vector<double>> shares;
    const Cost kept = bestShares(net, prev, options.model, &shares);
    if (kept.seconds(S, L) <= c.rina.seconds(S, L) * (1 + std::max(0.0, options.keepMargin))) {
      c.modes = prev;
      c.shares = std::move(shares);
      c.rina = kept;
    }
  }
  for (size_t r = 0; r < net.racks.size(); ++r) c.members += membersOf(net.racks[r], c.modes[r]);
  c.ring = ringCost(net, options.model);
  // hier: every rack one member on its hosts, INA racks at rina's shares.
  std::vector<RackMode> hier;
  std::vector<std::vector<double>> hierShares(net.racks.size());
  for (size_t r = 0; r < net.racks.size(); ++r) {
    const bool several = net.racks[r].hosts.size() >= 2;
    hier.push_back(several ? RackMode::kHosts : RackMode::kAutonomous);
    if (several && net.racks[r].ina) hierShares[r] = c.shares[r];
  }
  c.hier = rinaCost(net, hier, hierShares, options.model);
  *out = std::move(c);
  return {};
}

std::string describeChoice(const Network& net, const RackChoice& choice, double bytes,
                           const ModelOptions& options) {
  std::string s;
  const double L = options.stepLatencySec;
  for (size_t r = 0; r < net.racks.size(); ++r) {
    const Network::Rack& rack = net.racks[r];
    if (!modeAllowed(rack, RackMode::kSwitch)) continue;
    if (!s.empty()) s += "; ";
    s += "rack " + rack.name + " (INA, " + std::to_string(rack.hosts.size()) + " hosts";
    if (rack.switchMbit > 0) {
      char buf[48];
      std::snprintf(buf, sizeof buf, ", switch %.0f Mbit/s", rack.switchMbit);
      s += buf;
    }
    s += "):";
    for (int m = 0; m < kRackModes; ++m) {
      std::vector<RackMode> modes = choice.modes;
      modes[r] = static_cast<RackMode>(m);
      std::vector<std::vector<double>> shares;
      const Cost cost = bestShares(net, modes, options, &shares);
      s += std::string(m ? ", " : " ") + rackModeName(modes[r]) + " " + ms(cost.seconds(bytes, L));
    }
    s += std::string(" -> ") + rackModeName(choice.modes[r]);
  }
  if (!s.empty()) s += "; ";
  s += "at " + sizeName(bytes) + ": rina " + ms(choice.rina.seconds(bytes, L)) + " (INA forced " +
       ms(choice.forcedIna.seconds(bytes, L)) + "), ring " + ms(choice.ring.seconds(bytes, L)) +
       ", hier " + ms(choice.hier.seconds(bytes, L));
  return s;
}

}  // namespace rina::plan
