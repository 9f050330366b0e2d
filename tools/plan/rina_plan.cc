// rina-plan: reads a topology + measured rates file (plan_file.h) and prints
// the plan rank 0 would make (ring order, spines, ports per chunk), and with
// --grid the GRID LP for ps-ina with each worker's route.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "plan/plan.h"
#include "plan/ps_routes.h"
#include "plan_file.h"

namespace {

using nlohmann::json;
using namespace rina;

const char kUsage[] =
    "usage: rina-plan FILE [--grid] [--json] [--chunks N] [--ina choose|on] [--samples N]\n"
    "                 [--seed S]\n"
    "\n"
    "Reads a topology and measured link rates (JSON, see docs/planning.md) and\n"
    "prints the plan rank 0 would make: how each INA rack takes part (on its\n"
    "switch, on its hosts, or its hosts autonomous) with the link model's\n"
    "predicted time of each option at 64 MiB, the ring order over members\n"
    "with its bottleneck hop rate, the spine of every inter-rack hop, the port\n"
    "host of each chunk in every rack that aggregates, and the predicted times\n"
    "of ring, hier and rina.\n"
    "\n"
    "  --grid       also solve GRID for ps-ina (needs the file's \"grid\" section\n"
    "               and a build with GLPK): the LP's minimum worker rate, the\n"
    "               rounded routing's rate, the nearest-switch (ATP) and no-INA\n"
    "               rates, and each worker's aggregation switch and path\n"
    "  --json       print JSON instead of text\n"
    "  --chunks N   chunks per ring pass for the port shares (default: the\n"
    "               file's \"chunks\", else rina's sub-rings for the members)\n"
    "  --ina M      choose: the plan picks each INA rack's mode (default);\n"
    "               on: every INA rack on its switch (RINA_PLAN_INA)\n"
    "  --samples N  randomized roundings of the GRID LP (default 64)\n"
    "  --seed S     rounding seed (default 1)\n"
    "  -h, --help   this text\n"
    "\n"
    "Exit status: 0 done, 2 bad command line or input file, 3 GRID LP failed or\n"
    "rina was built without GLPK.\n";

std::string mbit(double v) {
  if (std::isinf(v)) return "unknown";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.0f Mbit/s", v);
  return buf;
}

json jrate(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

struct Args {
  std::string file;
  bool grid = false, asJson = false;
  int chunks = 0, samples = 64;
  uint64_t seed = 1;
  bool forceIna = false;
};

int parseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto number = [&](long long lo, long long hi, long long* out) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      *out = std::strtoll(argv[++i], &end, 10);
      return *end == '\0' && end != argv[i] && *out >= lo && *out <= hi;
    };
    long long v = 0;
    if (s == "-h" || s == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (s == "--grid") {
      a->grid = true;
    } else if (s == "--json") {
      a->asJson = true;
    } else if (s == "--chunks") {
      if (!number(1, 1 << 20, &v))
        return std::fprintf(stderr, "rina-plan: --chunks needs 1..1048576\n"), 2;
      a->chunks = static_cast<int>(v);
    } else if (s == "--ina") {
      const std::string m = i + 1 < argc ? argv[++i] : "";
      if (m != "choose" && m != "on")
        return std::fprintf(stderr, "rina-plan: --ina needs choose or on\n"), 2;
      a->forceIna = m == "on";
    } else if (s == "--samples") {
      if (!number(1, 100000, &v))
        return std::fprintf(stderr, "rina-plan: --samples needs 1..100000\n"), 2;
      a->samples = static_cast<int>(v);
    } else if (s == "--seed") {
      if (!number(0, INT64_MAX, &v))
        return std::fprintf(stderr, "rina-plan: --seed needs a number >= 0\n"), 2;
      a->seed = static_cast<uint64_t>(v);
    } else if (!s.empty() && s[0] == '-') {
      std::fprintf(stderr, "rina-plan: unknown flag: %s (see --help)\n", s.c_str());
      return 2;
    } else if (a->file.empty()) {
      a->file = s;
    } else {
      std::fprintf(stderr, "rina-plan: more than one file: %s\n", s.c_str());
      return 2;
    }
  }
  if (a->file.empty()) {
    std::fprintf(stderr, "rina-plan: no input file (see --help)\n");
    return 2;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (int rc = parseArgs(argc, argv, &args); rc >= 0) return rc;
  std::ifstream in(args.file);
  if (!in) {
    std::fprintf(stderr, "rina-plan: cannot read %s: %s\n", args.file.c_str(),
                 std::strerror(errno));
    return 2;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  tools::PlanFile pf;
  if (Status s = tools::parsePlanFile(ss.str(), &pf); !s.ok()) {
    std::fprintf(stderr, "rina-plan: %s: %s\n", args.file.c_str(), s.message().c_str());
    return 2;
  }
  const plan::Network& net = pf.net;
  plan::PlanOptions opts;
  opts.chunks = args.chunks ? args.chunks : pf.chunks;
  opts.forceIna = args.forceIna;
  opts.reason = "rina-plan " + args.file;
  plan::Plan p;
  plan::RackChoice choice;
  if (Status s = plan::makePlan(net, opts, &p, &choice); !s.ok()) {
    std::fprintf(stderr, "rina-plan: %s\n", s.message().c_str());
    return 2;
  }
  const std::vector<plan::Member> members = plan::ringMembers(net, choice.modes);
  if (!opts.chunks) {
    std::vector<int> sizes;
    for (const plan::Member& m : members) sizes.push_back(static_cast<int>(m.hosts.size()));
    opts.chunks = plan::subRings(sizes);
  }
  plan::RateMatrix hop = plan::hopRates(net, members, opts.chunks);
  std::vector<int> memberOfAgent(net.hosts.size(), -1);
  for (size_t m = 0; m < members.size(); ++m)
    memberOfAgent[members[m].agent()] = static_cast<int>(m);

  json out;
  std::string text;
  auto line = [&](const std::string& s) { text += s + "\n"; };
  line("topology: " + std::to_string(net.racks.size()) + " racks, " +
       std::to_string(net.hosts.size()) + " hosts, " + std::to_string(net.spines()) + " spines; " +
       std::to_string(members.size()) + " ring members, " + std::to_string(opts.chunks) +
       " chunks");
  line(p.describe());
  line("racks: " + plan::describeChoice(net, choice, opts.bytes, opts.model));
  json modes = json::object();
  for (const auto& rp : p.ports) {
    modes[net.racks[net.hosts[rp.agent].rack].name] = plan::rackModeName(rp.mode);
  }
  json predicted = json::object();
  const std::pair<const char*, plan::Cost> costs[] = {
      {"ring", p.predicted.ring}, {"hier", p.predicted.hier}, {"rina", p.predicted.rina}};
  for (const auto& [name, c] : costs) {
    predicted[name] = {{"seconds_per_byte", c.perByte},
                       {"steps", c.steps},
                       {"seconds_64MiB", c.seconds(opts.bytes, p.predicted.stepLatencySec)}};
  }
  predicted["step_latency_s"] = p.predicted.stepLatencySec;
  predicted["rina_ina_forced_seconds_64MiB"] =
      choice.forcedIna.seconds(opts.bytes, p.predicted.stepLatencySec);
  line("ring:");
  json ring = json::array();
  for (size_t k = 0; k < p.ring.size(); ++k) {
    int a = memberOfAgent[p.ring[k]], b = memberOfAgent[p.ring[(k + 1) % p.ring.size()]];
    std::string via =
        p.hopSpine[k] >= 0 ? "spine " + std::to_string(p.hopSpine[k]) : "inside the rack";
    double rate = a == b ? INFINITY : hop[a][b];
    line("  " + members[a].name + " -> " + members[b].name + "  " + via + "  hop " + mbit(rate));
    ring.push_back({{"member", members[a].name},
                    {"agent", members[a].agent()},
                    {"ina", members[a].ina},
                    {"next", members[b].name},
                    {"spine", p.hopSpine[k]},
                    {"hop_mbit", jrate(rate)}});
  }
  line("bottleneck " + mbit(p.bottleneckMbit) +
       (p.exactOrder ? " (optimal order" : " (heuristic order") +
       (p.exactPaths ? ", optimal spines)" : ", heuristic spines)"));
  json ports = json::object();
  if (!p.ports.empty()) line("ports per chunk:");
  for (const auto& rp : p.ports) {
    if (rp.mode == plan::RackMode::kAutonomous) continue;
    std::string l = "  " + members[memberOfAgent[rp.agent]].name + ":";
    json list = json::array();
    for (int r : rp.portRanks) l += " " + net.hosts[r].name, list.push_back(net.hosts[r].name);
    line(l);
    ports[members[memberOfAgent[rp.agent]].name] = list;
  }
  out["ring"] = ring;
  out["bottleneck_mbit"] = jrate(p.bottleneckMbit);
  out["exact_order"] = p.exactOrder;
  out["exact_paths"] = p.exactPaths;
  out["chunks"] = opts.chunks;
  out["ports"] = ports;
  out["modes"] = modes;
  out["predicted"] = predicted;
  out["plan_bytes"] = p.serialize().size();
  out["describe"] = p.describe();

  int rc = 0;
  if (args.grid) {
    if (!pf.hasGrid) {
      std::fprintf(stderr, "rina-plan: --grid needs a \"grid\" section with the PS host in %s\n",
                   args.file.c_str());
      return 2;
    }
    plan::PsRoutingProblem g;
    if (Status s = plan::buildLeafSpineRoutingProblem(net, pf.grid, &g); !s.ok()) {
      std::fprintf(stderr, "rina-plan: %s\n", s.message().c_str());
      return 2;
    }
    plan::RoutingLpResult lp;
    Status s = plan::solveRoutingLp(g, &lp);
    json jg;
    jg["ps"] = net.hosts[pf.grid.psHost].name;
    jg["nearest_switch_mbit"] = jrate(plan::routingRate(g, plan::nearestSwitchRouting(g)));
    jg["no_ina_mbit"] = jrate(plan::routingRate(g, plan::noInaRouting(g)));
    if (!s.ok()) {
      std::fprintf(stderr, "rina-plan: %s\n", s.message().c_str());
      rc = 3;
    } else {
      plan::RoundedRouting r = plan::roundRouting(g, lp, args.samples, args.seed);
      jg["lp_mbit"] = lp.rate;
      jg["rounded_mbit"] = r.rate;
      jg["lp_seconds"] = lp.seconds;
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "GRID (PS %s): LP rate %s (%d rows x %d columns, %.3f s); rounded %s "
                    "(best of %d samples, repaired); nearest switch (ATP) %s; no INA %s",
                    net.hosts[pf.grid.psHost].name.c_str(), mbit(lp.rate).c_str(), lp.rows, lp.cols,
                    lp.seconds, mbit(r.rate).c_str(), args.samples,
                    mbit(jg["nearest_switch_mbit"].get<double>()).c_str(),
                    mbit(jg["no_ina_mbit"].get<double>()).c_str());
      line(buf);
      json workers = json::array();
      for (size_t w = 0; w < g.workers.size(); ++w) {
        const auto& o = g.workers[w].options[r.routing[w][0]];
        std::string at = o.aggNode >= 0 ? g.nodes[o.aggNode].name : "none (straight to the PS)";
        std::string path;
        json jpath = json::array();
        for (int l : o.path)
          path += (path.empty() ? "" : ", ") + g.resources[l].name,
              jpath.push_back(g.resources[l].name);
        char frac[32];
        std::snprintf(frac, sizeof frac, "%.2f", lp.x[w][r.routing[w][0]]);
        line("  " + g.workers[w].name + ": aggregate at " + at + " via [" + path + "] (LP share " +
             frac + ")");
        workers.push_back({{"name", g.workers[w].name},
                           {"aggregate_at", o.aggNode >= 0 ? json(at) : json(nullptr)},
                           {"path", jpath},
                           {"lp_fraction", lp.x[w][r.routing[w][0]]}});
      }
      jg["workers"] = workers;
    }
    out["grid"] = jg;
  }
  if (args.asJson) {
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::fputs(text.c_str(), stdout);
  }
  return rc;
}
