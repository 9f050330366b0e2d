// GRID: the closed-form routing rate against an independent count, the LP
// against brute force over all integral routings (<= 6 workers), closed-form
// instances where LP and integral optimum agree, rounding, baselines, the
// fat-tree builder, and every bad instance.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "plan/ps_routes.h"
#include "plan/ps_routes_topology.h"

namespace rina::plan {
namespace {

// Independent: loads counted per resource name in a map, nodes by name.
double referenceRate(const PsRoutingProblem& g, const Routing& routing) {
  std::map<std::string, double> load;
  std::map<std::string, int> usedNodes;
  for (size_t w = 0; w < g.workers.size(); ++w) {
    for (int o : routing[w]) {
      const auto& opt = g.workers[w].options[o];
      for (int l : opt.path) load[g.resources[l].name] += g.shares[opt.group];
      if (opt.aggNode >= 0) usedNodes[g.nodes[opt.aggNode].name] = opt.aggNode;
    }
  }
  for (auto& [name, a] : usedNodes) {
    for (int l : g.nodes[a].outPath) load[g.resources[l].name] += g.shares[g.nodes[a].group];
  }
  double rate = 1e300;
  for (const auto& r : g.resources) {
    if (load.count(r.name)) rate = std::min(rate, r.capacity / load[r.name]);
  }
  return rate;
}

// Best integral routing by enumeration (one group).
double bruteForce(const PsRoutingProblem& g, Routing* best = nullptr) {
  Routing cur(g.workers.size(), std::vector<int>{0});
  double top = -1;
  while (true) {
    double r = referenceRate(g, cur);
    if (r > top) {
      top = r;
      if (best) *best = cur;
    }
    size_t w = 0;
    for (; w < cur.size(); ++w) {
      if (++cur[w][0] < static_cast<int>(g.workers[w].options.size())) break;
      cur[w][0] = 0;
    }
    if (w == cur.size()) return top;
  }
}

Network leafSpine(std::mt19937& rng, int racks, int hostsPerRack, int spines) {
  const double rates[] = {10000, 25000, 40000, 100000};
  Network net;
  for (int s = 0; s < spines; ++s) net.spineMbit.push_back(rates[rng() % 4] * 2);
  for (int r = 0; r < racks; ++r) {
    Network::Rack rack{'r' + std::to_string(r), rng() % 3 != 0, {}, {}};
    for (int s = 0; s < spines; ++s) rack.uplinkMbit.push_back(rates[rng() % 4]);
    for (int h = 0; h < hostsPerRack; ++h) {
      rack.hosts.push_back(static_cast<int>(net.hosts.size()));
      net.hosts.push_back({'h' + std::to_string(net.hosts.size()), r, rates[rng() % 4]});
    }
    net.racks.push_back(rack);
  }
  return net;
}

TEST(PlanPsRoutes, RoutingRateMatchesIndependentCount) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 30; ++trial) {
    Network net = leafSpine(rng, 3, 2, 2);
    LeafSpineRoutingSpec spec{
        static_cast<int>(rng() % 6), {200000, 50000, 100000}, trial % 2 ? 80000.0 : 0.0};
    PsRoutingProblem g;
    ASSERT_TRUE(buildLeafSpineRoutingProblem(net, spec, &g).ok());
    Routing r(g.workers.size(), std::vector<int>(1));
    for (size_t w = 0; w < r.size(); ++w) r[w][0] = rng() % g.workers[w].options.size();
    EXPECT_DOUBLE_EQ(routingRate(g, r), referenceRate(g, r));
  }
}

TEST(PlanPsRoutes, LpBoundsBruteForceAndRounding) {
  if (!routingLpAvailable()) GTEST_SKIP() << "built without GLPK";
  std::mt19937 rng(2);
  int tight = 0, trials = 25;
  for (int trial = 0; trial < trials; ++trial) {
    // 2 or 3 racks of 2 hosts, one of them the PS: <= 5 workers.
    Network net = leafSpine(rng, 2 + trial % 2, 2, 1 + trial % 2);
    LeafSpineRoutingSpec spec{
        static_cast<int>(rng() % net.hosts.size()), {}, trial % 3 == 0 ? 60000.0 : 0.0};
    for (size_t r = 0; r < net.racks.size(); ++r)
      spec.rackAggMbit.push_back(rng() % 2 ? 50000 : 150000);
    PsRoutingProblem g;
    ASSERT_TRUE(buildLeafSpineRoutingProblem(net, spec, &g).ok());
    ASSERT_LE(g.workers.size(), 6u);
    RoutingLpResult lp;
    ASSERT_TRUE(solveRoutingLp(g, &lp).ok());
    double best = bruteForce(g);
    EXPECT_GE(lp.rate, best * (1 - 1e-9)) << trial;
    RoundedRouting rounded = roundRouting(g, lp, 32, 7 + trial);
    EXPECT_LE(rounded.rate, lp.rate * (1 + 1e-9));
    EXPECT_LE(rounded.rate, best * (1 + 1e-9));
    EXPECT_GE(rounded.rate, rounded.roundedRate);
    EXPECT_GE(rounded.rate, routingRate(g, nearestSwitchRouting(g)));
    EXPECT_DOUBLE_EQ(rounded.rate, referenceRate(g, rounded.routing));
    EXPECT_LE(routingRate(g, nearestSwitchRouting(g)), best * (1 + 1e-9));
    EXPECT_LE(routingRate(g, noInaRouting(g)), best * (1 + 1e-9));
    tight += rounded.rate >= best * (1 - 1e-9);
    // The LP's x is a distribution per worker.
    for (const auto& x : lp.x) {
      double s = 0;
      for (double v : x) s += v;
      EXPECT_NEAR(s, 1.0, 1e-6);
    }
  }
  std::printf("GRID rounding + repair reached the integral optimum in %d of %d instances\n", tight,
              trials);
}

// n workers under one ToR (aggregation capacity A), PS behind the same ToR
// with ingress P, host links c_i. Integral: k workers direct, n - k
// aggregated gives min(c_min, A / (n - k), P / (k + 1)) (P / k when none
// aggregates); with A large every worker aggregates, r = min(c_min, P), and
// the LP cannot beat that either (each host link carries r, the ingress >= r).
PsRoutingProblem star(int n, double A, double P, const std::vector<double>& c) {
  Network net;
  net.racks.push_back({"tor", true, {}, {}});
  for (int h = 0; h <= n; ++h) {
    net.racks[0].hosts.push_back(h);
    net.hosts.push_back({'h' + std::to_string(h), 0, h == 0 ? P : c[h - 1]});
  }
  PsRoutingProblem g;
  EXPECT_TRUE(buildLeafSpineRoutingProblem(net, LeafSpineRoutingSpec{0, {A}, 0}, &g).ok());
  return g;
}

TEST(PlanPsRoutes, StarClosedForm) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    int n = 2 + trial % 5;
    std::vector<double> c(n);
    for (double& x : c) x = 10000.0 * (1 + rng() % 10);
    double A = 10000.0 * (1 + rng() % 30), P = 10000.0 * (1 + rng() % 10);
    PsRoutingProblem g = star(n, A, P, c);
    double cmin = *std::min_element(c.begin(), c.end());
    double closed = std::min(cmin, P / n);  // k = n: nobody aggregates
    for (int k = 0; k < n; ++k)
      closed = std::max(closed, std::min({cmin, A / (n - k), P / (k + 1)}));
    EXPECT_DOUBLE_EQ(bruteForce(g), closed) << trial;
    if (!routingLpAvailable()) continue;
    RoutingLpResult lp;
    ASSERT_TRUE(solveRoutingLp(g, &lp).ok());
    EXPECT_GE(lp.rate, closed * (1 - 1e-9));
    if (A >= n * cmin) {
      EXPECT_NEAR(lp.rate, std::min(cmin, P), 1e-6 * lp.rate) << trial;
      EXPECT_DOUBLE_EQ(closed, std::min(cmin, P));
    }
  }
}

// Without INA the only routes are direct and the PS ingress is shared by all
// n workers: LP = integral = min(c_min, P / n).
TEST(PlanPsRoutes, NoInaClosedForm) {
  if (!routingLpAvailable()) GTEST_SKIP() << "built without GLPK";
  PsRoutingProblem g = star(5, 1e6, 100000, {40000, 25000, 100000, 10000, 40000});
  for (auto& w : g.workers) {
    std::erase_if(w.options, [](const PsRoutingProblem::Option& o) { return o.aggNode >= 0; });
  }
  RoutingLpResult lp;
  ASSERT_TRUE(solveRoutingLp(g, &lp).ok());
  EXPECT_NEAR(lp.rate, 10000, 1e-6);
  EXPECT_DOUBLE_EQ(bruteForce(g), 10000);
}

TEST(PlanPsRoutes, FatTreeBuilderAndBaselines) {
  FatTreeSpec spec = randomFatTree(4, 0.5, 11);
  PsRoutingProblem g;
  ASSERT_TRUE(buildFatTreeRoutingProblem(spec, &g).ok());
  EXPECT_EQ(g.workers.size(), 15u);
  for (const auto& w : g.workers) {
    // Every worker has the 4 shortest paths of another pod (or fewer nearby).
    int direct = 0;
    for (const auto& o : w.options) direct += o.aggNode < 0;
    EXPECT_GE(direct, 1);
    EXPECT_LE(direct, 4);
  }
  double atp = routingRate(g, nearestSwitchRouting(g));
  double none = routingRate(g, noInaRouting(g));
  // No INA: the PS ingress is shared by all 15 workers.
  EXPECT_LE(none, spec.hostMbit[0] / 15 * (1 + 1e-12));
  if (!routingLpAvailable()) return;
  RoutingLpResult lp;
  ASSERT_TRUE(solveRoutingLp(g, &lp).ok());
  RoundedRouting r = roundRouting(g, lp, 16, 1);
  EXPECT_LE(r.rate, lp.rate * (1 + 1e-9));
  EXPECT_GE(r.rate, atp);  // the repaired nearest-switch routing is a candidate
  EXPECT_DOUBLE_EQ(r.rate, referenceRate(g, r.routing));
  EXPECT_LE(atp, lp.rate * (1 + 1e-9));
  EXPECT_LE(none, lp.rate * (1 + 1e-9));
}

TEST(PlanPsRoutes, InArtGroupsShareTheModel) {
  if (!routingLpAvailable()) GTEST_SKIP() << "built without GLPK";
  // Two PS with equal shares and no INA: each worker sends r/2 to each PS,
  // so the LP rate is min(c_min, 2 * P_j / n) per PS ingress.
  FatTreeSpec spec = randomFatTree(4, 0.0, 5);
  for (double& h : spec.hostMbit) h = 40000;
  spec.psHosts = {0, 15};
  spec.shares = {0.5, 0.5};
  PsRoutingProblem g;
  ASSERT_TRUE(buildFatTreeRoutingProblem(spec, &g).ok());
  EXPECT_EQ(g.workers.size(), 14u);
  RoutingLpResult lp;
  ASSERT_TRUE(solveRoutingLp(g, &lp).ok());
  EXPECT_NEAR(lp.rate, 40000.0 * 2 / 14, 1e-6);
}

// A build without GLPK says so instead of solving.
TEST(PlanPsRoutes, SolveWithoutGlpkSaysSo) {
  if (routingLpAvailable()) GTEST_SKIP() << "built with GLPK";
  RoutingLpResult lp;
  Status s = solveRoutingLp(star(2, 1e5, 1e5, {1e4, 1e4}), &lp);
  EXPECT_EQ(s.code(), rinaInvalidUsage);
  EXPECT_NE(s.message().find("without GLPK"), std::string::npos) << s.message();
}

TEST(PlanPsRoutes, RejectsBadInstances) {
  PsRoutingProblem good = star(2, 1e5, 1e5, {1e4, 1e4});
  ASSERT_TRUE(validateRoutingProblem(good).ok());
  auto expectBad = [](PsRoutingProblem g, const char* what) {
    EXPECT_EQ(validateRoutingProblem(g).code(), rinaInvalidArgument) << what;
    RoutingLpResult lp;
    if (routingLpAvailable()) {
      EXPECT_EQ(solveRoutingLp(g, &lp).code(), rinaInvalidArgument) << what;
    }
  };
  PsRoutingProblem g = good;
  g.resources[0].capacity = 0;
  expectBad(g, "zero capacity");
  g = good;
  g.resources[0].capacity = INFINITY;
  expectBad(g, "infinite capacity");
  g = good;
  g.shares = {0.5};
  expectBad(g, "shares not summing to 1");
  g = good;
  g.shares = {};
  expectBad(g, "no groups");
  g = good;
  g.shares = {1.5, -0.5};
  expectBad(g, "negative share");
  g = good;
  g.workers[0].options[0].path.push_back(99);
  expectBad(g, "resource out of range");
  g = good;
  g.workers[0].options[0].aggNode = 7;
  expectBad(g, "node out of range");
  g = good;
  g.workers[0].options[0].group = 1;
  expectBad(g, "option group out of range");
  g = good;
  g.workers[0].options.clear();
  expectBad(g, "worker without options");
  g = good;
  g.workers.clear();
  expectBad(g, "no workers");
  g = good;
  g.nodes[0].outPath.push_back(-3);
  expectBad(g, "node path out of range");
  g = good;
  g.nodes[0].group = 2;
  expectBad(g, "node group out of range");
  // Unbounded: a worker whose only option uses no capacity at all.
  g = good;
  for (auto& w : g.workers) w.options = {{0, -1, {}}};
  if (routingLpAvailable()) {
    RoutingLpResult lp;
    EXPECT_EQ(solveRoutingLp(g, &lp).code(), rinaInvalidArgument);
  }
  // Builders.
  PsRoutingProblem out;
  FatTreeSpec f = randomFatTree(4, 0.5, 1);
  f.k = 5;
  EXPECT_EQ(buildFatTreeRoutingProblem(f, &out).code(), rinaInvalidArgument);
  f = randomFatTree(4, 0.5, 1);
  f.hostMbit.pop_back();
  EXPECT_EQ(buildFatTreeRoutingProblem(f, &out).code(), rinaInvalidArgument);
  f = randomFatTree(4, 0.5, 1);
  f.psHosts = {16};
  EXPECT_EQ(buildFatTreeRoutingProblem(f, &out).code(), rinaInvalidArgument);
  f = randomFatTree(4, 0.5, 1);
  f.psHosts = {0, 1};
  EXPECT_EQ(buildFatTreeRoutingProblem(f, &out).code(), rinaInvalidArgument);  // one share
  std::mt19937 rng(1);
  Network net = leafSpine(rng, 2, 2, 1);
  EXPECT_EQ(buildLeafSpineRoutingProblem(net, LeafSpineRoutingSpec{4, {}, 0}, &out).code(),
            rinaInvalidArgument);
  EXPECT_EQ(buildLeafSpineRoutingProblem(net, LeafSpineRoutingSpec{0, {1.0}, 0}, &out).code(),
            rinaInvalidArgument);
}

}  // namespace
}  // namespace rina::plan
