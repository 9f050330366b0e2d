// Connecting a rank to the peers its algorithms talk to. For each pair the
// lower rank connects and the higher accepts (all connects first, then all
// accepts, then all replies: no pair waits on another). On one host the pair
// then switches to a shared-memory segment unless RINA_SHM_DISABLE=1;
// across hosts it may open several sockets (RINA_SOCKET_NSOCKS).
#ifndef RINA_LIB_TRANSPORT_MESH_H_
#define RINA_LIB_TRANSPORT_MESH_H_

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "transport/connection.h"

namespace rina::transport {

struct MeshOptions {
  int rank = 0;
  uint64_t commId = 0;
  std::vector<bootstrap::PeerInfo> table;  // every rank's info
  std::set<int> peers;                     // ranks to connect to
  int listenFd = -1;                       // this rank's listening socket
  bool shmEnabled = true;
  uint32_t fifoBytes = 1 << 20;
  int socketBufBytes = 4 << 20;
  int socketsPerPeer = 1;            // TCP pairs only; 0: autoSocketsFor()
  size_t sliceBytes = 128 << 10;     // stripes per socket: sliceBytes / sockets
  Deadline deadline;
  const std::atomic<bool>* abort = nullptr;
};

Status buildMesh(const MeshOptions& opt, std::map<int, std::unique_ptr<Connection>>* out);

}  // namespace rina::transport

#endif  // RINA_LIB_TRANSPORT_MESH_H_
