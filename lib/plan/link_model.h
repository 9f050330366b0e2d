// The link model every choice between rack algorithms is made by (the plan's
// per-rack modes, RINA_ALGO=auto, rina-sim's --planner plan): one allreduce
// of S bytes moves, per byte of S, a known number of bytes over every host
// link, rack uplink, spine and switch; each resource moves its bytes at its
// rate, all at once (a pipelined schedule keeps every link busy), so
//   time = S x max over resources (bytes per byte of S / rate) + steps x L,
// L a step's latency. Per resource, with R ring members and h = 2(R-1)/R
// (what every ring hop carries):
//   - an autonomous host: h up and down;
//   - a host of a rack summed by its switch porting a share f of the ring:
//     1 + h f up and down with port markers (its contributions, its share
//     of the multicast, its ring hops), 1 + (1 + h) f up without;
//   - a host of a rack summed on its hosts (hier's rack, a rack off its
//     switch): 1 + (k - 2 + h) f each way (k hosts: reduce its pieces to
//     their ports, the ports' pieces back, its ring hops);
//   - a rack's uplink: h each way (the ring enters and leaves each rack
//     once), the spines together h x racks;
//   - a switch: k + 1 datagrams' payload per byte of S (k contributions, one
//     multicast) against its measured aggregation rate.
// docs/planning.md ("Which racks aggregate") derives these and says how far
// the lab agrees. Rates are Network's (Mbit/s, 0 = unknown = no limit).
#ifndef RINA_LIB_PLAN_LINK_MODEL_H_
#define RINA_LIB_PLAN_LINK_MODEL_H_

#include <cstdint>
#include <vector>

#include "plan/network.h"

namespace rina::plan {

// How a rack takes part in rina: summed by its switch (one ring member),
// summed on its hosts (one member; hier's way, and a rack's after it lost
// its switch) or every host a ring member of its own.
enum class RackMode : uint8_t { kSwitch = 0, kHosts = 1, kAutonomous = 2 };
inline constexpr int kRackModes = 3;
const char* rackModeName(RackMode mode);

// Whether rack may run in mode: kSwitch needs INA and two or more hosts,
// kHosts two or more hosts; kAutonomous always.
bool modeAllowed(const Network::Rack& rack, RackMode mode);
// Ring members the mode makes of the rack: 1, or one per host.
int64_t membersOf(const Network::Rack& rack, RackMode mode);

// The ring members of racks in modes (per rack): a rack on its switch or
// its hosts is one member (Member::ina: on its switch), else each host is
// one; ordered by first rank. ringMembers(net) is switchModes' members.
std::vector<Member> ringMembers(const Network& net, const std::vector<RackMode>& modes);

struct ModelOptions {
  double stepLatencySec = 100e-6;  // per dependent step (TCP hop, switch round trip)
  bool portMarkers = true;         // RINA_INA_PORT_MARKERS
};

// An algorithm's predicted time: perByte x S + steps x L.
struct Cost {
  double perByte = 0;  // seconds per byte of the buffer on its busiest resource
  int64_t steps = 0;
  double seconds(double bytes, double stepLatencySec) const {
    return bytes * perByte + static_cast<double>(steps) * stepLatencySec;
  }
  bool operator==(const Cost&) const = default;
};

// Hosts whose link rate is unknown (0) count as the fastest known one, or
// all at kNominalHostMbit when none is known: an unknown host is no faster
// or slower than its peers, and its bytes still take time (latency against
// bandwidth needs a rate). Uplinks, spines and switches of unknown rate
// are no limit. rinaCost, ringCost, bestShares and chooseRackModes apply it
// themselves; the per-rack terms below expect a network it was applied to.
// Returns net itself when every host rate is known, else *storage filled.
inline constexpr double kNominalHostMbit = 10000;
const Network& withHostRates(const Network& net, Network* storage);

// rina with every rack in modes[r] (modeAllowed), port shares per rack
// (per host of the rack, summing to 1; empty for autonomous racks, or
// equal shares). Ring order as the planner makes it: each rack's members
// together.
Cost rinaCost(const Network& net, const std::vector<RackMode>& modes,
              const std::vector<std::vector<double>>& shares, const ModelOptions& options);
// The flat ring over every host in rank order (its rack crossings counted).
Cost ringCost(const Network& net, const ModelOptions& options);

// One rack's terms, for the choice (rack_modes.cc) and the port split:
// seconds per byte on its busiest host link in mode (kSwitch or kHosts) at
// `members` ring members with `shares`, and with the best shares (returned
// in *best unless null): water-filled, every host ending at one level
// except those that end above it with no share (unknown rates anywhere in
// the rack: equal shares).
double rackHostTerm(const Network& net, int rack, RackMode mode, int64_t members,
                    const std::vector<double>& shares, const ModelOptions& options);
double bestRackHostTerm(const Network& net, int rack, RackMode mode, int64_t members,
                        const ModelOptions& options, std::vector<double>* best);
// The switch's seconds per byte (0: its rate unknown).
double switchTerm(const Network& net, int rack, int64_t members);
// Every host of the rack as an autonomous member.
double autonomousTerm(const Network& net, int rack, int64_t members);
// What every mode pays alike: uplinks and spines.
double sharedTerm(const Network& net, int64_t members);
// Dependent steps of rina with `members` ring members; alone a switch rack
// is one switch call, a host rack a reduce and a gather.
int64_t rinaSteps(int64_t members, bool aloneOnSwitch);

}  // namespace rina::plan

#endif  // RINA_LIB_PLAN_LINK_MODEL_H_
