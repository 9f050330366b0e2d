#include "comm/link_stats.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "algo/engine/context.h"
#include "algo/engine/engine.h"
#include "bootstrap/bootstrap.h"
#include "core/log.h"

namespace rina::comm {

using algo::addHeaderExchange;
using algo::collectiveName;
using algo::CollHeader;
using algo::Engine;
using algo::EngineContext;
using algo::kGatherLinkRates;
using algo::RecvItem;
using algo::SendItem;

namespace {
constexpr int kSend = static_cast<int>(transport::Direction::kSend);
constexpr int kRecv = static_cast<int>(transport::Direction::kRecv);
}  // namespace

std::vector<LinkRate> localLinkRates(const algo::Context& ctx) {
  std::vector<LinkRate> out;
  auto add = [&](int peer, int spine, bool defaultPath, const transport::Connection& conn) {
    const transport::LinkCounters& k = conn.counters();
    LinkRate l;
    l.rank = ctx.rank();
    l.peer = peer;
    l.spine = spine;
    l.defaultPath = defaultPath ? 1 : 0;
    l.bytesSent = k.bytes[kSend];
    l.bytesRecv = k.bytes[kRecv];
    l.sendBusyNs = k.busyNs[kSend];
    l.recvBusyNs = k.busyNs[kRecv];
    l.sendRate = k.rate(transport::Direction::kSend);
    l.recvRate = k.rate(transport::Direction::kRecv);
    std::strncpy(l.kind, conn.kind(), sizeof(l.kind) - 1);
    out.push_back(l);
  };
  for (const auto& [peer, conn] : ctx.connections()) {
    add(peer, ctx.defaultSpine(peer), true, *conn);
  }
  for (const auto& [key, conn] : ctx.spineConnections()) add(key.first, key.second, false, *conn);
  std::sort(out.begin(), out.end(), [](const LinkRate& a, const LinkRate& b) {
    return a.peer != b.peer ? a.peer < b.peer : a.spine < b.spine;
  });
  return out;
}

Status probeLinks(algo::Context& ctx, size_t bytes, int64_t timeoutMs) {
  if (bytes == 0 || ctx.connections().empty()) return {};
  const std::vector<char> out(bytes, static_cast<char>(ctx.rank()));
  char* in = ctx.scratch(bytes);
  if (!in)
    return errorf(rinaSystemError, "rank %d: link probe: cannot allocate %zu bytes", ctx.rank(),
                  bytes);
  const Deadline deadline = deadlineAfterMs(timeoutMs);
  // Ascending peers = ascending pairs (min, max): the lowest pending pair
  // always has both ends at it, so the exchanges cannot wait in a cycle.
  for (const auto& [peer, conn] : ctx.connections()) {
    EngineContext probe = algo::contextFor(ctx, "link probe", 0);
    probe.timeoutMs = std::max<int64_t>(1, msUntil(deadline));
    Engine e(probe);
    e.setDeadline(deadline, "RINA_PROBE_TIMEOUT_MS");
    e.sends().push_back(SendItem{.conn = conn.get(), .data = out.data(), .len = bytes, .step = 1});
    e.recvs().push_back(RecvItem{.conn = conn.get(), .dst = in, .len = bytes, .step = 1});
    Status st = e.run();
    if (!st.ok()) {
      return st.prepend("rank " + std::to_string(ctx.rank()) + ": link probe with peer " +
                        std::to_string(peer) + " (" + std::to_string(bytes) +
                        " bytes each way; RINA_PROBE_BYTES must be equal on every rank): ");
    }
  }
  for (const LinkRate& l : localLinkRates(ctx)) {
    if (!l.defaultPath) continue;  // the probe runs over default connections only
    RINA_INFO("rank %d: link probe with peer %d (%s): %.1f MB/s in, %.1f MB/s out", l.rank, l.peer,
              l.kind, l.recvRate / 1e6, l.sendRate / 1e6);
  }
  return {};
}

Status gatherLinkRates(algo::Context& ctx, std::vector<LinkRate>* table,
                       const std::vector<LinkRate>& extra) {
  table->clear();
  std::vector<LinkRate> rows = localLinkRates(ctx);
  rows.insert(rows.end(), extra.begin(), extra.end());
  const int n = ctx.size(), r = ctx.rank();
  const uint64_t seq = ctx.nextSeq();
  transport::Connection* up = r + 1 < n ? ctx.peer(r + 1) : nullptr;  // rows come from here
  transport::Connection* down = r > 0 ? ctx.peer(r - 1) : nullptr;    // and go on to here
  if ((r + 1 < n && !up) || (r > 0 && !down)) {
    return errorf(rinaInternalError,
                  "rank %d: gather link rates: no connection to a ring neighbour", r);
  }
  const CollHeader mine =
      algo::collHeader(ctx, algo::kGatherLinkRates, seq, 0, rinaInt8, rinaSum, 0);
  if (up) {
    // Ranks r+1..n-1 send their rows as a count, then the rows.
    CollHeader theirs{};
    uint64_t count = 0;
    Engine head(algo::contextFor(ctx, collectiveName(kGatherLinkRates), seq));
    addHeaderExchange(head, mine, &theirs, nullptr, up, r);
    head.recvs().push_back(RecvItem{
        .conn = up, .dst = reinterpret_cast<char*>(&count), .len = sizeof(count), .step = 1});
    RINA_TRY(head.run());
    // At most one default and kMaxSpineAddrs per-spine connections per
    // pair, and a switch row per rank.
    const uint64_t most =
        static_cast<uint64_t>(n) * static_cast<uint64_t>(n) * (1 + bootstrap::kMaxSpineAddrs) +
        static_cast<uint64_t>(n);
    if (count > most) {
      return errorf(rinaRemoteError, "rank %d: gather link rates: peer %d announced %llu rows", r,
                    r + 1, static_cast<unsigned long long>(count));
    }
    const size_t mineCount = rows.size();
    rows.resize(mineCount + count);
    RINA_TRY(algo::runExchange(algo::contextFor(ctx, collectiveName(kGatherLinkRates), seq), {},
                               {RecvItem{.conn = up,
                                         .dst = reinterpret_cast<char*>(rows.data() + mineCount),
                                         .len = count * sizeof(LinkRate),
                                         .step = 1}}));
  }
  if (down) {
    const uint64_t count = rows.size();
    Engine e(algo::contextFor(ctx, collectiveName(kGatherLinkRates), seq));
    addHeaderExchange(e, mine, nullptr, down, nullptr, r);
    e.sends().push_back(SendItem{.conn = down,
                                 .data = reinterpret_cast<const char*>(&count),
                                 .len = sizeof(count),
                                 .step = 1});
    e.sends().push_back(SendItem{.conn = down,
                                 .data = reinterpret_cast<const char*>(rows.data()),
                                 .len = rows.size() * sizeof(LinkRate),
                                 .step = 1});
    return e.run();
  }
  std::sort(rows.begin(), rows.end(), [](const LinkRate& a, const LinkRate& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.peer != b.peer ? a.peer < b.peer : a.spine < b.spine;
  });
  *table = std::move(rows);
  return {};
}

namespace {

double mbitOf(const LinkRate& l) { return l.recvRate * 8 / 1e6; }

bool measured(const LinkRate& l) { return l.bytesRecv > 0 && l.recvRate > 0; }
bool isShm(const LinkRate& l) { return std::strcmp(l.kind, "shm") == 0; }

bool validHosts(const LinkRate& l, const plan::Network& net) {
  const int n = static_cast<int>(net.hosts.size());
  return l.rank >= 0 && l.rank < n && l.peer >= 0 && l.peer < n;
}

// A measured hop between two racks over a known spine of net.
bool spineRow(const LinkRate& l, const plan::Network& net) {
  return measured(l) && !isShm(l) && l.spine >= 0 && l.spine < net.spines() && validHosts(l, net) &&
         net.hosts[l.peer].rack != net.hosts[l.rank].rack &&
         net.hosts[l.peer].rack < static_cast<int>(net.racks.size()) &&
         net.hosts[l.rank].rack < static_cast<int>(net.racks.size());
}

enum Direction { kLeaving = 0, kEntering = 1 };
using SpineSide = std::tuple<int, int, int>;  // (rack, spine, Direction)

// What the rows say about each rack's link to each spine (link_stats.h).
class SpineEvidence {
 public:
  SpineEvidence(const std::vector<LinkRate>& table, const plan::Network& net) : net_(net) {
    for (const LinkRate& l : table) {
      if (!spineRow(l, net)) continue;
      for (const SpineSide& side : sidesOf(l)) {
        Use& u = use_[side];
        u.mbit += mbitOf(l);
        u.senders.insert(l.peer);
        u.receivers.insert(l.rank);
      }
    }
    for (auto& [side, u] : use_) {
      u.limited = u.mbit < kHostLimited * std::min(hostSum(u.senders), hostSum(u.receivers));
    }
  }

  // The row's hop went through a spine-limited (rack, spine, direction).
  bool rowLimited(const LinkRate& l) const {
    if (!spineRow(l, net_)) return false;
    for (const SpineSide& side : sidesOf(l)) {
      auto it = use_.find(side);
      if (it != use_.end() && it->second.limited) return true;
    }
    return false;
  }

  // Lowers the uplink of every (rack, spine) with a spine-limited direction
  // to the larger of its directions' sums.
  void lowerUplinks(plan::Network* net) const {
    for (const auto& [side, u] : use_) {
      const auto [rack, spine, dir] = side;
      if (!u.limited) continue;
      double carried = u.mbit;
      auto other = use_.find({rack, spine, dir == kLeaving ? kEntering : kLeaving});
      if (other != use_.end()) carried = std::max(carried, other->second.mbit);
      std::vector<double>& up = net->racks[rack].uplinkMbit;
      if (spine >= static_cast<int>(up.size())) continue;
      // Within kHostLimited of the configured rate is that rate (TCP goodput
      // and the noise of one measure), so a measured spine does not look
      // slower than an unmeasured one of the same rate.
      if (up[spine] <= 0 || carried < kHostLimited * up[spine]) up[spine] = carried;
    }
  }

 private:
  struct Use {
    double mbit = 0;
    std::set<int> senders, receivers;
    bool limited = false;
  };

  std::array<SpineSide, 2> sidesOf(const LinkRate& l) const {
    return {SpineSide{net_.hosts[l.peer].rack, l.spine, kLeaving},
            SpineSide{net_.hosts[l.rank].rack, l.spine, kEntering}};
  }
  // Unknown (0) rates: unlimited.
  double hostSum(const std::set<int>& hosts) const {
    double sum = 0;
    for (int h : hosts) {
      if (net_.hosts[h].linkMbit <= 0) return std::numeric_limits<double>::infinity();
      sum += net_.hosts[h].linkMbit;
    }
    return sum;
  }

  const plan::Network& net_;
  std::map<SpineSide, Use> use_;
};

void applyProbes(const std::vector<LinkRate>& table, const SpineEvidence& ev, plan::Network* net) {
  // Per hop: the fastest row of this table (a hop's default and per-spine
  // connections both say what its hosts can do).
  std::map<std::tuple<int, int, int>, double> fastest;
  for (const LinkRate& l : table) {
    if (!measured(l) || ev.rowLimited(l)) continue;
    double& m = fastest[{l.peer, l.rank, -1}];
    m = std::max(m, mbitOf(l));
  }
  for (const auto& [key, mbit] : fastest) {
    const plan::Network::Probe probe{std::get<0>(key), std::get<1>(key), mbit, std::get<2>(key)};
    auto it =
        std::find_if(net->probes.begin(), net->probes.end(), [&](const plan::Network::Probe& p) {
          return p.from == probe.from && p.to == probe.to && p.spine == probe.spine;
        });
    if (it != net->probes.end()) {
      it->mbit = mbit;
    } else {
      net->probes.push_back(probe);
    }
  }
}

void applyHostRates(const std::vector<LinkRate>& table, const SpineEvidence& ev,
                    plan::Network* net) {
  const int n = static_cast<int>(net->hosts.size());
  std::vector<double> in(n, 0), out(n, 0);
  for (const LinkRate& l : table) {
    if (!measured(l) || isShm(l) || !validHosts(l, *net) || ev.rowLimited(l)) continue;
    if (net->hosts[l.rank].rack == net->hosts[l.peer].rack) continue;
    in[l.rank] = std::max(in[l.rank], mbitOf(l));
    out[l.peer] = std::max(out[l.peer], mbitOf(l));
  }
  for (int h = 0; h < n; ++h) {
    const double m = in[h] > 0 && out[h] > 0 ? std::min(in[h], out[h]) : std::max(in[h], out[h]);
    if (m <= 0) continue;
    double& link = net->hosts[h].linkMbit;
    link = link > 0 ? std::min(link, m) : m;
  }
}

}  // namespace

void addMeasuredUplinkRates(const std::vector<LinkRate>& table, plan::Network* net) {
  SpineEvidence(table, *net).lowerUplinks(net);
}

void addMeasuredProbes(const std::vector<LinkRate>& table, plan::Network* net) {
  applyProbes(table, SpineEvidence(table, *net), net);
}

void addMeasuredHostRates(const std::vector<LinkRate>& table, plan::Network* net) {
  applyHostRates(table, SpineEvidence(table, *net), net);
}

void addMeasuredRates(const std::vector<LinkRate>& table, plan::Network* net) {
  const plan::Network configured = *net;
  const SpineEvidence ev(table, configured);
  ev.lowerUplinks(net);
  applyProbes(table, ev, net);
  applyHostRates(table, ev, net);
}

// The reasons are in link_stats.h.
void holdMeasuredRates(const plan::Network& configured, plan::Network* net) {
  auto held = [](double measured, double ref, double fraction) {
    return ref > 0 && measured >= ref * fraction ? ref : measured;
  };
  for (const plan::Network::Rack& rack : net->racks) {
    double best = 0;
    for (int h : rack.hosts) best = std::max(best, net->hosts[h].linkMbit);
    for (int h : rack.hosts) {
      const double ref = configured.hosts[h].linkMbit > 0 ? configured.hosts[h].linkMbit : best;
      net->hosts[h].linkMbit = held(net->hosts[h].linkMbit, ref, kHoldHostFraction);
    }
  }
  for (size_t r = 0; r < net->racks.size() && r < configured.racks.size(); ++r) {
    std::vector<double>& up = net->racks[r].uplinkMbit;
    const std::vector<double>& ref = configured.racks[r].uplinkMbit;
    for (size_t s = 0; s < up.size() && s < ref.size(); ++s) {
      up[s] = held(up[s], ref[s], kHoldPathFraction);
    }
  }
  // A probe caps its hop: it stays only where it is under kHoldHostFraction of
  // the slower configured end (or where neither end is configured).
  std::vector<plan::Network::Probe> kept;
  const int n = static_cast<int>(configured.hosts.size());
  for (const plan::Network::Probe& p : net->probes) {
    double ref = 0;
    if (p.from >= 0 && p.from < n && p.to >= 0 && p.to < n) {
      const double a = configured.hosts[p.from].linkMbit, b = configured.hosts[p.to].linkMbit;
      ref = a > 0 && b > 0 ? std::min(a, b) : std::max(a, b);
    }
    if (held(p.mbit, ref, kHoldHostFraction) == p.mbit) kept.push_back(p);
  }
  net->probes = std::move(kept);
  // A switch against what its hosts could send it, or its own configured
  // rate; with neither configured, a measure says nothing of the switch.
  for (size_t r = 0; r < net->racks.size() && r < configured.racks.size(); ++r) {
    double& sw = net->racks[r].switchMbit;
    const double own = configured.racks[r].switchMbit;
    if (own > 0) {
      sw = sw > 0 ? held(sw, own, kHoldSwitchFraction) : own;
      continue;
    }
    double hosts = 0;
    for (int h : configured.racks[r].hosts) {
      const double link = configured.hosts[h].linkMbit;
      hosts = link > 0 && hosts >= 0 ? hosts + link : -1;
    }
    if (hosts <= 0 || sw >= hosts * kHoldSwitchFraction) sw = 0;
  }
}

LinkRate switchRateRow(int rank, const transport::LinkCounters& k) {
  LinkRate l;
  l.rank = rank;
  l.peer = kSwitchPeer;
  l.defaultPath = 0;
  l.bytesRecv = k.bytes[kRecv];
  l.recvBusyNs = k.busyNs[kRecv];
  l.recvRate = k.rate(transport::Direction::kRecv);
  std::strncpy(l.kind, "switch", sizeof(l.kind) - 1);
  return l;
}

std::vector<LinkRate> takeSwitchRows(std::vector<LinkRate>* table) {
  std::vector<LinkRate> rows;
  std::vector<LinkRate> links;
  for (const LinkRate& l : *table) (l.peer == kSwitchPeer ? rows : links).push_back(l);
  *table = std::move(links);
  return rows;
}

void addMeasuredSwitchRates(const std::vector<LinkRate>& rows, plan::Network* net) {
  const int n = static_cast<int>(net->hosts.size());
  std::vector<double> sum(net->racks.size(), 0);
  std::vector<int> workers(net->racks.size(), 0);
  for (const LinkRate& l : rows) {
    if (l.peer != kSwitchPeer || l.rank < 0 || l.rank >= n || !measured(l)) continue;
    const int rack = net->hosts[l.rank].rack;
    sum[rack] += mbitOf(l);
    workers[rack]++;
  }
  for (size_t r = 0; r < net->racks.size(); ++r) {
    if (!workers[r] || !net->racks[r].ina) continue;
    const double k = static_cast<double>(net->racks[r].hosts.size());
    net->racks[r].switchMbit = sum[r] * k / workers[r];
  }
}

}  // namespace rina::comm
