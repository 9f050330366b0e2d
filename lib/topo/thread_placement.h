// Where a communicator's setup runs (RINA_CPU_AFFINITY), after NCCL, which
// binds the initializing thread to the CPUs near its device while it sets up
// and then gives the thread its old mask back: memory first touched during
// setup (the RDMA rings a NIC writes into, pinned staging) lands on the NIC's
// NUMA node, and the application's threads stay where it put them. rina has
// no progress thread of its own: the calling thread drives every transfer,
// so keeping it bound is the application's call (`pin`, opt-in).
//
//   setup (default)  bind during rinaCommInitRank, restore at its end
//   pin              bind, and leave the thread bound
//   off              never touch the thread's mask
//
// The NIC in use: the interface rina's sockets listen on (RINA_SOCKET_IFNAME).
// Its near CPUs (topo::cpusNearNic: its NUMA node's, within the CPUs this
// process may use) come from hwloc, detected once per process. A NIC with no
// locality (virtual, loopback) is near every CPU, which changes nothing.
#ifndef RINA_LIB_TOPO_THREAD_PLACEMENT_H_
#define RINA_LIB_TOPO_THREAD_PLACEMENT_H_

#include <sched.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "topo/node_info.h"

namespace rina::topo {

enum class AffinityMode { kOff, kSetup, kPin };

// "off", "setup", "pin"; anything else: rinaInvalidArgument naming RINA_CPU_AFFINITY.
Status parseAffinityMode(std::string_view text, AffinityMode* out);

// The calling thread's allowed CPUs, ascending.
std::vector<int> threadCpus();

// Binds the calling thread to cpus; with restore, the destructor gives it
// back the mask it had (it must run on the same thread).
class ThreadBinding {
 public:
  static Status bind(const std::vector<int>& cpus, bool restore,
                     std::unique_ptr<ThreadBinding>* out);
  ~ThreadBinding();
  ThreadBinding(const ThreadBinding&) = delete;
  ThreadBinding& operator=(const ThreadBinding&) = delete;

 private:
  ThreadBinding() = default;
  cpu_set_t previous_{};
  bool restore_ = false;
};

// Binds the calling thread near ifname on node as mode says; one INFO line
// says where. *out stays null when mode is off or binding would change
// nothing. A NIC this node does not have is logged and ignored (placement
// is a performance hint, never a reason to fail).
Status placeThreadForSetup(int rank, AffinityMode mode, const NodeInfo& node,
                           const std::string& ifname, std::unique_ptr<ThreadBinding>* out);

// NUMA nodes online under <sysRoot>/sys/devices/system/node/online ("" is
// the real system); 1 when the kernel has no NUMA support or the file is
// unreadable.
int onlineNumaNodes(const std::string& sysRoot);

// The communicator's call: affinity (RINA_CPU_AFFINITY's text; a bad value
// is an error); on a machine with one NUMA node nothing (all memory is
// equally near every NIC, and detecting the node costs tens of milliseconds
// per process); else this node as detectNode() sees it (detected once per
// process; a failure is logged and ignored), then placeThreadForSetup.
Status placeSetupThread(int rank, const std::string& ifname, std::string_view affinity,
                        std::unique_ptr<ThreadBinding>* out);

}  // namespace rina::topo

#endif  // RINA_LIB_TOPO_THREAD_PLACEMENT_H_
