#include "comm/communicator.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "algo/dispatch.h"
#include "algo/peers.h"
#include "bootstrap/bootstrap.h"
#include "comm/link_stats.h"
#include "comm/spine_addresses.h"
#include "core/config.h"
#include "core/log.h"
#include "topo/thread_placement.h"
#include "topo/topology_json.h"
#include "transport/mesh.h"

namespace rina::comm {
namespace {

// Listens on this rank's address on every spine (RINA_SPINE_ADDRS or the
// topology file): an address equal to the default listening one shares its
// socket, any other gets a socket of its own (port chosen by the kernel).
Status listenOnSpines(int rank, const PackedAddr& listen, bootstrap::PeerInfo* mine,
                      std::vector<Fd>* fds) {
  std::vector<std::string> addrs;
  std::string source;
  const std::string hostname = topo::hostnameOf(hostIdentity());
  RINA_TRY(spineAddressesFromEnv(hostname, &addrs, &source)
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

}  // namespace

Status Communicator::create(int nranks, const rinaUniqueId& id, int rank, const Options& options,
                            std::unique_ptr<Communicator>* out) {
  // Where set-up time goes, for the line after "ready" (RINA_DEBUG=INFO).
  const Clock::time_point started = Clock::now();
  setLogRank(rank);
  config::printConfig();
  std::unique_ptr<Communicator> comm(new Communicator());
  comm->rank_ = rank;
  comm->nranks_ = nranks;
  comm->timeoutMs_ = options.timeoutMs > 0
                         ? options.timeoutMs
                         : std::max<int64_t>(1, config::intValue("RINA_TIMEOUT_MS"));
  comm->sliceBytes_ = static_cast<size_t>(std::max<int64_t>(64, config::intValue("RINA_SLICE_BYTES")));
  comm->smallMsgBytes_ = static_cast<size_t>(std::max<int64_t>(0, config::intValue("RINA_SMALL_MSG_BYTES")));
  comm->spinUs_ = std::max<int64_t>(0, config::intValue("RINA_SPIN_US"));
  RINA_TRY(algo::parseAlgorithm(config::stringValue("RINA_ALGO"), &comm->algorithm_)
               .prepend("RINA_ALGO: "));
  const int64_t markers = config::intValue("RINA_INA_PORT_MARKERS");
  if (markers != 0 && markers != 1) {
    return errorf(rinaInvalidArgument, "RINA_INA_PORT_MARKERS=%lld: give 0 or 1",
                  static_cast<long long>(markers));
  }
  comm->portMarkers_ = markers == 1;
  plan::ReplanPolicy policy;
  RINA_TRY(plan::ReplanPolicy::fromConfig(&policy).prepend("rank " + std::to_string(rank) + ": "));
  int socketsPerPeer = 1;  // 0: auto
  std::string nsocks = config::stringValue("RINA_SOCKET_NSOCKS");
  if (nsocks == "auto") {
    socketsPerPeer = 0;
  } else {
    char* end = nullptr;
    long n = std::strtol(nsocks.c_str(), &end, 10);
    if (nsocks.empty() || *end != '\0' || n < 1 || n > 8) {
      return errorf(rinaInvalidArgument, "RINA_SOCKET_NSOCKS=%s: expected auto or 1-8",
                    nsocks.c_str());
    }
    socketsPerPeer = static_cast<int>(n);
  }

  bootstrap::IdData idData;
  bool fromEnv = false;
  RINA_TRY(bootstrap::resolveId(id, &idData, &fromEnv));
  std::unique_ptr<bootstrap::RootService> root;
  if (fromEnv && rank == 0) RINA_TRY(bootstrap::RootService::start(idData.root, idData.commId, &root));

  plan::PathPolicy pathPolicy = plan::PathPolicy::kPlanned;
  RINA_TRY(plan::parsePathPolicy(config::stringValue("RINA_PATHS"), &pathPolicy));

  PackedAddr listenAddr;
  std::string ifname;
  RINA_TRY(chooseListenAddress(&listenAddr, &ifname));
  // Setup runs near the NIC in use (RINA_CPU_AFFINITY, topo/thread_placement.h);
  // under `setup` the thread gets its mask back when this function returns.
  std::unique_ptr<topo::ThreadBinding> placement;
  RINA_TRY(topo::placeSetupThread(rank, ifname, &placement));
  Fd listen;
  bootstrap::PeerInfo mine{};
  RINA_TRY(listenOn(listenAddr, false, &listen, &mine.listen));
  mine.pid = getpid();
  std::string host = hostIdentity();
  std::strncpy(mine.host, host.c_str(), sizeof(mine.host) - 1);
  std::vector<Fd> spineListen;
  RINA_TRY(listenOnSpines(rank, mine.listen, &mine, &spineListen));

  const Clock::time_point listening = Clock::now();
  Deadline deadline = deadlineAfterMs(comm->timeoutMs_);
  std::vector<bootstrap::PeerInfo> table;
  RINA_TRY(bootstrap::rendezvous(idData, rank, nranks, mine, deadline, &table));
  const Clock::time_point metPeers = Clock::now();

  transport::MeshOptions mesh;
  mesh.rank = rank;
  mesh.commId = idData.commId;
  mesh.table = table;
  std::vector<std::string> hostIds;
  for (const bootstrap::PeerInfo& p : table) hostIds.emplace_back(p.host, strnlen(p.host, sizeof(p.host)));
  RINA_TRY(topo::rackMapFromEnv(hostIds, &comm->racks_, &comm->topology_)
               .prepend("rank " + std::to_string(rank) + ": "));
  comm->basePeers_ = algo::basePeerRanks(rank, comm->racks_);
  mesh.peers = algo::neighbourRanks(rank, nranks);
  for (int p : algo::rackPeerRanks(rank, comm->racks_)) mesh.peers.insert(p);
  mesh.listenFd = listen.get();
  // Every rank reaches a peer in another rack over each spine both have an
  // address on; hops pick among them (RINA_PATHS).
  int spines = bootstrap::kMaxSpineAddrs;
  for (const bootstrap::PeerInfo& p : table) spines = std::min<int>(spines, p.spineCount);
  comm->spines_ = spines;
  comm->defaultSpines_.assign(nranks, -1);
  for (int r = 0; r < nranks && spines >= 2; ++r) {
    if (r != rank && comm->racks_.rackOf[r] != comm->racks_.rackOf[rank])
      comm->defaultSpines_[r] = transport::defaultSpineOf(table[std::max(r, rank)], spines);
  }
  for (int p : mesh.peers) {
    if (spines >= 2 && comm->racks_.rackOf[p] != comm->racks_.rackOf[rank])
      mesh.spinePeers.insert(p);
  }
  for (const Fd& fd : spineListen) mesh.spineListenFds.push_back(fd.get());
  {
    topo::TopologySpec spec;
    const std::string file = config::stringValue("RINA_TOPO_FILE");
    const bool haveSpec = !file.empty() && topo::loadTopologyFile(file, &spec).ok();
    RINA_TRY(plan::PathChoice::make(pathPolicy, spines, comm->racks_, haveSpec ? &spec : nullptr,
                              &comm->paths_));
  }
  mesh.shmEnabled = config::intValue("RINA_SHM_DISABLE") == 0;
  int64_t fifo = config::intValue("RINA_SHM_FIFO_BYTES");
  uint32_t fifoBytes = 4096;
  while (fifoBytes < fifo && fifoBytes < (1u << 30)) fifoBytes <<= 1;
  mesh.fifoBytes = fifoBytes;
  mesh.socketBufBytes = static_cast<int>(config::intValue("RINA_SOCKET_BUF_BYTES"));
  mesh.sliceBytes = comm->sliceBytes_;
  mesh.socketsPerPeer = socketsPerPeer;
  mesh.deadline = deadlineAfterMs(comm->timeoutMs_);
  mesh.abort = &comm->aborted_;
  RINA_TRY(transport::buildMesh(mesh, &comm->conns_, &comm->spineConns_));
  // Every rank on this host: small allreduces run one-shot through one
  // segment of the host (algo/one_shot.cc), slots up to 1 MiB.
  const bool oneHost = std::all_of(hostIds.begin(), hostIds.end(),
                                   [&](const std::string& h) { return h == hostIds[0]; });
  if (mesh.shmEnabled && oneHost && nranks > 1 && comm->smallMsgBytes_ > 0) {
    RINA_TRY(transport::ShmGroup::join(idData.commId, hostIds[0], rank, nranks,
                                       std::min<size_t>(comm->smallMsgBytes_, 1 << 20),
                                       mesh.deadline, &comm->hostGroup_));
    RINA_TRY(comm->hostGroup_->waitJoined(mesh.deadline, &comm->aborted_));
  }
  const Clock::time_point connected = Clock::now();
  comm->listen_ = std::move(listen);
  comm->mesh_ = std::move(mesh);
  // Later connections (updatePeers) are default-path only.
  comm->mesh_.peers.clear();
  comm->mesh_.spinePeers.clear();
  comm->mesh_.spineListenFds.clear();

  RINA_TRY(probeLinksFromConfig(*comm));
  RINA_TRY(RackIna::setup(*comm, idData.commId, &comm->rackIna_));
  Communicator* self = comm.get();
  RINA_TRY(PlanSync::create(*comm, comm->topology_, policy,
                            [self](const std::set<int>& wanted) { return self->updatePeers(wanted); },
                            &comm->plans_));
  // The initial plan now when the configured algorithm follows plans (its
  // connections are made before the first collective), else at the first
  // hier / rina collective (rinaCommSetAlgorithm), so a communicator that
  // never runs them never plans.
  if (algo::followsPlan(*comm, comm->algorithm_)) RINA_TRY(comm->plans_->start(*comm));

  std::string summary;
  for (auto& [peer, conn] : comm->conns_) {
    summary += " " + std::to_string(peer) + ":" + conn->kind();
  }
  for (auto& [key, conn] : comm->spineConns_) {
    summary +=
        " " + std::to_string(key.first) + "/s" + std::to_string(key.second) + ":" + conn->kind();
  }
  RINA_INFO(
      "rank %d of %d ready on %s (%s); algorithm %s; timeout %lld ms (%s); racks %s; "
      "paths %s; peers%s",
      rank, nranks, mine.listen.str().c_str(), ifname.c_str(),
      algo::algorithmName(comm->algorithm_), static_cast<long long>(comm->timeoutMs_),
      options.timeoutMs > 0 ? "rinaConfig_t" : "RINA_TIMEOUT_MS", comm->racks_.describe().c_str(),
      comm->paths_.describe().c_str(), summary.empty() ? " none" : summary.c_str());
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  const Clock::time_point done = Clock::now();
  // The rendezvous ends when the last rank has registered, so it also holds
  // the other ranks' lateness; connections are the mesh (shared-memory
  // segments, sockets); the rest is the link probe, INA and planning.
  RINA_INFO(
      "rank %d: set-up took %.1f ms (config and listening %.1f, rendezvous %.1f, "
      "connections %.1f, the rest %.1f)",
      rank, ms(started, done), ms(started, listening), ms(listening, metPeers),
      ms(metPeers, connected), ms(connected, done));
  *out = std::move(comm);
  return {};
}


Communicator::~Communicator() {
  rackIna_.reset();  // stops a local rina-switchd
}

Status Communicator::allReduce(const void* send, void* recv, size_t count, rinaDataType_t type,
                               rinaRedOp_t op) {
  return algo::allReduce(*this, algorithm_, algo::RackInputs{plans_.get(), rackIna_.get()}, send,
                         recv, count, type, op);
}

Status Communicator::updatePeers(const std::set<int>& wanted) {
  for (auto it = conns_.begin(); it != conns_.end();) {
    if (wanted.count(it->first) || basePeers_.count(it->first)) {
      ++it;
      continue;
    }
    const transport::LinkCounters& k = it->second->counters();
    stats_.closedBytesSent += k.bytes[static_cast<int>(transport::Direction::kSend)];
    stats_.closedBytesReceived += k.bytes[static_cast<int>(transport::Direction::kRecv)];
    RINA_TRACE("rank %d: closing the connection to rank %d (the plan no longer uses it)", rank_,
               it->first);
    it = conns_.erase(it);
  }
  transport::MeshOptions opt = mesh_;
  for (int r : wanted) {
    if (r != rank_ && !conns_.count(r)) opt.peers.insert(r);
  }
  if (opt.peers.empty()) return {};
  opt.listenFd = listen_.get();
  opt.deadline = deadlineAfterMs(timeoutMs_);
  opt.abort = &aborted_;
  std::map<int, std::unique_ptr<transport::Connection>> fresh;
  RINA_TRY(transport::buildMesh(opt, &fresh));
  for (auto& [peer, conn] : fresh) conns_[peer] = std::move(conn);
  return {};
}

}  // namespace rina::comm
