// A communicator: this rank's place in the group, its connections to the
// peers its algorithms use, its settings, and scratch memory. Algorithms
// (lib/algo) run on it; the C API (lib/api) owns it.
#ifndef RINA_LIB_COMM_COMMUNICATOR_H_
#define RINA_LIB_COMM_COMMUNICATOR_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "core/socket.h"
#include "comm/path_choice.h"
#include "core/status.h"
#include "rina/rina.h"
#include "topo/rack_map.h"
#include "transport/connection.h"
#include "transport/mesh.h"

namespace rina::algo {

class PlanSync;
class RackIna;

enum class Algorithm { kAuto, kRing, kRecursiveDoubling, kHier, kRina, kPsIna };
Status parseAlgorithm(const std::string& name, Algorithm* out);
const char* algorithmName(Algorithm a);

// The peers a rank's algorithms talk to: ring neighbours and recursive
// doubling partners (including the fold pairs for non-powers of two).
std::set<int> neighbourRanks(int rank, int nranks);

// The peers of the rack algorithms (hier, rina, ps-ina): every rank of this
// rank's rack and of the racks before and after it (in rack order, cyclic),
// because ports rotate over a rack's workers by chunk and a ring member's
// neighbours are always in the same or an adjacent rack; and for ps-ina
// rank 0 (the parameter server) with every rack's agent. So a rank has
// O(rack size) connections, not n - 1.
std::set<int> rackPeerRanks(int rank, const topo::RackMap& map);

// The peers a rank keeps whatever the plan: neighbourRanks, its own rack,
// and the ps-ina star (rank 0 with every rack's agent). A plan adds the
// ranks of its ring neighbours (plan_members.h: planPeerRanks).
std::set<int> basePeerRanks(int rank, const topo::RackMap& map);

// Counters behind rinaCommGetStats.
struct CommStats {
  uint64_t calls[6] = {};  // per Algorithm that actually ran (index = enum value)
  uint64_t inaFallbacks = 0;
  uint64_t inaCalls = 0;
  uint64_t inaRetransmissions = 0;
  uint64_t inaHostSlices = 0;
  uint64_t inaRegrants = 0;
  // Connections closed because a new plan no longer needed them: their
  // bytes stay in rinaCommGetStats' totals.
  uint64_t closedBytesSent = 0;
  uint64_t closedBytesReceived = 0;
};

class Communicator {
 public:
  static Status create(int nranks, const rinaUniqueId& id, int rank,
                       std::unique_ptr<Communicator>* out);
  ~Communicator();

  const topo::RackMap& racks() const { return racks_; }
  // The topology the rack map came from (the planner's configured rates).
  const topo::TopologySpec& topology() const { return topology_; }
  // The plan the rack algorithms follow and the agreement on it.
  PlanSync& plans() { return *plans_; }
  // This rank's INA rack state; null outside an INA rack of two or more.
  RackIna* rackIna() const { return rackIna_.get(); }
  CommStats& stats() { return stats_; }

  int rank() const { return rank_; }
  int size() const { return nranks_; }
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
    return planSpine >= 0 && paths_.policy() == PathPolicy::kPlanned ? planSpine
                                                                     : paths_.spineFor(from, to);
  }
  const PathChoice& paths() const { return paths_; }
  // Spines every rank has an address on (0 or 1: one path).
  int spines() const { return spines_; }
  // The spine the default connection to rank r runs over (what its bytes
  // measure): for a peer in another rack when there are several spines, the
  // one on which the accepting (higher) rank's default address lies; else -1.
  int defaultSpine(int r) const;
  // The ring's connections to and from neighbours, on their hop's spine.
  transport::Connection* hopTo(int next, int planSpine = -1) const {
    return connectionFor(next, hopSpine(rank_, next, planSpine));
  }
  transport::Connection* hopFrom(int prev, int planSpine = -1) const {
    return connectionFor(prev, hopSpine(prev, rank_, planSpine));
  }
  // Connections over a chosen spine, by (peer, spine); see connectionFor.
  const std::map<std::pair<int, int>, std::unique_ptr<transport::Connection>>& spineConnections()
      const {
    return spineConns_;
  }
  // Collective over the pairs that change (both ends call it with
  // symmetric sets, at the same collective): connects to the ranks of
  // wanted it has no connection to, over the same bootstrap table and
  // listening socket as at creation, and closes connections to ranks that
  // are neither wanted nor basePeerRanks. So a rank holds O(rack size)
  // connections whatever plans come and go. (Connections it makes are
  // default-path only: a hop to a new neighbour takes the default path.)
  Status updatePeers(const std::set<int>& wanted);
  // Every connection of this rank, by peer rank (ascending).
  const std::map<int, std::unique_ptr<transport::Connection>>& connections() const {
    return conns_;
  }

  const std::atomic<bool>* abortFlag() const { return &aborted_; }
  void abort() { aborted_ = true; }
  bool aborted() const { return aborted_.load(); }

  uint64_t nextSeq() { return ++seq_; }

  Algorithm algorithm() const { return algorithm_; }
  // True the first time auto resolves to a (for one INFO line per choice).
  bool noteAutoChoice(Algorithm a) {
    const unsigned bit = 1u << static_cast<int>(a);
    const bool first = !(autoChoices_ & bit);
    autoChoices_ |= bit;
    return first;
  }
  void setAlgorithm(Algorithm a) { algorithm_ = a; }
  int64_t timeoutMs() const { return timeoutMs_; }
  size_t sliceBytes() const { return sliceBytes_; }
  size_t smallMsgBytes() const { return smallMsgBytes_; }
  // RINA_INA_PORT_MARKERS: rina's rack reduce-scatter ports send markers
  // (and auto's link model counts them).
  bool portMarkers() const { return portMarkers_; }
  int64_t spinUs() const { return spinUs_; }

  // 64-byte aligned scratch of at least bytes; valid until the next call.
  char* scratch(size_t bytes);

  std::string& lastError() { return lastError_; }

 private:
  Communicator() = default;

  int rank_ = 0;
  int nranks_ = 1;
  std::map<int, std::unique_ptr<transport::Connection>> conns_;
  std::map<std::pair<int, int>, std::unique_ptr<transport::Connection>> spineConns_;
  PathChoice paths_;
  int spines_ = 0;
  topo::RackMap racks_;
  topo::TopologySpec topology_;
  std::unique_ptr<RackIna> rackIna_;
  std::unique_ptr<PlanSync> plans_;
  // For connections made after creation (updatePeers).
  Fd listen_;
  transport::MeshOptions mesh_;
  std::set<int> basePeers_;
  CommStats stats_;
  std::atomic<bool> aborted_{false};
  uint64_t seq_ = 0;
  Algorithm algorithm_ = Algorithm::kAuto;
  unsigned autoChoices_ = 0;
  int64_t timeoutMs_ = 60000;
  size_t sliceBytes_ = 128 << 10;
  size_t smallMsgBytes_ = 128 << 10;
  bool portMarkers_ = true;
  int64_t spinUs_ = 0;
  char* scratch_ = nullptr;
  size_t scratchBytes_ = 0;
  std::string lastError_;
};

}  // namespace rina::algo

#endif  // RINA_LIB_COMM_COMMUNICATOR_H_
