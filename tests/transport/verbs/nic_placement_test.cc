// NIC placement on a synthetic sysfs tree (two sockets, a PCIe switch
// shared by GPU0 and mlx5_0, a software RDMA device without PCI parent);
// the expected distances are counted by hand from the tree below.
#include "transport/verbs/nic_placement.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace rina::transport::verbs {
namespace {

namespace fs = std::filesystem;

class SyntheticSys : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("rina-sys-" + std::to_string(getpid()));
    fs::remove_all(root_);
    addDevice("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:03:00.0", 0, "",
              "0000:03:00.0");
    addDevice("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:10.0/0000:04:00.0", 0, "mlx5_0", "");
    addDevice("pci0000:00/0000:00:03.0/0000:05:00.0", 0, "mlx5_1", "");
    addDevice("pci0000:80/0000:80:01.0/0000:81:00.0", 1, "mlx5_2", "");
    addDevice("pci0000:80/0000:80:01.0/0000:82:00.0", 1, "", "0000:82:00.0");
    fs::create_directories(root_ / "class/infiniband/rxe0");  // no device link
  }
  void TearDown() override { fs::remove_all(root_); }

  void addDevice(const std::string& pciPath, int numa, const std::string& ibName,
                 const std::string& busId) {
    fs::path dev = root_ / "devices" / pciPath;
    fs::create_directories(dev);
    std::ofstream(dev / "numa_node") << numa << "\n";
    if (!ibName.empty()) {
      fs::create_directories(root_ / "class/infiniband" / ibName);
      fs::create_directory_symlink(dev, root_ / "class/infiniband" / ibName / "device");
    }
    if (!busId.empty()) {
      fs::create_directories(root_ / "bus/pci/devices");
      fs::create_directory_symlink(dev, root_ / "bus/pci/devices" / busId);
    }
  }

  fs::path root_;
};

TEST_F(SyntheticSys, ReadsAdaptersWithPciPathsAndNumaNodes) {
  std::vector<PciLocation> nics;
  ASSERT_TRUE(readRdmaNics(root_.string(), &nics).ok());
  ASSERT_EQ(nics.size(), 3u);  // rxe0 has no PCI device
  EXPECT_EQ(nics[0].name, "mlx5_0");
  EXPECT_EQ(nics[2].name, "mlx5_2");
  EXPECT_EQ(nics[2].numaNode, 1);
  EXPECT_NE(nics[1].devPath.find("0000:00:03.0/0000:05:00.0"), std::string::npos)
      << nics[1].devPath;
}

TEST_F(SyntheticSys, PicksTheNicBehindTheSameSwitchThenTheSameSocket) {
  std::vector<PciLocation> nics;
  ASSERT_TRUE(readRdmaNics(root_.string(), &nics).ok());
  PciLocation gpu0, gpu1;
  ASSERT_TRUE(readPciDevice(root_.string(), "0000:03:00.0", &gpu0).ok());
  ASSERT_TRUE(readPciDevice(root_.string(), "00000000:82:00.0", &gpu1).ok());  // NVML spelling
  // GPU0: mlx5_0 shares the PCIe switch 0000:01:00.0 (2 + 2 hops); mlx5_1 only
  // the root complex (4 + 2); mlx5_2 is on the other socket.
  EXPECT_EQ(pciDistance(gpu0, nics[0]), 4);
  EXPECT_EQ(pciDistance(gpu0, nics[1]), 6);
  EXPECT_EQ(pciDistance(gpu0, nics[2]), 5 + 3 + 2000);
  std::string why;
  EXPECT_EQ(closestNic(gpu0, nics, &why), 0);
  EXPECT_EQ(why, "mlx5_0 is 4 PCI hops from GPU 0000:03:00.0");
  // GPU1 shares root port 0000:80:01.0 with mlx5_2.
  EXPECT_EQ(pciDistance(gpu1, nics[2]), 2);
  EXPECT_EQ(closestNic(gpu1, nics, nullptr), 2);
}

// RdmaSetup's use of it: with RINA_IB_HCA unset, the adapter nearest the
// process's GPU replaces the first one listed.
TEST_F(SyntheticSys, TheAdapterNearestTheGpuReplacesTheFirstUnlessNamed) {
  const std::vector<std::string> listed = {"mlx5_0", "mlx5_1", "mlx5_2"};
  auto first = [] {
    TransportChoice c;
    c.useVerbs = true;
    c.device = "mlx5_0";
    c.why = "RDMA device mlx5_0 port 1 (first of: mlx5_0, mlx5_1, mlx5_2)";
    return c;
  };
  TransportChoice c = first();
  preferNicNearGpu(root_.string(), "0000:82:00.0", listed, false, &c);
  EXPECT_EQ(c.device, "mlx5_2");
  EXPECT_EQ(c.why,
            "RDMA device mlx5_2 port 1, closest to the GPU: mlx5_2 is 2 PCI hops from GPU "
            "0000:82:00.0");
  c = first();
  preferNicNearGpu(root_.string(), "0000:03:00.0", listed, false, &c);
  EXPECT_EQ(c.device, "mlx5_0");
  // Only adapters ibv_get_device_list found count.
  c = first();
  preferNicNearGpu(root_.string(), "0000:82:00.0", {"mlx5_0", "mlx5_1"}, false, &c);
  EXPECT_EQ(c.device, "mlx5_1");  // both on the other socket: fewer PCI hops decide
  // RINA_IB_HCA named one: it stays.
  c = first();
  preferNicNearGpu(root_.string(), "0000:82:00.0", listed, true, &c);
  EXPECT_EQ(c.device, "mlx5_0");
  EXPECT_EQ(c.why, first().why);
  // A GPU sysfs does not know: the choice stays and says so.
  c = first();
  preferNicNearGpu(root_.string(), "0000:99:00.0", listed, false, &c);
  EXPECT_EQ(c.device, "mlx5_0");
  EXPECT_NE(c.why.find("; GPU 0000:99:00.0 placement unknown (PCI device 0000:99:00.0 not found"),
            std::string::npos)
      << c.why;
  // No adapter chosen (sockets): nothing to prefer.
  TransportChoice none;
  preferNicNearGpu(root_.string(), "0000:82:00.0", listed, false, &none);
  EXPECT_FALSE(none.useVerbs);
  EXPECT_TRUE(none.device.empty());
}

TEST(NicPlacement, TiesGoToTheLowerNameAndUnknownNumaCountsAsFar) {
  PciLocation gpu{"g", "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0", 0};
  std::vector<PciLocation> nics = {
      {"mlx5_1", "/sys/devices/pci0000:00/0000:00:02.0/0000:02:00.0", 0},
      {"mlx5_0", "/sys/devices/pci0000:00/0000:00:03.0/0000:03:00.0", 0},
  };
  EXPECT_EQ(closestNic(gpu, nics, nullptr), 1);  // both 4 hops: mlx5_0 wins
  PciLocation far{"x", "/sys/devices/pci0000:40/0000:40:01.0", -1};
  PciLocation far0{"y", "/sys/devices/pci0000:40/0000:40:01.0", 0};
  EXPECT_EQ(pciDistance(gpu, far), 2 + 3 + 2000);
  EXPECT_EQ(pciDistance(gpu, far0), 2 + 3 + 1000);
  std::string why;
  EXPECT_EQ(closestNic(gpu, {}, &why), -1);
  EXPECT_EQ(why, "no RDMA adapter");
}

TEST(NicPlacement, MissingPieces) {
  std::vector<PciLocation> nics{{"stale", "", 0}};
  ASSERT_TRUE(readRdmaNics("/nonexistent-sys-root", &nics).ok());  // no adapters
  EXPECT_TRUE(nics.empty());
  PciLocation gpu;
  Status s = readPciDevice("/nonexistent-sys-root", "0000:3b:00.0", &gpu);
  EXPECT_EQ(s.code(), rinaSystemError);
  EXPECT_NE(s.message().find("PCI device 0000:3b:00.0 not found"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace rina::transport::verbs
