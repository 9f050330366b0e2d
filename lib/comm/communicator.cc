#include "comm/communicator.h"

#include "algo/dispatch/dispatch.h"
#include "algo/flat/flat.h"
#include "comm/setup.h"
#include "core/config.h"
#include "core/log.h"

namespace rina::comm {

// Set-up is a sequence of steps (setup.cc); each leaves what later ones need
// in the communicator or in s.
Status Communicator::create(int nranks, const rinaUniqueId& id, int rank,
                            const config::Options& options, std::unique_ptr<Communicator>* out) {
  setLogRank(rank);
  std::unique_ptr<Communicator> comm(new Communicator(rank, nranks));
  Setup s;
  RINA_TRY(comm->readKnobs(options, &s));  // checked knobs, algorithm, plan and path rules
  RINA_TRY(comm->joinBootstrap(id, &s));   // the unique id (RINA_COMM_ID: rank 0 serves it)
  RINA_TRY(comm->openListeners(&s));       // address, CPU placement, listening sockets
  RINA_TRY(comm->meet(&s));                // rendezvous: every rank's addresses
  RINA_TRY(comm->mapRacks(s));             // rack map, spines, the hop rule
  RINA_TRY(comm->connectPeers(&s));        // connections to the peers the algorithms use
  RINA_TRY(comm->probe());                 // link rates seeded (RINA_PROBE_BYTES)
  RINA_TRY(comm->setUpRack());             // the INA rack: switch client, job, grant
  RINA_TRY(comm->startPlans(s.policy));    // the plan agreement and the initial plan
  comm->logReady(s);                       // the ready line and where set-up time went
  comm->watchNotices();                    // from its first call on, a revoke stops calls
  *out = std::move(comm);
  return {};
}

Communicator::~Communicator() {
  // After an abort or a revoke nothing here waits for a peer or a switch.
  if (rackAgent_ && (aborted() || revoked())) rackAgent_->releaseWithoutWaiting();
  rackAgent_.reset();  // stops a local rina-switchd
}

Status Communicator::allReduce(const void* send, void* recv, size_t count, rinaDataType_t type,
                               rinaRedOp_t op) {
  return algo::allReduce(*this, algorithm_, algo::RackInputs{plans_.get(), rackAgent_.get()}, send,
                         recv, count, type, op);
}

Status Communicator::weightedAllReduce(const void* send, void* recv, size_t count,
                                       rinaDataType_t type, double weight) {
  return algo::weightedAllReduce([this](const void* s, void* r, size_t n, rinaDataType_t t,
                                        rinaRedOp_t op) { return allReduce(s, r, n, t, op); },
                                 send, recv, count, type, weight);
}

Status Communicator::reduceScatter(const void* send, void* recv, size_t recvCount,
                                   rinaDataType_t type, rinaRedOp_t op) {
  return algo::ringReduceScatter(*this, send, recv, recvCount, type, op);
}

Status Communicator::allGather(const void* send, void* recv, size_t sendCount,
                               rinaDataType_t type) {
  return algo::ringAllGather(*this, send, recv, sendCount, type);
}

Status Communicator::broadcast(const void* send, void* recv, size_t count, rinaDataType_t type,
                               int root) {
  return algo::chainBroadcast(*this, send, recv, count, type, root);
}

Status Communicator::updatePeers(const std::set<int>& wanted) {
  std::vector<int> unused;
  for (const auto& [peer, conn] : connections()) {
    if (!wanted.count(peer) && !basePeers_.count(peer) && !callPeers_.count(peer))
      unused.push_back(peer);
  }
  for (int peer : unused) {
    RINA_TRACE("rank %d: closing the connection to rank %d (the plan no longer uses it)", rank(),
               peer);
    closeConnection(peer);
  }
  return connectMissing(wanted);
}

Status Communicator::connectForCall(const std::set<int>& peers) {
  for (int r : peers) {
    if (r != rank()) callPeers_.insert(r);
  }
  return connectMissing(peers);
}

Status Communicator::connectMissing(const std::set<int>& peers) {
  transport::MeshOptions opt = mesh_;
  for (int r : peers) {
    if (r != rank() && !connections().count(r)) opt.peers.insert(r);
  }
  if (opt.peers.empty()) return {};
  opt.listenFd = listen_.get();
  opt.deadline = deadlineAfterMs(timeoutMs());
  opt.abort = abortFlag();
  algo::ConnectionMap fresh;
  RINA_TRY(transport::buildMesh(opt, &fresh));
  addConnections(std::move(fresh));
  return {};
}

Status Communicator::runMessages(std::span<algo::Message> batch) {
  if (!channels_) {
    channels_ = std::make_unique<PeerChannels>(
        mesh_, listen_.get(), &arrivals_, timeoutMs(), spinUs(),
        algo::MessageLimits{.eagerBytes = static_cast<size_t>(options_.p2pEagerBytes),
                            .copyBytes = static_cast<size_t>(options_.p2pCopyBytes),
                            .rendezvousBytes = static_cast<size_t>(options_.p2pRendezvousBytes)});
  }
  return algo::runMessages(*this, *channels_, batch);
}

Status Communicator::connectEveryone() {
  std::set<int> everyone;
  for (int r = 0; r < size(); ++r) everyone.insert(r);
  return connectForCall(everyone);
}

Status Communicator::allToAll(const void* send, void* recv, size_t count, rinaDataType_t type) {
  RINA_TRY(connectEveryone());
  return algo::allToAll(*this, send, recv, count, type);
}

Status Communicator::allToAllv(const void* send, const size_t* sendCounts, const size_t* sendDispls,
                               void* recv, const size_t* recvCounts, const size_t* recvDispls,
                               rinaDataType_t type) {
  RINA_TRY(connectEveryone());
  return algo::allToAllv(*this, send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type);
}

Status Communicator::reduce(const void* send, void* recv, size_t count, rinaDataType_t type,
                            rinaRedOp_t op, int root) {
  // A chain over ring neighbours, which every rank is connected to.
  return algo::chainReduce(*this, send, recv, count, type, op, root);
}

namespace {

// The pairs a rooted call moves blocks over: the root with every rank.
std::set<int> rootedPeers(int rank, int nranks, int root) {
  std::set<int> peers{root};
  if (rank == root) {
    for (int r = 0; r < nranks; ++r) peers.insert(r);
  }
  return peers;
}

}  // namespace

Status Communicator::gather(const void* send, void* recv, size_t count, rinaDataType_t type,
                            int root) {
  RINA_TRY(connectForCall(rootedPeers(rank(), size(), root)));
  return algo::starGather(*this, send, recv, count, type, root);
}

Status Communicator::scatter(const void* send, void* recv, size_t count, rinaDataType_t type,
                             int root) {
  RINA_TRY(connectForCall(rootedPeers(rank(), size(), root)));
  return algo::starScatter(*this, send, recv, count, type, root);
}

}  // namespace rina::comm
