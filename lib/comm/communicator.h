// A communicator: an algo::Context (the connections algorithms run on)
// made by set-up (bootstrap, listening sockets, rack map, connections,
// link probe), plus what it owns beside them: the agreement on the plan
// (PlanSync), this rank's INA rack agent (RackAgent), the configured
// algorithm, and what new connections need after creation. The C API
// (lib/api) owns it.
#ifndef RINA_LIB_COMM_COMMUNICATOR_H_
#define RINA_LIB_COMM_COMMUNICATOR_H_

#include <memory>
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
#include "rina/rina.h"
#include "topo/rack_map.h"
#include "transport/mesh.h"

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

  std::string& lastError() { return lastError_; }

 private:
  Communicator(int rank, int nranks) : Context(rank, nranks) {}
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
  Status probe();
  Status setUpRack();
  Status startPlans(const Setup& s);
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
};

}  // namespace rina::comm

#endif  // RINA_LIB_COMM_COMMUNICATOR_H_
