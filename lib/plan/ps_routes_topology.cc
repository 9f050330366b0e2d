#include "plan/ps_routes_topology.h"

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
  explicit ResourceTable(PsRoutingProblem* g) : g_(g) {}
  int get(const std::string& name, double capacity) {
    if (!(capacity > 0)) return -1;
    auto [it, fresh] = index_.emplace(name, static_cast<int>(g_->resources.size()));
    if (fresh) g_->resources.push_back({name, capacity});
    return it->second;
  }

 private:
  PsRoutingProblem* g_;
  std::map<std::string, int> index_;
};

// Aggregation nodes by name, created on first use with the path of their
// aggregated stream.
class NodeTable {
 public:
  NodeTable(PsRoutingProblem* g, int group, std::string suffix)
      : g_(g), group_(group), suffix_(std::move(suffix)) {}
  int get(const std::string& name, const std::vector<int>& outPath) {
    auto [it, fresh] = index_.emplace(name, static_cast<int>(g_->nodes.size()));
    if (fresh) g_->nodes.push_back({name + suffix_, group_, outPath});
    return it->second;
  }

 private:
  PsRoutingProblem* g_;
  int group_;
  std::string suffix_;  // appended to the node's name
  std::map<std::string, int> index_;
};

std::vector<int> path(std::initializer_list<int> ids) {
  std::vector<int> p;
  for (int i : ids) {
    if (i >= 0) p.push_back(i);
  }
  return p;
}

std::vector<int> withCap(std::vector<int> p, int cap) {
  if (cap >= 0) p.push_back(cap);
  return p;
}

std::string S(const char* what, int i) { return what + std::to_string(i); }

Status checkFatTreeSpec(const FatTreeSpec& spec) {
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
  return {};
}

// The fat tree's switches by index, and its resources towards the PS hosts:
// the links on the way up and down, and the switches' aggregation
// capacities.
class FatTreeResources {
 public:
  FatTreeResources(const FatTreeSpec& spec, PsRoutingProblem* g)
      : spec_(spec), res_(g), h2_(spec.k / 2) {}
  int half() const { return h2_; }
  int edgeOf(int h) const { return h / h2_; }
  int podOfEdge(int e) const { return e / h2_; }
  int aggIdx(int pod, int i) const { return pod * h2_ + i; }

  int up(int h) { return res_.get(S("host", h) + "->edge", spec_.hostMbit[h]); }
  int e2a(int e, int i) {
    return res_.get(S("edge", e) + "->" + S("agg", aggIdx(podOfEdge(e), i)), spec_.edgeAggMbit);
  }
  int a2c(int a, int j) {
    return res_.get(S("agg", a) + "->" + S("core", (a % h2_) * h2_ + j), spec_.aggCoreMbit);
  }
  int c2a(int c, int pod) {
    return res_.get(S("core", c) + "->" + S("agg", aggIdx(pod, c / h2_)), spec_.aggCoreMbit);
  }
  int a2e(int a, int e) { return res_.get(S("agg", a) + "->" + S("edge", e), spec_.edgeAggMbit); }
  int psIngress(int ps) {
    return res_.get(S("edge", edgeOf(ps)) + "->" + S("host", ps) + " (PS ingress)",
                    spec_.hostMbit[ps]);
  }
  int capE(int e) { return res_.get(S("aggregate@edge", e), spec_.edgeAggCap[e]); }
  int capA(int a) { return res_.get(S("aggregate@agg", a), spec_.aggAggCap[a]); }
  int capC(int c) { return res_.get(S("aggregate@core", c), spec_.coreAggCap[c]); }

 private:
  const FatTreeSpec& spec_;
  ResourceTable res_;
  const int h2_;
};

PsRoutingProblem::Worker& workerNamed(PsRoutingProblem* g, const std::string& name) {
  for (auto& x : g->workers) {
    if (x.name == name) return x;
  }
  g->workers.push_back({name, {}});
  return g->workers.back();
}

// One PS's group: the aggregation nodes whose streams go to that PS, each
// on a fixed path there (spread by switch index), and every worker's
// options towards it.
class FatTreeGroup {
 public:
  FatTreeGroup(const FatTreeSpec& spec, FatTreeResources* r, PsRoutingProblem* g, int grp)
      : spec_(spec),
        r_(*r),
        g_(g),
        grp_(grp),
        ps_(spec.psHosts[grp]),
        Ep_(r->edgeOf(ps_)),
        P_(r->podOfEdge(Ep_)),
        h2_(r->half()),
        ingress_(r->psIngress(ps_)),
        nodes_(g, grp, spec.psHosts.size() > 1 ? S("/ps", ps_) : "") {}

  // Worker w's options: aggregate at its edge, at an aggregation switch of
  // its pod, at a core, at the PS's edge, or not at all.
  void addWorker(int w) {
    PsRoutingProblem::Worker& worker = workerNamed(g_, S("host", w));
    const int e = r_.edgeOf(w), pod = r_.podOfEdge(e);
    if (spec_.edgeAggCap[e] > 0) addEdgeOption(w, &worker);
    const std::vector<std::vector<int>> toEp = shortestPathsToPsEdge(w);
    if (e != Ep_) addAggOptions(w, &worker);
    if (pod != P_) addCoreOptions(w, &worker);
    if (e != Ep_ && spec_.edgeAggCap[Ep_] > 0) addPsEdgeOptions(toEp, &worker);
    for (auto& p : toEp) addOption(&worker, -1, withCap(p, ingress_));
  }

 private:
  // The rest of the way to this PS from aggregation switch a, edge e, core c.
  std::vector<int> fromAgg(int a) {
    int pod = a / h2_, i = a % h2_;
    if (pod == P_) return path({r_.a2e(a, Ep_), ingress_});
    int c = i * h2_ + (a / h2_) % h2_;
    return path({r_.a2c(a, c % h2_), r_.c2a(c, P_), r_.a2e(r_.aggIdx(P_, i), Ep_), ingress_});
  }
  std::vector<int> fromEdge(int e) {
    if (e == Ep_) return path({ingress_});
    std::vector<int> p{r_.e2a(e, e % h2_)};
    for (int l : fromAgg(r_.aggIdx(r_.podOfEdge(e), e % h2_))) p.push_back(l);
    p.erase(std::remove(p.begin(), p.end(), -1), p.end());
    return p;
  }
  std::vector<int> fromCore(int c) {
    return path({r_.c2a(c, P_), r_.a2e(r_.aggIdx(P_, c / h2_), Ep_), ingress_});
  }

  void addOption(PsRoutingProblem::Worker* worker, int aggNode, std::vector<int> p) {
    worker->options.push_back({grp_, aggNode, std::move(p)});
  }

  void addEdgeOption(int w, PsRoutingProblem::Worker* worker) {
    const int e = r_.edgeOf(w);
    std::vector<int> toNode = path({r_.up(w), r_.capE(e)});
    const int n = nodes_.get(S("edge", e), fromEdge(e));
    addOption(worker, n, std::move(toNode));
  }

  // Every shortest path from worker w to the PS's edge, as its resources.
  std::vector<std::vector<int>> shortestPathsToPsEdge(int w) {
    const int e = r_.edgeOf(w), pod = r_.podOfEdge(e);
    std::vector<std::vector<int>> toEp;
    if (e == Ep_) {
      toEp.push_back(path({r_.up(w)}));
    } else if (pod == P_) {
      for (int i = 0; i < h2_; ++i) {
        toEp.push_back(path({r_.up(w), r_.e2a(e, i), r_.a2e(r_.aggIdx(P_, i), Ep_)}));
      }
    } else {
      for (int i = 0; i < h2_; ++i) {
        for (int j = 0; j < h2_; ++j) {
          int a = r_.aggIdx(pod, i), c = i * h2_ + j;
          toEp.push_back(path({r_.up(w), r_.e2a(e, i), r_.a2c(a, j), r_.c2a(c, P_),
                               r_.a2e(r_.aggIdx(P_, i), Ep_)}));
        }
      }
    }
    return toEp;
  }

  void addAggOptions(int w, PsRoutingProblem::Worker* worker) {
    const int e = r_.edgeOf(w), pod = r_.podOfEdge(e);
    for (int i = 0; i < h2_; ++i) {
      int a = r_.aggIdx(pod, i);
      if (!(spec_.aggAggCap[a] > 0)) continue;
      std::vector<int> toNode = path({r_.up(w), r_.e2a(e, i), r_.capA(a)});
      const int n = nodes_.get(S("agg", a), fromAgg(a));
      addOption(worker, n, std::move(toNode));
    }
  }

  void addCoreOptions(int w, PsRoutingProblem::Worker* worker) {
    const int e = r_.edgeOf(w), pod = r_.podOfEdge(e);
    for (int i = 0; i < h2_; ++i) {
      for (int j = 0; j < h2_; ++j) {
        int a = r_.aggIdx(pod, i), c = i * h2_ + j;
        if (!(spec_.coreAggCap[c] > 0)) continue;
        std::vector<int> toNode = path({r_.up(w), r_.e2a(e, i), r_.a2c(a, j), r_.capC(c)});
        const int n = nodes_.get(S("core", c), fromCore(c));
        addOption(worker, n, std::move(toNode));
      }
    }
  }

  void addPsEdgeOptions(const std::vector<std::vector<int>>& toEp,
                        PsRoutingProblem::Worker* worker) {
    const int n = nodes_.get(S("edge", Ep_), path({ingress_}));
    for (auto& p : toEp) addOption(worker, n, withCap(p, r_.capE(Ep_)));
  }

  const FatTreeSpec& spec_;
  FatTreeResources& r_;
  PsRoutingProblem* g_;
  const int grp_;
  const int ps_, Ep_, P_;  // the PS host, its edge switch, its pod
  const int h2_;
  const int ingress_;  // the PS's edge -> PS link
  NodeTable nodes_;
};

bool isPsHost(const FatTreeSpec& spec, int h) {
  return std::find(spec.psHosts.begin(), spec.psHosts.end(), h) != spec.psHosts.end();
}

}  // namespace

Status buildFatTreeRoutingProblem(const FatTreeSpec& spec, PsRoutingProblem* out) {
  RINA_TRY(checkFatTreeSpec(spec));
  PsRoutingProblem g;
  g.shares = spec.shares;
  FatTreeResources resources(spec, &g);
  const int hosts = spec.k * spec.k * spec.k / 4;
  for (size_t grp = 0; grp < spec.psHosts.size(); ++grp) {
    FatTreeGroup group(spec, &resources, &g, static_cast<int>(grp));
    for (int w = 0; w < hosts; ++w) {
      if (!isPsHost(spec, w)) group.addWorker(w);
    }
  }
  RINA_TRY(validateRoutingProblem(g));
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

namespace {

Status checkLeafSpineSpec(const Network& net, const LeafSpineRoutingSpec& spec) {
  RINA_TRY(validateNetwork(net));
  const int nh = static_cast<int>(net.hosts.size());
  if (spec.psHost < 0 || spec.psHost >= nh) {
    return errorf(rinaInvalidArgument, "GRID: PS host %d is not one of the %d hosts", spec.psHost,
                  nh);
  }
  if (!spec.rackAggMbit.empty() && spec.rackAggMbit.size() != net.racks.size()) {
    return errorf(rinaInvalidArgument, "GRID: %zu rack aggregation capacities for %zu racks",
                  spec.rackAggMbit.size(), net.racks.size());
  }
  if (nh < 2) return errorf(rinaInvalidArgument, "GRID: needs a worker besides the PS");
  return {};
}

// The leaf-spine network's resources towards the PS host, its aggregation
// nodes (one group), and every worker's options.
class LeafSpineProblem {
 public:
  LeafSpineProblem(const Network& net, const LeafSpineRoutingSpec& spec, PsRoutingProblem* g)
      : net_(net),
        spec_(spec),
        res_(g),
        nodes_(g, 0, ""),
        ps_(spec.psHost),
        P_(net.hosts[ps_].rack),
        S_(net.spines()),
        ingress_(res_.get(net.racks[P_].name + "->" + net.hosts[ps_].name + " (PS ingress)",
                          net.hosts[ps_].linkMbit)) {}

  PsRoutingProblem::Worker workerOptions(int w) {
    PsRoutingProblem::Worker worker{net_.hosts[w].name, {}};
    const int r = net_.hosts[w].rack;
    if (r == P_) {
      addInPsRack(w, &worker);
    } else {
      addFromOtherRack(w, r, &worker);
    }
    return worker;
  }

 private:
  int up(int h) { return res_.get(net_.hosts[h].name + "->tor", net_.hosts[h].linkMbit); }
  int upl(int r, int s) {
    return res_.get(net_.racks[r].name + "->" + S("spine", s), net_.racks[r].uplinkMbit[s]);
  }
  int downl(int r, int s) {
    return res_.get(S("spine", s) + "->" + net_.racks[r].name, net_.racks[r].uplinkMbit[s]);
  }
  int spine(int s) { return res_.get(S("spine", s), net_.spineMbit[s]); }
  int rackCap(int r) {
    return res_.get("aggregate@" + net_.racks[r].name,
                    spec_.rackAggMbit.empty() ? 0 : spec_.rackAggMbit[r]);
  }
  int spineCap(int s) { return res_.get("aggregate@" + S("spine", s), spec_.spineAggMbit); }

  // A worker beside the PS: aggregate at their ToR (if INA), or not at all.
  void addInPsRack(int w, PsRoutingProblem::Worker* worker) {
    if (net_.racks[P_].ina) {
      const int n = nodes_.get(net_.racks[P_].name, path({ingress_}));
      worker->options.push_back({0, n, withCap(path({up(w)}), rackCap(P_))});
    }
    worker->options.push_back({0, -1, path({up(w), ingress_})});
  }

  // A worker in rack r: aggregate at its ToR (if INA; its stream over the
  // rack's spine), then over each spine: at the spine, at the PS's ToR (if
  // INA), or not at all.
  void addFromOtherRack(int w, int r, PsRoutingProblem::Worker* worker) {
    if (net_.racks[r].ina) {
      int s = r % std::max(S_, 1);  // its stream's spine, spread by rack
      int n =
          nodes_.get(net_.racks[r].name,
                     S_ ? path({upl(r, s), spine(s), downl(P_, s), ingress_}) : path({ingress_}));
      worker->options.push_back({0, n, withCap(path({up(w)}), rackCap(r))});
    }
    for (int s = 0; s < S_; ++s) {
      if (spec_.spineAggMbit > 0) {
        int n = nodes_.get(S("spine", s), path({downl(P_, s), ingress_}));
        worker->options.push_back({0, n, path({up(w), upl(r, s), spine(s), spineCap(s)})});
      }
      if (net_.racks[P_].ina) {
        int n = nodes_.get(net_.racks[P_].name, path({ingress_}));
        worker->options.push_back(
            {0, n, withCap(path({up(w), upl(r, s), spine(s), downl(P_, s)}), rackCap(P_))});
      }
      worker->options.push_back(
          {0, -1, path({up(w), upl(r, s), spine(s), downl(P_, s), ingress_})});
    }
  }

  const Network& net_;
  const LeafSpineRoutingSpec& spec_;
  ResourceTable res_;
  NodeTable nodes_;
  const int ps_, P_;  // the PS host and its rack
  const int S_;       // spines
  const int ingress_;
};

}  // namespace

Status buildLeafSpineRoutingProblem(const Network& net, const LeafSpineRoutingSpec& spec,
                                    PsRoutingProblem* out) {
  RINA_TRY(checkLeafSpineSpec(net, spec));
  PsRoutingProblem g;
  LeafSpineProblem grid(net, spec, &g);
  for (int w = 0; w < static_cast<int>(net.hosts.size()); ++w) {
    if (w != spec.psHost) g.workers.push_back(grid.workerOptions(w));
  }
  RINA_TRY(validateRoutingProblem(g));
  *out = std::move(g);
  return {};
}

}  // namespace rina::plan
