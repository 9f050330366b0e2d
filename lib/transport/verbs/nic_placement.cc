#include "transport/verbs/nic_placement.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace rina::transport::verbs {
namespace {

namespace fs = std::filesystem;

// The PCI part of a sysfs device path: the components from "pci<domain>:<bus>" on.
std::vector<std::string> pciComponents(std::string_view path) {
  std::vector<std::string> parts;
  size_t pos = 0;
  bool inPci = false;
  while (pos < path.size()) {
    size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(pos, end - pos);
    if (part.substr(0, 3) == "pci") inPci = true;
    if (inPci && !part.empty()) parts.emplace_back(part);
    pos = end + 1;
  }
  return parts;
}

int readNumaNode(const fs::path& device) {
  std::ifstream f(device / "numa_node");
  int node = -1;
  if (!(f >> node)) return -1;
  return node;
}

}  // namespace

int pciDistance(const PciLocation& a, const PciLocation& b) {
  std::vector<std::string> pa = pciComponents(a.devPath), pb = pciComponents(b.devPath);
  size_t common = 0;
  while (common < pa.size() && common < pb.size() && pa[common] == pb[common]) ++common;
  int hops = static_cast<int>(pa.size() - common + pb.size() - common);
  if (common == 0) {
    hops += 1000;  // another root complex
    if (a.numaNode < 0 || b.numaNode < 0 || a.numaNode != b.numaNode) hops += 1000;
  }
  return hops;
}

int closestNic(const PciLocation& gpu, const std::vector<PciLocation>& nics, std::string* why) {
  int best = -1;
  int bestDistance = 0;
  for (size_t i = 0; i < nics.size(); ++i) {
    int d = pciDistance(gpu, nics[i]);
    if (best < 0 || d < bestDistance ||
        (d == bestDistance && nics[i].name < nics[static_cast<size_t>(best)].name)) {
      best = static_cast<int>(i);
      bestDistance = d;
    }
  }
  if (why) {
    *why = best < 0 ? "no RDMA adapter"
                    : nics[static_cast<size_t>(best)].name + " is " + std::to_string(bestDistance) +
                          " PCI hops from GPU " + gpu.name;
  }
  return best;
}

Status readRdmaNics(const std::string& sysRoot, std::vector<PciLocation>* out) {
  out->clear();
  std::error_code ec;
  fs::path dir = fs::path(sysRoot) / "class" / "infiniband";
  if (!fs::is_directory(dir, ec)) return {};  // no RDMA adapters at all
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    fs::path device = fs::canonical(e.path() / "device", ec);
    if (ec) continue;  // a software device (rxe, siw) has no PCI parent
    out->push_back({e.path().filename().string(), device.string(), readNumaNode(device)});
  }
  if (ec) return systemErrorf(ec.value(), "listing %s", dir.c_str());
  std::sort(out->begin(), out->end(),
            [](const PciLocation& x, const PciLocation& y) { return x.name < y.name; });
  return {};
}

Status readPciDevice(const std::string& sysRoot, const std::string& busId, PciLocation* out) {
  std::string id = busId;
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
  // NVML spells the domain with 8 digits ("00000000:3b:00.0"), sysfs with 4.
  if (id.find(':') == 8 && id.compare(0, 4, "0000") == 0) id.erase(0, 4);
  std::error_code ec;
  fs::path device = fs::canonical(fs::path(sysRoot) / "bus" / "pci" / "devices" / id, ec);
  if (ec)
    return systemErrorf(ec.value(), "PCI device %s not found under %s", busId.c_str(),
                        sysRoot.c_str());
  *out = {busId, device.string(), readNumaNode(device)};
  return {};
}

void preferNicNearGpu(const std::string& sysRoot, const std::string& gpuBusId,
                      const std::vector<std::string>& devices, bool namedByKnob,
                      TransportChoice* choice) {
  if (!choice->useVerbs || namedByKnob) return;
  PciLocation gpu;
  std::vector<PciLocation> all, nics;
  Status s = readPciDevice(sysRoot, gpuBusId, &gpu);
  if (s.ok()) s = readRdmaNics(sysRoot, &all);
  for (const PciLocation& n : all) {
    if (std::find(devices.begin(), devices.end(), n.name) != devices.end()) nics.push_back(n);
  }
  std::string why;
  const int best = s.ok() ? closestNic(gpu, nics, &why) : -1;
  if (best < 0) {
    choice->why += "; GPU " + gpuBusId + " placement unknown (" +
                   (s.ok() ? std::string("no adapter under ") + sysRoot : s.message()) + ")";
    return;
  }
  choice->device = nics[static_cast<size_t>(best)].name;
  choice->port = 1;
  choice->why = "RDMA device " + choice->device + " port 1, closest to the GPU: " + why;
}

}  // namespace rina::transport::verbs
