#include "algo/communicator.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "algo/link_stats.h"
#include "algo/rack_ina.h"
#include "bootstrap/bootstrap.h"
#include "core/config.h"
#include "core/log.h"
#include "topo/thread_placement.h"
#include "transport/mesh.h"

namespace rina::algo {

Status parseAlgorithm(const std::string& name, Algorithm* out) {
  if (name == "auto" || name.empty()) *out = Algorithm::kAuto;
  else if (name == "ring") *out = Algorithm::kRing;
  else if (name == "rd") *out = Algorithm::kRecursiveDoubling;
  else if (name == "hier") *out = Algorithm::kHier;
  else if (name == "rina") *out = Algorithm::kRina;
  else if (name == "ps-ina") *out = Algorithm::kPsIna;
  else return errorf(rinaInvalidArgument, "unknown algorithm '%s' (known: auto, ring, rd, hier, rina, ps-ina)", name.c_str());
  return {};
}

const char* algorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kRing: return "ring";
    case Algorithm::kRecursiveDoubling: return "rd";
    case Algorithm::kHier: return "hier";
    case Algorithm::kRina: return "rina";
    case Algorithm::kPsIna: return "ps-ina";
    default: return "auto";
  }
}

std::set<int> neighbourRanks(int rank, int n) {
  std::set<int> peers;
  if (n <= 1) return peers;
  peers.insert((rank + 1) % n);
  peers.insert((rank + n - 1) % n);
  int p = 1;
  while (p * 2 <= n) p *= 2;
  int rem = n - p;
  int newRank;
  if (rank < 2 * rem) {
    peers.insert(rank % 2 == 0 ? rank + 1 : rank - 1);
    if (rank % 2 == 0) return peers;  // folded out of the doubling
    newRank = rank / 2;
  } else {
    newRank = rank - rem;
  }
  for (int mask = 1; mask < p; mask <<= 1) {
    int partner = newRank ^ mask;
    peers.insert(partner < rem ? partner * 2 + 1 : partner + rem);
  }
  peers.erase(rank);
  return peers;
}

std::set<int> rackPeerRanks(int rank, const topo::RackMap& map) {
  std::set<int> peers;
  const int nr = static_cast<int>(map.racks.size());
  const int mine = map.rackOf[rank];
  for (int d : {-1, 0, 1}) {
    const topo::Rack& rack = map.racks[((mine + d) % nr + nr) % nr];
    peers.insert(rack.ranks.begin(), rack.ranks.end());
  }
  if (rank == 0) {
    for (int r = 0; r < nr; ++r) peers.insert(map.agentOf(r));
  } else if (map.agentOf(mine) == rank) {
    peers.insert(0);
  }
  peers.erase(rank);
  return peers;
}

Status Communicator::create(int nranks, const rinaUniqueId& id, int rank,
                            std::unique_ptr<Communicator>* out) {
  setLogRank(rank);
  config::printConfig();
  std::unique_ptr<Communicator> comm(new Communicator());
  comm->rank_ = rank;
  comm->nranks_ = nranks;
  comm->timeoutMs_ = std::max<int64_t>(1, config::intValue("RINA_TIMEOUT_MS"));
  comm->sliceBytes_ = static_cast<size_t>(std::max<int64_t>(64, config::intValue("RINA_SLICE_BYTES")));
  comm->smallMsgBytes_ = static_cast<size_t>(std::max<int64_t>(0, config::intValue("RINA_SMALL_MSG_BYTES")));
  comm->spinUs_ = std::max<int64_t>(0, config::intValue("RINA_SPIN_US"));
  RINA_TRY(parseAlgorithm(config::stringValue("RINA_ALGO"), &comm->algorithm_)
               .prepend("RINA_ALGO: "));
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

  Deadline deadline = deadlineAfterMs(comm->timeoutMs_);
  std::vector<bootstrap::PeerInfo> table;
  RINA_TRY(bootstrap::rendezvous(idData, rank, nranks, mine, deadline, &table));

  transport::MeshOptions mesh;
  mesh.rank = rank;
  mesh.commId = idData.commId;
  mesh.table = table;
  std::vector<std::string> hostIds;
  for (const bootstrap::PeerInfo& p : table) hostIds.emplace_back(p.host, strnlen(p.host, sizeof(p.host)));
  RINA_TRY(topo::rackMapFromEnv(hostIds, &comm->racks_).prepend("rank " + std::to_string(rank) + ": "));
  mesh.peers = neighbourRanks(rank, nranks);
  for (int p : rackPeerRanks(rank, comm->racks_)) mesh.peers.insert(p);
  mesh.listenFd = listen.get();
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
  RINA_TRY(transport::buildMesh(mesh, &comm->conns_));

  RINA_TRY(probeLinksFromConfig(*comm));
  RINA_TRY(RackIna::setup(*comm, idData.commId, &comm->rackIna_));

  std::string summary;
  for (auto& [peer, conn] : comm->conns_) {
    summary += " " + std::to_string(peer) + ":" + conn->kind();
  }
  RINA_INFO("rank %d of %d ready on %s (%s); algorithm %s; racks %s; peers%s", rank, nranks,
            mine.listen.str().c_str(), ifname.c_str(), algorithmName(comm->algorithm_),
            comm->racks_.describe().c_str(), summary.empty() ? " none" : summary.c_str());
  *out = std::move(comm);
  return {};
}

Communicator::~Communicator() {
  rackIna_.reset();  // stops a local rina-switchd
  std::free(scratch_);
}

transport::Connection* Communicator::peer(int r) const {
  auto it = conns_.find(r);
  return it == conns_.end() ? nullptr : it->second.get();
}

char* Communicator::scratch(size_t bytes) {
  if (bytes > scratchBytes_) {
    std::free(scratch_);
    scratchBytes_ = (bytes + 63) & ~size_t{63};
    scratch_ = static_cast<char*>(std::aligned_alloc(64, scratchBytes_));
    if (!scratch_) scratchBytes_ = 0;
  }
  return scratch_;
}

}  // namespace rina::algo
