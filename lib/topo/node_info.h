// What this node is made of: cores, NUMA nodes, network interfaces and the
// CPUs near each interface. From hwloc when rina was built with it
// (RINA_HAVE_HWLOC), else from /sys and /proc. Used to place a thread that
// drives a NIC (a progress thread; rina has none yet) and shown by rina-topo.
#ifndef RINA_LIB_TOPO_NODE_INFO_H_
#define RINA_LIB_TOPO_NODE_INFO_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace rina::topo {

struct NumaNode {
  int id = 0;
  std::vector<int> cpus;  // ascending
  uint64_t memBytes = 0;  // 0: unknown
};

struct NicInfo {
  std::string name;  // "eth0"
  bool up = false;
  std::string ipv4;       // first IPv4 address, "" if none
  int numaNode = -1;      // -1: no locality known (virtual or not on PCI)
  std::vector<int> near;  // CPUs closest to the NIC; all CPUs when unknown
  std::string busId;      // PCI address, "" when not on PCI
};

struct NodeInfo {
  std::string source;     // "hwloc API 2.8" or "sysfs"
  int cores = 0;          // physical cores
  std::vector<int> cpus;  // online logical CPUs (PUs)
  std::vector<NumaNode> numa;
  std::vector<NicInfo> nics;  // loopback included, by name

  const NicInfo* nic(std::string_view name) const;
  std::string describe() const;  // a few lines, as rina-topo prints them
};

// hwloc if built with it, else detectNodeFromSysfs("").
Status detectNode(NodeInfo* out);
// Reads <root>/sys/devices/system/{cpu,node} and <root>/sys/class/net ("" is
// the real system; tests pass a fake tree). IPv4 addresses come from the
// running system only when root is "".
Status detectNodeFromSysfs(const std::string& root, NodeInfo* out);

// "0-3,8,10-11" <-> {0,1,2,3,8,10,11}. parseCpuList rejects anything else.
bool parseCpuList(std::string_view text, std::vector<int>* out);
std::string formatCpuList(const std::vector<int>& cpus);

// The CPUs a thread serving interface `ifname` should run on: the NIC's
// near CPUs intersected with the CPUs this process may use (if that is
// empty, the allowed CPUs). rinaInvalidArgument when no such interface.
Status cpusNearNic(const NodeInfo& node, const std::string& ifname, std::vector<int>* out);
// Pins the calling thread to cpusNearNic(...); *cpus gets the set.
Status placeThreadNearNic(const NodeInfo& node, const std::string& ifname, std::vector<int>* cpus);

}  // namespace rina::topo

#endif  // RINA_LIB_TOPO_NODE_INFO_H_
