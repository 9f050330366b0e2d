// Which RDMA adapter is closest to a GPU, from where both sit in the PCI
// tree. The choice is a pure function over a description (sysfs paths and
// NUMA nodes), so it is tested on synthetic trees; readSysPci() builds the
// description from /sys (or a copy of it) without hwloc.
//
// Distance: hops from each device up to their deepest common PCI ancestor,
// summed (a NIC behind the GPU's PCIe switch beats one on the same root
// port, which beats one on another root complex). Devices under different
// root complexes are 1000 apart, plus 1000 when their NUMA nodes differ.
// Ties go to the lower name, so every rank of a node picks the same NIC.
#ifndef RINA_LIB_TRANSPORT_VERBS_NIC_PLACEMENT_H_
#define RINA_LIB_TRANSPORT_VERBS_NIC_PLACEMENT_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "transport/verbs/select.h"

namespace rina::transport::verbs {

struct PciLocation {
  std::string name;     // "mlx5_0", or the GPU's bus id
  std::string devPath;  // resolved sysfs path: /sys/devices/pci0000:3a/0000:3a:00.0/...
  int numaNode = -1;    // -1: unknown
};

int pciDistance(const PciLocation& a, const PciLocation& b);

// Index of the NIC closest to gpu; -1 when nics is empty. *why explains.
int closestNic(const PciLocation& gpu, const std::vector<PciLocation>& nics, std::string* why);

// RDMA adapters under sysRoot/class/infiniband, with their PCI path and NUMA
// node; a PCI device by bus id ("0000:3b:00.0") under sysRoot/bus/pci/devices.
Status readRdmaNics(const std::string& sysRoot, std::vector<PciLocation>* out);
Status readPciDevice(const std::string& sysRoot, const std::string& busId, PciLocation* out);

// With RINA_IB_HCA unset, the adapter used for every peer is the one closest
// to this process's GPU (gpuBusId) among `devices` (what ibv_get_device_list
// found), as NCCL picks its NIC; choice->why names the distance. A choice made
// by RINA_IB_HCA, or a tree where the GPU or the adapters cannot be read,
// leaves the choice as it was (why says so in the second case).
void preferNicNearGpu(const std::string& sysRoot, const std::string& gpuBusId,
                      const std::vector<std::string>& devices, bool namedByKnob,
                      TransportChoice* choice);

}  // namespace rina::transport::verbs

#endif  // RINA_LIB_TRANSPORT_VERBS_NIC_PLACEMENT_H_
