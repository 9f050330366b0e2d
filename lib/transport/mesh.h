// Connecting a rank to the peers its algorithms talk to. For each pair the
// lower rank connects and the higher accepts (all connects first, then all
// accepts, then all replies: no pair waits on another). On one host the pair
// then switches to a shared-memory segment unless RINA_SHM_DISABLE=1;
// across hosts it may open several sockets (RINA_SOCKET_NSOCKS).
//
// Several paths: when both ranks of a pair have an address per spine
// (PeerInfo::spine) and the pair is in `spinePeers`, the pair also gets one
// TCP connection per spine s whose address on the accepting (higher) rank is
// not its default listen address (that spine is the default connection's
// path). So a rank holds at most spines x |spinePeers| more connections, and
// spinePeers is O(rack size) (the peers in other racks), never everyone.
#ifndef RINA_LIB_TRANSPORT_MESH_H_
#define RINA_LIB_TRANSPORT_MESH_H_

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "core/config.h"
#include "transport/connection.h"

namespace rina::transport {

// Per-spine connections, by (peer, spine).
using SpineConnections = std::map<std::pair<int, int>, std::unique_ptr<Connection>>;

// What a connecting rank sends first on each socket. kind kMeshHello: a
// connection of buildMesh (answered with a reply); kChannelHello: a
// directed point-to-point channel (channel.h), never answered;
// kNoticeHello: a notice (notice.h).
enum HelloKind : uint32_t { kMeshHello = 0, kChannelHello = 1, kNoticeHello = 2 };
struct PeerHello {
  uint32_t magic;
  int32_t from;
  int32_t to;
  uint32_t fifoBytes;  // 0: no shared memory offered
  uint64_t commId;
  char shmName[64];
  uint16_t sockIndex;  // this socket's place among the pair's sockets
  uint16_t nsocks;     // sockets the connecting side opens to this peer
  uint32_t stripeBytes;
  uint32_t rdmaOffered;  // the connecting side has an RDMA device
  int32_t spine;         // -1: the pair's default connection; else its path over spine s
  uint32_t kind;         // HelloKind
  uint32_t pad;
};
inline constexpr uint32_t kPeerMagic = 0x52504545;  // "RPEE"

// A connection accepted on a listening socket, its hello read.
struct Arrival {
  Fd fd;
  PeerHello hello;
};
// Connections accepted by code that was not waiting for their kind: the
// listening socket is shared by buildMesh and the channel code, so each
// files what the other expects here (buildMesh: channel hellos, to be
// taken by the channel code; the channel code: mesh hellos, which the next
// buildMesh takes first).
struct Arrivals {
  std::deque<Arrival> mesh;
  std::deque<Arrival> channels;
  std::deque<Arrival> notices;  // read by the communicator (notice.h)
};

// Reads and checks fd's hello (magic, communicator commId or, when not 0,
// successorId, addressed to rank): *refusal is null for a good one, else
// why it was refused.
void readHello(Fd& fd, int rank, uint64_t commId, uint64_t successorId, Deadline deadline,
               PeerHello* hello, const char** refusal);

// Whether the pair (connector, acceptor) needs a connection of its own for
// spine s: both have an address on s and the acceptor's is not its default.
bool needsSpineConnection(const bootstrap::PeerInfo& connector, const bootstrap::PeerInfo& acceptor,
                          int spine);

// The spine whose path the pair's default connection takes: the first s <
// spines on which the acceptor's (the higher rank's) address is its default
// listen address; -1 when there is none.
int defaultSpineOf(const bootstrap::PeerInfo& acceptor, int spines);

struct MeshOptions {
  int rank = 0;
  uint64_t commId = 0;
  std::vector<bootstrap::PeerInfo> table;  // every rank's info
  std::set<int> peers;                     // ranks to connect to
  std::set<int> spinePeers;                // of those, the ones to reach over every spine
  int listenFd = -1;                       // this rank's listening socket
  std::vector<int> spineListenFds;         // more listening sockets (spine addresses)
  bool shmEnabled = true;
  uint32_t fifoBytes = 1 << 20;
  int socketBufBytes = 4 << 20;
  int socketsPerPeer = 1;         // TCP pairs only; 0: autoSocketsFor()
  config::Options knobs;          // RINA_IB_* for pairs over RDMA
  size_t sliceBytes = 128 << 10;  // stripes per socket: sliceBytes / sockets
  Deadline deadline;
  const std::atomic<bool>* abort = nullptr;
  // Channel hellos and notices accepted meanwhile go here (and mesh hellos
  // the channel code accepted are taken from here); null: such hellos are
  // refused.
  Arrivals* arrivals = nullptr;
  // Not 0: the id of a communicator being formed out of this one
  // (rinaCommShrink), whose hellos are filed for it rather than refused.
  uint64_t successorId = 0;
};

// Whether opt.rank and peer are on one host (shared memory is possible).
bool sameHost(const MeshOptions& opt, int peer);

// tuneSocket with the options' buffer size and congestion control (every
// peer socket, channels' too).
Status tunePeerSocket(const MeshOptions& opt, int fd);

Status buildMesh(const MeshOptions& opt, std::map<int, std::unique_ptr<Connection>>* out,
                 SpineConnections* spineOut = nullptr);

}  // namespace rina::transport

#endif  // RINA_LIB_TRANSPORT_MESH_H_
