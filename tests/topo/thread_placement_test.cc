// Where rinaCommInitRank runs (RINA_CPU_AFFINITY): binding and restoring a
// thread's mask, the modes on a fake two-node tree (the NIC on node 1), the
// real node (hwloc's answer against sysfs's, checked with sched_getaffinity),
// and the knob through rinaCommInitRank.
#include "topo/thread_placement.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "kernel_cpus.h"
#include "rank_harness.h"
#include "rina/rina.h"

namespace rina::topo {
namespace {

namespace fs = std::filesystem;

// CPUs 0-3 over two NUMA nodes (0,2 and 1,3); eth9 sits on node 1.
std::string fakeTwoNodeSys() {
  fs::path root = fs::path(::testing::TempDir()) / ("placement-sys-" + std::to_string(getpid()));
  fs::remove_all(root);
  auto write = [](const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  };
  write(root / "sys/devices/system/cpu/online", "0-3");
  write(root / "sys/devices/system/node/node0/cpulist", "0,2");
  write(root / "sys/devices/system/node/node1/cpulist", "1,3");
  fs::path pci = root / "sys/devices/pci0000:80/0000:80:01.0";
  write(pci / "numa_node", "1");
  write(pci / "vendor", "0x15b3");
  fs::create_directories(root / "sys/class/net/eth9");
  fs::create_symlink(pci, root / "sys/class/net/eth9/device");
  write(root / "sys/class/net/eth9/operstate", "up");
  return root.string();
}

TEST(ThreadPlacement, Modes) {
  AffinityMode m;
  ASSERT_TRUE(parseAffinityMode("setup", &m).ok());
  EXPECT_EQ(m, AffinityMode::kSetup);
  ASSERT_TRUE(parseAffinityMode("pin", &m).ok());
  EXPECT_EQ(m, AffinityMode::kPin);
  ASSERT_TRUE(parseAffinityMode("off", &m).ok());
  EXPECT_EQ(m, AffinityMode::kOff);
  for (const char* bad : {"", "on", "numa", "Setup"}) {
    Status s = parseAffinityMode(bad, &m);
    EXPECT_EQ(s.code(), rinaInvalidArgument);
    EXPECT_EQ(s.message(), std::string("RINA_CPU_AFFINITY=") + bad + ": give setup, pin or off");
  }
}

TEST(ThreadPlacement, BindingRestoresTheOldMaskUnlessPinned) {
  std::thread([] {
    const std::vector<int> before = testing::kernelCpus();
    ASSERT_FALSE(before.empty());
    for (bool restore : {true, false}) {
      {
        std::unique_ptr<ThreadBinding> b;
        ASSERT_TRUE(ThreadBinding::bind({before.back()}, restore, &b).ok());
        EXPECT_EQ(testing::kernelCpus(), std::vector<int>{before.back()});
        EXPECT_EQ(threadCpus(), testing::kernelCpus());
      }
      EXPECT_EQ(testing::kernelCpus(), restore ? before : std::vector<int>{before.back()});
    }
    std::unique_ptr<ThreadBinding> b;
    EXPECT_EQ(ThreadBinding::bind({}, true, &b).code(), rinaInvalidArgument);
    EXPECT_EQ(ThreadBinding::bind({CPU_SETSIZE + 5}, true, &b).code(), rinaInvalidArgument);
    // A CPU that exists in the set but not on this machine: the kernel refuses.
    Status s = ThreadBinding::bind({CPU_SETSIZE - 1}, true, &b);
    EXPECT_EQ(s.code(), rinaSystemError);
    EXPECT_NE(s.message().find("pthread_setaffinity_np to CPUs 1023"), std::string::npos)
        << s.message();
    EXPECT_EQ(b, nullptr);
  }).join();
}

TEST(ThreadPlacement, SetupAndPinBindNearTheNicsNode) {
  const std::string root = fakeTwoNodeSys();
  NodeInfo node;
  ASSERT_TRUE(detectNodeFromSysfs(root, &node).ok());
  fs::remove_all(root);
  std::thread([&] {
    const std::vector<int> before = testing::kernelCpus();
    // eth9 is near CPUs 1 and 3, within what this thread may use (this machine
    // may have only CPUs 0-1); with none of them allowed, every allowed CPU.
    std::vector<int> near;
    for (int c : before) {
      if (c == 1 || c == 3) near.push_back(c);
    }
    if (near.empty()) near = before;
    for (AffinityMode mode : {AffinityMode::kSetup, AffinityMode::kPin}) {
      std::unique_ptr<ThreadBinding> placed;
      ASSERT_TRUE(placeThreadForSetup(0, mode, node, "eth9", &placed).ok());
      EXPECT_EQ(testing::kernelCpus(), near);
      EXPECT_EQ(placed != nullptr, near != before);
      placed.reset();
      EXPECT_EQ(testing::kernelCpus(), mode == AffinityMode::kSetup ? before : near);
      std::unique_ptr<ThreadBinding> undo;
      ASSERT_TRUE(ThreadBinding::bind(before, false, &undo).ok());
    }
    std::unique_ptr<ThreadBinding> placed;
    ASSERT_TRUE(placeThreadForSetup(0, AffinityMode::kOff, node, "eth9", &placed).ok());
    EXPECT_EQ(placed, nullptr);
    EXPECT_EQ(testing::kernelCpus(), before);
    // A NIC the node does not have: nothing moves, and it is no error.
    ASSERT_TRUE(placeThreadForSetup(0, AffinityMode::kPin, node, "nosuch0", &placed).ok());
    EXPECT_EQ(placed, nullptr);
    EXPECT_EQ(testing::kernelCpus(), before);
  }).join();
}

TEST(ThreadPlacement, OnlineNumaNodesFromSysfs) {
  const fs::path root =
      fs::path(::testing::TempDir()) / ("placement-numa-" + std::to_string(getpid()));
  const fs::path online = root / "sys/devices/system/node/online";
  fs::remove_all(root);
  EXPECT_EQ(onlineNumaNodes(root.string()), 1) << "no node directory: a kernel without NUMA";
  fs::create_directories(online.parent_path());
  for (const auto& [text, nodes] :
       std::vector<std::pair<std::string, int>>{{"0", 1}, {"0-1", 2}, {"0,2-3", 3}, {"x", 1}}) {
    std::ofstream(online) << text << "\n";
    EXPECT_EQ(onlineNumaNodes(root.string()), nodes) << "online: " << text;
  }
  fs::remove_all(root);
}

// Every interface of this machine: pinned by hwloc's answer, the thread's
// mask is what sysfs says is near that NIC.
TEST(ThreadPlacement, RealNodePinsWhereSysfsSaysTheNicIs) {
  NodeInfo hw, sys;
  ASSERT_TRUE(detectNode(&hw).ok());
  ASSERT_TRUE(detectNodeFromSysfs("", &sys).ok());
  ASSERT_FALSE(hw.nics.empty());
  for (const NicInfo& nic : hw.nics) {
    std::thread([&] {
      std::vector<int> expected;
      ASSERT_TRUE(cpusNearNic(sys, nic.name, &expected).ok()) << nic.name;
      std::unique_ptr<ThreadBinding> placed;
      ASSERT_TRUE(placeThreadForSetup(0, AffinityMode::kPin, hw, nic.name, &placed).ok());
      EXPECT_EQ(testing::kernelCpus(), expected) << nic.name;
    }).join();
  }
}

// Through rinaCommInitRank: a bad value fails init naming the knob; setup
// gives the calling thread its mask back.
TEST(ThreadPlacement, KnobThroughCommInit) {
  {
    testing::ScopedEnv bad("RINA_CPU_AFFINITY", "numa");
    rinaUniqueId id;
    ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
    rinaComm_t comm = nullptr;
    EXPECT_EQ(rinaCommInitRank(&comm, 1, id, 0), rinaInvalidArgument);
    EXPECT_NE(std::string(rinaCommGetLastError(nullptr)).find("RINA_CPU_AFFINITY=numa"),
              std::string::npos)
        << rinaCommGetLastError(nullptr);
  }
  for (const char* mode : {"setup", "off"}) {
    testing::ScopedEnv m("RINA_CPU_AFFINITY", mode);
    std::thread([] {
      const std::vector<int> before = testing::kernelCpus();
      rinaUniqueId id;
      ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
      rinaComm_t comm = nullptr;
      ASSERT_EQ(rinaCommInitRank(&comm, 1, id, 0), rinaSuccess) << rinaCommGetLastError(nullptr);
      EXPECT_EQ(testing::kernelCpus(), before);
      rinaCommDestroy(comm);
    }).join();
  }
}

}  // namespace
}  // namespace rina::topo
