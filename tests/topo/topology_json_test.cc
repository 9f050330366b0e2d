// The topology file parser: an example, and the one docs/topology.md shows,
// read into specs whose fields are written out here by hand, and every kind
// of bad input.
#include "topo/topology_json.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace rina::topo {
namespace {

constexpr const char* kExample = R"({
  "name": "lab", "spines": 1, "spine_link_mbit": 2000,
  "racks": [
    {"name": "r0", "ina": true,
     "hosts": ["h0", {"name": "h1", "link_mbit": 250, "addr": "10.77.0.2"}],
     "switch": "10.77.0.254:9300", "host_link_mbit": 500, "uplink_mbit": 2000},
    {"name": "r1", "ranks": 2}
  ]
})";

// The example of docs/topology.md (its first json block) reads as the page
// says: two spines with a rate each, an INA rack with its switch and a host
// with an address per spine, and a rack given by its rank count.
TEST(TopologyJson, DocumentedExampleReads) {
  std::ifstream f(RINA_SOURCE_DIR "/docs/topology.md");
  ASSERT_TRUE(f.good());
  const std::string page((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t open = page.find("```json\n");
  ASSERT_NE(open, std::string::npos) << "docs/topology.md has no json example";
  const size_t begin = open + 8;
  const size_t end = page.find("```", begin);
  ASSERT_NE(end, std::string::npos);
  TopologySpec spec;
  Status s = parseTopologyJson(page.substr(begin, end - begin), &spec);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(spec.name, "lab");
  EXPECT_EQ(spec.spines, 2);
  EXPECT_EQ(spec.spineLinkMbitBySpine, (std::vector<double>{2000, 500}));
  ASSERT_EQ(spec.racks.size(), 2u);
  const RackSpec& r0 = spec.racks[0];
  EXPECT_EQ(r0.name, "r0");
  EXPECT_TRUE(r0.ina);
  EXPECT_EQ(r0.switchCtrl, "10.77.0.254:9300");
  EXPECT_EQ(r0.hostLinkMbit, 500);
  EXPECT_EQ(r0.uplinkMbit, 2000);
  ASSERT_EQ(r0.hosts.size(), 2u);
  EXPECT_EQ(r0.hosts[0].name, "h0");
  EXPECT_EQ(r0.hosts[1].name, "h1");
  EXPECT_EQ(r0.hosts[1].linkMbit, 250);
  EXPECT_EQ(r0.hosts[1].addr, "10.77.0.2");
  EXPECT_EQ(r0.hosts[1].spineAddrs, (std::vector<std::string>{"10.77.0.2", "10.78.0.2"}));
  const RackSpec& r1 = spec.racks[1];
  EXPECT_EQ(r1.name, "r1");
  EXPECT_FALSE(r1.ina);
  EXPECT_EQ(r1.rankCount, 2);
  EXPECT_TRUE(r1.hosts.empty());
}

TEST(TopologyJson, ReadsEveryField) {
  TopologySpec spec;
  Status s = parseTopologyJson(kExample, &spec);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(spec.name, "lab");
  EXPECT_EQ(spec.spines, 1);
  EXPECT_EQ(spec.spineLinkMbit, 2000);
  ASSERT_EQ(spec.racks.size(), 2u);
  const RackSpec& r0 = spec.racks[0];
  EXPECT_EQ(r0.name, "r0");
  EXPECT_TRUE(r0.ina);
  EXPECT_EQ(r0.rankCount, 0);
  ASSERT_EQ(r0.hosts.size(), 2u);
  EXPECT_EQ(r0.hosts[0].name, "h0");
  EXPECT_EQ(r0.hosts[0].linkMbit, 0);
  EXPECT_EQ(r0.hosts[0].addr, "");
  EXPECT_EQ(r0.hosts[1].name, "h1");
  EXPECT_EQ(r0.hosts[1].linkMbit, 250);
  EXPECT_EQ(r0.hosts[1].addr, "10.77.0.2");
  EXPECT_EQ(r0.switchCtrl, "10.77.0.254:9300");
  EXPECT_EQ(r0.hostLinkMbit, 500);
  EXPECT_EQ(r0.uplinkMbit, 2000);
  const RackSpec& r1 = spec.racks[1];
  EXPECT_EQ(r1.name, "r1");
  EXPECT_FALSE(r1.ina);
  EXPECT_EQ(r1.rankCount, 2);
  EXPECT_TRUE(r1.hosts.empty());
  EXPECT_EQ(r1.switchCtrl, "");
}

TEST(TopologyJson, DefaultsAndUnnamedRacks) {
  TopologySpec spec;
  Status s = parseTopologyJson(R"({"racks": [{"ranks": 3}, {"ranks": 1, "ina": false}]})", &spec);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(spec.name, "");
  EXPECT_EQ(spec.spines, 1);
  EXPECT_EQ(spec.spineLinkMbit, 0);
  ASSERT_EQ(spec.racks.size(), 2u);
  EXPECT_EQ(spec.racks[0].name, "r0");
  EXPECT_EQ(spec.racks[1].name, "r1");
  EXPECT_EQ(spec.racks[0].rankCount, 3);
}

TEST(TopologyJson, WritesWhatItReads) {
  TopologySpec spec;
  ASSERT_TRUE(parseTopologyJson(kExample, &spec).ok());
  spec.racks[0].hosts[0].linkMbit = 2.5;  // a fraction stays one
  TopologySpec again;
  std::string text = topologyToJson(spec);
  Status s = parseTopologyJson(text, &again);
  ASSERT_TRUE(s.ok()) << s.message() << "\n" << text;
  // The written form, compact, as the schema spells it.
  EXPECT_EQ(
      topologyToJson(again, -1),
      R"({"name":"lab","spine_link_mbit":2000,"racks":[{"name":"r0","ina":true,)"
      R"("hosts":[{"name":"h0","link_mbit":2.5},{"name":"h1","link_mbit":250,"addr":"10.77.0.2"}],)"
      R"("switch":"10.77.0.254:9300","host_link_mbit":500,"uplink_mbit":2000},)"
      R"({"name":"r1","ranks":2}]})");
}

TEST(TopologyJson, LoadsAFileAndNamesItInErrors) {
  std::string path = ::testing::TempDir() + "/topo_test.json";
  {
    std::ofstream f(path);
    f << kExample;
  }
  TopologySpec spec;
  Status s = loadTopologyFile(path, &spec);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(spec.racks.size(), 2u);
  {
    std::ofstream f(path);
    f << R"({"racks": [{"ranks": 0}]})";
  }
  s = loadTopologyFile(path, &spec);
  EXPECT_EQ(s.code(), rinaInvalidArgument);
  EXPECT_EQ(s.message().rfind(path + ": ", 0), 0u) << s.message();
  std::remove(path.c_str());
  s = loadTopologyFile(path, &spec);
  EXPECT_EQ(s.code(), rinaSystemError);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
}

// Several spines (planes): per-spine uplink rates and per-spine addresses.
TEST(TopologyJson, PerSpineRatesAndAddresses) {
  const char* text = R"({"spines": 2, "spine_link_mbit": [100, 400],
    "racks": [{"name": "a", "hosts": [{"name": "a0", "addr": "10.77.1.1",
                                        "spine_addrs": ["10.77.1.1", "10.78.1.1"]}],
               "uplink_mbit": [50, 200]},
              {"name": "b", "ranks": 1},
              {"name": "c", "ranks": 1, "uplink_mbit": 300}]})";
  TopologySpec spec;
  Status s = parseTopologyJson(text, &spec);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(spec.spineLinkMbitBySpine, (std::vector<double>{100, 400}));
  EXPECT_EQ(spec.racks[0].hosts[0].spineAddrs,
            (std::vector<std::string>{"10.77.1.1", "10.78.1.1"}));
  // The rack's own list, else the rack's one rate, else spine_link_mbit's entry.
  EXPECT_EQ(uplinkMbitOn(spec, spec.racks[0], 0), 50);
  EXPECT_EQ(uplinkMbitOn(spec, spec.racks[0], 1), 200);
  EXPECT_EQ(uplinkMbitOn(spec, spec.racks[1], 0), 100);
  EXPECT_EQ(uplinkMbitOn(spec, spec.racks[1], 1), 400);
  EXPECT_EQ(uplinkMbitOn(spec, spec.racks[2], 1), 300);
  TopologySpec again;
  ASSERT_TRUE(parseTopologyJson(topologyToJson(spec), &again).ok());
  EXPECT_EQ(topologyToJson(again, -1), topologyToJson(spec, -1));
  EXPECT_EQ(again.racks[0].uplinkMbitBySpine, (std::vector<double>{50, 200}));
}

struct BadInput {
  const char* text;
  const char* expect;  // a piece of the message
};

// What gtest prints for GetParam() (instead of the two pointers' bytes).
void PrintTo(const BadInput& b, std::ostream* os) {
  *os << "text " << ::testing::PrintToString(b.text) << " -> error containing "
      << ::testing::PrintToString(b.expect);
}

class TopologyJsonRejects : public ::testing::TestWithParam<BadInput> {};

TEST_P(TopologyJsonRejects, WithAMessageNamingThePlace) {
  TopologySpec spec;
  spec.name = "untouched";
  Status s = parseTopologyJson(GetParam().text, &spec);
  EXPECT_EQ(s.code(), rinaInvalidArgument) << GetParam().text;
  EXPECT_NE(s.message().find(GetParam().expect), std::string::npos)
      << "message: " << s.message() << "\nexpected to contain: " << GetParam().expect;
  EXPECT_EQ(spec.name, "untouched");  // no partial result
}

INSTANTIATE_TEST_SUITE_P(
    BadInputs, TopologyJsonRejects,
    ::testing::Values(
        BadInput{R"({"racks": [)", "not valid JSON"}, BadInput{"", "not valid JSON"},
        BadInput{R"([1, 2])", "must be an object"},
        BadInput{R"({"racks": [{"ranks": 1}], "spine": 2})", "unknown key 'spine'"},
        BadInput{R"({"name": "x"})", "no 'racks'"},
        BadInput{R"({"racks": []})", "key 'racks': must be a non-empty list"},
        BadInput{R"({"racks": {"r0": 1}})", "key 'racks'"},
        BadInput{R"({"racks": [3]})", "racks[0] must be an object"},
        BadInput{R"({"racks": [{"name": "r0", "ranks": 1, "hostz": []}]})",
                 "rack 'r0' (racks[0]): unknown key 'hostz'"},
        BadInput{R"({"racks": [{"name": "r0"}]})", "rack 'r0' (racks[0]): give exactly one"},
        BadInput{R"({"racks": [{"name": "r0", "ranks": 1, "hosts": ["a"]}]})",
                 "rack 'r0' (racks[0]): give exactly one"},
        BadInput{R"({"racks": [{"name": "r0", "ranks": 0}]})", "key 'ranks': must be a positive"},
        BadInput{R"({"racks": [{"name": "r0", "ranks": 1.5}]})", "key 'ranks'"},
        BadInput{R"({"racks": [{"name": "r0", "ranks": "2"}]})", "key 'ranks'"},
        BadInput{R"({"racks": [{"name": "r0", "hosts": []}]})", "key 'hosts': must be a non-empty"},
        BadInput{R"({"racks": [{"name": "r0", "hosts": [7]}]})", "each host must be a name"},
        BadInput{R"({"racks": [{"name": "r0", "hosts": ["a b"]}]})", "key 'hosts': must be a name"},
        BadInput{R"({"racks": [{"name": "r0", "hosts": [{"link_mbit": 5}]}]})", "has no 'name'"},
        BadInput{R"({"racks": [{"name": "r0", "hosts": [{"name": "h1", "rate": 5}]}]})",
                 "rack 'r0' (racks[0]): host 'h1': unknown key 'rate'"},
        BadInput{R"({"racks": [{"name": "r0", "hosts": [{"name": "h1", "link_mbit": -5}]}]})",
                 "host 'h1': key 'link_mbit': must be a positive number of Mbit/s, got -5"},
        BadInput{R"({"racks": [{"name": "r0", "hosts": [{"name": "h1", "link_mbit": "fast"}]}]})",
                 "host 'h1': key 'link_mbit'"},
        BadInput{R"({"racks": [{"name": "r0", "hosts": [{"name": "h1", "addr": "10.77.0.300"}]}]})",
                 "host 'h1': key 'addr': must be an IPv4 address"},
        BadInput{R"({"racks": [{"name": "r0", "ranks": 1, "host_link_mbit": 0}]})",
                 "rack 'r0' (racks[0]): key 'host_link_mbit'"},
        BadInput{R"({"racks": [{"name": "r0", "ranks": 1, "uplink_mbit": 1e30}]})",
                 "key 'uplink_mbit'"},
        BadInput{R"({"racks": [{"ranks": 1}], "spine_link_mbit": null})", "key 'spine_link_mbit'"},
        BadInput{R"({"racks": [{"ranks": 1}], "spines": 0})", "key 'spines'"},
        BadInput{R"({"racks": [{"ranks": 1, "ina": "yes"}]})", "racks[0]): key 'ina'"},
        BadInput{R"({"racks": [{"ranks": 1, "ina": true, "switch": "10.77.0.1"}]})",
                 "key 'switch': must be the switch's control address"},
        BadInput{R"({"racks": [{"ranks": 1, "ina": true, "switch": "10.77.0.1:70000"}]})",
                 "key 'switch'"},
        BadInput{R"({"racks": [{"ranks": 1, "ina": true, "switch": "tor0:9300"}]})",
                 "key 'switch'"},
        BadInput{R"({"racks": [{"ranks": 1, "switch": "10.77.0.1:9300"}]})", "needs \"ina\": true"},
        BadInput{R"({"racks": [{"name": "a", "ranks": 1}, {"name": "a", "ranks": 1}]})",
                 "racks[1]: rack name 'a' is used twice"},
        BadInput{
            R"({"racks": [{"name": "a", "hosts": ["h0"]}, {"name": "b", "hosts": ["h1", "h0"]}]})",
            "rack 'b' (racks[1]): host 'h0' is listed twice"},
        BadInput{R"({"racks": [{"name": "a", "hosts": ["h0", "h0"]}]})",
                 "host 'h0' is listed twice"},
        BadInput{R"({"name": "", "racks": [{"ranks": 1}]})", "key 'name'"},
        BadInput{
            R"({"spines": 2, "racks": [{"name": "r0", "ranks": 1, "uplink_mbit": [1, 2, 3]}]})",
            "rack 'r0' (racks[0]): key 'uplink_mbit': must be one rate for every spine or a "
            "list of 2 rates"},
        BadInput{R"({"spines": 2, "racks": [{"name": "r0", "ranks": 1, "uplink_mbit": [1, -2]}]})",
                 "key 'uplink_mbit[1]': must be a positive number of Mbit/s, got -2"},
        BadInput{R"({"spines": 3, "spine_link_mbit": [1, 2], "racks": [{"ranks": 1}]})",
                 "key 'spine_link_mbit': must be one rate for every spine or a list of 3"},
        BadInput{R"({"racks": [{"name": "r0", "hosts": [{"name": "h1", "spine_addrs": []}]}]})",
                 "host 'h1': key 'spine_addrs': must list one IPv4 address per spine (1)"},
        BadInput{R"({"spines": 2, "racks": [{"name": "r0", "hosts": [{"name": "h1",
                     "spine_addrs": ["10.77.1.1", "10.78.1.300"]}]}]})",
                 "host 'h1': key 'spine_addrs': each entry must be an IPv4 address"},
        BadInput{R"({"spines": 2, "racks": [{"name": "r0", "hosts": [{"name": "h1",
                     "spine_addrs": ["10.77.1.1", "10.77.1.1"]}]}]})",
                 "host 'h1': key 'spine_addrs': an address is listed twice"}));

}  // namespace
}  // namespace rina::topo
