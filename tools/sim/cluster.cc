#include "sim/cluster.h"

#include <algorithm>
#include <memory>

#include "sim/flow_engine.h"
#include "switchd/slot_allocator.h"

namespace rina::sim {
namespace {

struct JobState {
  JobSpec spec;
  uint16_t id = 0;                // SlotAllocator owner id, 1-based
  std::vector<int> pipe;          // per rack: engine link of its slot throughput, -1: none
  std::vector<uint32_t> granted;  // per rack
  std::vector<bool> present;      // per rack: the job has workers there
  bool busy = false;
  double idleSince = 0;
  double commStart = 0;
  int flow = -1;
  JobOutcome out;
};

class Cluster {
 public:
  Cluster(const SimTopology& topo, const std::vector<JobSpec>& specs, const ClusterOptions& opt,
          Planner& planner)
      : topo_(topo), opt_(opt), planner_(planner) {
    for (size_t l = 0; l < topo.linkCapacity.size(); ++l) {
      engine_.addLink(topo.linkNames[l], topo.linkCapacity[l]);
    }
    for (size_t r = 0; r < topo.racks.size(); ++r) {
      allocators_.emplace_back(topo.racks[r].ina ? topo.sw.slots : 0);
    }
    for (size_t j = 0; j < specs.size(); ++j) {
      auto job = std::make_unique<JobState>();
      job->spec = specs[j];
      if (job->spec.slotsWanted == 0) job->spec.slotsWanted = topo.sw.window;
      job->id = static_cast<uint16_t>(j + 1);
      job->pipe.assign(topo.racks.size(), -1);
      job->granted.assign(topo.racks.size(), 0);
      job->present.assign(topo.racks.size(), false);
      for (int h : job->spec.hosts) job->present[topo.hosts[h].rack] = true;
      job->out.name = job->spec.name;
      jobs_.push_back(std::move(job));
    }
  }

  bool run(ClusterResult* result, std::string* error) {
    for (auto& job : jobs_) {
      JobState* j = job.get();
      engine_.at(j->spec.arrivalSec, [this, j] {
        j->out.start = engine_.now();
        j->idleSince = engine_.now();
        engine_.at(engine_.now() + j->spec.computeSec, [this, j] { startAllreduce(j); });
      });
    }
    if (!engine_.run(error)) return false;
    *result = ClusterResult{};
    double sum = 0;
    for (auto& job : jobs_) {
      result->jobs.push_back(job->out);
      result->makespan = std::max(result->makespan, job->out.end);
      sum += job->out.end - job->out.start;
    }
    result->averageJct = jobs_.empty() ? 0 : sum / jobs_.size();
    for (int l = 0; l < engine_.linkCount(); ++l) {
      const double cap = engine_.capacity(l);
      const double util =
          result->makespan > 0 && cap > 0 ? engine_.carried()[l] / (cap * result->makespan) : 0;
      result->links.push_back(LinkLoad{engine_.linkName(l), engine_.carried()[l], util});
    }
    std::stable_sort(
        result->links.begin(), result->links.end(),
        [](const LinkLoad& a, const LinkLoad& b) { return a.utilisation > b.utilisation; });
    result->rateRecomputations = engine_.rateRecomputations();
    return true;
  }

 private:
  // Slot grants changed: the job's slot pipe follows its grant.
  void setGrant(JobState* j, int rack, uint32_t slots) {
    j->granted[rack] = slots;
    const double rate = slots ? topo_.sw.slotThroughput(slots) : 0;
    if (j->pipe[rack] < 0) {
      j->pipe[rack] = engine_.addLink(j->spec.name + "." + topo_.racks[rack].name + ".slots", rate);
    } else {
      engine_.setCapacity(j->pipe[rack], rate);
    }
  }

  JobState* byId(uint16_t id) { return jobs_[id - 1].get(); }

  void requestSlots(JobState* j) {
    for (size_t r = 0; r < topo_.racks.size(); ++r) {
      if (!topo_.racks[r].ina || !j->present[r] || j->granted[r] >= j->spec.slotsWanted) continue;
      const int rack = static_cast<int>(r);
      auto cost = [this, j](uint16_t owner) -> int {
        if (opt_.policy == SlotPolicy::kStatic) return -1;
        const JobState* o = byId(owner);
        if (!o->busy && engine_.now() - o->idleSince >= opt_.idleSec) return 1;
        if (o->busy && o->spec.priority < j->spec.priority) return 2 + o->spec.priority;
        return -1;
      };
      std::vector<switchd::Preemption> taken;
      const switchd::SlotRange got =
          allocators_[r].allocate(j->id, j->spec.slotsWanted, cost, &taken);
      setGrant(j, rack, got.size());
      for (const switchd::Preemption& p : taken) {
        JobState* victim = byId(p.job);
        ++victim->out.preempted;
        setGrant(victim, rack, victim->granted[r] - p.range.size());
        // Without slots the victim's rack continues on the hosts: re-plan the rest.
        if (victim->busy && victim->granted[r] == 0) replan(victim);
      }
    }
  }

  InaAccess accessOf(const JobState* j) const {
    InaAccess a;
    a.portMarkers = opt_.portMarkers;
    a.slotPipe.assign(topo_.racks.size(), -1);
    for (size_t r = 0; r < topo_.racks.size(); ++r) {
      if (j->granted[r] > 0) a.slotPipe[r] = j->pipe[r];
    }
    return a;
  }

  void launch(JobState* j, double bytes) {
    const InaAccess ina = accessOf(j);
    j->out.lastPlan =
        planAllreduce(j->spec.algo, topo_, j->spec.hosts, ina, planner_, j->spec.bytes);
    j->flow = engine_.startFlow(j->out.lastPlan.usages, bytes, [this, j] {
      j->flow = -1;
      engine_.at(engine_.now() + j->out.lastPlan.steps * opt_.stepLatencySec,
                 [this, j] { finishAllreduce(j); });
    });
  }

  void replan(JobState* j) {
    if (j->flow < 0) return;  // only the latency tail is left
    const double left = engine_.cancelFlow(j->flow);
    launch(j, left);
  }

  void startAllreduce(JobState* j) {
    requestSlots(j);
    j->busy = true;
    j->commStart = engine_.now();
    for (size_t r = 0; r < topo_.racks.size(); ++r) {
      if (topo_.racks[r].ina && j->present[r] && j->granted[r] == 0) {
        ++j->out.withoutIna;
        break;
      }
    }
    launch(j, j->spec.bytes);
  }

  void finishAllreduce(JobState* j) {
    j->busy = false;
    j->idleSince = engine_.now();
    j->out.lastAllreduceSec = engine_.now() - j->commStart;
    j->out.commSec += j->out.lastAllreduceSec;
    if (++j->out.allreduces < j->spec.iterations) {
      engine_.at(engine_.now() + j->spec.computeSec, [this, j] { startAllreduce(j); });
      return;
    }
    j->out.end = engine_.now();
    for (size_t r = 0; r < topo_.racks.size(); ++r) {
      if (j->granted[r] == 0) continue;
      allocators_[r].release(j->id);
      setGrant(j, static_cast<int>(r), 0);
    }
  }

  const SimTopology& topo_;
  ClusterOptions opt_;
  Planner& planner_;
  FlowEngine engine_;
  std::vector<switchd::SlotAllocator> allocators_;
  std::vector<std::unique_ptr<JobState>> jobs_;
};

}  // namespace

bool simulateCluster(const SimTopology& topo, const std::vector<JobSpec>& jobs,
                     const ClusterOptions& opt, Planner& planner, ClusterResult* out,
                     std::string* error) {
  if (jobs.empty()) return *error = "no job to simulate", false;
  if (jobs.size() > 0xfffe)
    return *error = "at most 65534 jobs (slot owner ids are 16 bits)", false;
  for (const JobSpec& j : jobs) {
    if (j.hosts.empty()) return *error = "job " + j.name + " has no workers", false;
    for (int h : j.hosts) {
      if (h < 0 || h >= topo.workers()) {
        return *error =
                   "job " + j.name + ": worker " + std::to_string(h) + " is not in the topology",
               false;
      }
    }
    if (!std::is_sorted(j.hosts.begin(), j.hosts.end()) ||
        std::adjacent_find(j.hosts.begin(), j.hosts.end()) != j.hosts.end()) {
      return *error = "job " + j.name + ": workers must be ascending and distinct", false;
    }
    if (!(j.bytes > 0) || j.iterations < 1 || j.computeSec < 0 || j.arrivalSec < 0) {
      return *error = "job " + j.name + ": needs bytes > 0, iterations >= 1, times >= 0", false;
    }
  }
  Cluster cluster(topo, jobs, opt, planner);
  return cluster.run(out, error);
}

}  // namespace rina::sim
