// The rack map: which ranks share a top-of-rack switch, whether that switch
// aggregates (INA), where its control port is, and the link rates known in
// advance. Algorithms (lib/algo) read the resolved RackMap; the planner
// (lib/plan) reads the rates; rina-netlab builds its emulated cluster from
// the same TopologySpec.
//
// Sources, first found wins: RINA_TOPO_FILE (JSON, see topology_json.h),
// RINA_RACKS (short form "3:ina,3:ina,1,1": racks in rank order), else one
// rack per host without INA (ranks grouped by host identity).
#ifndef RINA_LIB_TOPO_RACK_MAP_H_
#define RINA_LIB_TOPO_RACK_MAP_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace rina::topo {

struct HostSpec {
  std::string name;     // hostname as gethostname() reports it
  double linkMbit = 0;  // host <-> ToR, each direction; 0: the rack's default
  std::string addr;     // optional IPv4 address (filled in by rina-netlab)
  // Optional: the host's IPv4 address on each spine (plane), spine_addrs[s]
  // reaches it over spine s; one per spine when given. The bootstrap
  // exchanges them so a peer can be reached over a chosen spine.
  std::vector<std::string> spineAddrs;
};

struct RackSpec {
  std::string name;
  bool ina = false;
  // Either hosts (ranks join the rack whose host list names their hostname)
  // or rankCount (the next rankCount ranks in rank order). Not both.
  std::vector<HostSpec> hosts;
  int rankCount = 0;
  std::string switchCtrl;   // "ipv4:port" of the ToR's CTRL; empty: RINA_SWITCH decides
  double hostLinkMbit = 0;  // default host link rate; 0: unknown
  double uplinkMbit = 0;    // ToR <-> spine; 0: unknown
  // "uplink_mbit": [..]: one rate per spine (then uplinkMbit is 0).
  std::vector<double> uplinkMbitBySpine;
};

struct TopologySpec {
  std::string name;
  std::vector<RackSpec> racks;
  int spines = 1;            // parallel paths between racks
  double spineLinkMbit = 0;  // ToR <-> spine where a rack gives none; 0: unknown
  // "spine_link_mbit": [..]: one rate per spine (then spineLinkMbit is 0).
  std::vector<double> spineLinkMbitBySpine;
};

// The rate of rack's link to spine s (each direction): the rack's
// uplink_mbit (its entry for s when a list), else spine_link_mbit (likewise);
// 0 when neither is given.
double uplinkMbitOn(const TopologySpec& spec, const RackSpec& rack, int spine);

// "3:ina,3:ina,1,1": a comma-separated list of racks, each a rank count,
// optionally ":ina". Racks take ranks in order.
Status parseRacksShortForm(std::string_view text, TopologySpec* out);

struct Rack {
  std::string name;
  bool ina = false;
  std::vector<int> ranks;  // ascending; ranks.front() is the rack's agent
  std::string switchCtrl;
  double hostLinkMbit = 0;
  double uplinkMbit = 0;
};

struct RackMap {
  std::vector<Rack> racks;  // in spec order, empty racks dropped
  std::vector<int> rackOf;  // rank -> index into racks

  int agentOf(int rack) const { return racks[rack].ranks.front(); }
  bool anyIna() const;
  std::string describe() const;  // one line: "r0[ina:0,1,2] r1[3] ..."
};

// Assigns ranks to the spec's racks. hostnames[r] is rank r's hostname
// (used when racks list hosts). Every rank must land in exactly one rack:
// a hostname no rack lists, or counts that do not add up to the number of
// ranks, is rinaInvalidUsage naming the rank and host.
Status resolveRackMap(const TopologySpec& spec, const std::vector<std::string>& hostnames,
                      RackMap* out);

// One rack per distinct hostIds[r] (no INA), racks ordered by lowest rank.
RackMap rackPerHost(const std::vector<std::string>& hostIds);

// The rack map of a communicator made of some of map's ranks: rank i of it
// is map's rank members[i]. Racks keep their order, names and switches;
// empty ones go. A rack that keeps INA keeps its switch: with
// partialRacksKeepIna (a shrink: the rack lost a failed host) every INA
// rack with two or more members left, else (a split) only one whose every
// rank is a member. A rack of one rank is never INA (the rank joins the
// ring on its own).
RackMap subRackMap(const RackMap& map, const std::vector<int>& members, bool partialRacksKeepIna);

// map as RINA_RACKS's short form ("3:ina,3:ina,1,1") when its racks hold
// consecutive ranks in rack order (empty otherwise).
std::string shortFormOf(const RackMap& map);

// The hostname part of a bootstrap host identity ("name/boot-id/netns").
std::string hostnameOf(const std::string& hostId);

// The communicator's rack map, by the sources above: topoFile
// (RINA_TOPO_FILE), else racks (RINA_RACKS), else one rack per host
// (hostIds[r] is rank r's hostIdentity(), whose hostname part racks with
// host lists match). A malformed or mismatching file or short form is
// rinaInvalidArgument / rinaInvalidUsage naming the knob. spec (optional)
// gets the topology the map came from, for the planner's rates (one rack
// per host: no rates).
Status rackMapFrom(const std::string& topoFile, const std::string& racks,
                   const std::vector<std::string>& hostIds, RackMap* out,
                   TopologySpec* spec = nullptr);

}  // namespace rina::topo

#endif  // RINA_LIB_TOPO_RACK_MAP_H_
