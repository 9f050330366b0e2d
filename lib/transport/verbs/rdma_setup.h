// The part of connection setup (mesh.cc) that concerns RDMA: decide once
// whether this rank offers verbs (select.h), and, for the pairs where both
// sides offered it and no shared memory is used, exchange QpInfo records
// over the pair's TCP socket and bring the RC queue pairs up. All records
// are sent before any is awaited, so no pair waits on another.
#ifndef RINA_LIB_TRANSPORT_VERBS_RDMA_SETUP_H_
#define RINA_LIB_TRANSPORT_VERBS_RDMA_SETUP_H_

#include <map>
#include <memory>
#include <vector>

#include "core/config.h"
#include "core/socket.h"
#include "transport/connection.h"
#include "transport/verbs/gpu_direct.h"
#include "transport/verbs/verbs_context.h"

namespace rina::transport::verbs {

// The adapter this process uses (peers and the INA UC client alike), from
// RINA_IB_DISABLE, RINA_IB_HCA (in o) and the devices found (select.h),
// preferring the one nearest the current GPU (nic_placement.h). Errors name
// the rank.
Status chooseDevice(int rank, const config::Options& o, TransportChoice* out);
// RINA_IB_GID_INDEX and RINA_IB_TIMEOUT for the queue pairs of rank.
VerbsOptions verbsOptionsOf(int rank, const config::Options& o);

class RdmaSetup {
 public:
  // Takes RINA_IB_* from o and probes devices (with a GPU: the adapter
  // nearest it; whether GPU memory can be registered, RINA_IB_GDR); logs the
  // choice once per process.
  Status init(int rank, const config::Options& o);
  bool offered() const { return choice_.useVerbs; }
  const TransportChoice& choice() const { return choice_; }
  const GdrChoice& gdr() const { return gdr_; }

  // This pair goes over RDMA; fd is its first TCP socket (kept for liveness).
  void add(int peer, Fd fd) { pairs_.push_back({peer, std::move(fd)}); }
  Status finish(const Deadline& deadline, std::map<int, std::unique_ptr<Connection>>* out);

 private:
  struct Pair {
    int peer;
    Fd fd;
  };
  VerbsOptions verbs_;
  TransportChoice choice_;
  GdrChoice gdr_;
  std::vector<Pair> pairs_;
};

}  // namespace rina::transport::verbs

#endif  // RINA_LIB_TRANSPORT_VERBS_RDMA_SETUP_H_
