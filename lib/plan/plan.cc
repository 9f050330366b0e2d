#include "plan/plan.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "plan/paths.h"
#include "plan/ports.h"

namespace rina::plan {
namespace {

// Wire form: "RPLN", version 1, then LEB128 varints (signed values +1 so -1
// fits), the bottleneck as 8 little-endian bytes of its IEEE double.
constexpr uint8_t kMagic[4] = {'R', 'P', 'L', 'N'};
constexpr uint8_t kVersion = 1;

void putVarint(std::vector<uint8_t>* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<uint8_t>(v));
}

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}
  bool varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      uint8_t b = *p_++;
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  // A count that cannot exceed the bytes left (every element takes >= 1).
  bool count(size_t* n) {
    uint64_t v;
    if (!varint(&v) || v > left()) return false;
    *n = static_cast<size_t>(v);
    return true;
  }
  bool bytes(void* dst, size_t n) {
    if (left() < n) return false;
    std::memcpy(dst, p_, n);
    p_ += n;
    return true;
  }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

std::string rate(double mbit) {
  if (std::isinf(mbit)) return "unknown";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f Mbit/s", mbit);
  return buf;
}

// The previous plan's spine for each hop (by its pair of racks: what a
// spine choice is about); empty unless every hop's rack pair had one.
std::vector<int> previousSpines(const Plan* previous, const Network& net,
                                const std::vector<SpineHop>& hops) {
  if (!previous || previous->ring.size() != previous->hopSpine.size()) return {};
  const int nh = static_cast<int>(net.hosts.size());
  std::map<std::pair<int, int>, int> spineOf;
  const size_t m = previous->ring.size();
  for (size_t j = 0; j < m; ++j) {
    const int a = previous->ring[j], b = previous->ring[(j + 1) % m];
    if (a < 0 || a >= nh || b < 0 || b >= nh || previous->hopSpine[j] < 0) continue;
    spineOf[{net.hosts[a].rack, net.hosts[b].rack}] = previous->hopSpine[j];
  }
  std::vector<int> out;
  for (const SpineHop& h : hops) {
    auto it = spineOf.find({h.fromRack, h.toRack});
    if (it == spineOf.end()) return {};
    out.push_back(it->second);
  }
  return out;
}

// The previous plan's port split of `m` as indices into m.hosts, when it
// has one for this rack with `chunks` ports, all of them the rack's hosts;
// else empty.
std::vector<int> previousPorts(const Plan* previous, const Member& m, int chunks) {
  if (!previous) return {};
  for (const Plan::RackPorts& rp : previous->ports) {
    if (rp.agent != m.agent()) continue;
    if (static_cast<int>(rp.portRanks.size()) != chunks) return {};
    std::vector<int> idx;
    for (int rank : rp.portRanks) {
      auto it = std::find(m.hosts.begin(), m.hosts.end(), rank);
      if (it == m.hosts.end()) return {};
      idx.push_back(static_cast<int>(it - m.hosts.begin()));
    }
    return idx;
  }
  return {};
}

// The previous plan's ring as member indices, when it visits exactly these
// members; else empty.
std::vector<int> previousOrder(const Plan* previous, const std::vector<Member>& members) {
  if (!previous || previous->ring.size() != members.size()) return {};
  std::vector<int> order;
  std::vector<bool> seen(members.size(), false);
  for (int agent : previous->ring) {
    size_t i = 0;
    while (i < members.size() && members[i].agent() != agent) ++i;
    if (i == members.size() || seen[i]) return {};
    seen[i] = true;
    order.push_back(static_cast<int>(i));
  }
  return order;
}

}  // namespace

std::vector<uint8_t> Plan::serialize() const {
  std::vector<uint8_t> out(kMagic, kMagic + 4);
  out.push_back(kVersion);
  out.push_back(static_cast<uint8_t>((exactOrder ? 1 : 0) | (exactPaths ? 2 : 0)));
  putVarint(&out, epoch);
  uint64_t bits;
  std::memcpy(&bits, &bottleneckMbit, 8);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(bits >> (8 * i)));
  putVarint(&out, ring.size());
  for (size_t k = 0; k < ring.size(); ++k) {
    putVarint(&out, static_cast<uint64_t>(ring[k]));
    putVarint(&out, static_cast<uint64_t>(hopSpine[k] + 1));
  }
  putVarint(&out, ports.size());
  for (const RackPorts& p : ports) {
    putVarint(&out, static_cast<uint64_t>(p.agent));
    putVarint(&out, p.portRanks.size());
    for (int r : p.portRanks) putVarint(&out, static_cast<uint64_t>(r));
  }
  putVarint(&out, reason.size());
  out.insert(out.end(), reason.begin(), reason.end());
  return out;
}

Status Plan::deserialize(const uint8_t* data, size_t size, Plan* out) {
  auto bad = [](const char* what) { return errorf(rinaInvalidUsage, "plan message: %s", what); };
  if (!data && size) return bad("NULL data");
  Reader in(data, size);
  uint8_t head[6];
  if (!in.bytes(head, 6)) return bad("truncated header");
  if (std::memcmp(head, kMagic, 4) != 0) return bad("bad magic (not a plan)");
  if (head[4] != kVersion) return bad("unknown version");
  if (head[5] & ~3u) return bad("unknown flags");
  Plan p;
  p.exactOrder = head[5] & 1;
  p.exactPaths = head[5] & 2;
  uint8_t b[8];
  if (!in.varint(&p.epoch) || !in.bytes(b, 8)) return bad("truncated epoch or bottleneck");
  uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) bits |= static_cast<uint64_t>(b[i]) << (8 * i);
  std::memcpy(&p.bottleneckMbit, &bits, 8);
  if (std::isnan(p.bottleneckMbit) || p.bottleneckMbit < 0) return bad("bad bottleneck rate");
  constexpr uint64_t kMaxInt = std::numeric_limits<int>::max();
  size_t n;
  if (!in.count(&n)) return bad("truncated ring");
  for (size_t k = 0; k < n; ++k) {
    uint64_t r, s;
    if (!in.varint(&r) || !in.varint(&s)) return bad("truncated ring");
    if (r > kMaxInt || s > kMaxInt) return bad("rank or spine out of range");
    p.ring.push_back(static_cast<int>(r));
    p.hopSpine.push_back(static_cast<int>(s) - 1);
  }
  if (!in.count(&n)) return bad("truncated ports");
  for (size_t k = 0; k < n; ++k) {
    RackPorts rp;
    uint64_t agent;
    size_t chunks;
    if (!in.varint(&agent) || !in.count(&chunks)) return bad("truncated ports");
    if (agent > kMaxInt) return bad("rank out of range");
    rp.agent = static_cast<int>(agent);
    for (size_t c = 0; c < chunks; ++c) {
      uint64_t r;
      if (!in.varint(&r)) return bad("truncated ports");
      if (r > kMaxInt) return bad("rank out of range");
      rp.portRanks.push_back(static_cast<int>(r));
    }
    p.ports.push_back(std::move(rp));
  }
  if (!in.count(&n)) return bad("truncated reason");
  p.reason.resize(n);
  if (!in.bytes(p.reason.data(), n)) return bad("truncated reason");
  if (in.left() != 0) return bad("trailing bytes");
  *out = std::move(p);
  return {};
}

std::string Plan::describe() const {
  std::string s = "plan #" + std::to_string(epoch) + " (" + reason + "): ring";
  // The rest of a hop's arrow after " -": "s1-> " over spine 1, "> " inside a rack.
  auto arrowHead = [&s](int spine) {
    if (spine >= 0) {
      s += 's';
      s += std::to_string(spine);
      s += '-';
    }
    s += "> ";
  };
  for (size_t k = 0; k < ring.size(); ++k) {
    s += k ? " -" : " ";
    if (k) arrowHead(hopSpine[k - 1]);
    s += std::to_string(ring[k]);
    for (const RackPorts& p : ports) {
      if (p.agent == ring[k]) s += "[ina]";
    }
  }
  if (ring.size() > 1) {
    s += " -";
    arrowHead(hopSpine.back());
    s += std::to_string(ring.front());
  }
  s += "; bottleneck " + rate(bottleneckMbit) +
       (exactOrder ? " (optimal order" : " (heuristic order");
  s += exactPaths ? ", optimal spines)" : ", heuristic spines)";
  for (const RackPorts& p : ports) {
    s += "; ports of " + std::to_string(p.agent) + ": ";
    for (size_t c = 0; c < p.portRanks.size(); ++c) {
      if (c) s += ',';
      s += std::to_string(p.portRanks[c]);
    }
  }
  return s;
}

namespace {

// The agents of `order` in ring order, the spine of each inter-rack hop
// (assignSpines, the previous plan's spines preferred on ties), and the
// ring's bottleneck: the order's own (orderBottleneck) or the spines' sharing.
double routeRing(const Network& net, const std::vector<Member>& members, const RateMatrix& rates,
                 const std::vector<RateMatrix>& bySpine, const std::vector<int>& order,
                 double orderBottleneck, const Plan* previous, std::vector<int>* ring,
                 std::vector<int>* hopSpine, bool* exact) {
  const size_t n = order.size();
  std::vector<SpineHop> hops;
  std::vector<int> hopIndex(n, -1);  // ring position -> index into hops
  ring->clear();
  hopSpine->clear();
  for (size_t k = 0; k < n && n > 1; ++k) {
    const int a = order[k], b = order[(k + 1) % n];
    ring->push_back(members[a].agent());
    if (members[a].rack != members[b].rack && net.spines() > 0) {
      hopIndex[k] = static_cast<int>(hops.size());
      SpineHop hop{members[a].rack, members[b].rack, rates[a][b]};
      for (const RateMatrix& m : bySpine) hop.spineMbit.push_back(m[a][b]);
      hops.push_back(std::move(hop));
    }
  }
  if (n == 1) ring->push_back(members[0].agent());
  double bottleneck = orderBottleneck;
  SpineAssignment spines;
  spines.exact = true;
  if (!hops.empty()) {
    spines = assignSpines(net, hops, previousSpines(previous, net, hops));
    bottleneck = std::min(bottleneck, spines.bottleneck);
  }
  *exact = spines.exact;
  for (size_t k = 0; k < ring->size(); ++k) {
    hopSpine->push_back(hopIndex[k] >= 0 ? spines.spine[hopIndex[k]] : -1);
  }
  return bottleneck;
}

}  // namespace

Status makePlan(const Network& net, const PlanOptions& options, Plan* out) {
  RINA_TRY(validateNetwork(net));
  if (options.chunks < 0)
    return errorf(rinaInvalidArgument, "makePlan: chunks %d < 0", options.chunks);
  std::vector<Member> members = ringMembers(net);
  const int chunks =
      options.chunks ? options.chunks : std::max<int>(1, static_cast<int>(members.size()));
  RateMatrix rates = hopRates(net, members, chunks);
  const std::vector<RateMatrix> bySpine = hopRatesBySpine(net, members, chunks);
  RingOrder order = bestRingOrder(rates);
  Plan p;
  p.epoch = options.epoch;
  p.reason = options.reason;
  p.exactOrder = order.exact;
  bool exactPaths = true;
  double bottleneck = routeRing(net, members, rates, bySpine, order.order, order.bottleneck,
                                options.previous, &p.ring, &p.hopSpine, &exactPaths);
  // The ring in use stays while, with its spines chosen again, its
  // bottleneck is as good, or within keepMargin of the best: measured rates
  // move at every check, and a ring that changes with them (its sum of
  // rates only breaks ties) would move traffic for nothing.
  if (const std::vector<int> kept = previousOrder(options.previous, members);
      !kept.empty() && members.size() > 1) {
    std::vector<int> ring, hopSpine;
    bool exact = true;
    const double b = routeRing(net, members, rates, bySpine, kept, cycleBottleneck(rates, kept),
                               options.previous, &ring, &hopSpine, &exact);
    if (b * (1 + std::max(0.0, options.keepMargin)) >= bottleneck) {
      bottleneck = b;
      p.ring = std::move(ring);
      p.hopSpine = std::move(hopSpine);
      exactPaths = exact;
    }
  }
  const size_t n = order.order.size();
  p.exactPaths = exactPaths;
  p.bottleneckMbit = n > 1 ? bottleneck : std::numeric_limits<double>::infinity();
  for (const Member& m : members) {
    if (!m.ina) continue;
    std::vector<double> weights;
    for (int h : m.hosts)
      weights.push_back(net.hosts[h].linkMbit > 0 ? net.hosts[h].linkMbit : 1.0);
    // Unknown rates anywhere in the rack: share equally.
    for (int h : m.hosts) {
      if (net.hosts[h].linkMbit <= 0) weights.assign(m.hosts.size(), 1.0);
    }
    std::vector<int> idx;
    RINA_TRY(portsPerChunk(weights, chunks, &idx));
    // The previous split stays unless the new one's port rate is better by
    // more than keepMargin.
    if (std::vector<int> kept = previousPorts(options.previous, m, chunks);
        !kept.empty() && portRate(weights, kept) * (1 + std::max(0.0, options.keepMargin)) >=
                             portRate(weights, idx)) {
      idx = std::move(kept);
    }
    Plan::RackPorts rp;
    rp.agent = m.agent();
    for (int i : idx) rp.portRanks.push_back(m.hosts[i]);
    p.ports.push_back(std::move(rp));
  }
  *out = std::move(p);
  return {};
}

}  // namespace rina::plan
