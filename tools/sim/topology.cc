#include "sim/topology.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "topo/topology_json.h"

namespace rina::sim {
namespace {

constexpr double kMbit = 1e6 / 8;  // bytes/s per Mbit/s

// One rack before links exist.
struct RackPlan {
  std::string name;
  bool ina = false;
  std::vector<std::string> hostNames;
  std::vector<double> hostRates;      // bytes/s
  std::vector<bool> multiRail;        // per host (empty: none): a NIC per spine
  double uplinkPerSpine = 0;          // bytes/s; 0: non-blocking (sum of host rates / spines)
  std::vector<double> uplinkBySpine;  // bytes/s per spine (0 entries: uplinkPerSpine)
};

int addLink(SimTopology* t, std::string name, double capacity) {
  t->linkNames.push_back(std::move(name));
  t->linkCapacity.push_back(capacity);
  return static_cast<int>(t->linkCapacity.size()) - 1;
}

void build(std::string name, int spines, const std::vector<RackPlan>& plans,
           const TopologyOptions& opt, double psRate, SimTopology* t) {
  *t = SimTopology{};
  t->name = std::move(name);
  t->spines = spines;
  t->sw = opt.sw;
  for (const RackPlan& p : plans) {
    SimRack rack;
    rack.name = p.name;
    rack.ina = p.ina;
    const int r = static_cast<int>(t->racks.size());
    double sum = 0;
    for (size_t i = 0; i < p.hostNames.size(); ++i) {
      SimHost h;
      h.name = p.hostNames[i];
      h.rack = r;
      h.rate = p.hostRates[i];
      h.up = addLink(t, h.name + ".up", h.rate);
      h.down = addLink(t, h.name + ".down", h.rate);
      if (i < p.multiRail.size() && p.multiRail[i] && spines > 1) {
        h.railUp.push_back(h.up);
        h.railDown.push_back(h.down);
        for (int s = 1; s < spines; ++s) {
          const std::string nic = h.name + ".nic" + std::to_string(s);
          h.railUp.push_back(addLink(t, nic + ".up", h.rate));
          h.railDown.push_back(addLink(t, nic + ".down", h.rate));
        }
      }
      rack.hosts.push_back(static_cast<int>(t->hosts.size()));
      t->hosts.push_back(h);
      sum += h.rate;
    }
    const double perSpine = p.uplinkPerSpine > 0 ? p.uplinkPerSpine : sum / spines;
    for (int s = 0; s < spines; ++s) {
      const double rate = s < static_cast<int>(p.uplinkBySpine.size()) && p.uplinkBySpine[s] > 0
                              ? p.uplinkBySpine[s]
                              : perSpine;
      rack.up.push_back(addLink(t, p.name + ".spine" + std::to_string(s) + ".up", rate));
      rack.down.push_back(addLink(t, p.name + ".spine" + std::to_string(s) + ".down", rate));
    }
    if (p.ina && opt.sw.aggregationBps > 0) {
      rack.aggregation = addLink(t, p.name + ".aggregation", opt.sw.aggregationBps);
    }
    t->racks.push_back(std::move(rack));
  }
  for (int i = 0; i < opt.psCount; ++i) {
    SimHost ps;
    ps.name = "ps" + std::to_string(i);
    ps.rack = i % static_cast<int>(t->racks.size());
    ps.rate = psRate;
    ps.up = addLink(t, ps.name + ".up", psRate);
    ps.down = addLink(t, ps.name + ".down", psRate);
    t->ps.push_back(ps);
  }
}

bool checkCommon(const TopologyOptions& opt, std::string* error) {
  if (!(opt.hostGbps > 0)) return *error = "host rate must be > 0 Gbit/s", false;
  if (!(opt.oversubscription >= 1)) {
    return *error = "oversubscription must be >= 1 (1 = non-blocking)", false;
  }
  if (!(opt.inaFraction >= 0 && opt.inaFraction <= 1)) {
    return *error = "INA fraction must be in [0, 1]", false;
  }
  if (!(opt.slowFraction >= 0 && opt.slowFraction <= 1) || !(opt.slowFactor > 0)) {
    return *error = "heterogeneous hosts: fraction in [0, 1] and factor > 0", false;
  }
  if (opt.psGbps < 0) return *error = "PS rate must be >= 0 Gbit/s", false;
  if (opt.psCount < 1) return *error = "at least one parameter server", false;
  if (opt.sw.aggregationBps < 0) return *error = "switch aggregation capacity must be >= 0", false;
  if (opt.sw.slots == 0 || opt.sw.payloadBytes == 0 || opt.sw.window == 0 || !(opt.sw.rttSec > 0)) {
    return *error = "switch slots, payload, window and RTT must be > 0", false;
  }
  return true;
}

// Racks r with floor((r+1)f) > floor(rf): round(f R) INA racks spread evenly.
bool inaRackAt(int r, double fraction) {
  return std::floor((r + 1) * fraction + 1e-9) > std::floor(r * fraction + 1e-9);
}

}  // namespace

double SwitchParams::slotThroughput(uint32_t granted) const {
  return std::min(window, granted) * static_cast<double>(payloadBytes) / rttSec;
}

int SimTopology::inaRacks() const {
  return static_cast<int>(
      std::count_if(racks.begin(), racks.end(), [](const SimRack& r) { return r.ina; }));
}

bool leafSpine(int racks, int hostsPerRack, int spines, const TopologyOptions& opt,
               SimTopology* out, std::string* error) {
  if (racks < 1 || hostsPerRack < 1 || spines < 1) {
    *error = "leaf-spine needs racks, hosts per rack and spines >= 1 (got " +
             std::to_string(racks) + "," + std::to_string(hostsPerRack) + "," +
             std::to_string(spines) + ")";
    return false;
  }
  if (!checkCommon(opt, error)) return false;
  const double rate = opt.hostGbps * 1000 * kMbit;
  std::mt19937 rng(opt.seed);
  std::bernoulli_distribution slow(opt.slowFraction);
  std::vector<RackPlan> plans(racks);
  for (int r = 0; r < racks; ++r) {
    RackPlan& p = plans[r];
    p.name = "r" + std::to_string(r);
    p.ina = inaRackAt(r, opt.inaFraction);
    for (int h = 0; h < hostsPerRack; ++h) {
      p.hostNames.push_back(p.name + "h" + std::to_string(h));
      p.hostRates.push_back(slow(rng) ? rate * opt.slowFactor : rate);
    }
    // Nominal rates: oversubscription is a property of the rack, not of who is slow.
    p.uplinkPerSpine = hostsPerRack * rate / (opt.oversubscription * spines);
  }
  build("leaf-spine " + std::to_string(racks) + "x" + std::to_string(hostsPerRack) + " spines " +
            std::to_string(spines),
        spines, plans, opt, opt.psGbps > 0 ? opt.psGbps * 1000 * kMbit : rate, out);
  return true;
}

bool fatTree(int k, const TopologyOptions& opt, SimTopology* out, std::string* error) {
  if (k < 2 || k % 2 != 0 || k > 128) {
    *error = "fat-tree k must be even, 2..128 (got " + std::to_string(k) + ")";
    return false;
  }
  if (!leafSpine(k * k / 2, k / 2, k / 2, opt, out, error)) return false;
  out->name = "fat-tree k=" + std::to_string(k);
  return true;
}

bool loadTopologyJson(const std::string& path, const TopologyOptions& opt, SimTopology* out,
                      std::string* error) {
  if (!checkCommon(opt, error)) return false;
  // The library's parser: rina-sim reads the same files as RINA_TOPO_FILE.
  topo::TopologySpec spec;
  if (Status s = topo::loadTopologyFile(path, &spec); !s.ok()) {
    *error = s.message();
    return false;
  }
  std::vector<RackPlan> plans;
  for (size_t r = 0; r < spec.racks.size(); ++r) {
    const topo::RackSpec& rs = spec.racks[r];
    RackPlan p;
    p.name = rs.name.empty() ? "r" + std::to_string(r) : rs.name;
    p.ina = rs.ina;
    const double hostMbit = rs.hostLinkMbit > 0 ? rs.hostLinkMbit : opt.hostGbps * 1000;
    for (int h = 0; h < rs.rankCount; ++h) {
      p.hostNames.push_back(p.name + "-" + std::to_string(h));
      p.hostRates.push_back(hostMbit * kMbit);
      p.multiRail.push_back(false);
    }
    for (const topo::HostSpec& hs : rs.hosts) {
      p.hostNames.push_back(hs.name);
      p.hostRates.push_back((hs.linkMbit > 0 ? hs.linkMbit : hostMbit) * kMbit);
      // An address per spine: a NIC per spine (rina-netlab's planes).
      p.multiRail.push_back(spec.spines > 1 &&
                            static_cast<int>(hs.spineAddrs.size()) == spec.spines);
    }
    // uplink_mbit (else spine_link_mbit), a rate or a list per spine, is the
    // rate of each ToR-spine link.
    for (int s = 0; s < spec.spines; ++s) {
      p.uplinkBySpine.push_back(topo::uplinkMbitOn(spec, rs, s) * kMbit);
    }
    plans.push_back(std::move(p));
  }
  const double psRate = (opt.psGbps > 0 ? opt.psGbps : opt.hostGbps) * 1000 * kMbit;
  build(spec.name.empty() ? path : spec.name, spec.spines, plans, opt, psRate, out);
  return true;
}

}  // namespace rina::sim
