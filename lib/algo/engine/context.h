// What an algorithm runs on, in the manner of Gloo's Context: this rank's
// place in the group and its racks, its connections to the peers (by peer,
// and by peer and spine, with the rule for which spine a hop takes), the
// settings that shape a collective, an abort flag, a collective counter,
// scratch memory and the counters it adds to. The communicator (lib/comm)
// is one: it makes the connections and hands them in through the protected
// setters below, the only way in; it adds what algorithms take as inputs
// instead (the plan every rank follows and the rack's INA agent,
// rack/rack_inputs.h).
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
#include "topo/rack_map.h"

namespace rina::plan {
class PathChoice;
}
namespace rina::transport {
class Connection;
class ShmGroup;
}  // namespace rina::transport

namespace rina::algo {

// Counters behind rinaCommGetStats that the algorithms keep (the INA
// counters are the rack's: rack/rack_inputs.h, RackSwitch).
struct CommStats {
  uint64_t calls[kAlgorithms] = {};  // per Algorithm that actually ran (index = enum value)
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

// The knobs that shape a collective (core/config.h names them; the
// communicator reads them from its checked options). Every rank takes rank
// 0's value, except RINA_ALLTOALL_STREAM_BYTES, which only changes how a
// rank copies into its own buffer and so is each rank's own.
struct CallKnobs {
  int64_t timeoutMs = 0;           // RINA_TIMEOUT_MS
  size_t sliceBytes = 0;           // RINA_SLICE_BYTES
  size_t smallMsgBytes = 0;        // RINA_SMALL_MSG_BYTES
  size_t twoShotBytes = 0;         // RINA_TWO_SHOT_BYTES
  size_t allToAllSlotBytes = 0;    // RINA_ALLTOALL_SLOT_BYTES
  size_t allToAllStreamBytes = 0;  // RINA_ALLTOALL_STREAM_BYTES
  bool portMarkers = false;        // RINA_INA_PORT_MARKERS
  int64_t spinUs = 0;              // RINA_SPIN_US
};

using ConnectionMap = std::map<int, std::unique_ptr<transport::Connection>>;
using SpineConnectionMap = std::map<std::pair<int, int>, std::unique_ptr<transport::Connection>>;

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
  int hopSpine(int from, int to, int planSpine = -1) const;
  // The ring's connections to and from neighbours, on their hop's spine.
  transport::Connection* hopTo(int next, int planSpine = -1) const {
    return connectionFor(next, hopSpine(rank_, next, planSpine));
  }
  transport::Connection* hopFrom(int prev, int planSpine = -1) const {
    return connectionFor(prev, hopSpine(prev, rank_, planSpine));
  }
  // The rule hops follow (RINA_PATHS; plan/path_choice.h).
  const plan::PathChoice& paths() const { return *paths_; }
  // Spines every rank has an address on (0 or 1: one path).
  int spines() const { return spines_; }
  // The spine the default connection to rank r runs over (what its bytes
  // measure): for a peer in another rack when there are several spines, the
  // one on which the accepting (higher) rank's default address lies; else -1.
  int defaultSpine(int r) const;
  // Every connection of this rank, by peer rank (ascending).
  const ConnectionMap& connections() const { return conns_; }
  // Connections over a chosen spine, by (peer, spine); see connectionFor.
  const SpineConnectionMap& spineConnections() const { return spineConns_; }

  int64_t timeoutMs() const { return knobs_.timeoutMs; }
  size_t sliceBytes() const { return knobs_.sliceBytes; }
  size_t smallMsgBytes() const { return knobs_.smallMsgBytes; }
  size_t twoShotBytes() const { return knobs_.twoShotBytes; }
  size_t allToAllSlotBytes() const { return knobs_.allToAllSlotBytes; }
  size_t allToAllStreamBytes() const { return knobs_.allToAllStreamBytes; }
  // The segment shared by the ranks on this host (one-shot and two-shot
  // allreduce); null when ranks live on several hosts or shared memory is off.
  transport::ShmGroup* hostGroup() const { return hostGroup_.get(); }
  // RINA_INA_PORT_MARKERS: rina's rack reduce-scatter ports send markers
  // (and auto's link model counts them).
  bool portMarkers() const { return knobs_.portMarkers; }
  int64_t spinUs() const { return knobs_.spinUs; }

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
  // A descriptor whose readiness wakes a quiet wait to look (the owner's
  // listening socket); -1: none.
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
  // What set-up hands in, step by step (comm/setup.cc): until then a
  // context is one rank's, with no peers, no spines and zero knobs.
  Context(int rank, int nranks);
  ~Context();
  void setKnobs(const CallKnobs& knobs) { knobs_ = knobs; }
  void setRacks(topo::RackMap racks) { racks_ = std::move(racks); }
  // The hop rule, the spines every rank has an address on, and per rank
  // the spine of its default connection (empty: -1 for every peer).
  void setPaths(std::unique_ptr<plan::PathChoice> paths, int spines,
                std::vector<int> defaultSpines);
  void setHostGroup(std::unique_ptr<transport::ShmGroup> group);
  // Connections made at set-up and later for new plans and calls (a peer
  // already connected keeps its connection).
  void addConnections(ConnectionMap fresh, SpineConnectionMap spine = {});
  // Closes the default connection to peer; its bytes stay in the totals
  // (CommStats::closedBytes*).
  void closeConnection(int peer);
  // Hands every connection over (a communicator made from this one takes
  // them, comm/derive.cc); this context then has none.
  ConnectionMap releaseConnections(SpineConnectionMap* spine);
  // Hands the host segment over (a shrink keeps it); this context then
  // has none.
  std::unique_ptr<transport::ShmGroup> releaseHostGroup();
  // What a quiet wait also looks at (notices that revoke the communicator),
  // and a descriptor whose readiness wakes it to look (its listening
  // socket; -1: none).
  void setOwnerWatch(std::function<Status()> watch, int wakeFd) {
    ownerWatch_ = std::move(watch);
    wakeFd_ = wakeFd;
  }

 private:
  int rank_;
  int nranks_;
  topo::RackMap racks_;
  ConnectionMap conns_;
  SpineConnectionMap spineConns_;
  std::unique_ptr<transport::ShmGroup> hostGroup_;
  std::unique_ptr<plan::PathChoice> paths_;
  int spines_ = 0;
  std::vector<int> defaultSpines_;  // by rank; empty: -1 for every peer
  CallKnobs knobs_;
  std::atomic<bool> aborted_{false};
  CommStats stats_;
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
