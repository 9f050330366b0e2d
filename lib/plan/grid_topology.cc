#include "plan/grid_topology.h"

#include <algorithm>
#include <map>
#include <random>
#include <string>

namespace rina::plan {
namespace {

// Resources by name, created on first use; capacity <= 0 means unlimited
// (no resource, index -1, left out of paths).
class ResourceTable {
 public:
  explicit ResourceTable(GridInstance* g) : g_(g) {}
  int get(const std::string& name, double capacity) {
    if (!(capacity > 0)) return -1;
    auto [it, fresh] = index_.emplace(name, static_cast<int>(g_->resources.size()));
    if (fresh) g_->resources.push_back({name, capacity});
    return it->second;
  }

 private:
  GridInstance* g_;
  std::map<std::string, int> index_;
};

std::vector<int> path(std::initializer_list<int> ids) {
  std::vector<int> p;
  for (int i : ids) {
    if (i >= 0) p.push_back(i);
  }
  return p;
}

std::string S(const char* what, int i) { return what + std::to_string(i); }

}  // namespace

Status buildFatTreeGrid(const FatTreeSpec& spec, GridInstance* out) {
  const int k = spec.k;
  if (k < 2 || k % 2)
    return errorf(rinaInvalidArgument, "fat tree: k = %d is not even and >= 2", k);
  const int h2 = k / 2, hosts = k * k * k / 4, edges = k * k / 2, cores = h2 * h2;
  if (static_cast<int>(spec.hostMbit.size()) != hosts ||
      static_cast<int>(spec.edgeAggCap.size()) != edges ||
      static_cast<int>(spec.aggAggCap.size()) != edges ||
      static_cast<int>(spec.coreAggCap.size()) != cores) {
    return errorf(
        rinaInvalidArgument,
        "fat tree k=%d: needs %d host rates, %d edge, %d aggregation and %d core capacities", k,
        hosts, edges, edges, cores);
  }
  if (spec.psHosts.empty() || spec.psHosts.size() != spec.shares.size()) {
    return errorf(rinaInvalidArgument, "fat tree: %zu PS hosts but %zu shares", spec.psHosts.size(),
                  spec.shares.size());
  }
  for (int p : spec.psHosts) {
    if (p < 0 || p >= hosts)
      return errorf(rinaInvalidArgument, "fat tree: PS host %d of %d", p, hosts);
  }
  GridInstance g;
  g.shares = spec.shares;
  ResourceTable res(&g);
  auto edgeOf = [&](int h) { return h / h2; };
  auto podOfEdge = [&](int e) { return e / h2; };
  auto aggIdx = [&](int pod, int i) { return pod * h2 + i; };
  auto up = [&](int h) { return res.get(S("host", h) + "->edge", spec.hostMbit[h]); };
  auto e2a = [&](int e, int i) {
    return res.get(S("edge", e) + "->" + S("agg", aggIdx(podOfEdge(e), i)), spec.edgeAggMbit);
  };
  auto a2c = [&](int a, int j) {
    return res.get(S("agg", a) + "->" + S("core", (a % h2) * h2 + j), spec.aggCoreMbit);
  };
  auto c2a = [&](int c, int pod) {
    return res.get(S("core", c) + "->" + S("agg", aggIdx(pod, c / h2)), spec.aggCoreMbit);
  };
  auto a2e = [&](int a, int e) {
    return res.get(S("agg", a) + "->" + S("edge", e), spec.edgeAggMbit);
  };
  auto capE = [&](int e) { return res.get(S("aggregate@edge", e), spec.edgeAggCap[e]); };
  auto capA = [&](int a) { return res.get(S("aggregate@agg", a), spec.aggAggCap[a]); };
  auto capC = [&](int c) { return res.get(S("aggregate@core", c), spec.coreAggCap[c]); };

  for (size_t grp = 0; grp < spec.psHosts.size(); ++grp) {
    const int ps = spec.psHosts[grp], Ep = edgeOf(ps), P = podOfEdge(Ep);
    const int ingress =
        res.get(S("edge", Ep) + "->" + S("host", ps) + " (PS ingress)", spec.hostMbit[ps]);
    // The rest of the way from a switch to this PS (fixed, spread by index).
    auto fromAgg = [&](int a) {  // aggregation switch a
      int pod = a / h2, i = a % h2;
      if (pod == P) return path({a2e(a, Ep), ingress});
      int c = i * h2 + (a / h2) % h2;
      return path({a2c(a, c % h2), c2a(c, P), a2e(aggIdx(P, i), Ep), ingress});
    };
    auto fromEdge = [&](int e) {
      if (e == Ep) return path({ingress});
      std::vector<int> p{e2a(e, e % h2)};
      for (int l : fromAgg(aggIdx(podOfEdge(e), e % h2))) p.push_back(l);
      p.erase(std::remove(p.begin(), p.end(), -1), p.end());
      return p;
    };
    auto fromCore = [&](int c) { return path({c2a(c, P), a2e(aggIdx(P, c / h2), Ep), ingress}); };
    // Aggregation nodes of this group, created on first use.
    std::map<std::string, int> nodeIndex;
    auto node = [&](const std::string& name, const std::vector<int>& outPath) {
      auto [it, fresh] = nodeIndex.emplace(name, static_cast<int>(g.nodes.size()));
      if (fresh)
        g.nodes.push_back(
            {name + (spec.psHosts.size() > 1 ? S("/ps", ps) : ""), static_cast<int>(grp), outPath});
      return it->second;
    };
    for (int w = 0; w < hosts; ++w) {
      if (std::find(spec.psHosts.begin(), spec.psHosts.end(), w) != spec.psHosts.end()) continue;
      GridInstance::Worker* worker = nullptr;
      for (auto& x : g.workers) {
        if (x.name == S("host", w)) worker = &x;
      }
      if (!worker) {
        g.workers.push_back({S("host", w), {}});
        worker = &g.workers.back();
      }
      auto add = [&](int aggNode, std::vector<int> p) {
        worker->options.push_back({static_cast<int>(grp), aggNode, std::move(p)});
      };
      const int e = edgeOf(w), pod = podOfEdge(e);
      if (spec.edgeAggCap[e] > 0) add(node(S("edge", e), fromEdge(e)), path({up(w), capE(e)}));
      // Every shortest path to the PS, as the resource list up to the PS's edge.
      std::vector<std::vector<int>> toEp;
      std::vector<std::pair<int, int>> via;  // (agg index in pod, core or -1)
      if (e == Ep) {
        toEp.push_back(path({up(w)}));
        via.push_back({-1, -1});
      } else if (pod == P) {
        for (int i = 0; i < h2; ++i) {
          toEp.push_back(path({up(w), e2a(e, i), a2e(aggIdx(P, i), Ep)}));
          via.push_back({i, -1});
        }
      } else {
        for (int i = 0; i < h2; ++i) {
          for (int j = 0; j < h2; ++j) {
            int a = aggIdx(pod, i), c = i * h2 + j;
            toEp.push_back(path({up(w), e2a(e, i), a2c(a, j), c2a(c, P), a2e(aggIdx(P, i), Ep)}));
            via.push_back({i, c});
          }
        }
      }
      if (e != Ep) {
        for (int i = 0; i < h2; ++i) {
          int a = aggIdx(pod, i);
          if (spec.aggAggCap[a] > 0)
            add(node(S("agg", a), fromAgg(a)), path({up(w), e2a(e, i), capA(a)}));
        }
      }
      if (pod != P) {
        for (int i = 0; i < h2; ++i) {
          for (int j = 0; j < h2; ++j) {
            int a = aggIdx(pod, i), c = i * h2 + j;
            if (spec.coreAggCap[c] > 0) {
              add(node(S("core", c), fromCore(c)), path({up(w), e2a(e, i), a2c(a, j), capC(c)}));
            }
          }
        }
      }
      if (e != Ep && spec.edgeAggCap[Ep] > 0) {
        int n = node(S("edge", Ep), path({ingress}));
        for (auto& p : toEp) {
          std::vector<int> q = p;
          if (int c = capE(Ep); c >= 0) q.push_back(c);
          add(n, q);
        }
      }
      for (auto& p : toEp) {
        std::vector<int> q = p;
        if (ingress >= 0) q.push_back(ingress);
        add(-1, q);
      }
    }
  }
  RINA_TRY(validateGrid(g));
  *out = std::move(g);
  return {};
}

FatTreeSpec randomFatTree(int k, double inaFraction, uint64_t seed,
                          const std::vector<double>& hostRates) {
  std::mt19937_64 rng(seed);
  FatTreeSpec s;
  s.k = k;
  const double caps[] = {100000, 200000, 400000};
  std::uniform_int_distribution<int> pickHost(0, static_cast<int>(hostRates.size()) - 1),
      pickCap(0, 2);
  std::bernoulli_distribution ina(inaFraction);
  for (int h = 0; h < k * k * k / 4; ++h) s.hostMbit.push_back(hostRates[pickHost(rng)]);
  auto capList = [&](int n) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(ina(rng) ? caps[pickCap(rng)] : 0);
    return v;
  };
  s.edgeAggCap = capList(k * k / 2);
  s.aggAggCap = capList(k * k / 2);
  s.coreAggCap = capList(k * k / 4);
  s.hostMbit[0] = 100000;  // the PS
  return s;
}

Status buildLeafSpineGrid(const Network& net, const LeafSpineGridSpec& spec, GridInstance* out) {
  RINA_TRY(validateNetwork(net));
  const int nh = static_cast<int>(net.hosts.size()), S_ = net.spines();
  if (spec.psHost < 0 || spec.psHost >= nh) {
    return errorf(rinaInvalidArgument, "GRID: PS host %d is not one of the %d hosts", spec.psHost,
                  nh);
  }
  if (!spec.rackAggMbit.empty() && spec.rackAggMbit.size() != net.racks.size()) {
    return errorf(rinaInvalidArgument, "GRID: %zu rack aggregation capacities for %zu racks",
                  spec.rackAggMbit.size(), net.racks.size());
  }
  if (nh < 2) return errorf(rinaInvalidArgument, "GRID: needs a worker besides the PS");
  GridInstance g;
  ResourceTable res(&g);
  const int ps = spec.psHost, P = net.hosts[ps].rack;
  const std::string& psName = net.hosts[ps].name;
  auto up = [&](int h) { return res.get(net.hosts[h].name + "->tor", net.hosts[h].linkMbit); };
  auto upl = [&](int r, int s) {
    return res.get(net.racks[r].name + "->" + S("spine", s), net.racks[r].uplinkMbit[s]);
  };
  auto downl = [&](int r, int s) {
    return res.get(S("spine", s) + "->" + net.racks[r].name, net.racks[r].uplinkMbit[s]);
  };
  auto spine = [&](int s) { return res.get(S("spine", s), net.spineMbit[s]); };
  const int ingress =
      res.get(net.racks[P].name + "->" + psName + " (PS ingress)", net.hosts[ps].linkMbit);
  auto rackCap = [&](int r) {
    return res.get("aggregate@" + net.racks[r].name,
                   spec.rackAggMbit.empty() ? 0 : spec.rackAggMbit[r]);
  };
  auto spineCap = [&](int s) { return res.get("aggregate@" + S("spine", s), spec.spineAggMbit); };
  std::map<std::string, int> nodeIndex;
  auto node = [&](const std::string& name, const std::vector<int>& outPath) {
    auto [it, fresh] = nodeIndex.emplace(name, static_cast<int>(g.nodes.size()));
    if (fresh) g.nodes.push_back({name, 0, outPath});
    return it->second;
  };
  auto withCap = [](std::vector<int> p, int cap) {
    if (cap >= 0) p.push_back(cap);
    return p;
  };
  for (int w = 0; w < nh; ++w) {
    if (w == ps) continue;
    GridInstance::Worker worker{net.hosts[w].name, {}};
    const int r = net.hosts[w].rack;
    if (r == P) {
      if (net.racks[P].ina)
        worker.options.push_back(
            {0, node(net.racks[P].name, path({ingress})), withCap(path({up(w)}), rackCap(P))});
      worker.options.push_back({0, -1, path({up(w), ingress})});
    } else {
      if (net.racks[r].ina) {
        int s = r % std::max(S_, 1);  // its stream's spine, spread by rack
        int n = node(net.racks[r].name,
                     S_ ? path({upl(r, s), spine(s), downl(P, s), ingress}) : path({ingress}));
        worker.options.push_back({0, n, withCap(path({up(w)}), rackCap(r))});
      }
      for (int s = 0; s < S_; ++s) {
        if (spec.spineAggMbit > 0) {
          int n = node(S("spine", s), path({downl(P, s), ingress}));
          worker.options.push_back({0, n, path({up(w), upl(r, s), spine(s), spineCap(s)})});
        }
        if (net.racks[P].ina) {
          int n = node(net.racks[P].name, path({ingress}));
          worker.options.push_back(
              {0, n, withCap(path({up(w), upl(r, s), spine(s), downl(P, s)}), rackCap(P))});
        }
        worker.options.push_back({0, -1, path({up(w), upl(r, s), spine(s), downl(P, s), ingress})});
      }
    }
    g.workers.push_back(std::move(worker));
  }
  RINA_TRY(validateGrid(g));
  *out = std::move(g);
  return {};
}

}  // namespace rina::plan
