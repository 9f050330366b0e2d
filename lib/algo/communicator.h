// A communicator: this rank's place in the group, its connections to the
// peers its algorithms use, its settings, and scratch memory. Algorithms
// (lib/algo) run on it; the C API (lib/api) owns it.
#ifndef RINA_LIB_ALGO_COMMUNICATOR_H_
#define RINA_LIB_ALGO_COMMUNICATOR_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "algo/path_choice.h"
#include "core/status.h"
#include "rina/rina.h"
#include "topo/rack_map.h"
#include "transport/connection.h"

namespace rina::algo {

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

// Counters behind rinaCommGetStats.
struct CommStats {
  uint64_t calls[6] = {};  // per Algorithm that actually ran (index = enum value)
  uint64_t inaFallbacks = 0;
  uint64_t inaCalls = 0;
  uint64_t inaRetransmissions = 0;
  uint64_t inaHostSlices = 0;
  uint64_t inaRegrants = 0;
};

class Communicator {
 public:
  static Status create(int nranks, const rinaUniqueId& id, int rank,
                       std::unique_ptr<Communicator>* out);
  ~Communicator();

  const topo::RackMap& racks() const { return racks_; }
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
  // The spine the hop from rank `from` to rank `to` takes (RINA_PATHS until
  // the planner's Plan is wired in); -1: the default path.
  int hopSpine(int from, int to) const { return paths_.spineFor(from, to); }
  const PathChoice& paths() const { return paths_; }
  // The ring's connections to and from neighbours, on their hop's spine.
  transport::Connection* hopTo(int next) const {
    return connectionFor(next, hopSpine(rank_, next));
  }
  transport::Connection* hopFrom(int prev) const {
    return connectionFor(prev, hopSpine(prev, rank_));
  }
  // Connections over a chosen spine, by (peer, spine); see connectionFor.
  const std::map<std::pair<int, int>, std::unique_ptr<transport::Connection>>& spineConnections()
      const {
    return spineConns_;
  }
  // Every connection of this rank, by peer rank (ascending).
  const std::map<int, std::unique_ptr<transport::Connection>>& connections() const {
    return conns_;
  }

  const std::atomic<bool>* abortFlag() const { return &aborted_; }
  void abort() { aborted_ = true; }
  bool aborted() const { return aborted_.load(); }

  uint64_t nextSeq() { return ++seq_; }

  Algorithm algorithm() const { return algorithm_; }
  void setAlgorithm(Algorithm a) { algorithm_ = a; }
  int64_t timeoutMs() const { return timeoutMs_; }
  size_t sliceBytes() const { return sliceBytes_; }
  size_t smallMsgBytes() const { return smallMsgBytes_; }
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
  topo::RackMap racks_;
  std::unique_ptr<RackIna> rackIna_;
  CommStats stats_;
  std::atomic<bool> aborted_{false};
  uint64_t seq_ = 0;
  Algorithm algorithm_ = Algorithm::kAuto;
  int64_t timeoutMs_ = 60000;
  size_t sliceBytes_ = 128 << 10;
  size_t smallMsgBytes_ = 128 << 10;
  int64_t spinUs_ = 0;
  char* scratch_ = nullptr;
  size_t scratchBytes_ = 0;
  std::string lastError_;
};

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_COMMUNICATOR_H_
