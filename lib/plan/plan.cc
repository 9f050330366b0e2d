#include "plan/plan.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>

#include "plan/paths.h"
#include "plan/ports.h"

namespace rina::plan {
namespace {

// Wire form: "RPLN", version 2, then LEB128 varints (signed values +1 so -1
// fits), doubles as 8 little-endian bytes of their IEEE form. Version 2
// added each INA rack's mode and the predicted times; a plan of another
// version is refused, never read as this one.
constexpr uint8_t kMagic[4] = {'R', 'P', 'L', 'N'};
constexpr uint8_t kVersion = 2;

void putDouble(std::vector<uint8_t>* out, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<uint8_t>(bits >> (8 * i)));
}

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
  bool real(double* v) {
    uint8_t b[8];
    if (!bytes(b, 8)) return false;
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits |= static_cast<uint64_t>(b[i]) << (8 * i);
    std::memcpy(v, &bits, 8);
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

// The previous plan's port split of `rack` as indices into rack.hosts, when
// it ran the rack in `mode` with `chunks` ports, all of them the rack's
// hosts; else empty.
std::vector<int> previousPorts(const Plan* previous, const Network::Rack& rack, RackMode mode,
                               int chunks) {
  if (!previous) return {};
  for (const Plan::RackPorts& rp : previous->ports) {
    if (rp.agent != rack.hosts.front()) continue;
    if (rp.mode != mode || static_cast<int>(rp.portRanks.size()) != chunks) return {};
    std::vector<int> idx;
    for (int rank : rp.portRanks) {
      auto it = std::find(rack.hosts.begin(), rack.hosts.end(), rank);
      if (it == rack.hosts.end()) return {};
      idx.push_back(static_cast<int>(it - rack.hosts.begin()));
    }
    return idx;
  }
  return {};
}

// The previous plan's mode of every rack (switchModes' where it names
// none).
std::vector<RackMode> previousModes(const Plan& previous, const Network& net) {
  std::vector<RackMode> modes = switchModes(net);
  for (size_t r = 0; r < net.racks.size(); ++r) {
    if (modes[r] == RackMode::kSwitch) modes[r] = previous.modeOf(net.racks[r].hosts.front());
  }
  return modes;
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
  putDouble(&out, bottleneckMbit);
  putVarint(&out, ring.size());
  for (size_t k = 0; k < ring.size(); ++k) {
    putVarint(&out, static_cast<uint64_t>(ring[k]));
    putVarint(&out, static_cast<uint64_t>(hopSpine[k] + 1));
  }
  putVarint(&out, ports.size());
  for (const RackPorts& p : ports) {
    putVarint(&out, static_cast<uint64_t>(p.agent));
    putVarint(&out, static_cast<uint64_t>(p.mode));
    putVarint(&out, p.portRanks.size());
    for (int r : p.portRanks) putVarint(&out, static_cast<uint64_t>(r));
  }
  putDouble(&out, predicted.stepLatencySec);
  for (const Cost* c : {&predicted.ring, &predicted.hier, &predicted.rina}) {
    putDouble(&out, c->perByte);
    putVarint(&out, static_cast<uint64_t>(c->steps));
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
  if (head[4] != kVersion) {
    return errorf(rinaInvalidUsage, "plan message: version %u, this build reads only %u", head[4],
                  kVersion);
  }
  if (head[5] & ~3u) return bad("unknown flags");
  Plan p;
  p.exactOrder = head[5] & 1;
  p.exactPaths = head[5] & 2;
  if (!in.varint(&p.epoch) || !in.real(&p.bottleneckMbit))
    return bad("truncated epoch or bottleneck");
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
    uint64_t agent, mode;
    size_t chunks;
    if (!in.varint(&agent) || !in.varint(&mode) || !in.count(&chunks)) {
      return bad("truncated ports");
    }
    if (agent > kMaxInt) return bad("rank out of range");
    if (mode >= static_cast<uint64_t>(kRackModes)) return bad("unknown rack mode");
    rp.agent = static_cast<int>(agent);
    rp.mode = static_cast<RackMode>(mode);
    for (size_t c = 0; c < chunks; ++c) {
      uint64_t r;
      if (!in.varint(&r)) return bad("truncated ports");
      if (r > kMaxInt) return bad("rank out of range");
      rp.portRanks.push_back(static_cast<int>(r));
    }
    p.ports.push_back(std::move(rp));
  }
  if (!in.real(&p.predicted.stepLatencySec)) return bad("truncated predictions");
  auto finite = [](double v) { return std::isfinite(v) && v >= 0; };
  if (!finite(p.predicted.stepLatencySec)) return bad("bad step latency");
  for (Cost* c : {&p.predicted.ring, &p.predicted.hier, &p.predicted.rina}) {
    uint64_t steps;
    if (!in.real(&c->perByte) || !in.varint(&steps)) return bad("truncated predictions");
    if (!finite(c->perByte) || steps > (uint64_t{1} << 40)) return bad("bad prediction");
    c->steps = static_cast<int64_t>(steps);
  }
  if (!in.count(&n)) return bad("truncated reason");
  p.reason.resize(n);
  if (!in.bytes(p.reason.data(), n)) return bad("truncated reason");
  if (in.left() != 0) return bad("trailing bytes");
  *out = std::move(p);
  return {};
}

RackMode Plan::modeOf(int agent) const {
  for (const RackPorts& p : ports) {
    if (p.agent == agent) return p.mode;
  }
  return RackMode::kSwitch;
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
      if (p.agent == ring[k] && p.mode != RackMode::kAutonomous) {
        s += p.mode == RackMode::kSwitch ? "[ina]" : "[hosts]";
      }
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
    if (p.mode == RackMode::kAutonomous) {
      s += "; rack of " + std::to_string(p.agent) + ": autonomous";
      continue;
    }
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

int subRings(const std::vector<int>& memberSizes) {
  // Beyond this many the lcm grows fast: one sub-ring per worker of the
  // largest member.
  constexpr int kMaxSubRings = 12;
  int k = 1, largest = 1;
  for (int n : memberSizes) {
    largest = std::max(largest, n);
    k = std::lcm(k, n);
    if (k > kMaxSubRings) return largest;
  }
  return k;
}

Status makePlan(const Network& net, const PlanOptions& options, Plan* out, RackChoice* choiceOut) {
  RINA_TRY(validateNetwork(net));
  if (options.chunks < 0)
    return errorf(rinaInvalidArgument, "makePlan: chunks %d < 0", options.chunks);
  ChoiceOptions co;
  co.model = options.model;
  co.bytes = options.bytes;
  co.forceIna = options.forceIna;
  co.keepMargin = options.keepMargin;
  if (options.previous) co.previous = previousModes(*options.previous, net);
  RackChoice choice;
  RINA_TRY(chooseRackModes(net, co, &choice));
  std::vector<Member> members = ringMembers(net, choice.modes);
  std::vector<int> sizes;
  for (const Member& m : members) sizes.push_back(static_cast<int>(m.hosts.size()));
  const int chunks = options.chunks ? options.chunks : subRings(sizes);
  Plan p;
  p.epoch = options.epoch;
  p.reason = options.reason;
  const size_t n = members.size();
  if (options.rackOrder) {
    for (const Member& m : members) p.ring.push_back(m.agent());
    p.hopSpine.assign(n, -1);
    p.bottleneckMbit = std::numeric_limits<double>::infinity();
  } else {
    RateMatrix rates = hopRates(net, members, chunks);
    const std::vector<RateMatrix> bySpine = hopRatesBySpine(net, members, chunks);
    RingOrder order = bestRingOrder(rates);
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
    p.exactPaths = exactPaths;
    p.bottleneckMbit = n > 1 ? bottleneck : std::numeric_limits<double>::infinity();
  }
  const int64_t total = choice.members;
  Network filled;
  const Network& rated = withHostRates(net, &filled);
  for (size_t r = 0; r < net.racks.size(); ++r) {
    const Network::Rack& rack = net.racks[r];
    if (!modeAllowed(rack, RackMode::kSwitch)) continue;
    Plan::RackPorts rp;
    rp.agent = rack.hosts.front();
    rp.mode = choice.modes[r];
    if (rp.mode != RackMode::kAutonomous) {
      std::vector<int> idx;
      RINA_TRY(portsPerChunk(choice.shares[r], chunks, &idx));
      // The previous split stays unless the new one is faster by more than
      // keepMargin on the rack's busiest host link.
      const int rackIndex = static_cast<int>(r);
      auto term = [&](const std::vector<int>& split) {
        std::vector<double> f(rack.hosts.size(), 0.0);
        for (int i : split) f[i] += 1.0 / static_cast<double>(split.size());
        return rackHostTerm(rated, rackIndex, rp.mode, total, f, options.model);
      };
      if (std::vector<int> kept = previousPorts(options.previous, rack, rp.mode, chunks);
          !kept.empty() && term(kept) <= term(idx) * (1 + std::max(0.0, options.keepMargin))) {
        idx = std::move(kept);
      }
      for (int i : idx) rp.portRanks.push_back(rack.hosts[i]);
    }
    p.ports.push_back(std::move(rp));
  }
  p.predicted = {choice.ring, choice.hier, choice.rina, options.model.stepLatencySec};
  *out = std::move(p);
  if (choiceOut) *choiceOut = std::move(choice);
  return {};
}

}  // namespace rina::plan
