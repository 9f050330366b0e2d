#include "comm/plan_sync.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "algo/engine/engine.h"
#include "algo/rack/rack.h"
#include "core/log.h"

namespace rina::comm {
namespace {

// What rank 0 sends down the line after deciding; a serialized plan of
// `bytes` follows, none means "keep the current plan".
struct PlanNotice {
  uint32_t magic;
  uint32_t pad;
  uint64_t seq;        // the exchange's collective number, checked at every hop
  uint64_t bytes;      // serialized plan that follows; 0: keep
  uint64_t nextCheck;  // collectives under the plan at the next check; 0: none
};
static_assert(sizeof(PlanNotice) == 32);
constexpr uint32_t kNoticeMagic = 0x52504e54;           // "RPNT"
constexpr uint64_t kMaxPlanBytes = uint64_t{64} << 20;  // far above any real plan

std::function<void(uint64_t, std::vector<LinkRate>*)>& ratesHook() {
  static std::function<void(uint64_t, std::vector<LinkRate>*)> fn;
  return fn;
}
std::function<void(int)>& exchangeHook() {
  static std::function<void(int)> fn;
  return fn;
}

// The hop peer -> rank as measured at rank (Mbit/s), 0 before bytes arrived.
double hopMbit(const LinkRate& l) { return l.bytesRecv > 0 ? l.recvRate * 8 / 1e6 : 0.0; }

// Both ends in one INA rack: the switch, not this link, carries the rack's
// sums, and the planner does not use such hops.
bool insideInaRack(const topo::RackMap& map, const LinkRate& l) {
  const int n = static_cast<int>(map.rackOf.size());
  if (l.rank < 0 || l.rank >= n || l.peer < 0 || l.peer >= n) return false;
  const int rack = map.rackOf[l.rank];
  return rack == map.rackOf[l.peer] && map.racks[rack].ina;
}

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

// How the reason names a connection: "3->1", "3->1 on spine 1".
std::string linkName(const LinkRate& l) {
  std::string s = std::to_string(l.peer) + "->" + std::to_string(l.rank);
  return l.spine >= 0 ? s + " on spine " + std::to_string(l.spine) : s;
}

// The table's measured links against the rates of `ref` ((peer, rank,
// spine) -> Mbit/s), as ReplanPolicy::decide takes them: links inside an
// INA rack, with nothing fresh on them, or without a rate in ref left out.
struct RatePairs {
  std::vector<double> then, current;
  std::vector<std::string> names;
};
RatePairs pairRates(const topo::RackMap& map, const std::vector<LinkRate>& table,
                    const std::map<std::tuple<int, int, int>, double>& ref) {
  RatePairs out;
  for (const LinkRate& l : table) {
    if (insideInaRack(map, l) || hopMbit(l) <= 0) continue;
    auto it = ref.find(std::make_tuple(l.peer, l.rank, l.spine));
    if (it == ref.end() || it->second <= 0) continue;
    out.then.push_back(it->second);
    out.current.push_back(hopMbit(l));
    out.names.push_back(linkName(l));
  }
  return out;
}

}  // namespace

void setPlanRatesHookForTesting(std::function<void(uint64_t, std::vector<LinkRate>*)> fn) {
  ratesHook() = std::move(fn);
}

void setPlanExchangeHookForTesting(std::function<void(int)> fn) { exchangeHook() = std::move(fn); }

Status PlanSync::create(const algo::Context& ctx, const topo::TopologySpec& topology,
                        const plan::ReplanPolicy& policy, bool forceIna, Connect connect,
                        SwitchRows switchRows, std::unique_ptr<PlanSync>* out) {
  std::unique_ptr<PlanSync> s(new PlanSync());
  s->policy_ = policy;
  s->forceIna_ = forceIna;
  s->connect_ = std::move(connect);
  s->switchRows_ = std::move(switchRows);
  RINA_TRY(plan::networkFromTopology(topology, ctx.racks(), &s->network_)
               .prepend("rank " + std::to_string(ctx.rank()) + ": the planner's network: "));
  // Addresses on more spines than the topology names (RINA_SPINE_ADDRS
  // without a file): those spines' rates are unknown until measured.
  if (ctx.spines() > s->network_.spines()) {
    s->network_.spineMbit.resize(ctx.spines(), 0);
    for (plan::Network::Rack& rack : s->network_.racks) rack.uplinkMbit.resize(ctx.spines(), 0);
  }
  // As many ring members as any choice of modes can make.
  const size_t members = ctx.size();
  s->active_ = ctx.size() >= 2 && members <= kMaxPlannedMembers;
  s->switchMeasured_.assign(s->network_.racks.size(), 0);
  s->switchAtPlan_.assign(s->network_.racks.size(), 0);
  *out = std::move(s);
  return {};
}

plan::PlanOptions PlanSync::planOptions(const algo::Context& ctx) const {
  plan::PlanOptions o;
  o.model.portMarkers = ctx.portMarkers();
  o.forceIna = forceIna_;
  return o;
}

Status PlanSync::start(algo::Context& ctx) {
  if (started_ || ctx.size() < 2) return {};
  if (active_) return exchange(ctx, true);
  // Too many ranks to plan for at run time: every rank makes the same
  // plan from the configured rates, with no exchange, and keeps it.
  plan::PlanOptions o = planOptions(ctx);
  o.rackOrder = true;
  o.reason = "initial, " + std::to_string(ctx.size()) + " ranks: racks in rank order, no re-plans";
  plan::Plan p;
  plan::RackChoice choice;
  RINA_TRY(plan::makePlan(network_, o, &p, &choice)
               .prepend("rank " + std::to_string(ctx.rank()) + ": the plan: "));
  RINA_TRY(algo::checkPlanFits(p, ctx.racks()));
  RINA_TRY(connect_(algo::planPeerRanks(ctx.rank(), ctx.racks(), p)));
  if (ctx.rank() == 0) {
    RINA_INFO("%s", p.describe().c_str());
    RINA_INFO("plan #%llu: %s", ull(p.epoch),
              plan::describeChoice(network_, choice, o.bytes, o.model).c_str());
  }
  plan_ = std::move(p);
  started_ = true;
  return {};
}

Status PlanSync::beforeCollective(algo::Context& ctx) {
  if (!active_) return start(ctx);
  if (!started_) {
    RINA_TRY(exchange(ctx, true));
  } else if (checkDue()) {
    RINA_TRY(exchange(ctx, false));
  }
  ++since_;
  ++total_;
  return {};
}

Status PlanSync::exchange(algo::Context& ctx, bool initial) {
  const int r = ctx.rank();
  const uint64_t check = checks_++;
  std::vector<LinkRate> table;
  RINA_TRY(gatherLinkRates(ctx, &table, switchRows_ ? switchRows_() : std::vector<LinkRate>{}));
  if (exchangeHook()) exchangeHook()(r);
  std::vector<uint8_t> bytes;
  uint64_t next = 0;
  if (r == 0) {
    bytes = decide(ctx, initial, check, &table);
    // How long a collective takes here (compute between them included), for
    // a check schedule in seconds.
    const auto now = std::chrono::steady_clock::now();
    double perCollective = 0;
    if (total_ > totalAtExchange_ && exchangedAt_ != std::chrono::steady_clock::time_point{}) {
      perCollective = std::chrono::duration<double>(now - exchangedAt_).count() /
                      static_cast<double>(total_ - totalAtExchange_);
    }
    exchangedAt_ = now;
    totalAtExchange_ = total_;
    next = policy_.nextCheck(bytes.empty() ? since_ : 0, perCollective);
  }
  RINA_TRY(broadcast(ctx, &bytes, &next));
  started_ = true;
  nextCheck_ = next;
  if (bytes.empty()) return {};
  plan::Plan p;
  const std::string where = "rank " + std::to_string(r) + ": ";
  RINA_TRY(plan::Plan::deserialize(bytes.data(), bytes.size(), &p)
               .prepend(where + "the plan from rank 0: "));
  RINA_TRY(algo::checkPlanFits(p, ctx.racks()).prepend(where));
  RINA_TRY(connect_(algo::planPeerRanks(r, ctx.racks(), p))
               .prepend(where + "plan #" + std::to_string(p.epoch) +
                        ": connecting to its ring neighbours: "));
  if (r != 0) RINA_TRACE("rank %d: switching to plan #%llu", r, ull(p.epoch));
  if (plan_) ++replans_;
  plan_ = std::move(p);
  since_ = 0;
  return {};
}

// Why peaks: a connection's smoothed rate (LinkCounters, 100 ms of busy
// time) is what its last busy runs achieved. In a pipelined collective on a
// busy host a receive run also holds the waits for the sender's reductions
// (low), and a receive of bytes already in the socket buffer takes almost
// no time (high). In the lab (2 INA racks of 3 and 2 hosts, 500 Mbit/s
// links) one hop read 150, 700, 300 Mbit/s at successive checks, and every
// check re-planned, once moving a port share off a host and doubling
// hier's time. A link's capacity is at least what it achieved, so the
// highest of its readings over the last kPeakSeconds is the estimate: a dip
// from waiting does not move it, a real drop does once it has lasted that
// long (holdMeasuredRates then keeps what is not far below the configured
// rates, link_stats.h). A connection that carried
// (almost) nothing since the last check keeps the rate of whatever it
// carried last, which may be a plan ago: it reads as not measured.
void PlanSync::usePeakRates(std::vector<LinkRate>* table) {
  const auto now = std::chrono::steady_clock::now();
  const auto window = std::chrono::duration<double>(kPeakSeconds);
  for (LinkRate& l : *table) {
    Recent& r = recent_[std::make_tuple(l.peer, l.rank, l.spine)];
    const bool fresh = l.bytesRecv >= r.bytes + kFreshBytes || l.bytesRecv < r.bytes;
    r.bytes = l.bytesRecv;
    while (!r.rates.empty() && now - r.rates.front().first > window) r.rates.erase(r.rates.begin());
    r.rates.emplace_back(now, fresh ? l.recvRate : 0.0);
    double peak = 0;
    for (const auto& [at, rate] : r.rates) peak = std::max(peak, rate);
    l.recvRate = peak;
  }
}

std::vector<uint8_t> PlanSync::decide(algo::Context& ctx, bool initial, uint64_t check,
                                      std::vector<LinkRate>* table) {
  usePeakRates(table);
  if (ratesHook()) ratesHook()(check, table);
  const std::string switchMoved = noteSwitchRates(takeSwitchRows(table));
  const auto now = std::chrono::steady_clock::now();
  const topo::RackMap& map = ctx.racks();
  std::string reason = "initial";
  // A rate past the threshold against the baseline decided (not the count,
  // the clock, or the look again at an earlier drop).
  bool dropped = false;
  if (!initial) {
    for (const LinkRate& l : *table) {
      if (insideInaRack(map, l)) continue;
      // A link first seen now (made for the current plan), or first
      // measured now (a spine the plan just moved hops to), starts its
      // baseline: nothing was assumed of it that could have moved (it
      // compares equal to itself below).
      auto [it, fresh] = baseline_.emplace(std::make_tuple(l.peer, l.rank, l.spine), hopMbit(l));
      if (!fresh && it->second <= 0) it->second = hopMbit(l);
    }
    const RatePairs r = pairRates(map, *table, baseline_);
    const double seconds = std::chrono::duration<double>(now - madeAt_).count();
    plan::ReplanPolicy::Decision d =
        policy_.decide(since_ - evaluatedAt_, seconds, r.then, r.current, &r.names);
    dropped = d.replan && policy_.decide(0, 0, r.then, r.current).replan;
    if (!d.replan && !switchMoved.empty()) {
      d.replan = true;
      d.reason = switchMoved;
    }
    if (!d.replan && !beforeDrop_.empty() && now >= recheckAt_) {
      // The look again: the rates before the drop, by the threshold alone.
      const RatePairs before = pairRates(map, *table, beforeDrop_);
      d = policy_.decide(0, 0, before.then, before.current, &before.names);
      beforeDrop_.clear();
    }
    if (!d.replan) {
      RINA_TRACE("plan check %llu: keeping plan #%llu", ull(check), ull(epoch()));
      return {};
    }
    reason = d.reason;
  }
  plan::Network net = network_;
  addMeasuredRates(*table, &net);
  for (size_t r = 0; r < net.racks.size(); ++r) net.racks[r].switchMbit = switchMeasured_[r];
  holdMeasuredRates(network_, &net);
  plan::PlanOptions options = planOptions(ctx);
  options.epoch = epoch() + 1;
  options.reason = reason;
  options.previous = plan_ ? &*plan_ : nullptr;
  options.keepMargin = policy_.threshold();
  plan::Plan p;
  plan::RackChoice choice;
  Status st = plan::makePlan(net, options, &p, &choice);
  if (!st.ok()) {
    RINA_WARN("rank 0: no plan #%llu (%s): %s; keeping %s", ull(options.epoch), reason.c_str(),
              st.message().c_str(), plan_ ? "the current plan" : "the rack order");
    return {};
  }
  const bool stays =
      plan_ && p.ring == plan_->ring && p.hopSpine == plan_->hopSpine && p.ports == plan_->ports;
  if (stays && dropped && beforeDrop_.empty()) {
    // The drop is looked at once more when the peaks hold only readings
    // taken after it (usePeakRates' window), against the rates before it.
    beforeDrop_ = baseline_;
    recheckAt_ = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(kPeakSeconds));
  }
  if (!stays) beforeDrop_.clear();
  baseline_.clear();
  for (const LinkRate& l : *table) {
    if (!insideInaRack(map, l)) baseline_[std::make_tuple(l.peer, l.rank, l.spine)] = hopMbit(l);
  }
  madeAt_ = now;
  for (size_t r = 0; r < net.racks.size(); ++r) switchAtPlan_[r] = net.racks[r].switchMbit;
  if (stays) {
    // Nothing to switch to: the rates it was made from become the baseline.
    RINA_TRACE("plan check %llu: plan #%llu stays (%s): the rates give the same plan", ull(check),
               ull(epoch()), reason.c_str());
    evaluatedAt_ = since_;
    return {};
  }
  RINA_INFO("%s", p.describe().c_str());
  RINA_INFO("plan #%llu: %s", ull(p.epoch),
            plan::describeChoice(net, choice, options.bytes, options.model).c_str());
  evaluatedAt_ = 0;
  return p.serialize();
}

std::string PlanSync::noteSwitchRates(const std::vector<LinkRate>& rows) {
  plan::Network measured = network_;
  for (plan::Network::Rack& rack : measured.racks) rack.switchMbit = 0;
  addMeasuredSwitchRates(rows, &measured);
  for (size_t r = 0; r < measured.racks.size(); ++r) {
    if (measured.racks[r].switchMbit > 0) switchMeasured_[r] = measured.racks[r].switchMbit;
    measured.racks[r].switchMbit = switchMeasured_[r];
  }
  // What a plan would take of them now.
  plan::Network held = network_;
  for (size_t r = 0; r < held.racks.size(); ++r) held.racks[r].switchMbit = switchMeasured_[r];
  holdMeasuredRates(network_, &held);
  for (size_t r = 0; r < held.racks.size(); ++r) {
    const double now = held.racks[r].switchMbit, then = switchAtPlan_[r];
    const double t = policy_.threshold();
    const bool moved = (now > 0) != (then > 0) ||
                       (now > 0 && t > 0 && std::abs(now - then) > t * std::max(now, then));
    if (!moved) continue;
    char buf[160];
    std::snprintf(buf, sizeof buf, "the switch of rack %s measured %.1f Mbit/s (plan #%llu: ",
                  held.racks[r].name.c_str(), switchMeasured_[r], ull(epoch()));
    std::string why = buf;
    if (then > 0) {
      std::snprintf(buf, sizeof buf, "%.1f Mbit/s)", then);
      why += buf;
    } else {
      why += "no limit)";
    }
    return why;
  }
  return {};
}

Status PlanSync::broadcast(algo::Context& ctx, std::vector<uint8_t>* bytes, uint64_t* nextCheck) {
  const int r = ctx.rank(), n = ctx.size();
  const uint64_t seq = ctx.nextSeq();
  transport::Connection* prev = r > 0 ? ctx.peer(r - 1) : nullptr;
  transport::Connection* next = r + 1 < n ? ctx.peer(r + 1) : nullptr;
  if ((r > 0 && !prev) || (r + 1 < n && !next)) {
    return errorf(rinaInternalError, "rank %d: plan exchange #%llu: no connection to rank %d", r,
                  ull(seq), r > 0 && !prev ? r - 1 : r + 1);
  }
  PlanNotice notice{kNoticeMagic, 0, seq, bytes->size(), *nextCheck};
  if (prev) {
    algo::Engine head(algo::contextFor(ctx, algo::kPlanExchange, seq, 1));
    algo::RecvItem item{
        .conn = prev, .dst = reinterpret_cast<char*>(&notice), .len = sizeof notice, .step = 1};
    item.onDone = [&notice, r, seq]() -> Status {
      if (notice.magic != kNoticeMagic || notice.seq != seq || notice.bytes > kMaxPlanBytes) {
        return errorf(rinaRemoteError,
                      "rank %d: plan exchange #%llu: rank %d sent a bad plan notice (magic "
                      "%08x, exchange #%llu, %llu bytes)",
                      r, ull(seq), r - 1, notice.magic, ull(notice.seq), ull(notice.bytes));
      }
      return {};
    };
    head.recvs().push_back(std::move(item));
    RINA_TRY(head.run());
    bytes->assign(notice.bytes, 0);
    *nextCheck = notice.nextCheck;
  }
  algo::Engine body(algo::contextFor(ctx, algo::kPlanExchange, seq, 1));
  if (prev && !bytes->empty()) {
    body.recvs().push_back(algo::RecvItem{.conn = prev,
                                          .dst = reinterpret_cast<char*>(bytes->data()),
                                          .len = bytes->size(),
                                          .step = 1});
  }
  if (next) {
    body.sends().push_back(algo::SendItem{.conn = next,
                                          .data = reinterpret_cast<const char*>(&notice),
                                          .len = sizeof notice,
                                          .step = 1});
    if (!bytes->empty()) {
      body.sends().push_back(algo::SendItem{.conn = next,
                                            .data = reinterpret_cast<const char*>(bytes->data()),
                                            .len = bytes->size(),
                                            .afterRecv = prev ? 0 : -1,
                                            .step = 1});
    }
  }
  return body.run();
}

}  // namespace rina::comm
