// A communicator: an algo::Context (the connections algorithms run on)
// made by set-up (bootstrap, listening sockets, rack map, connections,
// link probe), plus what it owns beside them: the agreement on the plan
// (PlanSync), this rank's INA rack agent (RackAgent), the configured
// algorithm, and what new connections need after creation. The C API
// (lib/api) owns it.
#ifndef RINA_LIB_COMM_COMMUNICATOR_H_
#define RINA_LIB_COMM_COMMUNICATOR_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>

#include "algo/engine/algorithm.h"
#include "algo/engine/context.h"
#include "algo/p2p/point_to_point.h"
#include "comm/peer_channels.h"
#include "comm/plan_sync.h"
#include "comm/rack_agent.h"
#include "core/config.h"
#include "core/socket.h"
#include "core/status.h"
#include "plan/path_choice.h"
#include "rina/rina.h"
#include "topo/rack_map.h"
#include "transport/mesh.h"
#include "transport/notice.h"
#include "transport/shm_group.h"

namespace rina::comm {

class Communicator : public algo::Context {
 public:
  // Collective over nranks ranks sharing id. options: every knob, as
  // config::fromEnvironment gives them (rinaCommInitRank) or as a caller
  // sets them; checked here (core/config.h), errors name the knob.
  static Status create(int nranks, const rinaUniqueId& id, int rank, const config::Options& options,
                       std::unique_ptr<Communicator>* out);
  ~Communicator();

  // The knobs this communicator was made with, checked (core/config.h), with
  // rank 0's schedule knobs adopted.
  const config::Options& options() const { return options_; }
  // The topology the rack map came from (the planner's configured rates).
  const topo::TopologySpec& topology() const { return topology_; }
  // This rank's INA counters (zero outside an INA rack of two or more).
  InaCounters inaCounters() const { return rackAgent_ ? rackAgent_->counters() : InaCounters{}; }
  // The plan the rack algorithms follow and the agreement on it.
  PlanSync& plans() { return *plans_; }

  algo::Algorithm algorithm() const { return algorithm_; }
  void setAlgorithm(algo::Algorithm a) { algorithm_ = a; }

  // Every collective of the C API enters here; counts are in elements, the
  // arguments checked by lib/api. On one rank each copies its input to its
  // output (algo::finishedOnOneRank; all-to-all by its displacements).

  // The allreduce of the configured algorithm (algo/dispatch/dispatch.h), with this
  // communicator's plan and INA rack.
  Status allReduce(const void* send, void* recv, size_t count, rinaDataType_t type, rinaRedOp_t op);
  // sum_r w_r x_r / sum_r w_r over allReduce (algo/flat/flat.h).
  Status weightedAllReduce(const void* send, void* recv, size_t count, rinaDataType_t type,
                           double weight);
  // Around the ring, which every rank is connected to (algo/flat/flat.h):
  // recvCount elements per rank; sendCount elements from each rank.
  Status reduceScatter(const void* send, void* recv, size_t recvCount, rinaDataType_t type,
                       rinaRedOp_t op);
  Status allGather(const void* send, void* recv, size_t sendCount, rinaDataType_t type);
  Status broadcast(const void* send, void* recv, size_t count, rinaDataType_t type, int root);

  // Point-to-point messages (algo/p2p/point_to_point.h) on this communicator's
  // channels: each peer's in batch order, all peers at once.
  Status runMessages(std::span<algo::Message> batch);
  // The calls that move blocks or reduce to a root (algo/flat/flat.h);
  // collective: they first connect the pairs they need that have no
  // connection (all-to-all: every pair; gather, scatter: the root with
  // every rank), which stay connected.
  Status allToAll(const void* send, void* recv, size_t count, rinaDataType_t type);
  Status allToAllv(const void* send, const size_t* sendCounts, const size_t* sendDispls, void* recv,
                   const size_t* recvCounts, const size_t* recvDispls, rinaDataType_t type);
  Status reduce(const void* send, void* recv, size_t count, rinaDataType_t type, rinaRedOp_t op,
                int root);
  Status gather(const void* send, void* recv, size_t count, rinaDataType_t type, int root);
  Status scatter(const void* send, void* recv, size_t count, rinaDataType_t type, int root);

  // The random id every rank of this communicator shares.
  uint64_t id() const { return mesh_.commId; }
  // Payload bytes moved over the point-to-point channels, per direction.
  uint64_t channelBytes(transport::Direction d) const {
    return channels_ ? channels_->bytes(d) : 0;
  }

  // Collective over the pairs that change (both ends call it with
  // symmetric sets, at the same collective): connects to the ranks of
  // wanted it has no connection to, over the same bootstrap table and
  // listening socket as at creation, and closes connections to ranks that
  // are neither wanted nor basePeerRanks. So a rank holds O(rack size)
  // connections whatever plans come and go. (Connections it makes are
  // default-path only: a hop to a new neighbour takes the default path.)
  Status updatePeers(const std::set<int>& wanted);
  // Collective over the ranks that lack a connection to one of peers: makes
  // those connections (as updatePeers), and keeps them from then on.
  Status connectForCall(const std::set<int>& peers);
  // connectForCall for every rank (all-to-all).
  Status connectEveryone();

  std::string& lastError() { return lastError_; }

  // rinaCommRevoke, from any thread: every call of this communicator, the
  // one in progress included (at its next wait), returns rinaRevoked, here
  // and, through a notice to every other rank's listening socket, on every
  // rank within a wait of its own (revoke.cc). why says what happened.
  void revoke(const std::string& why);
  bool revoked() const { return revoked_.load(); }
  // What a call on a revoked communicator returns: rinaRevoked naming the
  // rank that revoked it and why.
  Status revokedError(const std::string& call) const;
  // Reads the notices waiting at this rank's listening socket (a revoke, a
  // survivor's shrink) and files the connections for set-up and channels
  // it finds there; a notice that does not check out is dropped with a
  // WARN. The thread that runs the calls only.
  Status takeNotices();
  // takeNotices, where a notice may have come: with every rank on this host
  // a sender counts its notice in the host segment first, so a call's start
  // skips the look (a system call) while every counted notice is taken.
  Status takeNoticesIfSent();
  // rinaCommGetAsyncError: a failure seen while no call runs (revoked,
  // aborted, a peer's connection closed, the rack's switch lost); ok if none.
  Status asyncError();

  // Communicators made from this one. Each is collective over the ranks
  // that take part, which must not be in a call on this one.
  // rinaCommShrink (shrink.cc): the ranks not in exclude (ascending, in
  // range, without this rank: checked by the caller) agree on the list and
  // form *out over this communicator's connections; this one is used up.
  Status shrink(const std::vector<int>& exclude, std::unique_ptr<Communicator>* out);
  // A shrink this rank refuses for its own arguments (why): the attempt is
  // counted, and every other rank's shrink of that attempt fails with why.
  void refuseShrinkArguments(const std::string& why) { refuseShrink(++shrinkAttempts_, why); }
  // Its connections went to a communicator made from it (shrink, grow).
  bool usedUp() const { return !listen_.valid(); }
  // rinaCommSplit (split.cc): *out stays null for color < 0. argsOk false:
  // this rank refused its own arguments; it takes part so that every other
  // rank fails at once (rinaInvalidUsage naming it). *exchanged: the
  // exchange over this communicator completed (a failure after it leaves
  // this one usable).
  Status split(int color, int key, bool argsOk, std::unique_ptr<Communicator>* out,
               bool* exchanged);
  // rinaCommGrow (grow.cc): this one's ranks and nNew joiners (rinaCommJoin,
  // which runs create) meet at id's root; this one is used up.
  // *exchanged as for split; once the rendezvous began this one is used up.
  Status grow(int nNew, const rinaUniqueId& id, std::unique_ptr<Communicator>* out,
              bool* exchanged);

 private:
  // grow's check that every rank passes the same nNew and id (null: this
  // rank's is not an id); *exchanged once the ranks have compared them.
  Status checkGrowArguments(int nNew, const bootstrap::IdData* id, const std::string& where,
                            bool* exchanged);
  Communicator(int rank, int nranks) : Context(rank, nranks) {}
  // Applies one notice (revoke: the communicator is revoked; a shrink's
  // proposal or refusal: kept for the shrink that awaits it).
  void applyNotice(transport::Notice notice, Fd fd);
  // Every quiet wait of this communicator's engines reads the notices (and
  // wakes when one arrives at the listening socket): a revoke stops the
  // call in progress.
  void watchNotices();

  // shrink.cc: the survivors' agreement on the excluded ranks, and the
  // refusal every other rank gets when it fails; the id of the
  // communicator a shrink attempt forms.
  // meanwhile: what this rank does once its list is on its way.
  // *hostRound: this rank's last round in the host segment, then the
  // latest of every survivor's (ShmGroup::renumber's base).
  Status agreeOnShrink(uint64_t attempt, const std::vector<bool>& excluded, uint32_t* hostRound,
                       const std::function<Status()>& meanwhile);
  void refuseShrink(uint64_t attempt, const std::string& why);
  // revoke.cc: n (from this rank) to every other rank's listening socket,
  // waiting at most waitMs; *addrs and *sent: where each went and how.
  // Before a notice goes to rank r: counted in the host segment, if any.
  void countNoticeFor(int r);
  void noticeOthers(transport::Notice n, int64_t waitMs, std::vector<PackedAddr>* addrs,
                    std::vector<Status>* sent);
  uint64_t successorId(uint64_t attempt) const;
  // derive.cc: a communicator of nranks ranks with this one's knobs,
  // topology and algorithm; this one's listening socket and connections to
  // members (members[i] is its rank i) going to it; and its set-up from
  // there (its rank, size and racks_ set): resync of what it took, the
  // connections it lacks, host segment, probe, INA racks (oldRack: this
  // rank's part of the old communicator's, re-registered; null: set up
  // afresh), plan. how: for the ready line.
  std::unique_ptr<Communicator> successor(int nranks, int rank) const;
  void handOver(const std::vector<int>& members, Communicator* next);
  // resyncBegun: the connections taken over began their resync already
  // (Connection::beginResync with commId).
  Status formDerived(const std::vector<bootstrap::PeerInfo>& table, uint64_t commId,
                     std::unique_ptr<RackAgent> oldRack, Clock::time_point started,
                     const std::string& how, bool resyncBegun = false);
  // Connects to every rank of peers (this one aside) not connected yet: the
  // collective part of updatePeers and connectForCall.
  Status connectMissing(const std::set<int>& peers);

  // The steps of create, in order (setup.cc). Setup carries what a step
  // hands on to later ones and lives until create returns.
  struct Setup;
  Status readKnobs(const config::Options& options, Setup* s);
  // The algorithms' knobs (algo::CallKnobs) from options_, at each change.
  void handKnobsToContext();
  Status joinBootstrap(const rinaUniqueId& id, Setup* s);
  Status openListeners(Setup* s);
  Status meet(Setup* s);
  Status takeRankZeroSchedule(const std::string& text, Setup* s);
  Status mapRacks(const Setup& s);
  Status connectPeers(Setup* s);
  // Parts of mapRacks and connectPeers that communicators made from
  // another one (derive.cc) share: paths over the spines for racks_, the
  // connection settings over table, and the host segment of one-shot calls
  // (joined, not yet waited for: hostGroup_->waitJoined; none unless every
  // rank of table is on this host). With an offer (a joiner of a grow that
  // keeps the members' segment) it takes a spare slot of that segment.
  Status choosePaths(const std::vector<bootstrap::PeerInfo>& table, plan::PathPolicy policy);
  transport::MeshOptions meshOptions(const std::vector<bootstrap::PeerInfo>& table, uint64_t commId,
                                     int socketsPerPeer);
  Status joinHostGroup(const std::vector<bootstrap::PeerInfo>& table, uint64_t commId,
                       Deadline deadline, const bootstrap::SegmentOffer& offer = {});
  // Whether every rank of table is on one host (shared memory between all).
  static bool oneHost(const std::vector<bootstrap::PeerInfo>& table);
  // joinHostGroup's segment until waited for, then handed to the context.
  Status finishHostGroup(Deadline deadline);
  Status probe();
  Status setUpRack();
  Status startPlans(const plan::ReplanPolicy& policy);
  void logReady(const Setup& s) const;

  config::Options options_;
  topo::TopologySpec topology_;
  std::unique_ptr<RackAgent> rackAgent_;
  std::unique_ptr<PlanSync> plans_;
  algo::Algorithm algorithm_ = algo::Algorithm::kAuto;
  // For connections made after creation (updatePeers).
  Fd listen_;
  transport::MeshOptions mesh_;
  std::set<int> basePeers_;
  std::set<int> callPeers_;  // connected for all-to-all, gather, scatter: kept
  // Connections accepted by set-up or by the channels for the other (mesh.h).
  transport::Arrivals arrivals_;
  std::unique_ptr<PeerChannels> channels_;
  std::string lastError_;
  // Revoked (revoke.cc): the flag any thread reads, and who revoked and why.
  std::atomic<bool> revoked_{false};
  mutable std::mutex revokeMutex_;
  std::string revokedBy_;
  // Notices for this communicator taken from the listening socket (see
  // takeNoticesIfSent).
  uint32_t noticesTaken_ = 0;
  // Survivors' shrink proposals that reached this rank (with the connection
  // the verdict goes back on), and refused shrink attempts, by attempt.
  struct Proposal {
    transport::Notice notice;
    Fd fd;
  };
  std::vector<Proposal> proposals_;
  std::map<uint64_t, std::string> refusals_;
  uint64_t shrinkAttempts_ = 0;
  std::unique_ptr<transport::ShmGroup> joiningGroup_;
  uint64_t splits_ = 0;
};

}  // namespace rina::comm

#endif  // RINA_LIB_COMM_COMMUNICATOR_H_
