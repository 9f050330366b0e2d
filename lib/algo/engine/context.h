// What an algorithm runs on, in the manner of Gloo's Context: this rank's
// place in the group and its racks, its connections to the peers (by peer,
// and by peer and spine, with the rule for which spine a hop takes), the
// settings that shape a collective, an abort flag, a collective counter,
// scratch memory and the counters it adds to. The communicator (lib/comm)
// is one: it makes the connections and adds what algorithms take as
// inputs instead (the plan every rank follows and the rack's INA agent,
// rack_inputs.h).
#ifndef RINA_LIB_ALGO_ENGINE_CONTEXT_H_
#define RINA_LIB_ALGO_ENGINE_CONTEXT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "algo/engine/algorithm.h"
#include "algo/engine/engine.h"
#include "core/config.h"
#include "plan/path_choice.h"
#include "topo/rack_map.h"
#include "transport/connection.h"
#include "transport/shm_group.h"

namespace rina::algo {

// Counters behind rinaCommGetStats.
struct CommStats {
  uint64_t calls[kAlgorithms] = {};  // per Algorithm that actually ran (index = enum value)
  uint64_t inaFallbacks = 0;
  uint64_t inaCalls = 0;
  uint64_t inaRetransmissions = 0;
  uint64_t inaHostSlices = 0;
  uint64_t inaRegrants = 0;
  uint64_t inaDatagrams = 0;
  uint64_t inaFastRetransmissions = 0;
  uint64_t inaLateAnswers = 0;
  uint64_t inaSocketDrops = 0;
  uint64_t inaWindowCuts = 0;
  uint64_t inaReturns = 0;  // the rack went back to its switch after a fallback
  // Connections closed because a new plan no longer needed them: their
  // bytes stay in rinaCommGetStats' totals.
  uint64_t closedBytesSent = 0;
  uint64_t closedBytesReceived = 0;
  // Point-to-point messages, and the calls that move blocks or reduce to a root.
  uint64_t sends = 0;
  uint64_t recvs = 0;
  uint64_t allToAlls = 0;
  uint64_t reduces = 0;
  uint64_t gathers = 0;
  uint64_t scatters = 0;
};

class Context {
 public:
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int rank() const { return rank_; }
  int size() const { return nranks_; }
  const topo::RackMap& racks() const { return racks_; }

  transport::Connection* peer(int r) const;
  // The connection to rank r over spine `spine` (path / NIC / address s);
  // spine -1 is the default connection, peer(r). When the pair has no
  // connection of its own for that spine (same rack, a peer without an
  // address on it, or the spine is the peer's default address) this is the
  // default connection, which then is that path. Both ends of a message
  // must ask for the same spine.
  transport::Connection* connectionFor(int r, int spine) const;
  // The spine the hop from rank `from` to rank `to` takes: the current
  // plan's (planSpine, for member-ring hops) under RINA_PATHS=planned when
  // it has one, else RINA_PATHS's rule; -1: the default path.
  int hopSpine(int from, int to, int planSpine = -1) const {
    return planSpine >= 0 && paths_.policy() == plan::PathPolicy::kPlanned
               ? planSpine
               : paths_.spineFor(from, to);
  }
  // The ring's connections to and from neighbours, on their hop's spine.
  transport::Connection* hopTo(int next, int planSpine = -1) const {
    return connectionFor(next, hopSpine(rank_, next, planSpine));
  }
  transport::Connection* hopFrom(int prev, int planSpine = -1) const {
    return connectionFor(prev, hopSpine(prev, rank_, planSpine));
  }
  const plan::PathChoice& paths() const { return paths_; }
  // Spines every rank has an address on (0 or 1: one path).
  int spines() const { return spines_; }
  // The spine the default connection to rank r runs over (what its bytes
  // measure): for a peer in another rack when there are several spines, the
  // one on which the accepting (higher) rank's default address lies; else -1.
  int defaultSpine(int r) const;
  // Every connection of this rank, by peer rank (ascending).
  const std::map<int, std::unique_ptr<transport::Connection>>& connections() const {
    return conns_;
  }
  // Connections over a chosen spine, by (peer, spine); see connectionFor.
  const std::map<std::pair<int, int>, std::unique_ptr<transport::Connection>>& spineConnections()
      const {
    return spineConns_;
  }

  // The knobs this context was made with, checked (core/config.h).
  const config::Options& options() const { return options_; }
  int64_t timeoutMs() const { return options_.timeoutMs; }
  size_t sliceBytes() const { return static_cast<size_t>(options_.sliceBytes); }
  size_t smallMsgBytes() const { return static_cast<size_t>(options_.smallMsgBytes); }
  // The segment shared by the ranks on this host (one-shot collectives);
  // null when ranks live on several hosts or shared memory is off.
  transport::ShmGroup* hostGroup() const { return hostGroup_.get(); }
  // RINA_INA_PORT_MARKERS: rina's rack reduce-scatter ports send markers
  // (and auto's link model counts them).
  bool portMarkers() const { return options_.inaPortMarkers; }
  int64_t spinUs() const { return options_.spinUs; }

  const std::atomic<bool>* abortFlag() const { return &aborted_; }
  void abort() { aborted_ = true; }
  bool aborted() const { return aborted_.load(); }

  // The number of the next collective (every rank counts alike).
  uint64_t nextSeq() { return ++seq_; }
  // The allreduce algorithm running now (algo::allReduce sets it for the
  // call; kAuto outside one): collective headers carry it.
  Algorithm callAlgorithm() const { return callAlgorithm_; }
  // The number the next collective will take.
  uint64_t peekSeq() const { return seq_ + 1; }
  // Set for an allreduce: its algorithm (headers carry it) and, with every
  // rank on this host, its announcement in the host segment, which every
  // wait of the call compares with the peers' (a peer in the same call with
  // another algorithm: rinaInvalidUsage naming both). kAuto: the call is over.
  void beginCallAlgorithm(Algorithm a);
  // What engines look at after a quiet wait (EngineContext::watch): the
  // owner's watch, then, in an allreduce with every rank on this host, the
  // peers' schedules.
  const std::function<Status()>* callWatch() const { return &callWatch_; }
  // The owner's part alone, for exchanges outside a collective.
  const std::function<Status()>* ownerWatch() const { return &ownerWatch_; }
  // Set by the owner (comm/communicator.h): what a quiet wait also looks at
  // (notices that revoke the communicator), and a descriptor whose
  // readiness wakes a quiet wait to look (its listening socket); -1: none.
  void setOwnerWatch(std::function<Status()> watch, int wakeFd) {
    ownerWatch_ = std::move(watch);
    wakeFd_ = wakeFd;
  }
  int wakeFd() const { return wakeFd_; }

  // 64-byte aligned scratch of at least bytes; valid until the next call.
  char* scratch(size_t bytes);

  CommStats& stats() { return stats_; }
  const CommStats& stats() const { return stats_; }
  // True the first time auto resolves to a (for one INFO line per choice).
  bool noteAutoChoice(Algorithm a) {
    const unsigned bit = 1u << static_cast<int>(a);
    const bool first = !(autoChoices_ & bit);
    autoChoices_ |= bit;
    return first;
  }

 protected:
  Context() = default;
  ~Context();

  // Filled in by whoever sets the context up (comm/communicator.h).
  int rank_ = 0;
  int nranks_ = 1;
  topo::RackMap racks_;
  std::map<int, std::unique_ptr<transport::Connection>> conns_;
  std::map<std::pair<int, int>, std::unique_ptr<transport::Connection>> spineConns_;
  std::unique_ptr<transport::ShmGroup> hostGroup_;
  plan::PathChoice paths_;
  int spines_ = 0;
  std::vector<int> defaultSpines_;  // by rank; empty: -1 for every peer
  config::Options options_;
  std::atomic<bool> aborted_{false};
  CommStats stats_;

 private:
  // The schedules of the peers on this host against this rank's (one-shot).
  Status checkHostSchedules() const;

  uint64_t seq_ = 0;
  Algorithm callAlgorithm_ = Algorithm::kAuto;
  std::function<Status()> ownerWatch_;
  int wakeFd_ = -1;
  std::function<Status()> callWatch_ = [this]() -> Status {
    if (ownerWatch_) RINA_TRY(ownerWatch_());
    return checkHostSchedules();
  };
  unsigned autoChoices_ = 0;
  char* scratch_ = nullptr;
  size_t scratchBytes_ = 0;
};

// The engine settings for one collective on ctx (kind: engine.h's CollKind).
EngineContext contextFor(const Context& ctx, uint8_t kind, uint64_t seq, int steps);
// The same for an exchange named `what` (the INA setup, the link probe):
// one step, and no look at the call's schedule (Context::callWatch).
EngineContext contextFor(const Context& ctx, const char* what, uint64_t seq);
// Makes an engine with ectx, moves the items in and runs it to the end.
Status runExchange(const EngineContext& ectx, std::vector<SendItem> sends,
                   std::vector<RecvItem> recvs);
// The header of one collective on ctx: the call, and for an allreduce the
// algorithm running it; the slice and small-message sizes always.
CollHeader collHeader(const Context& ctx, uint8_t kind, uint64_t seq, size_t count,
                      rinaDataType_t type, rinaRedOp_t op, int root);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_ENGINE_CONTEXT_H_
