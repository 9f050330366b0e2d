// Spine choice for inter-rack hops against brute force with an independent
// rate evaluation, exact and heuristic.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>

#include "plan/paths.h"

namespace rina::plan {
namespace {

Network randomNetwork(int racks, int spines, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(1, 8);
  Network net;
  for (int s = 0; s < spines; ++s) net.spineMbit.push_back(1000.0 * d(rng));
  for (int r = 0; r < racks; ++r) {
    Network::Rack rack;
    rack.name = 'r' + std::to_string(r);
    rack.hosts = {r};
    for (int s = 0; s < spines; ++s) rack.uplinkMbit.push_back(500.0 * d(rng));
    net.racks.push_back(rack);
    net.hosts.push_back({'h' + std::to_string(r), r, 1000});
  }
  return net;
}

// Independent: count every link's hops in maps and divide.
double referenceRate(const Network& net, const std::vector<SpineHop>& hops,
                     const std::vector<int>& spine) {
  std::map<std::tuple<char, int, int>, int> load;
  double rate = 1e300;
  for (size_t i = 0; i < hops.size(); ++i) {
    ++load[{'u', hops[i].fromRack, spine[i]}];
    ++load[{'d', hops[i].toRack, spine[i]}];
    ++load[{'s', 0, spine[i]}];
    rate = std::min(rate, hops[i].ownMbit);
  }
  for (auto& [key, k] : load) {
    auto [kind, rack, s] = key;
    double cap = kind == 's' ? net.spineMbit[s] : net.racks[rack].uplinkMbit[s];
    rate = std::min(rate, cap / k);
  }
  return rate;
}

double bruteForce(const Network& net, const std::vector<SpineHop>& hops) {
  const int S = net.spines();
  std::vector<int> cur(hops.size(), 0);
  double best = 0;
  while (true) {
    best = std::max(best, referenceRate(net, hops, cur));
    size_t i = 0;
    for (; i < cur.size(); ++i) {
      if (++cur[i] < S) break;
      cur[i] = 0;
    }
    if (i == cur.size()) return best;
  }
}

std::vector<SpineHop> ringHops(int racks, std::mt19937& rng, int hops) {
  std::vector<SpineHop> out;
  for (int k = 0; k < hops; ++k) {
    int a = rng() % racks, b = (a + 1 + rng() % (racks - 1)) % racks;
    out.push_back({a, b, 1000.0 * (2 + rng() % 6)});
  }
  return out;
}

TEST(PlanPaths, ExactMatchesBruteForce) {
  std::mt19937 rng(2);
  for (int trial = 0; trial < 60; ++trial) {
    Network net = randomNetwork(3 + trial % 3, 1 + trial % 3, rng);
    auto hops = ringHops(static_cast<int>(net.racks.size()), rng, 2 + trial % 5);
    SpineAssignment a = assignSpines(net, hops);
    EXPECT_TRUE(a.exact);
    EXPECT_DOUBLE_EQ(a.bottleneck, bruteForce(net, hops)) << trial;
    EXPECT_DOUBLE_EQ(referenceRate(net, hops, a.spine), a.bottleneck);
    EXPECT_DOUBLE_EQ(spineAssignmentRate(net, hops, a.spine), a.bottleneck);
  }
}

TEST(PlanPaths, HeuristicGapToBruteForce) {
  std::mt19937 rng(9);
  int optimal = 0, trials = 6;
  double worst = 1;
  for (int trial = 0; trial < trials; ++trial) {
    Network net = randomNetwork(5, 3, rng);
    auto hops = ringHops(5, rng, 11);  // 3^11 = 177147 > the exact limit
    SpineAssignment a = assignSpines(net, hops);
    EXPECT_FALSE(a.exact);
    double best = bruteForce(net, hops);
    EXPECT_DOUBLE_EQ(referenceRate(net, hops, a.spine), a.bottleneck);
    ASSERT_LE(a.bottleneck, best);
    worst = std::min(worst, a.bottleneck / best);
    optimal += a.bottleneck == best;
  }
  std::printf("spine heuristic: optimal in %d of %d (11 hops, 3 spines), worst ratio %.3f\n",
              optimal, trials, worst);
  EXPECT_GE(worst, 0.5);
}

// Two equal spines, two hops out of the same rack: the closed form puts them
// on different spines, each at the full uplink.
TEST(PlanPaths, SpreadsSharedUplink) {
  Network net;
  net.spineMbit = {10000, 10000};
  for (int r = 0; r < 3; ++r) {
    net.racks.push_back({'r' + std::to_string(r), false, {r}, {1000, 1000}});
    net.hosts.push_back({'h' + std::to_string(r), r, 5000});
  }
  std::vector<SpineHop> hops{{0, 1, 5000}, {0, 2, 5000}};
  SpineAssignment a = assignSpines(net, hops);
  EXPECT_NE(a.spine[0], a.spine[1]);
  EXPECT_EQ(a.bottleneck, 1000);
}

}  // namespace
}  // namespace rina::plan
