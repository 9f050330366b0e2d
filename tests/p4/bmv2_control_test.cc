// rina-bmv2ctl's pieces without BMv2: the runtime CLI session against a
// stand-in CLI (fake_runtime_cli.py: BMv2's prompt and answer formats), the
// commands the data plane sends for a job (checked against the entries
// `rina-switchctl ENTRIES` documents, written out here), its failures, and
// the neighbor tables.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "bmv2/bmv2_data_plane.h"
#include "bmv2/neighbors.h"
#include "bmv2/runtime_cli.h"
#include "switchd/control.h"

namespace rina::bmv2 {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/rina-bmv2-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path_).c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string readAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string l; std::getline(s, l);) out.push_back(l);
  return out;
}

class FakeCli : public ::testing::Test {
 protected:
  std::string log() const { return dir_.path() + "/commands"; }
  Status start(const std::string& extra, std::unique_ptr<RuntimeCli>* cli) {
    RuntimeCliOptions o;
    o.command =
        std::string("/usr/bin/python3 '") + RINA_FAKE_CLI + "' --log '" + log() + "' " + extra;
    o.thriftPort = 9999;
    o.timeoutMs = 30000;  // python's start on a loaded machine
    return RuntimeCli::start(o, cli);
  }
  TempDir dir_;
};

TEST_F(FakeCli, RunsBatchesAndSplitsTheirOutputs) {
  std::unique_ptr<RuntimeCli> cli;
  ASSERT_TRUE(start("", &cli).ok());
  std::vector<std::string> commands = {"table_add T a 1 => 2", "register_write R 0 1",
                                       "table_add T a 2 => 3", "counter_read C 4"};
  std::vector<std::string> out;
  Status s = cli->run(commands, &out);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(parseHandle(out[0]), 0);
  EXPECT_EQ(out[1], "");
  EXPECT_EQ(parseHandle(out[2]), 1);
  EXPECT_EQ(parseCounterPackets(out[3]), 0);
  EXPECT_EQ(lines(readAll(log())), commands);
  // A batch larger than a socket buffer both ways.
  std::vector<std::string> many(3000, "counter_read RinaIngress.verdicts 3");
  s = cli->run(many, &out);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(out.size(), many.size());
  EXPECT_EQ(parseCounterPackets(out.back()), 0);
}

TEST_F(FakeCli, AnErrorAnswerFailsTheBatchNamingTheCommand) {
  std::unique_ptr<RuntimeCli> cli;
  ASSERT_TRUE(start("--fail-on bad_one", &cli).ok());
  std::vector<std::string> commands = {"register_write R 0 1", "table_add T bad_one 1 => 2",
                                       "register_write R 1 1"};
  Status s = cli->run(commands, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'table_add T bad_one 1 => 2' failed: Invalid table operation"),
            std::string::npos)
      << s.message();
  std::string out;
  s = cli->run("frobnicate", &out);
  EXPECT_NE(s.message().find("Unknown syntax"), std::string::npos) << s.message();
  EXPECT_TRUE(cli->run("register_write R 0 1").ok());  // the session goes on
}

TEST_F(FakeCli, ACliThatExitsFailsThisAndEveryLaterBatch) {
  std::unique_ptr<RuntimeCli> cli;
  ASSERT_TRUE(start("--die-on register_write", &cli).ok());
  Status s = cli->run("register_write R 0 1");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exited with status 1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("TTransportException"), std::string::npos) << s.message();
  s = cli->run("counter_read C 0");
  EXPECT_FALSE(s.ok());
}

TEST_F(FakeCli, ACliThatSaysNothingTimesOut) {
  std::unique_ptr<RuntimeCli> cli;
  ASSERT_TRUE(start("--hang-on counter_read", &cli).ok());
  cli->setTimeoutMs(300);
  Status s = cli->run("counter_read C 0");
  EXPECT_EQ(s.code(), rinaTimeout) << s.message();
  EXPECT_NE(s.message().find("no answer in 300 ms"), std::string::npos) << s.message();
}

TEST_F(FakeCli, ACliThatCannotConnectFailsToStart) {
  std::unique_ptr<RuntimeCli> cli;
  Status s = start("--refuse-start", &cli);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Could not connect to thrift client on port 9999"), std::string::npos)
      << s.message();
  EXPECT_EQ(cli, nullptr);
}

TEST_F(FakeCli, ACommandWithANewlineIsRefused) {
  std::unique_ptr<RuntimeCli> cli;
  ASSERT_TRUE(start("", &cli).ok());
  Status s = cli->run("register_write R 0 1\nreset_state");
  EXPECT_EQ(s.code(), rinaInvalidArgument) << s.message();
}

// The job of ENTRIES' example in p4_agent/README.md, on two hosts.
switchd::JobEntry exampleJob() {
  return {7, (uint64_t{3} << 32) | 1234, 2, {{0x0A000001, 5000}, {0x0A000002, 5001}}};
}

NeighborMap exampleNeighbors() {
  return {{0x0A000001, {2, 0, 0, 0, 0, 1}}, {0x0A000002, {2, 0, 0, 0, 0, 2}}};
}

TEST_F(FakeCli, TheDataPlaneInstallsAndRemovesWhatEntriesDescribes) {
  std::unique_ptr<RuntimeCli> cli;
  ASSERT_TRUE(start("--packets 5", &cli).ok());
  std::vector<std::string> failures;
  uint64_t clock = 100;
  Bmv2DataPlaneOptions o;
  o.totalSlots = 16;
  o.switchPort = 3;
  o.neighbors = exampleNeighbors();
  o.resolveWaitMs = 0;
  o.clockMs = [&] { return clock; };
  o.onFailure = [&](const Status& s) { failures.push_back(s.message()); };
  Bmv2DataPlane plane(*cli, o);
  ASSERT_TRUE(plane.prepare().ok());
  plane.installJob(exampleJob());
  plane.assignSlots(2, 4, 7);
  plane.removeJob(7);
  EXPECT_TRUE(failures.empty()) << failures.front();
  const std::vector<std::string> want = {
      "register_read RinaIngress.slot_owner 15",
      "register_read RinaIngress.slot_used 31",
      "register_read RinaIngress.slot_value_63 0",
      "counter_read RinaIngress.verdicts 15",
      "counter_read RinaIngress.malformed 11",
      "reset_state",
      "table_add RinaIngress.job_table RinaIngress.set_job 7 => 3 1234 2 7",
      "table_add RinaIngress.source_table RinaIngress.set_source 7 0 => 10.0.0.1 5000",
      "table_add RinaEgress.member_table RinaEgress.set_member 7 0 => 10.0.0.1 5000",
      "table_add RinaIngress.source_table RinaIngress.set_source 7 1 => 10.0.0.2 5001",
      "table_add RinaEgress.member_table RinaEgress.set_member 7 1 => 10.0.0.2 5001",
      "mc_mgrp_create 7",
      "mc_node_create 0 3",
      "mc_node_create 1 3",
      "counter_write RinaIngress.job_activity 7 0 0",
      "table_add RinaEgress.neighbor_table RinaEgress.set_neighbor 10.0.0.1 => 02:00:00:00:00:01",
      "table_add RinaEgress.neighbor_table RinaEgress.set_neighbor 10.0.0.2 => 02:00:00:00:00:02",
      "mc_node_associate 7 0",
      "mc_node_associate 7 1",
      "register_write RinaIngress.slot_owner 2 7",
      "register_write RinaIngress.slot_used 4 0",
      "register_write RinaIngress.slot_used 5 0",
      "register_write RinaIngress.slot_owner 3 7",
      "register_write RinaIngress.slot_used 6 0",
      "register_write RinaIngress.slot_used 7 0",
      // removeJob: the slots freed, every entry deleted by the handle it got.
      "register_write RinaIngress.slot_owner 2 0",
      "register_write RinaIngress.slot_owner 3 0",
      "table_delete RinaIngress.job_table 0",
      "table_delete RinaIngress.source_table 0",
      "table_delete RinaEgress.member_table 0",
      "table_delete RinaIngress.source_table 1",
      "table_delete RinaEgress.member_table 1",
      "mc_node_dissociate 7 0",
      "mc_node_destroy 0",
      "mc_node_dissociate 7 1",
      "mc_node_destroy 1",
      "mc_mgrp_destroy 7",
      "table_delete RinaEgress.neighbor_table 0",
      "table_delete RinaEgress.neighbor_table 1",
  };
  EXPECT_EQ(lines(readAll(log())), want);
}

TEST_F(FakeCli, ANeighborSharedByTwoJobsStaysUntilBothLeave) {
  std::unique_ptr<RuntimeCli> cli;
  ASSERT_TRUE(start("", &cli).ok());
  Bmv2DataPlaneOptions o;
  o.neighbors = exampleNeighbors();
  o.resolveWaitMs = 0;
  Bmv2DataPlane plane(*cli, o);
  switchd::JobEntry a = exampleJob();
  switchd::JobEntry b{8, 99, 2, {{0x0A000001, 6000}, {0x0A000001, 6001}}};  // one host, twice
  plane.installJob(a);
  plane.installJob(b);
  std::string before = readAll(log());
  plane.removeJob(7);
  std::string removeA = readAll(log()).substr(before.size());
  EXPECT_EQ(removeA.find("neighbor_table 0"), std::string::npos) << removeA;  // b uses 10.0.0.1
  EXPECT_NE(removeA.find("table_delete RinaEgress.neighbor_table 1"), std::string::npos);
  before = readAll(log());
  plane.removeJob(8);
  std::string removeB = readAll(log()).substr(before.size());
  EXPECT_NE(removeB.find("table_delete RinaEgress.neighbor_table 0"), std::string::npos) << removeB;
}

TEST_F(FakeCli, ActivityMovesWhenTheCounterDoesAndIsReadAtMostOncePerPeriod) {
  std::unique_ptr<RuntimeCli> cli;
  ASSERT_TRUE(start("--packets 5", &cli).ok());
  uint64_t clock = 1000;
  Bmv2DataPlaneOptions o;
  o.activityRefreshMs = 100;
  o.clockMs = [&] { return clock; };
  Bmv2DataPlane plane(*cli, o);
  // A count seen for the first time: activity at an unknown moment, so now.
  EXPECT_EQ(plane.lastActivityMs(7), 1000u);
  clock = 1050;
  EXPECT_EQ(plane.lastActivityMs(7), 1000u);  // cached
  clock = 5000;
  EXPECT_EQ(plane.lastActivityMs(7), 1000u);  // read again: the count did not move
  EXPECT_EQ(lines(readAll(log())).size(), 2u);
}

TEST_F(FakeCli, AFailedCommandReachesTheFailureHandler) {
  std::unique_ptr<RuntimeCli> cli;
  ASSERT_TRUE(start("--fail-on mc_mgrp_create", &cli).ok());
  std::vector<std::string> failures;
  Bmv2DataPlaneOptions o;
  o.neighbors = exampleNeighbors();
  o.onFailure = [&](const Status& s) { failures.push_back(s.message()); };
  Bmv2DataPlane plane(*cli, o);
  plane.installJob(exampleJob());
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("job 7: runtime CLI: 'mc_mgrp_create 7' failed"), std::string::npos)
      << failures[0];
}

TEST_F(FakeCli, ASwitchWithoutTheProgramIsRefused) {
  std::unique_ptr<RuntimeCli> cli;
  ASSERT_TRUE(start("--fail-on slot_value_63", &cli).ok());
  Bmv2DataPlane plane(*cli, {});
  Status s = plane.prepare();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("does not run rina_v1model.p4"), std::string::npos) << s.message();
}

TEST_F(FakeCli, TheControllerProgramsTheSwitchOnRegister) {
  std::unique_ptr<RuntimeCli> cli;
  ASSERT_TRUE(start("", &cli).ok());
  Bmv2DataPlaneOptions o;
  o.totalSlots = 8;
  o.neighbors = exampleNeighbors();
  Bmv2DataPlane plane(*cli, o);
  switchd::ControllerOptions co{8, kProgramPayloadElems, kProgramDataPort, 1, 2000, false, 255};
  switchd::Controller controller(co, plane);
  std::vector<ina::PreemptNotice> notices;
  std::string reply = controller.handle(
      "REGISTER job=7 token=5 fanin=2 priority=1 slots=2 members=10.0.0.1:5000,10.0.0.2:5001", 1,
      &notices);
  EXPECT_EQ(reply, "OK GRANT job=7 base=0 length=2 payload=64 port=9100 ports=1");
  std::string log = readAll(this->log());
  EXPECT_NE(log.find("table_add RinaIngress.job_table RinaIngress.set_job 7 => 0 5 2 7"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("register_write RinaIngress.slot_owner 1 7"), std::string::npos) << log;
}

TEST(Neighbors, ParsesTheFileFormatAndRefusesBadLines) {
  NeighborMap m;
  Status s = parseNeighbors(
      "# rack a\n10.77.1.1 02:aa:bb:cc:dd:01\n\n10.77.1.2  02:AA:BB:CC:DD:02 # b\n", "f", &m);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(macString(m.at(0x0A4D0102)), "02:aa:bb:cc:dd:02");
  EXPECT_EQ(parseNeighbors("10.77.1.1 02:aa:bb:cc:dd\n", "f", &m).message(),
            "f:1: expected 'A.B.C.D aa:bb:cc:dd:ee:ff', got '10.77.1.1 02:aa:bb:cc:dd'");
  EXPECT_EQ(parseNeighbors("\n10.77.1.300 02:aa:bb:cc:dd:01\n", "f", &m).message(),
            "f:2: expected 'A.B.C.D aa:bb:cc:dd:ee:ff', got '10.77.1.300 02:aa:bb:cc:dd:01'");
  EXPECT_EQ(
      parseNeighbors("10.0.0.1 02:aa:bb:cc:dd:01\n10.0.0.1 02:aa:bb:cc:dd:02\n", "f", &m).message(),
      "f:2: 10.0.0.1 is listed twice");
  EXPECT_FALSE(parseNeighbors("10.0.0.1 02:aa:bb:cc:dd:0g\n", "f", &m).ok());
  EXPECT_FALSE(parseNeighbors("10.0.0.1 02-aa-bb-cc-dd-01\n", "f", &m).ok());
  EXPECT_FALSE(readNeighborFile("/nonexistent/neighbors", &m).ok());
}

TEST(Neighbors, TakesOnlyCompleteKernelEntries) {
  NeighborMap m = parseKernelNeighbors(
      "IP address       HW type     Flags       HW address            Mask     Device\n"
      "10.77.1.1        0x1         0x2         02:aa:bb:cc:dd:01     *        eth0\n"
      "10.77.1.2        0x1         0x0         00:00:00:00:00:00     *        eth0\n"
      "10.77.1.3        0x1         0x6         02:aa:bb:cc:dd:03     *        eth0\n");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(macString(m.at(0x0A4D0101)), "02:aa:bb:cc:dd:01");
  EXPECT_EQ(macString(m.at(0x0A4D0103)), "02:aa:bb:cc:dd:03");
  Mac mac{};
  EXPECT_TRUE(resolveNeighbor(0x0A4D0101, m, 0, &mac));
  EXPECT_EQ(macString(mac), "02:aa:bb:cc:dd:01");
}

}  // namespace
}  // namespace rina::bmv2
