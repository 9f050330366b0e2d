// rina-sim: flow-level simulation of rina's allreduce algorithms on rack
// topologies with INA switches (docs/sim.md).
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/cluster.h"
#include "sim/options.h"
#include "sim/plan_adapter.h"
#include "sim/planner.h"
#include "sim/step_model.h"

namespace {

using namespace rina::sim;

bool buildTopology(const SimOptions& o, SimTopology* topo, std::string* error) {
  switch (o.shape) {
    case SimOptions::Shape::kFile:
      return loadTopologyJson(o.topoFile, o.topo, topo, error);
    case SimOptions::Shape::kLeafSpine:
      return leafSpine(o.racks, o.hostsPerRack, o.spines, o.topo, topo, error);
    case SimOptions::Shape::kFatTree:
      return fatTree(o.fatTreeK, o.topo, topo, error);
    case SimOptions::Shape::kNone:
      break;
  }
  *error = "no topology";
  return false;
}

// Job j takes the hosts at positions p % jobs == j of every rack.
std::vector<JobSpec> makeJobs(const SimOptions& o, const SimTopology& topo, Algorithm algo) {
  std::vector<JobSpec> jobs(o.jobs);
  for (int j = 0; j < o.jobs; ++j) {
    JobSpec& job = jobs[j];
    job.name = "job" + std::to_string(j);
    job.algo = algo;
    job.bytes = o.bytes;
    job.iterations = o.iterations;
    job.computeSec = o.computeSec;
    job.arrivalSec = j * o.arrivalGapSec;
    job.priority = o.priorities.empty() ? 0 : o.priorities[j];
    job.slotsWanted = o.slotsWanted;
    for (const SimRack& rack : topo.racks) {
      for (size_t p = 0; p < rack.hosts.size(); ++p) {
        if (static_cast<int>(p % o.jobs) == j) job.hosts.push_back(rack.hosts[p]);
      }
    }
  }
  return jobs;
}

const char* policyName(SlotPolicy p) { return p == SlotPolicy::kEsa ? "esa" : "static"; }

}  // namespace

int main(int argc, char** argv) {
  SimOptions o;
  std::string error;
  if (!parseSimOptions(argc, argv, &o, &error)) {
    std::fprintf(stderr, "rina-sim: %s\n%s", error.c_str(), "run rina-sim --help for usage\n");
    return 2;
  }
  if (o.help) {
    std::fputs(simUsage(), stdout);
    return 0;
  }
  SimTopology topo;
  if (!buildTopology(o, &topo, &error)) {
    std::fprintf(stderr, "rina-sim: %s\n", error.c_str());
    return 2;
  }
  const int n = topo.workers();
  std::printf("# rina-sim: %s, %d workers, %zu racks (%d INA), %d spines, size %.0f bytes\n",
              topo.name.c_str(), n, topo.racks.size(), topo.inaRacks(), topo.spines, o.bytes);
  nlohmann::json doc;
  doc["topology"] = {{"name", topo.name},
                     {"workers", n},
                     {"racks", topo.racks.size()},
                     {"ina_racks", topo.inaRacks()},
                     {"spines", topo.spines}};
  doc["size_bytes"] = o.bytes;
  const bool multi = o.jobs > 1 || o.iterations > 1 || o.computeSec > 0;
  if (!multi) {
    std::printf("%-7s %8s %8s %6s %10s %12s %12s\n", "# algo", "members", "steps", "slots",
                "time(ms)", "algbw(GB/s)", "busbw(GB/s)");
  }
  // One run per (planner, algorithm).
  std::vector<std::pair<std::string, Algorithm>> runs;
  for (const std::string& name : o.planners) {
    for (Algorithm algo : o.algorithms) runs.emplace_back(name, algo);
  }
  for (const auto& [plannerName, algo] : runs) {
    DefaultPlanner defaultPlanner;
    LibPlanner libPlanner(rina::plan::ModelOptions{o.stepLatencySec, o.portMarkers}, o.forceIna);
    Planner& planner = plannerName == "plan" ? static_cast<Planner&>(libPlanner) : defaultPlanner;
    const std::string label =
        std::string(algorithmName(algo)) + (plannerName == "plan" ? "/plan" : "");
    if (o.stepModel) {
      StepRun sr;
      if (!stepSynchronousAllreduce(algo, topo, o.bytes, o.stepLatencySec, planner, &sr, &error)) {
        std::fprintf(stderr, "rina-sim: %s\n", error.c_str());
        return 2;
      }
      const double algbw = o.bytes / sr.seconds / 1e9, busbw = algbw * 2.0 * (n - 1) / n;
      std::printf("%-7s %8s %8d %6s %10.3f %12.3f %12.3f\n", label.c_str(), "-", sr.steps, "ok",
                  sr.seconds * 1e3, algbw, busbw);
      doc["runs"].push_back({{"algo", algorithmName(algo)},
                             {"planner", plannerName},
                             {"model", "steps"},
                             {"time_s", sr.seconds},
                             {"steps", sr.steps},
                             {"algbw_GBps", algbw},
                             {"busbw_GBps", busbw}});
      continue;
    }
    for (SlotPolicy policy : o.policies) {
      ClusterOptions copt;
      copt.policy = policy;
      copt.idleSec = o.idleSec;
      copt.stepLatencySec = o.stepLatencySec;
      copt.portMarkers = o.portMarkers;
      ClusterResult res;
      if (!simulateCluster(topo, makeJobs(o, topo, algo), copt, planner, &res, &error)) {
        std::fprintf(stderr, "rina-sim: %s\n", error.c_str());
        return 1;
      }
      nlohmann::json run = {
          {"algo", algorithmName(algo)},     {"planner", plannerName},
          {"policy", policyName(policy)},    {"makespan_s", res.makespan},
          {"average_jct_s", res.averageJct}, {"rate_recomputations", res.rateRecomputations}};
      if (!multi) {
        const JobOutcome& j = res.jobs.front();
        const double t = j.lastAllreduceSec;
        const double algbw = o.bytes / t / 1e9, busbw = algbw * 2.0 * (n - 1) / n;
        std::printf("%-7s %8d %8d %6s %10.3f %12.3f %12.3f\n", label.c_str(), j.lastPlan.members,
                    j.lastPlan.steps, j.withoutIna ? "short" : "ok", t * 1e3, algbw, busbw);
        run["time_s"] = t;
        run["algbw_GBps"] = algbw;
        run["busbw_GBps"] = busbw;
        run["members"] = j.lastPlan.members;
        if (plannerName == "plan" && !libPlanner.lastChoice().empty()) {
          std::printf("#   racks (%s): %s\n", label.c_str(), libPlanner.lastChoice().c_str());
          run["racks"] = libPlanner.lastChoice();
        }
        run["steps"] = j.lastPlan.steps;
      } else {
        std::printf("# %s, slots %s: average JCT %.3f ms, makespan %.3f ms\n", label.c_str(),
                    policyName(policy), res.averageJct * 1e3, res.makespan * 1e3);
        std::printf("%-8s %5s %10s %10s %10s %10s %6s %9s %11s\n", "# job", "prio", "start(ms)",
                    "end(ms)", "jct(ms)", "comm(ms)", "rounds", "preempted", "without-ina");
        for (size_t k = 0; k < res.jobs.size(); ++k) {
          const JobOutcome& j = res.jobs[k];
          const int prio = o.priorities.empty() ? 0 : o.priorities[k];
          std::printf("%-8s %5d %10.3f %10.3f %10.3f %10.3f %6d %9d %11d\n", j.name.c_str(), prio,
                      j.start * 1e3, j.end * 1e3, (j.end - j.start) * 1e3, j.commSec * 1e3,
                      j.allreduces, j.preempted, j.withoutIna);
          run["jobs"].push_back({{"name", j.name},
                                 {"priority", prio},
                                 {"start_s", j.start},
                                 {"end_s", j.end},
                                 {"comm_s", j.commSec},
                                 {"allreduces", j.allreduces},
                                 {"preempted", j.preempted},
                                 {"without_ina", j.withoutIna}});
        }
      }
      const int top = std::min<int>(o.top, static_cast<int>(res.links.size()));
      if (top > 0) std::printf("#   busiest links (%s): utilisation, GB carried\n", label.c_str());
      for (int k = 0; k < top; ++k) {
        const LinkLoad& l = res.links[k];
        std::printf("#     %-28s %6.1f%% %10.3f\n", l.name.c_str(), l.utilisation * 100,
                    l.bytes / 1e9);
        run["links"].push_back(
            {{"name", l.name}, {"utilisation", l.utilisation}, {"bytes", l.bytes}});
      }
      doc["runs"].push_back(run);
      if (!multi) break;  // one job: the slot policy cannot matter
    }
  }
  if (!o.jsonFile.empty()) {
    std::ofstream out(o.jsonFile);
    out << doc.dump(1) << "\n";
    if (!out) {
      std::fprintf(stderr, "rina-sim: cannot write %s\n", o.jsonFile.c_str());
      return 1;
    }
  }
  return 0;
}
