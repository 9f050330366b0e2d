#include "topo/thread_placement.h"

#include <pthread.h>

#include <fstream>
#include <mutex>

#include "core/log.h"

namespace rina::topo {

Status parseAffinityMode(std::string_view text, AffinityMode* out) {
  if (text == "off") {
    *out = AffinityMode::kOff;
  } else if (text == "setup") {
    *out = AffinityMode::kSetup;
  } else if (text == "pin") {
    *out = AffinityMode::kPin;
  } else {
    return errorf(rinaInvalidArgument, "RINA_CPU_AFFINITY=%.*s: give setup, pin or off",
                  static_cast<int>(text.size()), text.data());
  }
  return {};
}

std::vector<int> threadCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

Status ThreadBinding::bind(const std::vector<int>& cpus, bool restore,
                           std::unique_ptr<ThreadBinding>* out) {
  if (cpus.empty()) return errorf(rinaInvalidArgument, "binding a thread to no CPU");
  std::unique_ptr<ThreadBinding> b(new ThreadBinding());
  b->restore_ = restore;
  int err = pthread_getaffinity_np(pthread_self(), sizeof b->previous_, &b->previous_);
  if (err != 0) return systemErrorf(err, "pthread_getaffinity_np");
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c < 0 || c >= CPU_SETSIZE) return errorf(rinaInvalidArgument, "no CPU %d", c);
    CPU_SET(c, &set);
  }
  err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (err != 0)
    return systemErrorf(err, "pthread_setaffinity_np to CPUs %s", formatCpuList(cpus).c_str());
  *out = std::move(b);
  return {};
}

ThreadBinding::~ThreadBinding() {
  if (restore_) (void)pthread_setaffinity_np(pthread_self(), sizeof previous_, &previous_);
}

Status placeThreadForSetup(int rank, AffinityMode mode, const NodeInfo& node,
                           const std::string& ifname, std::unique_ptr<ThreadBinding>* out) {
  out->reset();
  if (mode == AffinityMode::kOff) return {};
  std::vector<int> near;
  Status s = cpusNearNic(node, ifname, &near);
  if (s.ok() && near == threadCpus()) return {};  // already there (or nothing is nearer)
  if (s.ok()) s = ThreadBinding::bind(near, mode == AffinityMode::kSetup, out);
  if (!s.ok()) {
    RINA_INFO("rank %d: CPU placement skipped: %s", rank, s.message().c_str());
    return {};
  }
  RINA_INFO("rank %d: %s on CPUs %s, near %s (RINA_CPU_AFFINITY=%s)", rank,
            mode == AffinityMode::kSetup ? "setting up" : "pinned", formatCpuList(near).c_str(),
            ifname.c_str(), mode == AffinityMode::kSetup ? "setup" : "pin");
  return {};
}

int onlineNumaNodes(const std::string& sysRoot) {
  std::ifstream f(sysRoot + "/sys/devices/system/node/online");
  std::string line;
  std::vector<int> nodes;
  if (!f || !std::getline(f, line) || !parseCpuList(line, &nodes) || nodes.empty()) return 1;
  return static_cast<int>(nodes.size());
}

Status placeSetupThread(int rank, const std::string& ifname, std::string_view affinity,
                        std::unique_ptr<ThreadBinding>* out) {
  out->reset();
  AffinityMode mode;
  RINA_TRY(parseAffinityMode(affinity, &mode).prepend("rank " + std::to_string(rank) + ": "));
  if (mode == AffinityMode::kOff) return {};
  static const int numaNodes = onlineNumaNodes("");
  if (numaNodes <= 1) {
    RINA_INFO("rank %d: one NUMA node: setup runs where the thread is (RINA_CPU_AFFINITY=%s)", rank,
              mode == AffinityMode::kSetup ? "setup" : "pin");
    return {};
  }
  static NodeInfo node;
  static Status detected;
  static std::once_flag once;
  std::call_once(once, [] { detected = detectNode(&node); });
  if (!detected.ok()) {
    RINA_INFO("rank %d: CPU placement skipped: %s", rank, detected.message().c_str());
    return {};
  }
  return placeThreadForSetup(rank, mode, node, ifname, out);
}

}  // namespace rina::topo
