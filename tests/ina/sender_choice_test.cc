// RINA_INA_TRANSPORT through rinaCommInitRank, on a machine without an RDMA
// device (as CI): auto falls back to UDP with one INFO line per INA worker
// naming why, and the collective is right; rdma and bad values fail init
// naming the knob. (tests/ina/uc_test.cc covers the choice itself for every
// case, devices included.)
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rank_harness.h"
#include "rina/rina.h"

namespace rina::testing {
namespace {

[[maybe_unused]] const bool kGenerousInaTimeout = useGenerousInaTimeout();

// The log lines that contain every one of `parts`.
std::vector<std::string> linesWith(const std::string& log, std::vector<std::string> parts) {
  std::vector<std::string> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    bool all = true;
    for (const std::string& p : parts) all = all && line.find(p) != std::string::npos;
    if (all) out.push_back(line);
  }
  return out;
}

// What follows `marker` on a line.
std::string after(const std::string& line, const std::string& marker) {
  size_t at = line.find(marker);
  return at == std::string::npos ? "" : line.substr(at + marker.size());
}

// One INA rack of two (the local rina-switchd on loopback) and one plain rank.
void runRackAndCapture(std::string* log) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv racks("RINA_RACKS", "2:ina,1");
  ScopedEnv sw("RINA_SWITCH", "auto");
  ScopedEnv debug("RINA_DEBUG", "INFO");
  ::testing::internal::CaptureStderr();
  runThreads(3, [](int rank, rinaComm_t comm) {
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "rina"), rinaSuccess);
    std::vector<int32_t> v(3000, rank + 1);
    ASSERT_EQ(rinaAllReduce(v.data(), v.data(), v.size(), rinaInt32, rinaSum, comm), rinaSuccess);
    EXPECT_EQ(v[2999], 6);
  });
  *log = ::testing::internal::GetCapturedStderr();
}

TEST(InaTransportInit, AutoWithoutADeviceUsesUdpAndSaysWhyOncePerWorker) {
  std::string log;
  runRackAndCapture(&log);
  // Ranks 0 and 1 form the INA rack; rank 2 has no INA client.
  const std::vector<std::string> udp = linesWith(log, {": INA over UDP: "});
  ASSERT_EQ(udp.size(), 2u) << log;
  EXPECT_EQ(linesWith(log, {"rank 0: rack ", ": INA over UDP: "}).size(), 1u) << log;
  EXPECT_EQ(linesWith(log, {"rank 1: rack ", ": INA over UDP: "}).size(), 1u) << log;
  // Without libibverbs, or with it and no device (ENOSYS here), or (on an
  // RDMA machine) because the auto-started switch is on loopback.
  const std::string why = after(udp[0], ": INA over UDP: ");
  EXPECT_TRUE(why.find("no RDMA device") == 0 ||
              why.find("librina was built without libibverbs") == 0 ||
              why.find("the switch 127.0.0.1 is on loopback") == 0)
      << why;
  EXPECT_EQ(after(udp[1], ": INA over UDP: "), why);
  EXPECT_TRUE(linesWith(log, {"INA over RDMA UC"}).empty()) << log;
}

TEST(InaTransportInit, IbDisableIsTheReasonWhenSet) {
  ScopedEnv off("RINA_IB_DISABLE", "1");
  std::string log;
  runRackAndCapture(&log);
  const std::vector<std::string> udp = linesWith(log, {": INA over UDP: "});
  ASSERT_EQ(udp.size(), 2u) << log;
  for (const std::string& l : udp) {
    EXPECT_EQ(after(l, ": INA over UDP: "), "RDMA disabled by RINA_IB_DISABLE=1") << l;
  }
}

TEST(InaTransportInit, UdpIsTakenAsAsked) {
  ScopedEnv udp("RINA_INA_TRANSPORT", "udp");
  std::string log;
  runRackAndCapture(&log);
  EXPECT_EQ(linesWith(log, {": INA over UDP: RINA_INA_TRANSPORT=udp"}).size(), 2u) << log;
}

// Both ranks of a "2:ina" rack fail init, each naming the knob.
void expectInitFails(const std::string& expected, rinaResult_t code) {
  ScopedEnv switchd("RINA_SWITCHD_PATH", RINA_SWITCHD_PATH);
  ScopedEnv racks("RINA_RACKS", "2:ina");
  ScopedEnv sw("RINA_SWITCH", "auto");
  ScopedEnv timeout("RINA_TIMEOUT_MS", "5000");
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
  std::vector<rinaResult_t> rc(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      rinaComm_t comm = nullptr;
      rc[r] = rinaCommInitRank(&comm, 2, id, r);
      errors[r] = rinaCommGetLastError(nullptr);
      if (comm) rinaCommDestroy(comm);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(rc[r], code) << errors[r];
    EXPECT_NE(errors[r].find(expected), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find("rank " + std::to_string(r)), std::string::npos) << errors[r];
  }
}

TEST(InaTransportInit, RdmaWithoutAWayThereFailsInit) {
  ScopedEnv rdma("RINA_INA_TRANSPORT", "rdma");
  expectInitFails("RINA_INA_TRANSPORT=rdma: cannot send INA over RDMA: ", rinaSystemError);
}

TEST(InaTransportInit, BadValueFailsInit) {
  ScopedEnv bad("RINA_INA_TRANSPORT", "roce");
  expectInitFails("RINA_INA_TRANSPORT=roce: give auto, udp or rdma", rinaInvalidArgument);
}

}  // namespace
}  // namespace rina::testing
