#include "topo/node_info.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#ifdef RINA_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace rina::topo {
namespace {

namespace fs = std::filesystem;

std::string readLine(const fs::path& path) {
  std::ifstream f(path);
  std::string line;
  if (f) std::getline(f, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

bool readInt(const fs::path& path, int64_t* out) {
  std::string text = readLine(path);
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

// "Node 0 MemTotal:       8131200 kB" -> bytes.
uint64_t nodeMemBytes(const fs::path& meminfo) {
  std::ifstream f(meminfo);
  std::string line;
  while (std::getline(f, line)) {
    size_t at = line.find("MemTotal:");
    if (at == std::string::npos) continue;
    std::istringstream rest(line.substr(at + 9));
    uint64_t kb = 0;
    if (rest >> kb) return kb * 1024;
  }
  return 0;
}

std::map<std::string, std::string> ipv4ByInterface() {
  std::map<std::string, std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || out.count(a->ifa_name)) continue;
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    out[a->ifa_name] = text;
  }
  freeifaddrs(list);
  return out;
}

// Interfaces from <root>/sys/class/net: state, NUMA node and PCI address.
// `near` is filled later, once the NUMA nodes are known.
std::vector<NicInfo> nicsFromSysfs(const std::string& root) {
  std::vector<NicInfo> nics;
  const fs::path net = fs::path(root + "/sys/class/net");
  std::error_code ec;
  std::map<std::string, std::string> addrs;
  if (root.empty()) addrs = ipv4ByInterface();
  for (const auto& entry : fs::directory_iterator(net, ec)) {
    NicInfo nic;
    nic.name = entry.path().filename().string();
    const std::string state = readLine(entry.path() / "operstate");
    int64_t flags = 0;
    // operstate is "unknown" for loopback and some virtual devices: use IFF_UP.
    std::string flagText = readLine(entry.path() / "flags");
    if (!flagText.empty()) flags = std::strtoll(flagText.c_str(), nullptr, 0);
    nic.up = state == "up" || (state == "unknown" && (flags & IFF_UP));
    int64_t node = -1;
    if (readInt(entry.path() / "device" / "numa_node", &node))
      nic.numaNode = static_cast<int>(node);
    std::error_code linkEc;
    fs::path device = fs::read_symlink(entry.path() / "device", linkEc);
    if (!linkEc && fs::exists(entry.path() / "device" / "vendor")) {
      std::string bus = device.filename().string();
      if (std::count(bus.begin(), bus.end(), ':') == 2) nic.busId = bus;  // 0000:3b:00.0
    }
    auto a = addrs.find(nic.name);
    if (a != addrs.end()) nic.ipv4 = a->second;
    nics.push_back(std::move(nic));
  }
  std::sort(nics.begin(), nics.end(),
            [](const NicInfo& a, const NicInfo& b) { return a.name < b.name; });
  return nics;
}

// A NIC's near CPUs: its NUMA node's, or every CPU when that is unknown.
void fillNearFromNuma(NodeInfo* node) {
  for (NicInfo& nic : node->nics) {
    if (!nic.near.empty()) continue;
    nic.near = node->cpus;
    for (const NumaNode& n : node->numa) {
      if (n.id == nic.numaNode && !n.cpus.empty()) nic.near = n.cpus;
    }
  }
}

#ifdef RINA_HAVE_HWLOC
std::vector<int> cpusOf(hwloc_const_bitmap_t set) {
  std::vector<int> cpus;
  for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) cpus.push_back(i);
  return cpus;
}

// One topology per process, loaded on first use and kept: hwloc unloads its
// plugins when the last topology is destroyed, and the PCI plugin's
// libpciaccess then loses memory it still holds (LeakSanitizer reports it
// from an unloaded module, whose frames no suppression can name). Loading
// once also saves a load (tens of ms) per communicator. hwloc allows
// concurrent read-only use of a loaded topology.
Status loadedTopology(hwloc_topology_t* out) {
  static hwloc_topology_t topo = nullptr;
  static Status loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    if (hwloc_topology_init(&topo) != 0) {
      topo = nullptr;
      loaded = errorf(rinaSystemError, "hwloc_topology_init failed");
      return;
    }
    // Keep network OS devices (and the PCI devices above them) for locality.
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(topo) != 0) {
      hwloc_topology_destroy(topo);
      topo = nullptr;
      loaded = errorf(rinaSystemError, "hwloc_topology_load failed");
    }
  });
  *out = topo;
  return loaded;
}

Status detectWithHwloc(NodeInfo* out) {
  hwloc_topology_t topo = nullptr;
  RINA_TRY(loadedTopology(&topo));
  NodeInfo node;
  const unsigned version = hwloc_get_api_version();
  // The API version (hwloc.h has no library version macro).
  node.source =
      "hwloc API " + std::to_string(version >> 16) + "." + std::to_string((version >> 8) & 0xff);
  node.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  node.cpus = cpusOf(hwloc_topology_get_topology_cpuset(topo));
  const int numaCount = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < numaCount; ++i) {
    hwloc_obj_t obj = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, i);
    node.numa.push_back(NumaNode{static_cast<int>(obj->os_index), cpusOf(obj->cpuset),
                                 obj->attr->numanode.local_memory});
  }
  node.nics = nicsFromSysfs("");
  for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os;
       os = hwloc_get_next_osdev(topo, os)) {
    if (os->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK || !os->name) continue;
    auto nic = std::find_if(node.nics.begin(), node.nics.end(),
                            [&](const NicInfo& n) { return n.name == os->name; });
    if (nic == node.nics.end()) continue;
    hwloc_obj_t anchor = hwloc_get_non_io_ancestor_obj(topo, os);
    if (!anchor || !anchor->cpuset) continue;
    nic->near = cpusOf(anchor->cpuset);
    // A NIC below one NUMA node's CPUs is local to that node.
    for (const NumaNode& n : node.numa) {
      if (numaCount > 1 && n.cpus == nic->near) nic->numaNode = n.id;
    }
  }
  fillNearFromNuma(&node);
  *out = std::move(node);
  return {};
}
#endif

}  // namespace

bool parseCpuList(std::string_view text, std::vector<int>* out) {
  std::set<int> cpus;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = std::min(text.find(',', pos), text.size());
    std::string_view item = text.substr(pos, comma - pos);
    size_t dash = item.find('-');
    int lo = 0, hi = 0;
    auto parse = [](std::string_view s, int* v) {
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
      return !s.empty() && ec == std::errc() && end == s.data() + s.size() && *v >= 0;
    };
    if (dash == std::string_view::npos) {
      if (!parse(item, &lo)) return false;
      hi = lo;
    } else if (!parse(item.substr(0, dash), &lo) || !parse(item.substr(dash + 1), &hi) || hi < lo ||
               hi - lo > 65536) {
      return false;
    }
    for (int c = lo; c <= hi; ++c) cpus.insert(c);
    pos = comma + 1;
    if (comma + 1 == text.size()) return false;  // trailing comma
  }
  out->assign(cpus.begin(), cpus.end());
  return true;
}

std::string formatCpuList(const std::vector<int>& cpus) {
  std::string s;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(cpus[i]);
    if (j > i) s += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return s;
}

const NicInfo* NodeInfo::nic(std::string_view name) const {
  for (const NicInfo& n : nics) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

std::string NodeInfo::describe() const {
  std::string s = "node: " + source + ": " + std::to_string(cores) + " cores, " +
                  std::to_string(cpus.size()) + " CPUs (" + formatCpuList(cpus) + "), " +
                  std::to_string(numa.size()) + " NUMA node" + (numa.size() == 1 ? "" : "s") + "\n";
  for (const NumaNode& n : numa) {
    s += "  numa " + std::to_string(n.id) + ": cpus " + formatCpuList(n.cpus);
    if (n.memBytes) s += ", " + std::to_string(n.memBytes >> 20) + " MiB";
    s += "\n";
  }
  for (const NicInfo& n : nics) {
    s += "  nic " + n.name + ": " + (n.up ? "up" : "down");
    if (!n.ipv4.empty()) s += ", " + n.ipv4;
    if (!n.busId.empty()) s += ", pci " + n.busId;
    s += ", numa " + (n.numaNode >= 0 ? std::to_string(n.numaNode) : std::string("-"));
    s += ", near cpus " + formatCpuList(n.near) + "\n";
  }
  return s;
}

Status detectNodeFromSysfs(const std::string& root, NodeInfo* out) {
  NodeInfo node;
  node.source = "sysfs";
  const fs::path cpuDir = fs::path(root + "/sys/devices/system/cpu");
  const std::string online = readLine(cpuDir / "online");
  if (!parseCpuList(online, &node.cpus) || node.cpus.empty()) {
    return errorf(rinaSystemError, "%s: cannot read the online CPUs (got '%s')",
                  (cpuDir / "online").c_str(), online.c_str());
  }
  std::set<std::pair<int64_t, int64_t>> cores;  // (package, core id)
  for (int cpu : node.cpus) {
    const fs::path topo = cpuDir / ("cpu" + std::to_string(cpu)) / "topology";
    int64_t package = 0, core = cpu;
    readInt(topo / "physical_package_id", &package);
    readInt(topo / "core_id", &core);
    cores.insert({package, core});
  }
  node.cores = static_cast<int>(cores.size());
  const fs::path nodeDir = fs::path(root + "/sys/devices/system/node");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(nodeDir, ec)) {
    const std::string name = entry.path().filename().string();
    int id = -1;
    if (name.rfind("node", 0) != 0) continue;
    auto [end, perr] = std::from_chars(name.data() + 4, name.data() + name.size(), id);
    if (perr != std::errc() || end != name.data() + name.size()) continue;
    NumaNode n;
    n.id = id;
    if (!parseCpuList(readLine(entry.path() / "cpulist"), &n.cpus)) {
      return errorf(rinaSystemError, "%s: unreadable cpulist", entry.path().c_str());
    }
    n.memBytes = nodeMemBytes(entry.path() / "meminfo");
    node.numa.push_back(std::move(n));
  }
  std::sort(node.numa.begin(), node.numa.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  if (node.numa.empty()) node.numa.push_back(NumaNode{0, node.cpus, 0});  // kernel without NUMA
  node.nics = nicsFromSysfs(root);
  fillNearFromNuma(&node);
  *out = std::move(node);
  return {};
}

Status detectNode(NodeInfo* out) {
#ifdef RINA_HAVE_HWLOC
  return detectWithHwloc(out);
#else
  return detectNodeFromSysfs("", out);
#endif
}

Status cpusNearNic(const NodeInfo& node, const std::string& ifname, std::vector<int>* out) {
  const NicInfo* nic = node.nic(ifname);
  if (!nic) {
    std::string names;
    for (const NicInfo& n : node.nics) names += (names.empty() ? "" : ", ") + n.name;
    return errorf(rinaInvalidArgument, "no network interface '%s' on this node (there are: %s)",
                  ifname.c_str(), names.c_str());
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    return systemErrorf(errno, "sched_getaffinity");
  }
  std::vector<int> near, all;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &allowed)) continue;
    all.push_back(c);
    if (std::binary_search(nic->near.begin(), nic->near.end(), c)) near.push_back(c);
  }
  *out = near.empty() ? all : near;
  return {};
}

Status placeThreadNearNic(const NodeInfo& node, const std::string& ifname, std::vector<int>* cpus) {
  RINA_TRY(cpusNearNic(node, ifname, cpus));
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : *cpus) CPU_SET(c, &set);
  int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (err != 0) return systemErrorf(err, "pinning a thread near %s", ifname.c_str());
  return {};
}

}  // namespace rina::topo
