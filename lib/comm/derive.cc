// What communicators made from another one share (rinaCommShrink,
// rinaCommSplit, rinaCommGrow): the new one takes the old one's knobs,
// topology and algorithm; a shrink or grow also takes its listening socket
// and the connections to the ranks it keeps, renumbered, which are brought
// back to a common start (transport/resync.h) since the old communicator's
// last call may have stopped half way; then the connections the new
// numbering needs and the old one lacked are made, as at creation, and
// the host segment, the link probe, the INA racks and the plan follow as
// in create, in the same order (so a rank joining a grow through
// rinaCommJoin, which runs create, meets them step for step).
#include <algorithm>

#include "algo/dispatch/dispatch.h"
#include "comm/communicator.h"
#include "comm/link_stats.h"
#include "core/log.h"
#include "transport/resync.h"

namespace rina::comm {

std::unique_ptr<Communicator> Communicator::successor(int nranks, int rank) const {
  std::unique_ptr<Communicator> next(new Communicator(rank, nranks));
  next->options_ = options_;
  next->handKnobsToContext();
  next->topology_ = topology_;
  next->algorithm_ = algorithm_;
  return next;
}

void Communicator::handOver(const std::vector<int>& members, Communicator* next) {
  // members[i] is rank i of next; every other rank's connections close,
  // and so do those of a transport that cannot be taken over (the pair
  // connects afresh; both ends drop it alike).
  std::map<int, int> renumbered;
  for (size_t i = 0; i < members.size(); ++i) renumbered[members[i]] = static_cast<int>(i);
  algo::SpineConnectionMap spine;
  algo::ConnectionMap all = releaseConnections(&spine);
  algo::ConnectionMap kept;
  algo::SpineConnectionMap keptSpine;
  for (auto& [peer, conn] : all) {
    auto it = renumbered.find(peer);
    if (it == renumbered.end() || it->second == next->rank() || !conn->canResync()) continue;
    conn->renumber(it->second);
    kept[it->second] = std::move(conn);
  }
  for (auto& [key, conn] : spine) {
    auto it = renumbered.find(key.first);
    if (it == renumbered.end() || !kept.count(it->second) || !conn->canResync()) continue;
    conn->renumber(it->second);
    keptSpine[{it->second, key.second}] = std::move(conn);
  }
  next->addConnections(std::move(kept), std::move(keptSpine));
  next->listen_ = std::move(listen_);
  // Set-up connections of the new communicator that arrived meanwhile.
  for (transport::Arrival& a : arrivals_.mesh) {
    if (a.hello.commId == mesh_.successorId) next->arrivals_.mesh.push_back(std::move(a));
  }
  arrivals_ = transport::Arrivals{};
  channels_.reset();
}

Status Communicator::formDerived(const std::vector<bootstrap::PeerInfo>& table, uint64_t commId,
                                 std::unique_ptr<RackAgent> oldRack, Clock::time_point started,
                                 const std::string& how, bool resyncBegun) {
  setLogRank(rank());
  const Clock::time_point entered = Clock::now();
  plan::PathPolicy pathPolicy = plan::PathPolicy::kPlanned;
  RINA_TRY(plan::parsePathPolicy(options_.paths, &pathPolicy));
  RINA_TRY(choosePaths(table, pathPolicy));
  transport::MeshOptions mesh = meshOptions(table, commId, static_cast<int>(options_.socketNsocks));
  mesh.listenFd = listen_.get();
  // The connections taken over are brought back to a common start. Those
  // the new numbering no longer needs stay open too (a plan change closes
  // them): a rank still waiting for its shrink's verdict would take one
  // closed under it for a failed peer.
  std::set<int> wanted = algo::neighbourRanks(rank(), size());
  for (int p : algo::rackPeerRanks(rank(), racks())) wanted.insert(p);
  std::vector<transport::Connection*> kept;
  for (auto& [peer, conn] : connections()) kept.push_back(conn.get());
  for (auto& [key, conn] : spineConnections()) kept.push_back(conn.get());
  // The host segment is joined first (a shrink kept the old one's) and
  // waited for last: its ranks meet while the connections are brought back
  // and made.
  if (!joiningGroup_ && !hostGroup()) RINA_TRY(joinHostGroup(table, commId, mesh.deadline));
  RINA_TRY(transport::resyncAll(kept, commId, rank(), mesh.deadline, abortFlag(), resyncBegun));
  const Clock::time_point resynced = Clock::now();
  const size_t reused = connections().size();
  for (int p : wanted) {
    if (!connections().count(p)) mesh.peers.insert(p);
  }
  algo::ConnectionMap fresh;
  RINA_TRY(transport::buildMesh(mesh, &fresh));
  const size_t made = fresh.size();
  addConnections(std::move(fresh));
  const Clock::time_point connected = Clock::now();
  RINA_TRY(finishHostGroup(mesh.deadline));
  const Clock::time_point grouped = Clock::now();
  mesh_ = std::move(mesh);
  mesh_.peers.clear();
  RINA_TRY(probe());
  if (oldRack) {
    RINA_TRY(RackAgent::reform(*this, options_, std::move(oldRack), &rackAgent_));
  } else {
    RINA_TRY(setUpRack());
  }
  RINA_TRY(startPlans(plan::ReplanPolicy::fromOptions(options_)));
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  const Clock::time_point done = Clock::now();
  RINA_INFO(
      "rank %d of %d ready (%s) in %.1f ms (agreement %.1f, resync %.1f, connections %.1f, "
      "host segment %.1f, the rest %.1f): %zu connection(s) kept, %zu made; racks %s; "
      "algorithm %s",
      rank(), size(), how.c_str(), ms(started, done), ms(started, entered), ms(entered, resynced),
      ms(resynced, connected), ms(connected, grouped), ms(grouped, done), reused, made,
      racks().describe().c_str(), algo::algorithmName(algorithm_));
  watchNotices();
  return {};
}

}  // namespace rina::comm
