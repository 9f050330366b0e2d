// The calling thread's CPU mask as the kernel reports it
// (sched_getaffinity), an independent reference for the placement tests.
#ifndef RINA_TESTS_TOPO_KERNEL_CPUS_H_
#define RINA_TESTS_TOPO_KERNEL_CPUS_H_

#include <gtest/gtest.h>
#include <sched.h>

#include <vector>

namespace rina::testing {

inline std::vector<int> kernelCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

}  // namespace rina::testing

#endif  // RINA_TESTS_TOPO_KERNEL_CPUS_H_
