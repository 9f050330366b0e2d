// rina-plan's input file: what each section sets, and every bad input.
#include "plan_file.h"

#include <gtest/gtest.h>

namespace rina::tools {
namespace {

const char kTopology[] =
    R"("topology": {"spines": 2, "spine_link_mbit": 1000,
        "racks": [{"name": "r0", "ina": true, "host_link_mbit": 100, "uplink_mbit": 500,
                   "hosts": [{"name": "a0", "link_mbit": 300}, "a1"]},
                  {"name": "r1", "ranks": 2, "host_link_mbit": 50}]})";

Status parse(const std::string& rest, PlanFile* out) {
  return parsePlanFile("{" + std::string(kTopology) + (rest.empty() ? "" : ", " + rest) + "}", out);
}

TEST(PlanFile, SectionsSetTheNetwork) {
  PlanFile pf;
  ASSERT_TRUE(parse(R"("measured": {"host_link_mbit": {"a1": 80}, "uplink_mbit": {"r1": [40, 60]},
                                    "spine_mbit": 900, "probes": [{"from": "a0", "to": "rank0", "mbit": 7},
                                                           {"from": "a1", "to": "rank1", "mbit": 9, "spine": 1}]},
                      "chunks": 6, "grid": {"ps": "a1", "rack_agg_mbit": {"r0": 2000}, "spine_agg_mbit": 5})",
                    &pf)
                  .ok());
  // Counted racks take the first ranks: r1 holds ranks 0, 1; a0, a1 are 2, 3.
  ASSERT_EQ(pf.net.hosts.size(), 4u);
  EXPECT_EQ(pf.net.hosts[0].name, "rank0");
  EXPECT_EQ(pf.net.hosts[0].linkMbit, 50);
  EXPECT_EQ(pf.net.hosts[2].name, "a0");
  EXPECT_EQ(pf.net.hosts[2].linkMbit, 300);
  EXPECT_EQ(pf.net.hosts[3].linkMbit, 80);  // measured over the rack default 100
  EXPECT_EQ(pf.net.racks[0].uplinkMbit, (std::vector<double>{500, 500}));
  EXPECT_EQ(pf.net.racks[1].uplinkMbit, (std::vector<double>{40, 60}));
  EXPECT_EQ(pf.net.spineMbit, (std::vector<double>{900, 900}));
  ASSERT_EQ(pf.net.probes.size(), 2u);
  EXPECT_EQ(pf.net.probes[0].from, 2);
  EXPECT_EQ(pf.net.probes[0].to, 0);
  EXPECT_EQ(pf.net.probes[0].spine, -1);  // any path
  EXPECT_EQ(pf.net.probes[1].spine, 1);
  EXPECT_EQ(pf.chunks, 6);
  EXPECT_TRUE(pf.hasGrid);
  EXPECT_EQ(pf.grid.psHost, 3);
  EXPECT_EQ(pf.grid.rackAggMbit, (std::vector<double>{2000, 0}));
  EXPECT_EQ(pf.grid.spineAggMbit, 5);
}

TEST(PlanFile, RejectsBadInput) {
  PlanFile pf;
  struct Case {
    const char* rest;
    const char* message;
  };
  const Case cases[] = {
      {R"("bogus": 1)", "file: unknown key 'bogus'"},
      {R"("measured": [])", "measured: must be an object"},
      {R"("measured": {"x": 1})", "measured: unknown key 'x'"},
      {R"("measured": {"host_link_mbit": 5})", "measured.host_link_mbit: must be an object"},
      {R"("measured": {"host_link_mbit": {"zz": 5}})", "no host \"zz\""},
      {R"("measured": {"host_link_mbit": {"a0": "fast"}})", "must be a rate"},
      {R"("measured": {"uplink_mbit": 5})", "measured.uplink_mbit: must be an object"},
      {R"("measured": {"uplink_mbit": {"r9": 5}})", "no rack \"r9\""},
      {R"("measured": {"uplink_mbit": {"r0": [1, 2, 3]}})", "3 rates for 2 spines"},
      {R"("measured": {"uplink_mbit": {"r0": [1, -2]}})", "must be a rate"},
      {R"("measured": {"spine_mbit": null})", "must be a rate"},
      {R"("measured": {"probes": {}})", "measured.probes: must be a list"},
      {R"("measured": {"probes": [{"from": "a0", "to": "a1"}]})",
       "needs \"from\", \"to\" and \"mbit\""},
      {R"("measured": {"probes": [{"from": "a0", "to": "a1", "mbit": 1, "y": 2}]})",
       "unknown key 'y'"},
      {R"("measured": {"probes": [{"from": "a0", "to": "nobody", "mbit": 1}]})",
       "no host \"nobody\""},
      {R"("measured": {"probes": [{"from": 3, "to": "a1", "mbit": 1}]})",
       "must be a non-empty name"},
      {R"("measured": {"probes": [{"from": "a0", "to": "a0", "mbit": 1}]})", "not two hosts"},
      {R"("measured": {"probes": [{"from": "a0", "to": "a1", "mbit": 1, "spine": 2}]})",
       "measured.probes[0].spine: must be a spine from 0 to 1"},
      {R"("measured": {"probes": [{"from": "a0", "to": "a1", "mbit": 1, "spine": "s1"}]})",
       "measured.probes[0].spine: must be a spine from 0 to 1"},
      {R"("chunks": 0)", "chunks: must be a whole number"},
      {R"("chunks": 2.5)", "chunks: must be a whole number"},
      {R"("grid": {"rack_agg_mbit": {}})", "grid: no \"ps\""},
      {R"("grid": {"ps": "a0", "q": 1})", "grid: unknown key 'q'"},
      {R"("grid": {"ps": "a0", "rack_agg_mbit": 3})", "grid.rack_agg_mbit: must be an object"},
      {R"("grid": {"ps": "a0", "rack_agg_mbit": {"r7": 3}})", "no rack \"r7\""},
      {R"("grid": {"ps": "a0", "spine_agg_mbit": -1})", "must be a rate"},
  };
  for (const Case& c : cases) {
    Status s = parse(c.rest, &pf);
    EXPECT_EQ(s.code(), rinaInvalidArgument) << c.rest;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << c.rest << " -> " << s.message();
  }
  EXPECT_EQ(parsePlanFile("{", &pf).code(), rinaInvalidArgument);
  EXPECT_EQ(parsePlanFile("{}", &pf).code(), rinaInvalidArgument);
  // The topology section goes through the topology file parser.
  Status s = parsePlanFile(R"({"topology": {"racks": [{"ranks": 2, "bogus": 1}]}})", &pf);
  EXPECT_NE(s.message().find("unknown key 'bogus'"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace rina::tools
