// GRID on a k-ary fat tree with heterogeneous rates (plan/ps_routes_topology.h's
// randomFatTree): LP solve time, and the minimum worker sending rate of GRID
// (LP + randomized rounding + repair) against nearest-switch aggregation
// (ATP) and no INA. One CSV line per (INA fraction, seed).
//   grid_bench [--k 8] [--seeds 10] [--ina 0.25,0.5,1] [--samples 64]
//              [--host-mbit 10000,25000,40000,100000]  (host link rates drawn from)
//              [--ps N]  InArt: N parameter servers (hosts spread over the pods),
//                        the model split by their ingress rates, then GRID routing
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "plan/ps_routes.h"
#include "plan/ps_routes_topology.h"
#include "plan/ps_split.h"

int main(int argc, char** argv) {
  int k = 8, seeds = 10, samples = 64, servers = 1;
  std::vector<double> ina{0.25, 0.5, 1.0};
  std::vector<double> hostRates{10000, 25000, 40000, 100000};
  auto list = [](const std::string& v) {
    std::vector<double> out;
    std::stringstream ss(v);
    for (std::string x; std::getline(ss, x, ',');) out.push_back(std::atof(x.c_str()));
    return out;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::printf(
          "usage: grid_bench [--k 8] [--seeds 10] [--ina 0.25,0.5,1] [--samples 64]\n"
          "                  [--host-mbit 10000,25000,40000,100000]\n");
      return 0;
    }
    if (i + 1 >= argc) return std::fprintf(stderr, "grid_bench: %s needs a value\n", a.c_str()), 2;
    std::string v = argv[++i];
    if (a == "--k")
      k = std::atoi(v.c_str());
    else if (a == "--seeds")
      seeds = std::atoi(v.c_str());
    else if (a == "--samples")
      samples = std::atoi(v.c_str());
    else if (a == "--ina")
      ina = list(v);
    else if (a == "--host-mbit")
      hostRates = list(v);
    else if (a == "--ps")
      servers = std::atoi(v.c_str());
    else {
      return std::fprintf(stderr, "grid_bench: unknown flag %s\n", a.c_str()), 2;
    }
  }
  if (!rina::plan::routingLpAvailable()) {
    std::fprintf(stderr, "grid_bench: built without GLPK\n");
    return 3;
  }
  std::printf(
      "k,hosts,ina_fraction,seed,rows,cols,lp_seconds,lp_cpu_seconds,round_seconds,host_bound_mbit,"
      "lp_mbit,grid_mbit,atp_mbit,no_ina_mbit\n");
  for (double f : ina) {
    for (int seed = 1; seed <= seeds; ++seed) {
      rina::plan::FatTreeSpec spec = rina::plan::randomFatTree(k, f, seed, hostRates);
      if (servers > 1) {
        // InArt: PS hosts spread over the pods, the model (1000 units) split
        // by water-filling over their ingress rates; one LP group per PS.
        std::vector<double> ingress;
        spec.psHosts.clear();
        const int hosts = k * k * k / 4;
        for (int j = 0; j < servers; ++j) {
          spec.psHosts.push_back(j * hosts / servers);
          ingress.push_back(spec.hostMbit[spec.psHosts.back()]);
        }
        rina::plan::ModelSplit split;
        if (rina::Status st = rina::plan::splitModel(1000, ingress, {}, &split); !st.ok()) {
          return std::fprintf(stderr, "grid_bench: %s\n", st.message().c_str()), 1;
        }
        std::vector<int> used;
        for (int j : split.servers) used.push_back(spec.psHosts[j]);
        spec.psHosts = used;
        spec.shares = split.shares;
      }
      rina::plan::PsRoutingProblem g;
      rina::Status s = rina::plan::buildFatTreeRoutingProblem(spec, &g);
      if (!s.ok()) return std::fprintf(stderr, "grid_bench: %s\n", s.message().c_str()), 1;
      rina::plan::RoutingLpResult lp;
      s = rina::plan::solveRoutingLp(g, &lp);
      if (!s.ok()) return std::fprintf(stderr, "grid_bench: %s\n", s.message().c_str()), 1;
      auto t0 = std::chrono::steady_clock::now();
      rina::plan::RoundedRouting r = rina::plan::roundRouting(g, lp, samples, seed);
      double roundSec =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      // No worker sends faster than its own host link.
      double bound = 1e300;
      for (size_t h = 0; h < spec.hostMbit.size(); ++h) {
        if (std::find(spec.psHosts.begin(), spec.psHosts.end(), static_cast<int>(h)) ==
            spec.psHosts.end()) {
          bound = std::min(bound, spec.hostMbit[h]);
        }
      }
      std::printf("%d,%d,%.2f,%d,%d,%d,%.3f,%.3f,%.3f,%.1f,%.1f,%.1f,%.1f,%.1f\n", k, k * k * k / 4,
                  f, seed, lp.rows, lp.cols, lp.seconds, lp.cpuSeconds, roundSec, bound, lp.rate,
                  r.rate, rina::plan::routingRate(g, rina::plan::nearestSwitchRouting(g)),
                  rina::plan::routingRate(g, rina::plan::noInaRouting(g)));
      std::fflush(stdout);
    }
  }
  return 0;
}
