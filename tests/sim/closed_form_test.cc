// Simulated allreduce times against closed forms (step latency 0): every
// expected value below is written from the algorithm's byte counts, not from
// the simulator.
#include <gtest/gtest.h>

#include "sim/cluster.h"
#include "sim/planner.h"
#include "sim/step_model.h"
#include "sim/topology.h"

namespace rina::sim {
namespace {

constexpr double kS = 1 << 30;    // bytes
constexpr double kB = 100e9 / 8;  // 100 Gbit/s in bytes/s

std::vector<int> allHosts(const SimTopology& t) {
  std::vector<int> h(t.workers());
  for (int i = 0; i < t.workers(); ++i) h[i] = i;
  return h;
}

// One allreduce of S by every worker; returns its duration.
double allreduceTime(const SimTopology& topo, Algorithm algo, double bytes = kS,
                     bool portMarkers = true) {
  JobSpec job;
  job.name = "j";
  job.hosts = allHosts(topo);
  job.algo = algo;
  job.bytes = bytes;
  ClusterOptions opt;
  opt.stepLatencySec = 0;
  opt.portMarkers = portMarkers;
  DefaultPlanner planner;
  ClusterResult res;
  std::string error;
  EXPECT_TRUE(simulateCluster(topo, {job}, opt, planner, &res, &error)) << error;
  return res.jobs.at(0).lastAllreduceSec;
}

SimTopology leafSpineOf(int racks, int hosts, int spines, TopologyOptions opt = {}) {
  SimTopology t;
  std::string error;
  EXPECT_TRUE(leafSpine(racks, hosts, spines, opt, &t, &error)) << error;
  return t;
}

void expectWithin1Percent(double got, double want) {
  EXPECT_NEAR(got / want, 1.0, 0.01) << "got " << got << " s, closed form " << want << " s";
}

TEST(ClosedForm, FlatRing) {
  for (auto [racks, hosts] : {std::pair{1, 8}, std::pair{4, 4}, std::pair{16, 3}}) {
    const SimTopology t = leafSpineOf(racks, hosts, 2);
    const double n = racks * hosts;
    expectWithin1Percent(allreduceTime(t, Algorithm::kRing), 2 * (n - 1) / n * kS / kB);
  }
}

TEST(ClosedForm, FlatRingIsPacedByTheSlowestHost) {
  TopologyOptions opt;
  opt.slowFraction = 1;  // every host at a quarter of the rate
  opt.slowFactor = 0.25;
  const SimTopology t = leafSpineOf(2, 4, 1, opt);
  expectWithin1Percent(allreduceTime(t, Algorithm::kRing), 2 * 7.0 / 8 * kS / (kB / 4));
}

TEST(ClosedForm, SingleInaRack) {
  const SimTopology t = leafSpineOf(1, 8, 1);
  expectWithin1Percent(allreduceTime(t, Algorithm::kInaMemberRing), kS / kB);
  expectWithin1Percent(allreduceTime(t, Algorithm::kPsIna), kS / kB);
}

TEST(ClosedForm, PsIncast) {
  // 8 INA racks send one sum each to the PS (10 Gbit/s): 8 S through its link.
  TopologyOptions opt;
  opt.psGbps = 10;
  const SimTopology t = leafSpineOf(8, 4, 2, opt);
  expectWithin1Percent(allreduceTime(t, Algorithm::kPsIna), 8 * kS / (10e9 / 8));
}

TEST(ClosedForm, PsWithoutInaIsIncastOfEveryWorker) {
  TopologyOptions opt;
  opt.inaFraction = 0;
  const SimTopology t = leafSpineOf(2, 3, 1, opt);
  expectWithin1Percent(allreduceTime(t, Algorithm::kPsIna), 6 * kS / kB);
}

TEST(ClosedForm, RinaPortsCarryTheRing) {
  // R INA racks of k: a worker sends the switch all but its own 1/k of the
  // buffer (port markers) and, for its 1/k, 2(R-1)/R S downstream plus all
  // of it (S/k) to the switch's multicast: S (1 + 2(R-1)/(Rk)), the
  // library's count (member_ring.cc). Without markers it sends the switch all of
  // S: S (1 + 1/k + 2(R-1)/(Rk)).
  for (auto [racks, k] : {std::pair{4, 4}, std::pair{8, 16}}) {
    const SimTopology t = leafSpineOf(racks, k, 4);
    const double r = racks;
    expectWithin1Percent(allreduceTime(t, Algorithm::kInaMemberRing),
                         (1 + 2 * (r - 1) / (r * k)) * kS / kB);
    expectWithin1Percent(allreduceTime(t, Algorithm::kInaMemberRing, kS, false),
                         (1 + 1.0 / k + 2 * (r - 1) / (r * k)) * kS / kB);
  }
}

TEST(ClosedForm, RinaIsPacedByItsSlowestPort) {
  // All hosts of 4 INA racks of 4 at B/4: the closed form at the slow rate.
  TopologyOptions opt;
  opt.slowFraction = 1;
  opt.slowFactor = 0.25;
  const SimTopology t = leafSpineOf(4, 4, 2, opt);
  expectWithin1Percent(allreduceTime(t, Algorithm::kInaMemberRing),
                       (1 + 2 * 3.0 / 16) * kS / (kB / 4));
}

TEST(ClosedForm, LinkLoadIsTheScheduleBytes) {
  // Flat ring of 16: each host link carries 2(n-1)/n S each way and is the
  // bottleneck (100% busy); rack 0's uplink carries one hop, hop 3 (host 3
  // -> host 4), one connection on spine 3 mod 2 = 1 of capacity 4B/2: half busy.
  const SimTopology t = leafSpineOf(4, 4, 2);
  JobSpec job{"j", allHosts(t), Algorithm::kRing, kS, 1, 0, 0, 0, 0};
  ClusterOptions opt;
  opt.stepLatencySec = 0;
  DefaultPlanner planner;
  ClusterResult res;
  std::string error;
  ASSERT_TRUE(simulateCluster(t, {job}, opt, planner, &res, &error)) << error;
  int checked = 0;
  for (const LinkLoad& l : res.links) {
    if (l.name == "r1h2.up" || l.name == "r3h0.down") {
      EXPECT_NEAR(l.bytes / (2 * 15.0 / 16 * kS), 1.0, 1e-9) << l.name;
      EXPECT_NEAR(l.utilisation, 1.0, 1e-9) << l.name;
      ++checked;
    }
    if (l.name == "r0.spine1.up") {
      EXPECT_NEAR(l.bytes / (2 * 15.0 / 16 * kS), 1.0, 1e-9);
      EXPECT_NEAR(l.utilisation, 0.5, 1e-9);
      ++checked;
    }
    if (l.name == "r0.spine0.up") {
      EXPECT_EQ(l.bytes, 0);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4);
  EXPECT_GE(res.links.front().utilisation, res.links.back().utilisation);  // busiest first
}

TEST(ClosedForm, RinaWithoutInaIsTheFlatRing) {
  TopologyOptions opt;
  opt.inaFraction = 0;
  const SimTopology t = leafSpineOf(4, 4, 1, opt);
  expectWithin1Percent(allreduceTime(t, Algorithm::kInaMemberRing), 2 * 15.0 / 16 * kS / kB);
}

TEST(ClosedForm, HierPortCarriesRingAndBroadcast) {
  // The port sends 2(R-1)/R S in the ring plus S down the broadcast chain.
  const SimTopology t = leafSpineOf(4, 4, 1);
  expectWithin1Percent(allreduceTime(t, Algorithm::kHier), (1 + 2 * 3.0 / 4) * kS / kB);
}

TEST(ClosedForm, OversubscribedUplinkBoundsRina) {
  // Uplink = 4 B / 8 = B/2 carries the ring hop 2(R-1)/R S.
  TopologyOptions opt;
  opt.oversubscription = 8;
  const SimTopology t = leafSpineOf(4, 4, 1, opt);
  expectWithin1Percent(allreduceTime(t, Algorithm::kInaMemberRing), 2 * 3.0 / 4 * kS / (kB / 2));
}

TEST(ClosedForm, FewSlotsBoundInaByWindowOverRtt) {
  // 64 slots x 256 B per 10 us = 1.6384 GB/s, below the 12.5 GB/s host link.
  TopologyOptions opt;
  opt.sw.slots = 64;
  const SimTopology t = leafSpineOf(1, 4, 1, opt);
  expectWithin1Percent(allreduceTime(t, Algorithm::kInaMemberRing), kS / (64 * 256 / 10e-6));
}

TEST(ClosedForm, SwitchAggregationCapacity) {
  // 8 workers' contributions (8 S) through 40 Gbit/s of aggregation.
  TopologyOptions opt;
  opt.sw.aggregationBps = 40e9 / 8;
  const SimTopology t = leafSpineOf(1, 8, 1, opt);
  expectWithin1Percent(allreduceTime(t, Algorithm::kInaMemberRing), 8 * kS / (40e9 / 8));
}

TEST(ClosedForm, FatTreeIsNonBlocking) {
  // k = 4: 8 racks of 2 hosts; a flat ring is host bound.
  SimTopology t;
  std::string error;
  ASSERT_TRUE(fatTree(4, {}, &t, &error)) << error;
  ASSERT_EQ(t.workers(), 16);
  expectWithin1Percent(allreduceTime(t, Algorithm::kRing), 2 * 15.0 / 16 * kS / kB);
}

TEST(ClosedForm, StepLatencyAddsPerStep) {
  const SimTopology t = leafSpineOf(2, 2, 1);
  JobSpec job{"j", allHosts(t), Algorithm::kRing, kS, 1, 0, 0, 0, 0};
  ClusterOptions opt;
  opt.stepLatencySec = 1e-3;
  DefaultPlanner planner;
  ClusterResult res;
  std::string error;
  ASSERT_TRUE(simulateCluster(t, {job}, opt, planner, &res, &error)) << error;
  expectWithin1Percent(res.jobs[0].lastAllreduceSec, 2 * 3.0 / 4 * kS / kB + 6 * 1e-3);
}

// Two jobs, each a 2-member ring across two racks, share one oversubscribed
// uplink per rack (4 x B / 16 = B/4 each way): each gets B/8 for its S.
TEST(Jobs, TwoRingsShareTheUplinkFairly) {
  TopologyOptions opt;
  opt.oversubscription = 16;
  opt.inaFraction = 0;
  const SimTopology t = leafSpineOf(2, 4, 1, opt);
  JobSpec a{"a", {0, 4}, Algorithm::kRing, kS, 1, 0, 0, 0, 0};
  JobSpec b{"b", {1, 5}, Algorithm::kRing, kS, 1, 0, 0, 0, 0};
  ClusterOptions copt;
  copt.stepLatencySec = 0;
  DefaultPlanner planner;
  ClusterResult res;
  std::string error;
  ASSERT_TRUE(simulateCluster(t, {a, b}, copt, planner, &res, &error)) << error;
  expectWithin1Percent(res.jobs[0].lastAllreduceSec, kS / (kB / 8));
  expectWithin1Percent(res.jobs[1].lastAllreduceSec, kS / (kB / 8));
  expectWithin1Percent(res.averageJct, kS / (kB / 8));
}

// One switch with slots for one job's window (1024 x 256 B / 10 us = 26 GB/s
// of INA, above the 12.5 GB/s host link). Each job: 4 workers, 3 rounds of
// 100 ms compute + an allreduce (INA: S/B = 86 ms; on the hosts a flat ring,
// 1.5 S/B = 129 ms). Job b arrives 90 ms after a, so their allreduces
// alternate: a [100, 186], b [190, 276], a [286, 372], ...
ClusterResult slotScenario(SlotPolicy policy, int priorityB) {
  TopologyOptions o;
  o.sw.slots = 1024;
  const SimTopology t = leafSpineOf(1, 8, 1, o);
  JobSpec a{"a", {0, 1, 2, 3}, Algorithm::kInaMemberRing, kS, 3, 0.1, 0, 0, 1024};
  JobSpec b{"b", {4, 5, 6, 7}, Algorithm::kInaMemberRing, kS, 3, 0.1, 0.09, priorityB, 1024};
  ClusterOptions opt;
  opt.policy = policy;
  opt.stepLatencySec = 0;
  DefaultPlanner planner;
  ClusterResult res;
  std::string error;
  EXPECT_TRUE(simulateCluster(t, {a, b}, opt, planner, &res, &error)) << error;
  return res;
}

TEST(Jobs, StaticSlotsStarveTheLaterJob) {
  const ClusterResult res = slotScenario(SlotPolicy::kStatic, 0);
  EXPECT_EQ(res.jobs[0].withoutIna, 0);
  // b's first two allreduces end before a releases its slots (at 558 ms).
  EXPECT_EQ(res.jobs[1].withoutIna, 2);
  EXPECT_EQ(res.jobs[0].preempted + res.jobs[1].preempted, 0);
  expectWithin1Percent(res.jobs[1].end - res.jobs[1].start, 3 * 0.1 + 2 * 1.5 * kS / kB + kS / kB);
}

TEST(Jobs, EsaLendsIdleSlots) {
  // Each job takes the other's slots while the other computes: every
  // allreduce runs in the switch.
  const ClusterResult res = slotScenario(SlotPolicy::kEsa, 0);
  for (const JobOutcome& j : res.jobs) {
    EXPECT_EQ(j.withoutIna, 0) << j.name;
    expectWithin1Percent(j.end - j.start, 3 * (0.1 + kS / kB));
  }
  EXPECT_GT(res.jobs[0].preempted, 0);
  EXPECT_LT(res.averageJct, slotScenario(SlotPolicy::kStatic, 0).averageJct);
}

TEST(Jobs, EsaPriorityPreemptsABusyJob) {
  // b (priority 1) overlaps a's allreduce once a computes less than b: a
  // loses its slots mid-allreduce and finishes that one on the hosts.
  TopologyOptions o;
  o.sw.slots = 1024;
  const SimTopology t = leafSpineOf(1, 8, 1, o);
  JobSpec a{"a", {0, 1, 2, 3}, Algorithm::kInaMemberRing, kS, 1, 0.1, 0, 0, 1024};
  JobSpec b{"b", {4, 5, 6, 7}, Algorithm::kInaMemberRing, kS, 1, 0.1, 0.05, 1, 1024};
  ClusterOptions opt;
  opt.stepLatencySec = 0;
  DefaultPlanner planner;
  ClusterResult res;
  std::string error;
  ASSERT_TRUE(simulateCluster(t, {a, b}, opt, planner, &res, &error)) << error;
  EXPECT_EQ(res.jobs[0].preempted, 1);
  EXPECT_EQ(res.jobs[1].withoutIna, 0);
  expectWithin1Percent(res.jobs[1].end - res.jobs[1].start, 0.1 + kS / kB);
  // a: 50 ms in the switch (50/86 of S), the rest as a ring of 4 at 1.5 S/B.
  const double inSwitch = 0.05 / (kS / kB);
  expectWithin1Percent(res.jobs[0].end, 0.1 + 0.05 + (1 - inSwitch) * 1.5 * kS / kB);
}

}  // namespace
}  // namespace rina::sim

namespace rina::sim {
namespace {

double stepTime(const SimTopology& t, Algorithm algo) {
  DefaultPlanner planner;
  StepRun run;
  std::string error;
  EXPECT_TRUE(stepSynchronousAllreduce(algo, t, kS, 0, planner, &run, &error)) << error;
  return run.seconds;
}

TEST(StepModel, FlatRingMatchesTheAggregate) {
  const SimTopology t = leafSpineOf(4, 4, 2);
  expectWithin1Percent(stepTime(t, Algorithm::kRing), 2 * 15.0 / 16 * kS / kB);
}

TEST(StepModel, SingleInaRack) {
  expectWithin1Percent(stepTime(leafSpineOf(1, 8, 1), Algorithm::kInaMemberRing), kS / kB);
}

TEST(StepModel, RinaWithoutOverlapBetweenSteps) {
  // R racks of k >= 2, chunk C = S/R: a reduce-scatter step is paced by the
  // port that sends its contribution and the downstream copy (2C), the
  // final multicast by C, an all-gather step by C: (3(R-1) + 1) C / B.
  const SimTopology t = leafSpineOf(16, 8, 2);
  expectWithin1Percent(stepTime(t, Algorithm::kInaMemberRing), (3 * 15.0 + 1) / 16 * kS / kB);
}

TEST(StepModel, OnlyRingAndRina) {
  DefaultPlanner planner;
  StepRun run;
  std::string error;
  EXPECT_FALSE(stepSynchronousAllreduce(Algorithm::kHier, leafSpineOf(2, 2, 1), kS, 0, planner,
                                        &run, &error));
  EXPECT_NE(error.find("the step model covers ring and rina, not hier"), std::string::npos)
      << error;
}

}  // namespace
}  // namespace rina::sim

namespace rina::sim {
namespace {

// The planner seam: a planner that keeps a slow host out of the port role.
class AvoidHostPlanner : public DefaultPlanner {
 public:
  explicit AvoidHostPlanner(int host) : host_(host) {}
  std::vector<double> portShares(const SimTopology& topo, const RingMember& m) override {
    std::vector<double> shares = DefaultPlanner::portShares(topo, m);
    for (size_t i = 0; i < m.hosts.size(); ++i) {
      if (m.hosts[i] != host_) continue;
      shares.assign(m.hosts.size(), 1.0 / (m.hosts.size() - 1));
      shares[i] = 0;
    }
    return shares;
  }

 private:
  int host_;
};

TEST(PlannerSeam, PortSharesMoveTheBottleneck) {
  // 4 INA racks of 4, host 0 at B/2. Equal shares: host 0 sends
  // (1 + 2 x 3/16) S at B/2 (port markers). Without its port share: S at
  // B/2 (2 S/B), the others (1 + 2 x 3/4 / 3) S = 1.5 S at B.
  SimTopology t = leafSpineOf(4, 4, 2);
  for (int link : {t.hosts[0].up, t.hosts[0].down}) t.linkCapacity[link] = kB / 2;
  t.hosts[0].rate = kB / 2;
  JobSpec job{"j", allHosts(t), Algorithm::kInaMemberRing, kS, 1, 0, 0, 0, 0};
  ClusterOptions opt;
  opt.stepLatencySec = 0;
  std::string error;
  ClusterResult equal, avoid;
  DefaultPlanner plain;
  ASSERT_TRUE(simulateCluster(t, {job}, opt, plain, &equal, &error)) << error;
  AvoidHostPlanner planner(0);
  ASSERT_TRUE(simulateCluster(t, {job}, opt, planner, &avoid, &error)) << error;
  expectWithin1Percent(equal.jobs[0].lastAllreduceSec, (1 + 6.0 / 16) * kS / (kB / 2));
  expectWithin1Percent(avoid.jobs[0].lastAllreduceSec, 2 * kS / kB);
}

}  // namespace
}  // namespace rina::sim
