// Bad input is rejected with a message that says what and where.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "sim/cluster.h"
#include "sim/options.h"
#include "sim/topology.h"

namespace rina::sim {
namespace {

// parseSimOptions on a command line; returns the error ("" when accepted).
std::string optionsError(std::vector<const char*> args) {
  args.insert(args.begin(), "rina-sim");
  SimOptions o;
  std::string error;
  const bool ok = parseSimOptions(static_cast<int>(args.size()), args.data(), &o, &error);
  return ok ? "" : error;
}

TEST(Options, GoodLineIsAccepted) {
  EXPECT_EQ(optionsError({"--leaf-spine", "4,8,2", "-a", "ring,rina", "-s", "64M", "--jobs", "2",
                          "--priorities", "1,0", "--policy", "static,esa"}),
            "");
}

TEST(Options, BadLinesNameTheFlag) {
  const std::vector<std::pair<std::vector<const char*>, std::string>> cases = {
      {{"--leaf-spine", "4,8"}, "bad value for --leaf-spine"},
      {{"--leaf-spine", "0,8,1"}, "bad value for --leaf-spine"},
      {{"--fat-tree", "5"}, "bad value for --fat-tree: '5'"},
      {{"--fat-tree", "4", "--ina-fraction", "1.5"}, "bad value for --ina-fraction"},
      {{"--fat-tree", "4", "--oversub", "0.5"}, "bad value for --oversub"},
      {{"--fat-tree", "4", "-a", "ring,bogus"},
       "bad value for -a: 'ring,bogus' (ring, hier, rina, ps-ina)"},
      // A library algorithm the simulator does not model.
      {{"--fat-tree", "4", "-a", "rd"}, "bad value for -a: 'rd' (ring, hier, rina, ps-ina)"},
      {{"--fat-tree", "4", "-s", "0"}, "bad value for -s"},
      {{"--fat-tree", "4", "-s", "12Q"}, "bad value for -s"},
      {{"--fat-tree", "4", "--slow", "0.5"}, "bad value for --slow"},
      {{"--fat-tree", "4", "--policy", "fifo"}, "bad value for --policy"},
      {{"--fat-tree", "4", "--host-gbps", "-1"}, "bad value for --host-gbps"},
      {{"--fat-tree", "4", "--bogus", "1"}, "unknown flag: --bogus"},
      {{"--fat-tree"}, "--fat-tree needs a value"},
      {{"-a", "ring"}, "give exactly one topology"},
      {{"--fat-tree", "4", "--leaf-spine", "1,1,1"}, "give exactly one topology"},
      {{"--fat-tree", "4", "--jobs", "3", "--priorities", "1,2"},
       "--priorities lists 2 values for 3 jobs"},
      {{"--fat-tree", "4", "--model", "packets"}, "bad value for --model"},
      {{"--fat-tree", "4", "--model", "steps", "--jobs", "2"},
       "--model steps simulates one allreduce"},
      {{"--fat-tree", "4", "--ps", "0"}, "bad value for --ps"},
  };
  for (const auto& [args, want] : cases) {
    const std::string error = optionsError(args);
    EXPECT_NE(error.find(want), std::string::npos)
        << "got '" << error << "', want '" << want << "'";
  }
}

// A topology file in the test's temporary directory.
class TopologyFile : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    path_ = ::testing::TempDir() + "sim_topo_" + std::to_string(getpid()) + ".json";
    std::ofstream(path_) << text;
    return path_;
  }
  std::string loadError(const std::string& text) {
    SimTopology t;
    std::string error;
    return loadTopologyJson(write(text), {}, &t, &error) ? "" : error;
  }
  void TearDown() override {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  std::string path_;
};

TEST_F(TopologyFile, GoodFileIsLoaded) {
  // The RINA_TOPO_FILE schema; rates in Mbit/s, uplink_mbit per ToR-spine link.
  SimTopology t;
  std::string error;
  ASSERT_TRUE(loadTopologyJson(write(R"({"name": "lab", "spines": 2, "racks": [
      {"name": "a", "ina": true, "host_link_mbit": 1000, "uplink_mbit": 500,
       "hosts": ["h1", {"name": "h2", "link_mbit": 250}]},
      {"name": "b", "ranks": 3}]})"),
                               {}, &t, &error))
      << error;
  ASSERT_EQ(t.workers(), 5);
  EXPECT_EQ(t.inaRacks(), 1);
  EXPECT_DOUBLE_EQ(t.hosts[0].rate, 1000e6 / 8);
  EXPECT_DOUBLE_EQ(t.hosts[1].rate, 250e6 / 8);
  EXPECT_DOUBLE_EQ(t.hosts[2].rate, 100e9 / 8);  // the default host rate
  EXPECT_DOUBLE_EQ(t.linkCapacity[t.racks[0].up[1]], 500e6 / 8);
  EXPECT_DOUBLE_EQ(t.linkCapacity[t.racks[1].up[0]], 3 * 100e9 / 8 / 2);  // non-blocking
}

TEST_F(TopologyFile, BadFilesAreRejectedWithThePath) {
  // The parser is lib/topo's (tested there); rina-sim passes its message on.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "not valid JSON"},
      {R"({"rackz": [], "racks": [{"ranks": 1}]})", "unknown key 'rackz'"},
      {R"({"racks": [{"name": "x"}]})", "give exactly one of 'hosts'"},
      {R"({"racks": [{"ranks": 1, "host_link_mbit": -5}]})", "host_link_mbit"},
  };
  for (const auto& [text, want] : cases) {
    const std::string error = loadError(text);
    EXPECT_NE(error.find(path_ + ": "), std::string::npos) << error;
    EXPECT_NE(error.find(want), std::string::npos) << text << ": got '" << error << "'";
  }
}

TEST(TopologyFileMissing, NamesThePath) {
  SimTopology t;
  std::string error;
  EXPECT_FALSE(loadTopologyJson("/nonexistent/topo.json", {}, &t, &error));
  EXPECT_NE(error.find("topology file /nonexistent/topo.json: cannot open"), std::string::npos)
      << error;
}

TEST(Generators, RejectBadShapes) {
  SimTopology t;
  std::string error;
  EXPECT_FALSE(fatTree(3, {}, &t, &error));
  EXPECT_NE(error.find("fat-tree k must be even"), std::string::npos) << error;
  EXPECT_FALSE(leafSpine(0, 4, 1, {}, &t, &error));
  EXPECT_NE(error.find("leaf-spine needs"), std::string::npos) << error;
  TopologyOptions opt;
  opt.sw.window = 0;
  EXPECT_FALSE(leafSpine(1, 4, 1, opt, &t, &error));
  EXPECT_NE(error.find("window"), std::string::npos) << error;
}

TEST(Jobs, BadJobsAreRejected) {
  SimTopology t;
  std::string error;
  ASSERT_TRUE(leafSpine(2, 2, 1, {}, &t, &error)) << error;
  DefaultPlanner planner;
  ClusterResult res;
  const std::vector<std::pair<JobSpec, std::string>> cases = {
      {JobSpec{"empty", {}, Algorithm::kRing, 1, 1, 0, 0, 0, 0}, "job empty has no workers"},
      {JobSpec{"far", {0, 9}, Algorithm::kRing, 1, 1, 0, 0, 0, 0},
       "worker 9 is not in the topology"},
      {JobSpec{"twice", {1, 1}, Algorithm::kRing, 1, 1, 0, 0, 0, 0}, "ascending and distinct"},
      {JobSpec{"zero", {0, 1}, Algorithm::kRing, 0, 1, 0, 0, 0, 0}, "needs bytes > 0"},
  };
  for (const auto& [job, want] : cases) {
    EXPECT_FALSE(simulateCluster(t, {job}, {}, planner, &res, &error));
    EXPECT_NE(error.find(want), std::string::npos) << error;
  }
  EXPECT_FALSE(simulateCluster(t, {}, {}, planner, &res, &error));
  EXPECT_NE(error.find("no job"), std::string::npos) << error;
}

}  // namespace
}  // namespace rina::sim
