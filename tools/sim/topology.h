// The simulated cluster: hosts in racks under ToR switches, ToRs joined by
// spines, every link full duplex (one engine link per direction). Built from
// a JSON topology file (the fields of topo::TopologySpec) or generated
// (leaf-spine, fat-tree).
#ifndef RINA_TOOLS_SIM_TOPOLOGY_H_
#define RINA_TOOLS_SIM_TOPOLOGY_H_

#include <cstdint>
#include <string>
#include <vector>

namespace rina::sim {

struct SimHost {
  std::string name;
  int rack = 0;
  double rate = 0;  // bytes/s each direction
  int up = -1;      // link host -> ToR (NIC 0: switch and in-rack traffic)
  int down = -1;    // link ToR -> host
  // Multi-rail: one NIC per spine, each at `rate` (a topology file's host
  // with spine_addrs, as rina-netlab builds planes); railUp[s] / railDown[s]
  // carry traffic between racks over spine s, railUp[0] == up. Empty: one
  // NIC for every path.
  std::vector<int> railUp, railDown;
  int upOn(int spine) const {
    return spine >= 0 && spine < static_cast<int>(railUp.size()) ? railUp[spine] : up;
  }
  int downOn(int spine) const {
    return spine >= 0 && spine < static_cast<int>(railDown.size()) ? railDown[spine] : down;
  }
};

struct SimRack {
  std::string name;
  bool ina = false;
  std::vector<int> hosts;  // workers, ascending
  std::vector<int> up;     // ToR -> spine s
  std::vector<int> down;   // spine s -> ToR
  int aggregation = -1;    // the ToR's aggregation capacity (a pseudo-link), INA racks only
};

// Switch side of INA, the same for every INA ToR.
struct SwitchParams {
  double aggregationBps = 0;  // bytes/s of contributions a ToR can sum; 0 = unlimited
  uint32_t slots = 8192;      // aggregator slots per switch (rina-switchd's default)
  uint32_t payloadBytes = 256;
  uint32_t window = 1024;  // slices a worker keeps in flight
  double rttSec = 10e-6;   // worker -> switch -> worker
  // A job's INA throughput per worker with `slots` slots: min(window, slots) x payload / RTT.
  double slotThroughput(uint32_t granted) const;
};

struct SimTopology {
  std::string name;
  int spines = 1;
  std::vector<SimHost> hosts;  // workers; the parameter server is not one
  std::vector<SimRack> racks;
  // Dedicated parameter servers (ps-ina): server i hangs off the ToR of rack
  // i % racks (SimHost::rack) and holds an equal share of the model.
  std::vector<SimHost> ps;
  SwitchParams sw;
  std::vector<std::string> linkNames;
  std::vector<double> linkCapacity;

  int workers() const { return static_cast<int>(hosts.size()); }
  int inaRacks() const;
};

// What generators and the JSON loader do not take from the shape itself.
struct TopologyOptions {
  double hostGbps = 100;
  double oversubscription = 1;  // rack host capacity / rack uplink capacity
  double inaFraction = 1;       // racks whose ToR aggregates, spread evenly
  double slowFraction = 0;      // heterogeneous hosts: this fraction runs at slowFactor
  double slowFactor = 1;
  uint32_t seed = 1;
  double psGbps = 0;  // 0: hostGbps
  int psCount = 1;
  SwitchParams sw;
};

// R racks of H hosts under S spines.
bool leafSpine(int racks, int hostsPerRack, int spines, const TopologyOptions& opt,
               SimTopology* out, std::string* error);
// A k-ary fat-tree (k even): k^2/2 edge switches of k/2 hosts, full
// bisection, modelled as leaf-spine with k/2 spines (docs/sim.md: why that is
// exact for rates under ideal load balancing).
bool fatTree(int k, const TopologyOptions& opt, SimTopology* out, std::string* error);
// The topology file of RINA_TOPO_FILE (docs/topology.md, parsed by
// lib/topo/topology_json.h). Rates the file leaves out come from `opt`; a
// rack without uplink_mbit or spine_link_mbit is non-blocking.
bool loadTopologyJson(const std::string& path, const TopologyOptions& opt, SimTopology* out,
                      std::string* error);

}  // namespace rina::sim

#endif  // RINA_TOOLS_SIM_TOPOLOGY_H_
