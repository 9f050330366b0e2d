// The steps of Communicator::create, in the order it runs them.
#include "comm/setup.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "algo/dispatch/dispatch.h"
#include "algo/flat/flat.h"
#include "comm/link_stats.h"
#include "comm/spine_addresses.h"
#include "core/config.h"
#include "core/log.h"
#include "plan/path_choice.h"
#include "topo/topology_json.h"
#include "transport/mesh.h"
#include "transport/shm_group.h"

namespace rina::comm {
namespace {

// Listens on this rank's address on every spine (RINA_SPINE_ADDRS or the
// topology file): an address equal to the default listening one shares its
// socket, any other gets a socket of its own (port chosen by the kernel).
Status listenOnSpines(int rank, const config::Options& options, const PackedAddr& listen,
                      bootstrap::PeerInfo* mine, std::vector<Fd>* fds) {
  std::vector<std::string> addrs;
  std::string source;
  const std::string hostname = topo::hostnameOf(hostIdentity());
  RINA_TRY(spineAddresses(options.spineAddrs, options.topoFile, hostname, &addrs, &source)
               .prepend("rank " + std::to_string(rank) + ": "));
  mine->spineCount = static_cast<int32_t>(addrs.size());
  for (size_t s = 0; s < addrs.size(); ++s) {
    PackedAddr want;
    RINA_TRY(parseHostPort(addrs[s] + ":0", &want));
    PackedAddr sameIp = listen;
    sameIp.port = 0;
    if (want == sameIp) {
      mine->spine[s] = listen;
      continue;
    }
    Fd fd;
    Status st = listenOn(want, false, &fd, &mine->spine[s]);
    if (!st.ok()) {
      return errorf(rinaInvalidArgument,
                    "rank %d: %s gives %s as this host's address on spine %zu, but it cannot be "
                    "listened on: %s",
                    rank, source.c_str(), addrs[s].c_str(), s, st.message().c_str());
    }
    fds->push_back(std::move(fd));
  }
  if (!addrs.empty()) {
    RINA_INFO("rank %d: addresses on %zu spines from %s", rank, addrs.size(), source.c_str());
  }
  return {};
}

// Each rank's host identity, in rank order.
std::vector<std::string> hostIdsOf(const std::vector<bootstrap::PeerInfo>& table) {
  std::vector<std::string> hostIds;
  for (const bootstrap::PeerInfo& p : table) {
    hostIds.emplace_back(p.host, strnlen(p.host, sizeof(p.host)));
  }
  return hostIds;
}

}  // namespace

Status Communicator::readKnobs(const config::Options& options, Setup* s) {
  // Checked once here (a value set in code passes the table's checks as an
  // environment variable would), then handed down.
  options_ = options;
  const std::string where = "rank " + std::to_string(rank()) + ": ";
  RINA_TRY(config::check(&options_).prepend(where));
  config::printConfig(options_);
  handKnobsToContext();
  RINA_TRY(algo::parseAlgorithm(options_.algo, &algorithm_).prepend("RINA_ALGO: "));
  s->policy = plan::ReplanPolicy::fromOptions(options_);
  s->socketsPerPeer = static_cast<int>(options_.socketNsocks);
  return plan::parsePathPolicy(options_.paths, &s->pathPolicy);
}

void Communicator::handKnobsToContext() {
  setKnobs(algo::CallKnobs{.timeoutMs = options_.timeoutMs,
                           .sliceBytes = static_cast<size_t>(options_.sliceBytes),
                           .smallMsgBytes = static_cast<size_t>(options_.smallMsgBytes),
                           .twoShotBytes = static_cast<size_t>(options_.twoShotBytes),
                           .allToAllSlotBytes = static_cast<size_t>(options_.allToAllSlotBytes),
                           .allToAllStreamBytes = static_cast<size_t>(options_.allToAllStreamBytes),
                           .portMarkers = options_.inaPortMarkers,
                           .spinUs = options_.spinUs});
}

Status Communicator::joinBootstrap(const rinaUniqueId& id, Setup* s) {
  bool fromEnv = false;
  RINA_TRY(bootstrap::resolveId(id, options_.commId, &s->id, &fromEnv));
  RINA_TRY(bootstrap::readCommSecret(options_.commSecret, &s->secret)
               .prepend("rank " + std::to_string(rank()) + ": "));
  // Under RINA_COMM_ID rank 0 is the root.
  if (fromEnv && rank() == 0) {
    RINA_TRY(
        bootstrap::RootService::start(s->id.root, s->id.commId, timeoutMs(), s->secret, &s->root));
  }
  return {};
}

Status Communicator::openListeners(Setup* s) {
  PackedAddr listenAddr;
  RINA_TRY(chooseListenAddress(options_.socketIfname, &listenAddr, &s->ifname));
  // Setup runs near the NIC in use (RINA_CPU_AFFINITY, topo/thread_placement.h);
  // under `setup` the thread gets its mask back when create returns.
  RINA_TRY(topo::placeSetupThread(rank(), s->ifname, options_.cpuAffinity, &s->placement));
  RINA_TRY(listenOn(listenAddr, false, &s->listen, &s->mine.listen));
  // Accepted sockets inherit the listener's congestion control, and a name
  // the kernel refuses fails here, on every rank, before any peer waits.
  RINA_TRY(tuneSocket(s->listen.get(), 0, options_.tcpCongestion)
               .prepend("rank " + std::to_string(rank()) + ": "));
  s->mine.pid = getpid();
  const std::string host = hostIdentity();
  std::strncpy(s->mine.host, host.c_str(), sizeof(s->mine.host) - 1);
  return listenOnSpines(rank(), options_, s->mine.listen, &s->mine, &s->spineListen);
}

Status Communicator::meet(Setup* s) {
  s->listening = Clock::now();
  std::string schedule, rankZero;
  RINA_TRY(
      config::scheduleText(options_, &schedule).prepend("rank " + std::to_string(rank()) + ": "));
  // From here on the communicator's id (peer hellos, shared-memory names)
  // is the one the root drew for it, fresh per communicator.
  RINA_TRY(bootstrap::rendezvous(s->id, rank(), size(), s->mine, schedule, s->secret,
                                 deadlineAfterMs(timeoutMs()), &s->table, &rankZero,
                                 &s->id.commId));
  s->segmentOffer = bootstrap::takeSegmentOffer(&s->table);
  s->met = Clock::now();
  if (rank() != 0) RINA_TRY(takeRankZeroSchedule(rankZero, s));
  return {};
}

Status Communicator::takeRankZeroSchedule(const std::string& text, Setup* s) {
  std::vector<config::Adopted> adopted;
  RINA_TRY(config::adoptSchedule(&options_, text, &adopted)
               .prepend("rank " + std::to_string(rank()) + ": rank 0's schedule knobs: "));
  if (adopted.empty()) return {};
  std::string list;
  for (const config::Adopted& a : adopted) {
    if (!list.empty()) list += ", ";
    list += std::string(a.knob->name) + "=" + a.mine + " here, " + a.theirs + " on rank 0";
  }
  RINA_WARN("rank %d: %s; every rank takes rank 0's values of the knobs that shape the schedule",
            rank(), list.c_str());
  // What readKnobs derived from them.
  handKnobsToContext();
  RINA_TRY(algo::parseAlgorithm(options_.algo, &algorithm_).prepend("RINA_ALGO: "));
  s->policy = plan::ReplanPolicy::fromOptions(options_);
  return plan::parsePathPolicy(options_.paths, &s->pathPolicy);
}

Status Communicator::mapRacks(const Setup& s) {
  topo::RackMap racks;
  RINA_TRY(
      topo::rackMapFrom(options_.topoFile, options_.racks, hostIdsOf(s.table), &racks, &topology_)
          .prepend("rank " + std::to_string(rank()) + ": "));
  setRacks(std::move(racks));
  return choosePaths(s.table, s.pathPolicy);
}

Status Communicator::choosePaths(const std::vector<bootstrap::PeerInfo>& table,
                                 plan::PathPolicy policy) {
  basePeers_ = algo::basePeerRanks(rank(), racks());
  // Every rank reaches a peer in another rack over each spine both have an
  // address on; hops pick among them (RINA_PATHS).
  int spines = bootstrap::kMaxSpineAddrs;
  for (const bootstrap::PeerInfo& p : table) spines = std::min<int>(spines, p.spineCount);
  const topo::RackMap& map = racks();
  std::vector<int> defaultSpines(size(), -1);
  for (int r = 0; r < size() && spines >= 2; ++r) {
    if (r != rank() && map.rackOf[r] != map.rackOf[rank()])
      defaultSpines[r] = transport::defaultSpineOf(table[std::max(r, rank())], spines);
  }
  topo::TopologySpec spec;
  const std::string& file = options_.topoFile;
  const bool haveSpec = !file.empty() && topo::loadTopologyFile(file, &spec).ok();
  auto paths = std::make_unique<plan::PathChoice>();
  RINA_TRY(plan::PathChoice::make(policy, spines, map, haveSpec ? &spec : nullptr, paths.get()));
  setPaths(std::move(paths), spines, std::move(defaultSpines));
  return {};
}

transport::MeshOptions Communicator::meshOptions(const std::vector<bootstrap::PeerInfo>& table,
                                                 uint64_t commId, int socketsPerPeer) {
  transport::MeshOptions mesh;
  mesh.rank = rank();
  mesh.commId = commId;
  mesh.table = table;
  mesh.shmEnabled = !options_.shmDisable;
  uint32_t fifoBytes = 4096;
  while (fifoBytes < options_.shmFifoBytes && fifoBytes < (1u << 30)) fifoBytes <<= 1;
  mesh.fifoBytes = fifoBytes;
  mesh.socketBufBytes = static_cast<int>(options_.socketBufBytes);
  mesh.sliceBytes = sliceBytes();
  mesh.socketsPerPeer = socketsPerPeer;
  mesh.knobs = options_;
  mesh.deadline = deadlineAfterMs(timeoutMs());
  mesh.abort = abortFlag();
  mesh.arrivals = &arrivals_;
  return mesh;
}

Status Communicator::connectPeers(Setup* s) {
  transport::MeshOptions mesh = meshOptions(s->table, s->id.commId, s->socketsPerPeer);
  mesh.peers = algo::neighbourRanks(rank(), size());
  for (int p : algo::rackPeerRanks(rank(), racks())) mesh.peers.insert(p);
  mesh.listenFd = s->listen.get();
  for (int p : mesh.peers) {
    if (spines() >= 2 && racks().rackOf[p] != racks().rackOf[rank()]) mesh.spinePeers.insert(p);
  }
  for (const Fd& fd : s->spineListen) mesh.spineListenFds.push_back(fd.get());
  algo::ConnectionMap conns;
  algo::SpineConnectionMap spineConns;
  RINA_TRY(transport::buildMesh(mesh, &conns, &spineConns));
  addConnections(std::move(conns), std::move(spineConns));
  RINA_TRY(joinHostGroup(s->table, s->id.commId, mesh.deadline, s->segmentOffer));
  RINA_TRY(finishHostGroup(mesh.deadline));
  s->connected = Clock::now();
  listen_ = std::move(s->listen);
  mesh_ = std::move(mesh);
  // Later connections (updatePeers) are default-path only.
  mesh_.peers.clear();
  mesh_.spinePeers.clear();
  mesh_.spineListenFds.clear();
  return {};
}

bool Communicator::oneHost(const std::vector<bootstrap::PeerInfo>& table) {
  const std::vector<std::string> hostIds = hostIdsOf(table);
  return std::all_of(hostIds.begin(), hostIds.end(),
                     [&](const std::string& h) { return h == hostIds[0]; });
}

Status Communicator::joinHostGroup(const std::vector<bootstrap::PeerInfo>& table, uint64_t commId,
                                   Deadline deadline, const bootstrap::SegmentOffer& offer) {
  // Every rank on this host: allreduces below RINA_TWO_SHOT_BYTES run
  // through one segment of the host (algo/flat/host_allreduce.cc).
  const size_t slotBytes = algo::hostSlotBytes(smallMsgBytes(), twoShotBytes(), size());
  if (options_.shmDisable || !oneHost(table) || size() < 2 || slotBytes == 0) return {};
  if (offer.nameId != 0) {
    return transport::ShmGroup::attachGrown(offer.nameId, offer.ownerPid, offer.tag, rank(), size(),
                                            &joiningGroup_);
  }
  return transport::ShmGroup::join(commId, table[0].pid, rank(), size(),
                                   static_cast<int>(options_.shmSpareSlots), slotBytes, deadline,
                                   &joiningGroup_);
}

Status Communicator::finishHostGroup(Deadline deadline) {
  if (!joiningGroup_) return {};
  RINA_TRY(joiningGroup_->waitJoined(deadline, abortFlag()));
  RINA_TRY(joiningGroup_->checkCopies(deadline, abortFlag()));
  setHostGroup(std::move(joiningGroup_));
  return {};
}

Status Communicator::probe() {
  return probeLinks(*this, static_cast<size_t>(options_.probeBytes), options_.probeTimeoutMs);
}

Status Communicator::setUpRack() { return RackAgent::setup(*this, options_, &rackAgent_); }

Status Communicator::startPlans(const plan::ReplanPolicy& policy) {
  RINA_TRY(PlanSync::create(
      *this, topology_, policy, options_.planIna == "on",
      [this](const std::set<int>& wanted) { return updatePeers(wanted); },
      [this] {
        std::vector<LinkRate> rows;
        if (rackAgent_) {
          rows.push_back(switchRateRow(rank(), rackAgent_->switchCounters()));
        }
        return rows;
      },
      &plans_));
  // The initial plan now when the configured algorithm follows plans (its
  // connections are made before the first collective), else at the first
  // hier / rina collective (rinaCommSetAlgorithm), so a communicator that
  // never runs them never plans.
  if (rackAgent_) rackAgent_->followPlanChecks(plans_.get());
  if (algo::followsPlan(*this, algorithm_)) RINA_TRY(plans_->start(*this));
  return {};
}

void Communicator::logReady(const Setup& s) const {
  // Appends, not " " + ...: gcc 12 at -O3 misreads the prepend as an
  // overlapping copy (-Wrestrict).
  std::string summary;
  for (auto& [peer, conn] : connections()) {
    summary.append(" ").append(std::to_string(peer)).append(":").append(conn->kind());
  }
  for (auto& [key, conn] : spineConnections()) {
    summary.append(" ").append(std::to_string(key.first)).append("/s");
    summary.append(std::to_string(key.second)).append(":").append(conn->kind());
  }
  RINA_INFO(
      "rank %d of %d ready on %s (%s); algorithm %s; timeout %lld ms; racks %s; paths %s; "
      "peers%s",
      rank(), size(), s.mine.listen.str().c_str(), s.ifname.c_str(),
      algo::algorithmName(algorithm_), static_cast<long long>(timeoutMs()),
      racks().describe().c_str(), paths().describe().c_str(),
      summary.empty() ? " none" : summary.c_str());
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  const Clock::time_point done = Clock::now();
  // The rendezvous ends when the last rank has registered, so it also holds
  // the other ranks' lateness; connections are the mesh (shared-memory
  // segments, sockets) and the host segment; the rest is the link probe,
  // INA and planning.
  RINA_INFO(
      "rank %d: set-up took %.1f ms (config and listening %.1f, rendezvous %.1f, "
      "connections %.1f, the rest %.1f)",
      rank(), ms(s.started, done), ms(s.started, s.listening), ms(s.listening, s.met),
      ms(s.met, s.connected), ms(s.connected, done));
}

}  // namespace rina::comm
