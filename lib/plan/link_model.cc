#include "plan/link_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rina::plan {
namespace {

constexpr double kBytesPerMbit = 1e6 / 8;

// Seconds per byte over a rate in Mbit/s; an unknown rate (0) costs nothing.
double perByte(double mbit) { return mbit > 0 ? 1.0 / (mbit * kBytesPerMbit) : 0.0; }

double hopBytes(int64_t members) {
  return members > 1 ? 2.0 * static_cast<double>(members - 1) / static_cast<double>(members) : 0.0;
}

// A rack host's bytes per byte of S are 1 + c f for its port share f.
double shareCoefficient(const Network::Rack& rack, RackMode mode, int64_t members,
                        const ModelOptions& o) {
  const double h = hopBytes(members);
  if (mode == RackMode::kHosts) return static_cast<double>(rack.hosts.size()) - 2 + h;
  // Alone on its switch: one call, S up and down whatever the shares.
  if (members <= 1) return 0;
  return o.portMarkers ? h : 1 + h;
}

// The rack's fastest uplink (a hop picks its spine), as seconds per byte.
double uplinkTerm(const Network::Rack& rack) {
  double best = 0;
  for (double u : rack.uplinkMbit) {
    if (u <= 0) return 0;
    best = std::max(best, u);
  }
  return perByte(best);
}

}  // namespace

const Network& withHostRates(const Network& net, Network* storage) {
  double fastest = 0;
  bool unknown = false;
  for (const Network::Host& h : net.hosts) {
    fastest = std::max(fastest, h.linkMbit);
    unknown |= !(h.linkMbit > 0);
  }
  if (!unknown) return net;
  *storage = net;
  for (Network::Host& h : storage->hosts) {
    if (!(h.linkMbit > 0)) h.linkMbit = fastest > 0 ? fastest : kNominalHostMbit;
  }
  return *storage;
}

const char* rackModeName(RackMode mode) {
  switch (mode) {
    case RackMode::kSwitch:
      return "switch";
    case RackMode::kHosts:
      return "hosts";
    case RackMode::kAutonomous:
      return "autonomous";
  }
  return "?";
}

bool modeAllowed(const Network::Rack& rack, RackMode mode) {
  switch (mode) {
    case RackMode::kSwitch:
      return rack.ina && rack.hosts.size() >= 2;
    case RackMode::kHosts:
      return rack.hosts.size() >= 2;
    case RackMode::kAutonomous:
      return true;
  }
  return false;
}

std::vector<Member> ringMembers(const Network& net, const std::vector<RackMode>& modes) {
  std::vector<Member> members;
  for (size_t r = 0; r < net.racks.size(); ++r) {
    const Network::Rack& rack = net.racks[r];
    const int index = static_cast<int>(r);
    if (modes[r] != RackMode::kAutonomous && rack.hosts.size() >= 2) {
      members.push_back(Member{rack.name, index, modes[r] == RackMode::kSwitch, rack.hosts});
      continue;
    }
    for (int h : rack.hosts) members.push_back(Member{net.hosts[h].name, index, false, {h}});
  }
  std::sort(members.begin(), members.end(),
            [](const Member& a, const Member& b) { return a.agent() < b.agent(); });
  return members;
}

int64_t membersOf(const Network::Rack& rack, RackMode mode) {
  return mode == RackMode::kAutonomous ? static_cast<int64_t>(rack.hosts.size()) : 1;
}

double rackHostTerm(const Network& net, int rack, RackMode mode, int64_t members,
                    const std::vector<double>& shares, const ModelOptions& options) {
  const Network::Rack& r = net.racks[rack];
  const double c = shareCoefficient(r, mode, members, options);
  const double equal = 1.0 / static_cast<double>(r.hosts.size());
  double worst = 0;
  for (size_t i = 0; i < r.hosts.size(); ++i) {
    const double f = shares.size() == r.hosts.size() ? shares[i] : equal;
    worst = std::max(worst, (1 + c * f) * perByte(net.hosts[r.hosts[i]].linkMbit));
  }
  return worst;
}

double bestRackHostTerm(const Network& net, int rack, RackMode mode, int64_t members,
                        const ModelOptions& options, std::vector<double>* best) {
  const Network::Rack& r = net.racks[rack];
  const size_t k = r.hosts.size();
  const double c = shareCoefficient(r, mode, members, options);
  std::vector<double> rate(k);  // bytes/s
  bool unknown = false;
  for (size_t i = 0; i < k; ++i) {
    rate[i] = net.hosts[r.hosts[i]].linkMbit * kBytesPerMbit;
    unknown |= rate[i] <= 0;
  }
  std::vector<double> shares(k, 1.0 / static_cast<double>(k));
  if (!unknown && c > 0) {
    // Host i ends at (1 + c f_i) / B_i: fill the fastest first to a common
    // level T, where sum_i (T B_i - 1) / c = 1 over the hosts that get a share.
    std::vector<size_t> order(k);
    for (size_t i = 0; i < k; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return rate[a] > rate[b]; });
    double sum = 0, level = 0;
    size_t active = 0;
    while (active < k) {
      sum += rate[order[active]];
      ++active;
      level = (c + static_cast<double>(active)) / sum;
      if (active == k || rate[order[active]] * level <= 1) break;
    }
    std::fill(shares.begin(), shares.end(), 0.0);
    for (size_t j = 0; j < active; ++j) {
      shares[order[j]] = std::max(0.0, (level * rate[order[j]] - 1) / c);
    }
  }
  if (best) *best = shares;
  return rackHostTerm(net, rack, mode, members, shares, options);
}

double switchTerm(const Network& net, int rack, int64_t members) {
  const Network::Rack& r = net.racks[rack];
  const double datagrams = static_cast<double>(r.hosts.size()) + (members > 1 ? 1 : 0);
  return datagrams * perByte(r.switchMbit);
}

double autonomousTerm(const Network& net, int rack, int64_t members) {
  double worst = 0;
  for (int h : net.racks[rack].hosts) worst = std::max(worst, perByte(net.hosts[h].linkMbit));
  return hopBytes(members) * worst;
}

double sharedTerm(const Network& net, int64_t members) {
  if (net.racks.size() < 2) return 0;
  const double h = hopBytes(members);
  double worst = 0;
  for (const Network::Rack& r : net.racks) worst = std::max(worst, h * uplinkTerm(r));
  // The spines together carry one hop per rack.
  double spines = 0;
  for (double s : net.spineMbit) {
    if (s <= 0) return worst;
    spines += s;
  }
  if (spines > 0) {
    worst = std::max(worst, h * static_cast<double>(net.racks.size()) * perByte(spines));
  }
  return worst;
}

int64_t rinaSteps(int64_t members, bool aloneOnSwitch) {
  if (members > 1) return 2 * (members - 1);
  return aloneOnSwitch ? 1 : 2;
}

Cost rinaCost(const Network& given, const std::vector<RackMode>& modes,
              const std::vector<std::vector<double>>& shares, const ModelOptions& options) {
  Network copy;
  const Network& net = withHostRates(given, &copy);
  if (net.hosts.size() < 2) return Cost{};  // one rank: nothing moves
  int64_t members = 0;
  for (size_t r = 0; r < net.racks.size(); ++r) members += membersOf(net.racks[r], modes[r]);
  double worst = sharedTerm(net, members);
  for (size_t r = 0; r < net.racks.size(); ++r) {
    const int rack = static_cast<int>(r);
    if (modes[r] == RackMode::kAutonomous) {
      worst = std::max(worst, autonomousTerm(net, rack, members));
      continue;
    }
    static const std::vector<double> kEqual;
    const std::vector<double>& s = r < shares.size() ? shares[r] : kEqual;
    worst = std::max(worst, rackHostTerm(net, rack, modes[r], members, s, options));
    if (modes[r] == RackMode::kSwitch) worst = std::max(worst, switchTerm(net, rack, members));
  }
  const bool aloneOnSwitch = members == 1 && !modes.empty() && modes[0] == RackMode::kSwitch;
  return Cost{worst, rinaSteps(members, aloneOnSwitch)};
}

Cost ringCost(const Network& given, const ModelOptions&) {
  Network copy;
  const Network& net = withHostRates(given, &copy);
  const int64_t n = static_cast<int64_t>(net.hosts.size());
  if (n < 2) return Cost{};
  const double h = hopBytes(n);
  double worst = 0;
  for (const Network::Host& host : net.hosts) worst = std::max(worst, h * perByte(host.linkMbit));
  // Hops in rank order that leave (enter) each rack.
  std::vector<int64_t> out(net.racks.size(), 0), in(net.racks.size(), 0);
  int64_t crossings = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int a = net.hosts[i].rack, b = net.hosts[(i + 1) % n].rack;
    if (a == b) continue;
    ++out[a], ++in[b], ++crossings;
  }
  for (size_t r = 0; r < net.racks.size(); ++r) {
    const double hops = static_cast<double>(std::max(out[r], in[r]));
    worst = std::max(worst, hops * h * uplinkTerm(net.racks[r]));
  }
  double spines = 0;
  bool known = !net.spineMbit.empty();
  for (double s : net.spineMbit) {
    known &= s > 0;
    spines += s;
  }
  if (known && crossings > 0) {
    worst = std::max(worst, static_cast<double>(crossings) * h * perByte(spines));
  }
  return Cost{worst, 2 * (n - 1)};
}

}  // namespace rina::plan
