// Bootstrap: the unique id, and the TCP rendezvous through which ranks learn
// each other's addresses. The root (the process that made the unique id, or
// rank 0 under RINA_COMM_ID) runs a small service thread that collects one
// hello per rank, checks magic and communicator id, and answers every rank
// with the full table. It serves every connection at once, each with a
// deadline of its own, so connections that are not ranks (idle, partial,
// garbage) cannot keep the ranks out (docs/design.md, "Bootstrap").
#ifndef RINA_LIB_BOOTSTRAP_BOOTSTRAP_H_
#define RINA_LIB_BOOTSTRAP_BOOTSTRAP_H_

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "core/socket.h"
#include "rina/rina.h"

namespace rina::bootstrap {

constexpr uint32_t kMagic = 0x52494e41;  // "RINA"
constexpr uint32_t kVersion = 5;         // 5: a grow's host segment offer in PeerInfo
// The values of the knobs that shape the schedule (config::scheduleText),
// as each rank sends them; the root hands rank 0's to every rank.
constexpr size_t kScheduleBytes = 1024;
// Addresses a rank may have, one per spine (plane / NIC): RINA_SPINE_ADDRS or
// the topology file's spine_addrs.
constexpr int kMaxSpineAddrs = 8;

// What the opaque rinaUniqueId holds.
struct IdData {
  uint32_t magic;
  uint32_t version;
  uint64_t commId;  // random; a rank with another id is refused
  PackedAddr root;
};
static_assert(sizeof(IdData) <= RINA_UNIQUE_ID_BYTES);

// A grow whose ranks on one host keep their host segment for the joiners
// (transport::ShmGroup::offersSpares): the segment's name (nameId, the pid
// of its slot-0 rank) and the tag of the members' marks in it. All zero:
// no offer.
struct SegmentOffer {
  uint64_t nameId;
  uint64_t tag;
  int32_t ownerPid;
  int32_t pad;
};

// What each rank tells the others about itself.
struct PeerInfo {
  PackedAddr listen;  // where its peer connections are accepted
  int32_t pid;
  char host[108];  // hostIdentity(): equal iff shared memory is possible
  // Where connections over spine s are accepted (s < spineCount); an entry
  // equal to `listen` means spine s is the default path to this rank.
  int32_t spineCount;
  PackedAddr spine[kMaxSpineAddrs];
  SegmentOffer segment;  // rank 0's, in a grow's rendezvous only
};
static_assert(sizeof(PeerInfo) == 136 + 20 * kMaxSpineAddrs + sizeof(SegmentOffer));

// Rank 0's offer in a table from the rendezvous, which it clears from the
// table (the table outlives the grow: a later shrink must not take it).
inline SegmentOffer takeSegmentOffer(std::vector<PeerInfo>* table) {
  SegmentOffer offer{};
  if (!table->empty()) offer = (*table)[0].segment;
  for (PeerInfo& p : *table) p.segment = SegmentOffer{};
  return offer;
}

// The rendezvous on the wire (all host byte order: one host's ranks, or
// ranks of one architecture). On a new connection the root sends a
// Challenge; the rank answers with its Hello; the root answers with a Reply
// and, when the code is kOk, the table (nranks PeerInfo), rank 0's schedule
// knobs (kScheduleBytes) and, when a secret is in use, the root's mac.
//
// With a secret (RINA_COMM_SECRET_FILE), each side proves it knows it and
// the secret never travels: the hello's mac is
// HMAC-SHA256(secret, "rina bootstrap hello " + the challenge's nonce +
// the hello's bytes with mac zeroed), and the root's is
// HMAC-SHA256(secret, "rina bootstrap reply " + the hello's nonce + the
// challenge's nonce + the reply, table and schedule bytes). The nonces are
// fresh per connection, so neither mac can be replayed on another one.
constexpr size_t kNonceChars = 32;  // 16 random bytes as hex
constexpr size_t kMacChars = 64;    // HMAC-SHA256 as hex

struct Challenge {
  uint32_t magic;
  uint32_t version;
  uint32_t secret;  // 1: the root holds a secret and wants the hello signed
  uint32_t pad;
  char nonce[kNonceChars];
};

struct Hello {
  uint32_t magic;
  uint32_t version;
  uint64_t commId;
  int32_t nranks;
  int32_t rank;
  PeerInfo info;
  char schedule[kScheduleBytes];  // NUL-terminated
  char nonce[kNonceChars];        // the rank's, for the root's mac
  char mac[kMacChars];            // zeroes without a secret
};

enum ReplyCode : uint32_t {
  kOk = 0,
  kWrongComm = 1,
  kWrongSize = 2,
  kDuplicateRank = 3,
  kBadRank = 4,
  kIncomplete = 5,  // the root gave up waiting for the other ranks
  kBadSecret = 6,   // the hello is not signed with the root's secret
};

struct Reply {
  uint32_t magic;
  uint32_t code;
  int32_t nranks;   // -1: not known yet
  int32_t arrived;  // ranks the root had when it answered
  // kOk: a random id the root drew for this communicator, which the ranks
  // use from now on (peer hellos, shared-memory names) in place of the
  // unique id's, which under RINA_COMM_ID anyone can derive.
  uint64_t peerId;
};

// Reads RINA_COMM_SECRET_FILE's file (empty path: no secret): the rules of
// switch secrets (wire/ctrl_auth.h readSecretFile: mode 0600, 16 bytes to
// 4 KiB).
Status readCommSecret(const std::string& path, std::string* secret);

// Makes an id whose root service runs in this process from now on, on the
// address RINA_SOCKET_IFNAME picks (ifnameSpec), waiting timeoutMs
// (RINA_TIMEOUT_MS) for each rank after the first (ten times that for it);
// a non-empty secret makes it take only ranks that know it.
Status createUniqueId(const std::string& ifnameSpec, int64_t timeoutMs, const std::string& secret,
                      rinaUniqueId* out);

// The id to use: commId (RINA_COMM_ID, host:port) if not empty (then rank 0
// must serve it: see RootService), else the user's, checked for the magic.
Status resolveId(const rinaUniqueId& user, const std::string& commId, IdData* out, bool* fromEnv);

// Serves one communicator's rendezvous on a listening socket, in a thread.
class RootService {
 public:
  // Binds addr (RINA_COMM_ID case) and starts the thread, which waits
  // waitMs (RINA_TIMEOUT_MS) for each rank; a non-empty secret makes it
  // take only ranks that know it.
  static Status start(const PackedAddr& addr, uint64_t commId, int64_t waitMs,
                      const std::string& secret, std::unique_ptr<RootService>* out);
  // Starts serving an already listening socket in a detached thread that
  // owns it and ends when the table is sent or the deadline passes.
  static void startDetached(Fd listen, uint64_t commId, int64_t firstWaitMs, int64_t waitMs,
                            const std::string& secret);

  RootService(Fd listen, uint64_t commId, int64_t waitMs, const std::string& secret);
  ~RootService();  // stops waiting and joins
  RootService(const RootService&) = delete;
  RootService& operator=(const RootService&) = delete;

 private:
  Fd listen_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Sends this rank's info and schedule knobs (config::scheduleText, at most
// kScheduleBytes - 1 bytes) to the root and receives everyone's info and
// rank 0's schedule knobs, and the communicator's peer id (Reply::peerId).
// With a secret, signs the hello and takes the answer only from a root that
// proves it knows the same secret.
Status rendezvous(const IdData& id, int rank, int nranks, const PeerInfo& mine,
                  const std::string& schedule, const std::string& secret, Deadline deadline,
                  std::vector<PeerInfo>* table, std::string* rankZeroSchedule, uint64_t* peerId);

}  // namespace rina::bootstrap

#endif  // RINA_LIB_BOOTSTRAP_BOOTSTRAP_H_
