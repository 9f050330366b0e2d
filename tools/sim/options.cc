#include "sim/options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "perf/options.h"

namespace rina::sim {
namespace {

bool toDouble(const std::string& text, double* value) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v)) return false;
  *value = v;
  return true;
}

bool toInt(const std::string& text, long low, long high, int* value) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < low || v > high) return false;
  *value = static_cast<int>(v);
  return true;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

}  // namespace

const char* simUsage() {
  return R"(usage: rina-sim TOPOLOGY [options]
Flow-level simulation of allreduce (ring, hier, rina, ps-ina) on a rack
topology with INA-capable ToR switches; several jobs may share the switches.

Topology (exactly one):
  --topo FILE             JSON topology (racks, hosts, link rates, spines)
  --leaf-spine R,H,S      R racks of H hosts under S spines
  --fat-tree K            k-ary fat-tree (K even): K^2/2 racks of K/2 hosts
  --host-gbps G           host link rate, each direction (default 100)
  --oversub X             rack host capacity / rack uplink capacity (default 1)
  --ina-fraction F        fraction of racks whose ToR aggregates, spread evenly
                          (generated topologies; default 1)
  --slow F,X              heterogeneous hosts: fraction F runs at X x host rate
  --seed N                picks the slow hosts (default 1)
  --ps N                  parameter servers for ps-ina, each 1/N of the model,
                          server i in rack i % racks (default 1)
  --ps-gbps G             parameter server link rate (default host rate)
Switch (every INA ToR):
  --switch-gbps G         aggregation capacity, Gbit/s of contributions (0 = unlimited)
  --slots N               aggregator slots per switch (default 8192)
  --payload BYTES         slot payload (default 256)
  --window N              slices a worker keeps in flight (default 1024)
  --rtt-us U              worker-switch round trip (default 10)
Collective:
  -a, --algo LIST         ring,hier,rina,ps-ina (default rina); one run each
  -s, --size BYTES        allreduce size, K/M/G suffixes (default 1G)
  --step-latency-us U     latency per dependent step (default 5)
  --port-markers B        rina: 1 (default) = a port sends header-only markers
                          for its own share of the rack reduce-scatter, as the
                          library does (RINA_INA_PORT_MARKERS); 0 = it sends all
  --model M               aggregate (default): one coupled flow per allreduce;
                          steps: every ring step its own flows, one step after
                          the other (ring and rina, one job; an error bound)
  --planner LIST          default,plan: without the planner (identity ring
                          order, equal port shares, round-robin spines, every
                          INA rack on its switch) and/or with lib/plan's (each
                          INA rack on its switch, on its hosts or its hosts
                          autonomous, port shares, ring order and the spine
                          per hop from the link rates, as rank 0 plans); one
                          run each, rows of plan runs read ALGO/plan (default:
                          default)
  --plan-ina M            with --planner plan: choose (default) or on: every
                          INA rack on its switch (RINA_PLAN_INA)
Jobs (several jobs sharing the switches):
  --jobs N                N jobs; job j takes host p of every rack when p % N == j
  --iterations N          compute + allreduce rounds per job (default 1)
  --compute-ms MS         compute time before each allreduce (default 0)
  --arrival-gap-ms MS     job j arrives at j x MS (default 0)
  --priorities LIST       per-job priority, higher wins (default all 0)
  --slots-wanted N        slots each job asks of each switch (default: window)
  --policy LIST           static,esa: slot scheduling without / with ESA
                          preemption (default esa)
  --idle-ms MS            ESA: a job idle this long may lose its slots (default 0)
Output:
  --top N                 busiest links to list (default 5)
  --json FILE             everything as JSON
  -h, --help              this text
)";
}

bool parseSimOptions(int argc, const char* const* argv, SimOptions* out, std::string* error) {
  *out = SimOptions{};
  int shapes = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      out->help = true;
      return true;
    }
    if (i + 1 >= argc) {
      *error = flag.rfind("-", 0) == 0 ? flag + " needs a value" : "unexpected argument: " + flag;
      return false;
    }
    const std::string value = argv[++i];
    auto bad = [&](const std::string& want) {
      *error = "bad value for " + flag + ": '" + value + "' (" + want + ")";
      return false;
    };
    double d = 0;
    int n = 0;
    if (flag == "--topo") {
      out->shape = SimOptions::Shape::kFile;
      out->topoFile = value;
      ++shapes;
    } else if (flag == "--leaf-spine") {
      const auto parts = split(value);
      if (parts.size() != 3 || !toInt(parts[0], 1, 1 << 20, &out->racks) ||
          !toInt(parts[1], 1, 1 << 16, &out->hostsPerRack) ||
          !toInt(parts[2], 1, 1 << 12, &out->spines)) {
        return bad("R,H,S: racks, hosts per rack, spines, each >= 1");
      }
      out->shape = SimOptions::Shape::kLeafSpine;
      ++shapes;
    } else if (flag == "--fat-tree") {
      if (!toInt(value, 2, 128, &out->fatTreeK) || out->fatTreeK % 2) return bad("even, 2..128");
      out->shape = SimOptions::Shape::kFatTree;
      ++shapes;
    } else if (flag == "--host-gbps") {
      if (!toDouble(value, &d) || !(d > 0)) return bad("> 0");
      out->topo.hostGbps = d;
    } else if (flag == "--oversub") {
      if (!toDouble(value, &d) || d < 1) return bad(">= 1");
      out->topo.oversubscription = d;
    } else if (flag == "--ina-fraction") {
      if (!toDouble(value, &d) || d < 0 || d > 1) return bad("0..1");
      out->topo.inaFraction = d;
    } else if (flag == "--slow") {
      const auto parts = split(value);
      double f = 0, x = 0;
      if (parts.size() != 2 || !toDouble(parts[0], &f) || !toDouble(parts[1], &x) || f < 0 ||
          f > 1 || !(x > 0)) {
        return bad("F,X: fraction 0..1, factor > 0");
      }
      out->topo.slowFraction = f;
      out->topo.slowFactor = x;
    } else if (flag == "--seed") {
      if (!toInt(value, 0, 1L << 31, &n)) return bad("integer >= 0");
      out->topo.seed = static_cast<uint32_t>(n);
    } else if (flag == "--ps") {
      if (!toInt(value, 1, 1 << 16, &out->topo.psCount)) return bad("1..65536");
    } else if (flag == "--ps-gbps") {
      if (!toDouble(value, &d) || !(d > 0)) return bad("> 0");
      out->topo.psGbps = d;
    } else if (flag == "--switch-gbps") {
      if (!toDouble(value, &d) || d < 0) return bad(">= 0");
      out->topo.sw.aggregationBps = d * 1e9 / 8;
    } else if (flag == "--slots") {
      if (!toInt(value, 1, 1 << 24, &n)) return bad("1..2^24");
      out->topo.sw.slots = static_cast<uint32_t>(n);
    } else if (flag == "--payload") {
      if (!toInt(value, 1, 1 << 20, &n)) return bad("1..2^20 bytes");
      out->topo.sw.payloadBytes = static_cast<uint32_t>(n);
    } else if (flag == "--window") {
      if (!toInt(value, 1, 1 << 24, &n)) return bad("1..2^24");
      out->topo.sw.window = static_cast<uint32_t>(n);
    } else if (flag == "--rtt-us") {
      if (!toDouble(value, &d) || !(d > 0)) return bad("> 0");
      out->topo.sw.rttSec = d * 1e-6;
    } else if (flag == "-a" || flag == "--algo") {
      out->algorithms.clear();
      for (const std::string& name : split(value)) {
        Algorithm a;
        if (!parseSimulatedAlgorithm(name, &a)) return bad(simulatedAlgorithmNames());
        out->algorithms.push_back(a);
      }
    } else if (flag == "-s" || flag == "--size") {
      size_t bytes = 0;
      if (!perf::parseSize(value, &bytes) || bytes == 0) return bad("bytes > 0, K/M/G suffixes");
      out->bytes = static_cast<double>(bytes);
    } else if (flag == "--step-latency-us") {
      if (!toDouble(value, &d) || d < 0) return bad(">= 0");
      out->stepLatencySec = d * 1e-6;
    } else if (flag == "--port-markers") {
      if (value != "0" && value != "1") return bad("0 or 1");
      out->portMarkers = value == "1";
    } else if (flag == "--model") {
      if (value != "aggregate" && value != "steps") return bad("aggregate, steps");
      out->stepModel = value == "steps";
    } else if (flag == "--planner") {
      out->planners.clear();
      size_t start = 0;
      while (start <= value.size()) {
        const size_t comma = std::min(value.find(',', start), value.size());
        const std::string name = value.substr(start, comma - start);
        if (name != "default" && name != "plan") return bad("default, plan (a comma list)");
        out->planners.push_back(name);
        start = comma + 1;
      }
    } else if (flag == "--plan-ina") {
      if (value != "choose" && value != "on") return bad("choose or on");
      out->forceIna = value == "on";
    } else if (flag == "--jobs") {
      if (!toInt(value, 1, 4096, &out->jobs)) return bad("1..4096");
    } else if (flag == "--iterations") {
      if (!toInt(value, 1, 1 << 20, &out->iterations)) return bad("1..2^20");
    } else if (flag == "--compute-ms") {
      if (!toDouble(value, &d) || d < 0) return bad(">= 0");
      out->computeSec = d * 1e-3;
    } else if (flag == "--arrival-gap-ms") {
      if (!toDouble(value, &d) || d < 0) return bad(">= 0");
      out->arrivalGapSec = d * 1e-3;
    } else if (flag == "--priorities") {
      out->priorities.clear();
      for (const std::string& p : split(value)) {
        if (!toInt(p, 0, 1000, &n)) return bad("comma-separated integers 0..1000");
        out->priorities.push_back(n);
      }
    } else if (flag == "--slots-wanted") {
      if (!toInt(value, 1, 1 << 24, &n)) return bad("1..2^24");
      out->slotsWanted = static_cast<uint32_t>(n);
    } else if (flag == "--policy") {
      out->policies.clear();
      for (const std::string& p : split(value)) {
        if (p == "static") {
          out->policies.push_back(SlotPolicy::kStatic);
        } else if (p == "esa") {
          out->policies.push_back(SlotPolicy::kEsa);
        } else {
          return bad("static, esa");
        }
      }
    } else if (flag == "--idle-ms") {
      if (!toDouble(value, &d) || d < 0) return bad(">= 0");
      out->idleSec = d * 1e-3;
    } else if (flag == "--top") {
      if (!toInt(value, 0, 1 << 20, &out->top)) return bad("integer >= 0");
    } else if (flag == "--json") {
      out->jsonFile = value;
    } else {
      *error = "unknown flag: " + flag;
      return false;
    }
  }
  if (shapes != 1) {
    *error = "give exactly one topology: --topo FILE, --leaf-spine R,H,S or --fat-tree K";
    return false;
  }
  if (out->stepModel && (out->jobs > 1 || out->iterations > 1 || out->computeSec > 0)) {
    *error = "--model steps simulates one allreduce of one job";
    return false;
  }
  if (!out->priorities.empty() && static_cast<int>(out->priorities.size()) != out->jobs) {
    *error = "--priorities lists " + std::to_string(out->priorities.size()) + " values for " +
             std::to_string(out->jobs) + " jobs";
    return false;
  }
  return true;
}

}  // namespace rina::sim
