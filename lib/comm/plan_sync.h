// Every rank on the same plan (plan/plan.h) for the rack algorithms (hier,
// rina), re-planned from measured link rates (docs/planning.md, "Plans at
// run time").
//
// The agreement. Plans change only at *check points*, collectives that
// every rank can name without talking: each exchange's notice tells every
// rank after how many hier / rina allreduces under the plan the next check
// comes (rank 0's ReplanPolicy::nextCheck: multiples of
// RINA_PLAN_INTERVAL's count N and, when a rate threshold or a time
// interval is set, of RINA_PLAN_CHECK_EVERY, a count or seconds that rank 0
// turns into a count from how long its recent collectives took), so only
// rank 0's knobs decide the schedule. At a check point every rank joins one exchange: the
// link rates gather to rank 0 (gatherLinkRates, per-spine connections
// included), rank 0 decides (ReplanPolicy: the rates against those the plan
// was made from, the count, its own clock) and sends a notice down the line
// 0 -> 1 -> ... -> n-1: "keep" or a new plan's bytes, and the next check.
// Every rank then adopts the same plan before that same collective,
// connecting to its new ring neighbours (Communicator::updatePeers, through
// the Connect function it was created with).
// Between check points a collective pays one counter compare and sends
// nothing extra; a check costs 2(n-1) hop latencies plus the rate table (72
// bytes per connection).
// The exchange runs on the step engine, so every wait has RINA_TIMEOUT_MS
// and an error naming the rank, the peer and the exchange; a rank that
// dies in it makes the others fail, not hang.
#ifndef RINA_LIB_COMM_PLAN_SYNC_H_
#define RINA_LIB_COMM_PLAN_SYNC_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "algo/engine/context.h"
#include "algo/rack/rack.h"
#include "comm/link_stats.h"
#include "plan/network.h"
#include "plan/plan.h"
#include "plan/replan.h"

namespace rina::comm {

class PlanSync final : public algo::PlanSource {
 public:
  // Connects to the ranks a new plan makes this rank talk to (and closes
  // what no plan needs): a collective, as Communicator::updatePeers.
  using Connect = std::function<Status(const std::set<int>& wanted)>;
  // This rank's rows beyond its connections for the rate gather: its INA
  // rack's switch as it met it (switchRateRow), or none.
  using SwitchRows = std::function<std::vector<LinkRate>()>;

  // Beyond this many ring members rank 0 would plan for too long while
  // every rank waits (docs/planning.md gives the ring heuristic's times):
  // every rank makes the same plan from the configured rates alone, with
  // the racks' modes chosen but the members in rack order, and it stays.
  static constexpr size_t kMaxPlannedMembers = 128;

  // The planner's network from the topology and ctx's rack map (rates as
  // configured); no messages. forceIna: RINA_PLAN_INA=on.
  static Status create(const algo::Context& ctx, const topo::TopologySpec& topology,
                       const plan::ReplanPolicy& policy, bool forceIna, Connect connect,
                       SwitchRows switchRows, std::unique_ptr<PlanSync>* out);

  // Collective: the initial plan, from the configured rates plus whatever
  // the links measured so far (the creation probe).
  Status start(algo::Context& ctx) override;
  // Collective, first thing in every hier / rina allreduce: the initial
  // plan if none was made yet, the exchange at a check point, then counts
  // the collective.
  Status beforeCollective(algo::Context& ctx) override;

  // Null before the initial plan (and when not planning): the rack order.
  const plan::Plan* current() const override { return plan_ ? &*plan_ : nullptr; }
  uint64_t epoch() const { return plan_ ? plan_->epoch : 0; }
  uint64_t replans() const { return replans_; }  // plans after the initial one
  uint64_t checks() const { return checks_; }    // exchanges, the initial one included

 private:
  PlanSync() = default;
  bool checkDue() const { return nextCheck_ > 0 && since_ == nextCheck_; }
  Status exchange(algo::Context& ctx, bool initial);
  // Rank 0: a new plan's bytes, or none to keep the current plan.
  std::vector<uint8_t> decide(algo::Context& ctx, bool initial, uint64_t check,
                              std::vector<LinkRate>* table);
  // Rank 0: the switch rows' measures into switchMeasured_; a reason to
  // re-plan when a switch's rate as the plan would take it (held) moved
  // from the one the current plan was made with, else empty.
  std::string noteSwitchRates(const std::vector<LinkRate>& rows);
  // The plan options every plan is made with (RINA_PLAN_INA, port markers).
  plan::PlanOptions planOptions(const algo::Context& ctx) const;
  // Rank 0: each row's recvRate becomes the highest smoothed rate the
  // connection showed at this check and the checks of the kPeakSeconds
  // before it, counting only checks since which it received kFreshBytes
  // (0: nothing fresh, not measured); plan_sync.cc says why.
  void usePeakRates(std::vector<LinkRate>* table);
  static constexpr double kPeakSeconds = 1.0;
  static constexpr uint64_t kFreshBytes = 64 << 10;  // what the engine times a run from
  // Rank 0's bytes and next check reach every rank (empty bytes: keep).
  Status broadcast(algo::Context& ctx, std::vector<uint8_t>* bytes, uint64_t* nextCheck);

  plan::ReplanPolicy policy_;
  Connect connect_;
  SwitchRows switchRows_;
  bool forceIna_ = false;
  plan::Network network_;  // as configured; rank 0 adds measured rates to a copy
  bool active_ = false;    // two or more ranks, at most kMaxPlannedMembers members
  // Rank 0: each rack's switch rate as last measured (0: never), and as the
  // current plan took it (after holdMeasuredRates).
  std::vector<double> switchMeasured_, switchAtPlan_;
  bool started_ = false;
  std::optional<plan::Plan> plan_;
  uint64_t since_ = 0;      // hier / rina collectives run under the current plan
  uint64_t nextCheck_ = 0;  // since_ at the next check point (rank 0's word); 0: none
  uint64_t replans_ = 0;
  uint64_t checks_ = 0;
  // Rank 0: when the current plan was made (or last re-made unchanged), and
  // the rate of each connection
  // (peer, rank, spine) it was made from, in Mbit/s (0: nothing measured
  // then; the first rate measured later becomes its baseline).
  std::chrono::steady_clock::time_point madeAt_;
  uint64_t evaluatedAt_ = 0;  // since_ when rank 0 last planned (a plan that stayed)
  // Rank 0: hier / rina collectives ever, and at the last exchange, when.
  uint64_t total_ = 0;
  uint64_t totalAtExchange_ = 0;
  std::chrono::steady_clock::time_point exchangedAt_{};
  std::map<std::tuple<int, int, int>, double> baseline_;
  // Rank 0: a drop past the threshold whose plan came out the same was
  // judged on peaks that still held readings from before it (docs/planning.md,
  // "Plans at run time", says what the lab showed), and the
  // stay made those transitional rates the baseline: the next drop past the
  // threshold would have to come from them. So the baseline from before
  // the drop is kept here, and at the first check from recheckAt_ on
  // (kPeakSeconds after the stay) the rates are compared with it once more
  // and a drop still past the threshold is planned for again. Empty: none
  // pending; a plan that moves clears it.
  std::map<std::tuple<int, int, int>, double> beforeDrop_;
  std::chrono::steady_clock::time_point recheckAt_{};
  // (peer, rank, spine) -> bytes received at the last check, and its
  // smoothed rates at the last checks (0: nothing fresh), newest last.
  struct Recent {
    uint64_t bytes = 0;
    std::vector<std::pair<std::chrono::steady_clock::time_point, double>> rates;
  };
  std::map<std::tuple<int, int, int>, Recent> recent_;
};

// Tests: rank 0 of every communicator in this process passes each gathered
// rate table through fn before deciding (check 0 is the initial plan);
// an empty fn removes it. Set it while no communicator plans.
void setPlanRatesHookForTesting(std::function<void(uint64_t check, std::vector<LinkRate>*)> fn);
// Tests: every rank calls fn(rank) in each exchange after the rate gather,
// before the plan notice.
void setPlanExchangeHookForTesting(std::function<void(int rank)> fn);

}  // namespace rina::comm

#endif  // RINA_LIB_COMM_PLAN_SYNC_H_
