#include "bootstrap/bootstrap.h"

#include <unistd.h>

#include <cstring>
#include <functional>
#include <random>

#include "core/log.h"

namespace rina::bootstrap {
namespace {

struct Hello {
  uint32_t magic;
  uint32_t version;
  uint64_t commId;
  int32_t nranks;
  int32_t rank;
  PeerInfo info;
  char schedule[kScheduleBytes];  // NUL-terminated
};

enum ReplyCode : uint32_t { kOk = 0, kWrongComm = 1, kWrongSize = 2, kDuplicateRank = 3, kBadRank = 4 };

struct Reply {
  uint32_t magic;
  uint32_t code;
  int32_t nranks;
  int32_t pad;
};

const char* replyText(uint32_t code) {
  switch (code) {
    case kWrongComm: return "its communicator id does not match the root's";
    case kWrongSize: return "its nranks differs from the other ranks'";
    case kDuplicateRank: return "another process already joined with this rank";
    case kBadRank: return "the rank is out of range";
    default: return "unknown reason";
  }
}

uint64_t randomCommId() {
  std::random_device rd;
  uint64_t id = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return id ^ (static_cast<uint64_t>(getpid()) << 16);
}

}  // namespace

Status createUniqueId(const std::string& ifnameSpec, int64_t timeout, rinaUniqueId* out) {
  PackedAddr addr;
  std::string ifname;
  RINA_TRY(chooseListenAddress(ifnameSpec, &addr, &ifname));
  Fd listen;
  PackedAddr bound;
  RINA_TRY(listenOn(addr, false, &listen, &bound));
  IdData data{kMagic, kVersion, randomCommId(), bound};
  std::memset(out, 0, sizeof(*out));
  std::memcpy(out->internal, &data, sizeof(data));
  // The first rank may come much later than the id is made (a job launcher
  // in between); after it, everyone must arrive within the timeout.
  RootService::startDetached(std::move(listen), data.commId, 10 * timeout, timeout);
  RINA_INFO("bootstrap root listening on %s (%s)", bound.str().c_str(), ifname.c_str());
  return {};
}

Status resolveId(const rinaUniqueId& user, const std::string& env, IdData* out, bool* fromEnv) {
  if (!env.empty()) {
    PackedAddr root;
    Status s = parseHostPort(env, &root);
    if (!s.ok()) return s.prepend("RINA_COMM_ID: ");
    *out = IdData{kMagic, kVersion, std::hash<std::string>{}(env) | 1, root};
    *fromEnv = true;
    return {};
  }
  std::memcpy(out, user.internal, sizeof(*out));
  *fromEnv = false;
  if (out->magic != kMagic || out->version != kVersion) {
    return errorf(rinaInvalidArgument,
                  "unique id is not from rinaGetUniqueId (magic %08x, version %u)", out->magic,
                  out->version);
  }
  return {};
}

Status RootService::start(const PackedAddr& addr, uint64_t commId, int64_t timeout,
                          std::unique_ptr<RootService>* out) {
  Fd listen;
  PackedAddr bound;
  Status s = listenOn(addr, true, &listen, &bound);
  if (!s.ok()) return s.prepend("RINA_COMM_ID root: ");
  *out = std::make_unique<RootService>(std::move(listen), commId, timeout);
  RINA_INFO("bootstrap root serving RINA_COMM_ID on %s", bound.str().c_str());
  return {};
}

namespace {

void serveRendezvous(int listenFd, uint64_t commId, int64_t firstWaitMs, int64_t waitMs,
                     const std::atomic<bool>* stop);

}  // namespace

void RootService::startDetached(Fd listen, uint64_t commId, int64_t firstWaitMs, int64_t waitMs) {
  std::thread([fd = std::move(listen), commId, firstWaitMs, waitMs] {
    serveRendezvous(fd.get(), commId, firstWaitMs, waitMs, nullptr);
  }).detach();
}

RootService::RootService(Fd listen, uint64_t commId, int64_t waitMs) : listen_(std::move(listen)) {
  thread_ = std::thread([this, commId, waitMs] {
    serveRendezvous(listen_.get(), commId, waitMs, waitMs, &stop_);
  });
}

RootService::~RootService() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

namespace {

void serveRendezvous(int listenFd, uint64_t commId_, int64_t firstWaitMs_, int64_t waitMs_,
                     const std::atomic<bool>* stop) {
  int nranks = -1;
  int arrived = 0;
  std::vector<Fd> conns;
  std::vector<PeerInfo> table;
  char schedule[kScheduleBytes] = {};  // rank 0's
  Deadline deadline = deadlineAfterMs(firstWaitMs_);
  while (nranks < 0 || arrived < nranks) {
    Fd conn;
    Status s = acceptFrom(listenFd, deadline, stop, &conn);
    if (!s.ok()) {
      if (s.code() == rinaAborted) return;
      RINA_WARN("bootstrap root: %d of %d ranks arrived before the deadline; giving up (%s)",
                arrived, nranks, s.message().c_str());
      return;
    }
    Hello hello{};
    s = recvAll(conn.get(), &hello, sizeof(hello), deadlineAfterMs(std::min<int64_t>(waitMs_, 5000)));
    if (!s.ok() || hello.magic != kMagic || hello.version != kVersion) {
      RINA_WARN("bootstrap root: dropped a connection that is not a rina rank (%s)",
                s.ok() ? "wrong magic or version" : s.message().c_str());
      continue;
    }
    uint32_t code = kOk;
    if (hello.commId != commId_) code = kWrongComm;
    else if (nranks >= 0 && hello.nranks != nranks) code = kWrongSize;
    else if (hello.nranks <= 0 || hello.rank < 0 || hello.rank >= hello.nranks) code = kBadRank;
    else if (nranks >= 0 && conns[hello.rank].valid()) code = kDuplicateRank;
    if (code != kOk) {
      RINA_WARN("bootstrap root: refused rank %d: %s", hello.rank, replyText(code));
      Reply r{kMagic, code, nranks, 0};
      (void)sendAll(conn.get(), &r, sizeof(r), deadlineAfterMs(1000));
      continue;
    }
    if (nranks < 0) {
      nranks = hello.nranks;
      conns.resize(nranks);
      table.resize(nranks);
      deadline = deadlineAfterMs(waitMs_);
    }
    table[hello.rank] = hello.info;
    if (hello.rank == 0) std::memcpy(schedule, hello.schedule, sizeof schedule);
    conns[hello.rank] = std::move(conn);
    ++arrived;
  }
  Reply ok{kMagic, kOk, nranks, 0};
  for (int r = 0; r < nranks; ++r) {
    Deadline d = deadlineAfterMs(waitMs_);
    Status s = sendAll(conns[r].get(), &ok, sizeof(ok), d);
    if (s.ok()) s = sendAll(conns[r].get(), table.data(), table.size() * sizeof(PeerInfo), d);
    if (s.ok()) s = sendAll(conns[r].get(), schedule, sizeof schedule, d);
    if (!s.ok()) RINA_WARN("bootstrap root: could not answer rank %d: %s", r, s.message().c_str());
  }
}

}  // namespace

Status rendezvous(const IdData& id, int rank, int nranks, const PeerInfo& mine,
                  const std::string& schedule, Deadline deadline, std::vector<PeerInfo>* table,
                  std::string* rankZeroSchedule) {
  Hello hello{};
  if (schedule.size() >= sizeof hello.schedule) {
    return errorf(rinaInvalidArgument,
                  "rank %d: the knobs that shape the schedule take %zu bytes as text, more than "
                  "the bootstrap carries (%zu); a long RINA_RACKS can go in RINA_TOPO_FILE",
                  rank, schedule.size(), sizeof hello.schedule - 1);
  }
  Fd conn;
  Status s = connectTo(id.root, deadline, &conn);
  if (!s.ok()) return s.prepend("bootstrap: rank " + std::to_string(rank) + ": root: ");
  hello.magic = kMagic;
  hello.version = kVersion;
  hello.commId = id.commId;
  hello.nranks = nranks;
  hello.rank = rank;
  hello.info = mine;
  std::memcpy(hello.schedule, schedule.data(), schedule.size());
  s = sendAll(conn.get(), &hello, sizeof(hello), deadline);
  Reply reply{};
  if (s.ok()) s = recvAll(conn.get(), &reply, sizeof(reply), deadline);
  if (!s.ok()) {
    return s.prepend("bootstrap: rank " + std::to_string(rank) + ": root " + id.root.str() + ": ");
  }
  if (reply.magic != kMagic) {
    return errorf(rinaRemoteError, "bootstrap: rank %d: %s answered with a wrong magic", rank,
                  id.root.str().c_str());
  }
  if (reply.code != kOk) {
    return errorf(rinaInvalidUsage, "bootstrap: rank %d: root %s refused this rank: %s", rank,
                  id.root.str().c_str(), replyText(reply.code));
  }
  table->resize(nranks);
  s = recvAll(conn.get(), table->data(), table->size() * sizeof(PeerInfo), deadline);
  if (!s.ok()) return s.prepend("bootstrap: rank " + std::to_string(rank) + ": address table: ");
  char theirs[kScheduleBytes];
  s = recvAll(conn.get(), theirs, sizeof theirs, deadline);
  if (!s.ok()) return s.prepend("bootstrap: rank " + std::to_string(rank) + ": schedule knobs: ");
  rankZeroSchedule->assign(theirs, strnlen(theirs, sizeof theirs));
  return {};
}

}  // namespace rina::bootstrap
