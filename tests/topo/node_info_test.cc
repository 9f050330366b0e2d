// Node detection: a fake /sys tree with two NUMA nodes and a NIC on the
// second, the real node against sysconf, and pinning a thread near a NIC.
#include "topo/node_info.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "kernel_cpus.h"

namespace rina::topo {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

// 4 CPUs, 2 cores with 2 threads each; node0 has CPUs 0,2 and node1 1,3;
// ib0 sits on node1, eth1 is down and virtual, lo is loopback.
std::string makeFakeSys() {
  fs::path root = fs::path(::testing::TempDir()) / ("fake-sys-" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::path cpu = root / "sys/devices/system/cpu";
  write(cpu / "online", "0-3");
  for (int c = 0; c < 4; ++c) {
    fs::path t = cpu / ("cpu" + std::to_string(c)) / "topology";
    write(t / "physical_package_id", "0");
    write(t / "core_id", std::to_string(c % 2));
  }
  fs::path node = root / "sys/devices/system/node";
  write(node / "node0/cpulist", "0,2");
  write(node / "node0/meminfo", "Node 0 MemTotal:       1048576 kB\nNode 0 MemFree: 5 kB");
  write(node / "node1/cpulist", "1,3");
  write(node / "possible", "0-1");
  fs::path net = root / "sys/class/net";
  fs::path pci = root / "sys/devices/pci0000:00/0000:3b:00.0";
  write(pci / "numa_node", "1");
  write(pci / "vendor", "0x15b3");
  fs::create_directories(net / "ib0");
  fs::create_symlink(pci, net / "ib0/device");
  write(net / "ib0/operstate", "up");
  write(net / "ib0/flags", "0x1003");
  write(net / "eth1/operstate", "down");
  write(net / "eth1/flags", "0x1002");
  write(net / "lo/operstate", "unknown");
  write(net / "lo/flags", "0x9");
  return root.string();
}

TEST(CpuList, ParsesAndFormats) {
  std::vector<int> cpus;
  ASSERT_TRUE(parseCpuList("0-3,8,10-11", &cpus));
  EXPECT_EQ(cpus, (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(formatCpuList(cpus), "0-3,8,10-11");
  ASSERT_TRUE(parseCpuList("5", &cpus));
  EXPECT_EQ(cpus, std::vector<int>{5});
  EXPECT_EQ(formatCpuList({0, 2, 4}), "0,2,4");
  EXPECT_EQ(formatCpuList({}), "");
  for (const char* bad : {"a", "3-1", "1,", "-2", "1--2", "0-3,x", ",1"}) {
    EXPECT_FALSE(parseCpuList(bad, &cpus)) << bad;
  }
}

TEST(NodeInfo, ReadsAFakeSysTree) {
  const std::string root = makeFakeSys();
  NodeInfo node;
  Status s = detectNodeFromSysfs(root, &node);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(node.source, "sysfs");
  EXPECT_EQ(node.cpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(node.cores, 2);
  ASSERT_EQ(node.numa.size(), 2u);
  EXPECT_EQ(node.numa[0].cpus, (std::vector<int>{0, 2}));
  EXPECT_EQ(node.numa[0].memBytes, 1024ull * 1024 * 1024);
  EXPECT_EQ(node.numa[1].id, 1);
  EXPECT_EQ(node.numa[1].cpus, (std::vector<int>{1, 3}));
  ASSERT_EQ(node.nics.size(), 3u);
  const NicInfo* ib = node.nic("ib0");
  ASSERT_NE(ib, nullptr);
  EXPECT_TRUE(ib->up);
  EXPECT_EQ(ib->numaNode, 1);
  EXPECT_EQ(ib->busId, "0000:3b:00.0");
  EXPECT_EQ(ib->near, (std::vector<int>{1, 3}));
  const NicInfo* eth = node.nic("eth1");
  ASSERT_NE(eth, nullptr);
  EXPECT_FALSE(eth->up);
  EXPECT_EQ(eth->numaNode, -1);
  EXPECT_EQ(eth->near, (std::vector<int>{0, 1, 2, 3}));
  ASSERT_NE(node.nic("lo"), nullptr);
  EXPECT_TRUE(node.nic("lo")->up);
  EXPECT_EQ(node.describe(),
            "node: sysfs: 2 cores, 4 CPUs (0-3), 2 NUMA nodes\n"
            "  numa 0: cpus 0,2, 1024 MiB\n"
            "  numa 1: cpus 1,3\n"
            "  nic eth1: down, numa -, near cpus 0-3\n"
            "  nic ib0: up, pci 0000:3b:00.0, numa 1, near cpus 1,3\n"
            "  nic lo: up, numa -, near cpus 0-3\n");
  fs::remove_all(root);
}

TEST(NodeInfo, MissingOrBrokenSysTreeIsAnError) {
  const std::string root = makeFakeSys();
  NodeInfo node;
  write(fs::path(root) / "sys/devices/system/node/node1/cpulist", "1-");
  Status s = detectNodeFromSysfs(root, &node);
  EXPECT_EQ(s.code(), rinaSystemError);
  EXPECT_NE(s.message().find("node1: unreadable cpulist"), std::string::npos) << s.message();
  fs::remove_all(root);
  s = detectNodeFromSysfs(root, &node);
  EXPECT_EQ(s.code(), rinaSystemError);
  EXPECT_NE(s.message().find("cannot read the online CPUs"), std::string::npos) << s.message();
}

TEST(NodeInfo, RealNodeMatchesSysconf) {
  NodeInfo node;
  Status s = detectNode(&node);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(static_cast<long>(node.cpus.size()), sysconf(_SC_NPROCESSORS_ONLN));
  EXPECT_GE(node.cores, 1);
  EXPECT_LE(node.cores, static_cast<int>(node.cpus.size()));
  EXPECT_GE(node.numa.size(), 1u);
  ASSERT_NE(node.nic("lo"), nullptr);
  EXPECT_EQ(node.nic("lo")->ipv4, "127.0.0.1");
  NodeInfo fromSys;
  ASSERT_TRUE(detectNodeFromSysfs("", &fromSys).ok());
  EXPECT_EQ(fromSys.cpus, node.cpus);
  EXPECT_EQ(fromSys.numa.size(), node.numa.size());
}

TEST(PlaceThread, PinsToTheNicsNumaNodeWithinTheAllowedCpus) {
  const std::string root = makeFakeSys();
  NodeInfo node;
  ASSERT_TRUE(detectNodeFromSysfs(root, &node).ok());
  fs::remove_all(root);
  // ib0 is near CPUs 1 and 3; this process may use testing::kernelCpus().
  std::vector<int> expected;
  for (int c : testing::kernelCpus()) {
    if (c == 1 || c == 3) expected.push_back(c);
  }
  if (expected.empty()) expected = testing::kernelCpus();
  const std::vector<int> before = testing::kernelCpus();
  std::vector<int> placed, actual;
  Status placedStatus;
  std::thread t([&] {
    placedStatus = placeThreadNearNic(node, "ib0", &placed);
    cpu_set_t set;
    CPU_ZERO(&set);
    pthread_getaffinity_np(pthread_self(), sizeof set, &set);
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) actual.push_back(c);
    }
  });
  t.join();
  ASSERT_TRUE(placedStatus.ok()) << placedStatus.message();
  EXPECT_EQ(placed, expected);
  EXPECT_EQ(actual, expected);
  // The test's own thread is not moved.
  EXPECT_EQ(testing::kernelCpus(), before);
}

TEST(PlaceThread, UnknownInterfaceIsAnError) {
  NodeInfo node;
  ASSERT_TRUE(detectNode(&node).ok());
  std::vector<int> cpus;
  Status s = cpusNearNic(node, "nosuchnic0", &cpus);
  EXPECT_EQ(s.code(), rinaInvalidArgument);
  EXPECT_NE(s.message().find("no network interface 'nosuchnic0'"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("lo"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace rina::topo
