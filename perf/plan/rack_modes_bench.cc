// Planning time with the per-rack choice (plan/rack_modes.h) on large
// leaf-spine networks: R racks of H hosts, INA on a random half, host rates
// from 10/25/40/100 Gbit/s, uplinks from 100/400 Gbit/s, now and then a
// slow switch. Times plan::chooseRackModes alone and plan::makePlan in rack
// order (what a communicator past PlanSync::kMaxPlannedMembers runs: modes,
// members and ports, no ring search), the median of --repeats each, and
// says what the choice made.
//   rack_modes_bench [--racks 1024] [--hosts 16] [--repeats 5] [--seed 1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "plan/rack_modes.h"

namespace {

using namespace rina;

plan::Network randomNetwork(int racks, int hosts, uint32_t seed) {
  std::mt19937 rng(seed);
  const double hostRates[] = {10000, 25000, 40000, 100000};
  const double uplinks[] = {100000, 400000};
  plan::Network net;
  net.spineMbit = {0};
  for (int r = 0; r < racks; ++r) {
    plan::Network::Rack rack;
    rack.name = "r" + std::to_string(r);
    rack.ina = rng() % 2 == 0;
    rack.uplinkMbit = {uplinks[rng() % 2]};
    rack.switchMbit = rng() % 8 == 0 ? 20000 : 0;
    for (int h = 0; h < hosts; ++h) {
      rack.hosts.push_back(static_cast<int>(net.hosts.size()));
      net.hosts.push_back({rack.name + "h" + std::to_string(h), r, hostRates[rng() % 4]});
    }
    net.racks.push_back(std::move(rack));
  }
  return net;
}

template <typename F>
double medianSeconds(int repeats, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int racks = 1024, hosts = 16, repeats = 5;
  uint32_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::printf("usage: rack_modes_bench [--racks 1024] [--hosts 16] [--repeats 5] [--seed 1]\n");
      return 0;
    }
    if (i + 1 >= argc)
      return std::fprintf(stderr, "rack_modes_bench: %s needs a value\n", a.c_str()), 2;
    const int v = std::atoi(argv[++i]);
    if (v < 1)
      return std::fprintf(stderr, "rack_modes_bench: %s needs a number >= 1\n", a.c_str()), 2;
    if (a == "--racks") {
      racks = v;
    } else if (a == "--hosts") {
      hosts = v;
    } else if (a == "--repeats") {
      repeats = v;
    } else if (a == "--seed") {
      seed = static_cast<uint32_t>(v);
    } else {
      return std::fprintf(stderr, "rack_modes_bench: unknown flag %s\n", a.c_str()), 2;
    }
  }
  const plan::Network net = randomNetwork(racks, hosts, seed);
  plan::RackChoice choice;
  const double choose = medianSeconds(repeats, [&] {
    if (!plan::chooseRackModes(net, plan::ChoiceOptions{}, &choice).ok()) std::exit(1);
  });
  plan::Plan p;
  plan::PlanOptions o;
  o.rackOrder = true;
  const double planned = medianSeconds(repeats, [&] {
    if (!plan::makePlan(net, o, &p).ok()) std::exit(1);
  });
  int counts[plan::kRackModes] = {};
  int ina = 0;
  for (size_t r = 0; r < net.racks.size(); ++r) {
    if (!net.racks[r].ina) continue;
    ++ina;
    ++counts[static_cast<int>(choice.modes[r])];
  }
  const double S = 64 << 20, L = plan::ModelOptions{}.stepLatencySec;
  std::printf(
      "%d racks x %d hosts (%d INA), seed %u: chooseRackModes %.3f s, makePlan in rack order "
      "%.3f s (median of %d); INA racks on the switch %d, on their hosts %d, autonomous %d; "
      "%lld ring members; predicted at 64 MiB: rina %.1f ms, INA forced %.1f ms, ring %.1f ms\n",
      racks, hosts, ina, seed, choose, planned, repeats, counts[0], counts[1], counts[2],
      static_cast<long long>(choice.members), choice.rina.seconds(S, L) * 1e3,
      choice.forcedIna.seconds(S, L) * 1e3, choice.ring.seconds(S, L) * 1e3);
  return 0;
}
