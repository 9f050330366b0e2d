// RC queue pairs over libibverbs. Each side owns a receive ring of equal
// slots that the peer fills with RDMA write-with-immediate (the immediate
// carries the slice length), and a registered staging ring it sends from.
// Credits (credits.h) keep the writer inside the reader's free slots; the
// reader returns them with a zero-length write-with-immediate whose top bit
// marks a credit update. Waiting uses the completion channel's fd plus an
// eventfd that armWait kicks when completions raced with arming.
//
// A peer whose process died is seen first on the pair's TCP socket; the
// error reported is then the NIC's verdict on a write to it (one in flight,
// or a probe checkAlive sends), within the NIC's retry time.
#include <arpa/inet.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/log.h"
#include "transport/socket_connection.h"
#include "transport/verbs/credits.h"
#include "transport/verbs/mr_cache.h"
#include "transport/verbs/ring_reader.h"
#include "transport/verbs/verbs_context.h"
#include "transport/verbs/verbs_device.h"
#include "transport/verbs/wc_status.h"
#include "transport/wait_set.h"

namespace rina::transport::verbs {

static_assert(static_cast<int>(WcStatus::kRetryExceeded) == IBV_WC_RETRY_EXC_ERR);
static_assert(static_cast<int>(WcStatus::kRemoteAccessError) == IBV_WC_REM_ACCESS_ERR);
static_assert(static_cast<int>(WcStatus::kWorkRequestFlushed) == IBV_WC_WR_FLUSH_ERR);
static_assert(static_cast<int>(WcStatus::kTmRndvIncomplete) == IBV_WC_TM_RNDV_INCOMPLETE);

namespace {
constexpr uint32_t kSlots = 16;            // per direction and peer
constexpr uint32_t kSlotBytes = 64 << 10;  // 1 MiB ring, as the shm FIFO
constexpr uint64_t kWrData = 1;
constexpr uint64_t kWrCredit = 2;
constexpr uint64_t kWrProbe = 3;             // checkAlive's question to a hung-up peer's NIC
constexpr int kQueueDepth = 2 * kSlots + 4;  // data + credit messages in flight
constexpr int kRetryCount = 6;
}  // namespace

DeviceProbe probeDevices() {
  DeviceProbe p;
  p.built = true;
  int n = 0;
  errno = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) {
    p.listErrno = errno != 0 ? errno : ENODEV;
    return p;
  }
  p.listOk = true;
  for (int i = 0; i < n; ++i) p.names.emplace_back(ibv_get_device_name(list[i]));
  ibv_free_device_list(list);
  return p;
}

namespace {

bool isZeroGid(const ibv_gid& gid) {
  return std::all_of(std::begin(gid.raw), std::end(gid.raw), [](uint8_t b) { return b == 0; });
}

// "0 fe80::8ce:dfff:fed7:f724, 1 ::ffff:10.77.0.1" (the first 16 entries that hold one).
std::string describeGids(ibv_context* ctx, int port, int tableLength) {
  std::string out;
  for (int i = 0; i < std::min(tableLength, 16); ++i) {
    ibv_gid gid;
    char text[INET6_ADDRSTRLEN] = "?";
    if (ibv_query_gid(ctx, static_cast<uint8_t>(port), i, &gid) != 0 || isZeroGid(gid)) continue;
    inet_ntop(AF_INET6, gid.raw, text, sizeof text);
    out += (out.empty() ? "" : ", ") + std::to_string(i) + " " + text;
  }
  return out.empty() ? "none" : out;
}

}  // namespace

Status openVerbsContext(const TransportChoice& choice, const VerbsOptions& opt,
                        VerbsContextPtr* out) {
  auto c = std::make_shared<VerbsContext>();
  c->opt = opt;
  c->port = choice.port;
  c->name = choice.device;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) return systemErrorf(errno, "rank %d: ibv_get_device_list", opt.rank);
  for (int i = 0; i < n && !c->ctx; ++i) {
    if (choice.device == ibv_get_device_name(list[i])) c->ctx = ibv_open_device(list[i]);
  }
  int openErr = errno;
  ibv_free_device_list(list);
  if (!c->ctx)
    return systemErrorf(openErr, "rank %d: cannot open RDMA device %s", opt.rank, c->name.c_str());
  c->pd = ibv_alloc_pd(c->ctx);
  if (!c->pd) return systemErrorf(errno, "rank %d: ibv_alloc_pd on %s", opt.rank, c->name.c_str());
  if (ibv_query_port(c->ctx, static_cast<uint8_t>(c->port), &c->portAttr) != 0) {
    return systemErrorf(errno, "rank %d: %s port %d does not exist", opt.rank, c->name.c_str(),
                        c->port);
  }
  if (c->portAttr.state != IBV_PORT_ACTIVE) {
    return errorf(
        rinaSystemError,
        "rank %d: %s port %d is not active (state %d); pick another with RINA_IB_HCA=name:port",
        opt.rank, c->name.c_str(), c->port, static_cast<int>(c->portAttr.state));
  }
  // An index past the table fails; one inside it may hold no address (all
  // zero), which only the peer's RTR would reject, far from the cause.
  const bool queried =
      ibv_query_gid(c->ctx, static_cast<uint8_t>(c->port), opt.gidIndex, &c->gid) == 0;
  if (!queried || isZeroGid(c->gid)) {
    return errorf(rinaSystemError,
                  "rank %d: %s port %d has no GID at index %d (RINA_IB_GID_INDEX); its GIDs: %s",
                  opt.rank, c->name.c_str(), c->port, opt.gidIndex,
                  describeGids(c->ctx, c->port, c->portAttr.gid_tbl_len).c_str());
  }
  ibv_pd* pd = c->pd;
  c->mrs = std::make_unique<MrCache>(
      opt.mrCacheEntries, opt.mrCacheBytes,
      [pd](uintptr_t b, size_t len, MrKeys* k) -> Status {
        ibv_mr* mr = ibv_reg_mr(pd, reinterpret_cast<void*>(b), len,
                                IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        if (!mr) return systemErrorf(errno, "ibv_reg_mr of %zu bytes", len);
        k->handle = reinterpret_cast<uintptr_t>(mr);
        k->lkey = mr->lkey;
        k->rkey = mr->rkey;
        return {};
      },
      [](const MrKeys& k) { ibv_dereg_mr(reinterpret_cast<ibv_mr*>(k.handle)); });
  RINA_INFO("rank %d: RDMA device %s port %d, %s, GID index %d", opt.rank, c->name.c_str(), c->port,
            c->portAttr.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand",
            opt.gidIndex);
  *out = std::move(c);
  return {};
}

namespace {

struct AlignedFree {
  void operator()(char* p) const { std::free(p); }
};

class VerbsConnection : public Connection {
 public:
  VerbsConnection(int peer, VerbsContextPtr ctx, Fd liveness)
      : Connection(peer), ctx_(std::move(ctx)), liveness_(std::move(liveness)) {}
  ~VerbsConnection() override {
    q_.destroy();
    for (uint64_t id : {sendMr_.id, recvMr_.id}) {
      if (id != 0) (void)ctx_->mrs->release(id);
    }
  }

  Status setUp(QpInfo* local);
  Status connect(const QpInfo& remote);

  const char* kind() const override { return "verbs"; }
  Status trySend(const void* data, size_t len, size_t* moved) override;
  Status tryRecv(void* dst, size_t len, const RecvReduce& r, size_t* moved) override;
  void endMessage(Direction d) override;
  void armWait(WaitSet& ws, bool send, bool recv) override;
  Status checkAlive() override;

 private:
  Status fail(const char* what, int err) const { return fail(systemErrorf(err, "%s", what)); }
  Status fail(Status s) const {
    return s.prepend("rank " + std::to_string(ctx_->opt.rank) + ": RDMA to peer " +
                     std::to_string(peer()) + ": ");
  }
  Status progress();
  Status handle(const ibv_wc& wc, bool recvSide);
  // The error for a failed completion (the cause, not a flush, where one
  // can be found); ok while the cause may still come.
  Status failure(const ibv_wc& wc, bool recvSide);
  // How long the NIC may take to give up on a write (its retries), doubled.
  std::chrono::microseconds verdictWindow() const;
  Status postWrite(uint64_t kind, const char* local, uint32_t len, uint64_t remote, uint32_t imm);
  Status postRecv();
  Status returnCredits(bool force);

  VerbsContextPtr ctx_;
  Fd liveness_;
  Fd kick_;
  QueuePair q_;
  std::unique_ptr<char, AlignedFree> sendRing_, recvRing_;
  MrRegion sendMr_, recvMr_;
  QpInfo local_, remote_;
  CreditWindow window_{kSlots};
  CreditReturner returner_{kSlots};
  uint32_t sendsPosted_ = 0;  // data writes, for the local staging slots
  uint32_t sendsDone_ = 0;
  uint32_t writesInFlight_ = 0;                      // data and credit writes not yet completed
  std::chrono::steady_clock::time_point verdictBy_;  // ... and waits for its answer until then
  std::optional<ibv_wc> firstFlush_;                 // the first flushed completion seen
  bool firstFlushRecv_ = false;
  std::chrono::steady_clock::time_point flushCauseBy_;
  std::unique_ptr<RingReader> reader_;
  std::vector<std::pair<ibv_wc, bool>> stash_;  // polled while arming
};

Status VerbsConnection::setUp(QpInfo* local) {
  kick_ = Fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!kick_.valid()) return fail("eventfd", errno);
  const QueuePairShape shape{
      .type = IBV_QPT_RC, .sendDepth = kQueueDepth, .recvDepth = kQueueDepth, .sendEvents = true};
  if (Status s = createQueuePair(*ctx_, shape, &q_); !s.ok()) return fail(s);

  const size_t ringBytes = size_t{kSlots} * kSlotBytes;
  for (auto* ring : {&sendRing_, &recvRing_}) {
    void* p = nullptr;
    if (posix_memalign(&p, 4096, ringBytes) != 0) return fail("ring allocation", ENOMEM);
    ring->reset(static_cast<char*>(p));
  }
  RINA_TRY(ctx_->mrs->acquire(sendRing_.get(), ringBytes, &sendMr_));
  RINA_TRY(ctx_->mrs->acquire(recvRing_.get(), ringBytes, &recvMr_));

  for (int i = 0; i < kQueueDepth; ++i) RINA_TRY(postRecv());

  std::random_device rd;
  local_.qpn = q_.qp->qp_num;
  local_.lid = ctx_->portAttr.lid;
  local_.port = static_cast<uint8_t>(ctx_->port);
  local_.gidIndex = static_cast<uint8_t>(ctx_->opt.gidIndex);
  std::memcpy(local_.gid.data(), ctx_->gid.raw, 16);
  local_.psn = rd() & 0xffffff;
  local_.mtu = static_cast<uint32_t>(ctx_->portAttr.active_mtu);
  local_.ringAddr = reinterpret_cast<uintptr_t>(recvRing_.get());
  local_.ringRkey = recvMr_.keys.rkey;
  local_.slotBytes = kSlotBytes;
  local_.slots = kSlots;
  local_.creditStart = 0;
  *local = local_;
  return {};
}

Status VerbsConnection::connect(const QpInfo& remote) {
  remote_ = remote;
  if (remote.slots != kSlots || remote.slotBytes != kSlotBytes) {
    return errorf(rinaInvalidUsage,
                  "rank %d: peer %d has an RDMA ring of %u x %u bytes, this rank %u x %u",
                  ctx_->opt.rank, peer(), remote.slots, remote.slotBytes, kSlots, kSlotBytes);
  }
  window_ = CreditWindow(kSlots, remote.creditStart);
  returner_ = CreditReturner(kSlots, local_.creditStart);
  reader_ = std::make_unique<RingReader>(recvRing_.get(), kSlots, kSlotBytes, local_.creditStart);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = static_cast<ibv_mtu>(std::min(local_.mtu, remote.mtu));
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = static_cast<uint8_t>(ctx_->port);
  a.ah_attr.dlid = remote.lid;
  bool global = ctx_->portAttr.link_layer == IBV_LINK_LAYER_ETHERNET ||
                std::any_of(remote.gid.begin(), remote.gid.end(), [](uint8_t b) { return b != 0; });
  if (global) {
    a.ah_attr.is_global = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid.data(), 16);
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(ctx_->opt.gidIndex);
    a.ah_attr.grh.hop_limit = 64;
  }
  int rc = ibv_modify_qp(q_.qp, &a,
                         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                             IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (rc != 0)
    return fail("QP to RTR (check RINA_IB_GID_INDEX and that both ports share a fabric)", rc);
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = static_cast<uint8_t>(std::clamp(ctx_->opt.timeout, 1, 31));
  // 6, not 7: Soft-RoCE retries forever at 7 (as InfiniBand does only for
  // RNR), and a dead peer would then never produce a completion error.
  a.retry_cnt = kRetryCount;
  a.rnr_retry = 7;
  a.sq_psn = local_.psn;
  a.max_rd_atomic = 1;
  rc = ibv_modify_qp(q_.qp, &a,
                     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                         IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
  if (rc != 0) return fail("QP to RTS", rc);
  RINA_INFO("rank %d: connected to rank %d over RDMA (%s, QPN %u -> %u)", ctx_->opt.rank, peer(),
            ctx_->name.c_str(), local_.qpn, remote.qpn);
  return {};
}

Status VerbsConnection::postRecv() {
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = 0;
  wr.num_sge = 0;  // write-with-immediate: the data lands at the RDMA address
  int rc = ibv_post_recv(q_.qp, &wr, &bad);
  return rc == 0 ? Status() : fail("ibv_post_recv", rc);
}

Status VerbsConnection::postWrite(uint64_t kind, const char* local, uint32_t len, uint64_t remote,
                                  uint32_t imm) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(local), len, sendMr_.keys.lkey};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = kind;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(imm);
  wr.sg_list = len > 0 ? &sge : nullptr;
  wr.num_sge = len > 0 ? 1 : 0;
  wr.wr.rdma.remote_addr = remote;
  wr.wr.rdma.rkey = remote_.ringRkey;
  int rc = ibv_post_send(q_.qp, &wr, &bad);
  if (rc != 0) return fail("ibv_post_send", rc);
  ++writesInFlight_;
  return {};
}

Status VerbsConnection::failure(const ibv_wc& first, bool firstRecv) {
  // A failed QP flushes everything else; report the cause, not a flush.
  ibv_wc wc = first;
  bool recvSide = firstRecv;
  if (wc.status == IBV_WC_WR_FLUSH_ERR && !firstFlush_) {
    firstFlush_ = wc;
    firstFlushRecv_ = recvSide;
    flushCauseBy_ = std::chrono::steady_clock::now() + verdictWindow();
  }
  // Soft-RoCE flushes the receive queue of a failed QP before it completes
  // the write that failed: while writes are in flight, wait (bounded) for
  // their completion, which names the cause.
  if (wc.status == IBV_WC_WR_FLUSH_ERR && writesInFlight_ > 0 &&
      std::chrono::steady_clock::now() < flushCauseBy_) {
    return {};
  }
  rinaResult_t code = wcStatusIsRemote(wc.status) ? rinaRemoteError : rinaSystemError;
  std::string why;
  if (wc.status == IBV_WC_WR_FLUSH_ERR) {
    std::tie(wc, recvSide) = std::tie(*firstFlush_, firstFlushRecv_);
    // No cause on this side: the peer's going is one.
    Status gone = checkSocketAlive(liveness_.get(), peer());
    if (!gone.ok()) {
      code = rinaRemoteError;
      why = "; " + gone.message();
    }
  }
  return errorf(code, "rank %d: RDMA %s peer %d failed: %s, vendor error 0x%x%s", ctx_->opt.rank,
                recvSide ? "receive from" : "write to", peer(), wcStatusText(wc.status).c_str(),
                wc.vendor_err, why.c_str());
}

std::chrono::microseconds VerbsConnection::verdictWindow() const {
  // Every try (1 + kRetryCount) times out after 4.096 us x 2^RINA_IB_TIMEOUT;
  // twice that, and a little more.
  const double tryUs = 4.096 * std::ldexp(1.0, std::clamp(ctx_->opt.timeout, 1, 31));
  return std::chrono::microseconds(static_cast<int64_t>(2 * (1 + kRetryCount) * tryUs) + 100000);
}

Status VerbsConnection::handle(const ibv_wc& wc, bool recvSide) {
  if (wc.status != IBV_WC_SUCCESS) {
    if (!recvSide) --writesInFlight_;
    return failure(wc, recvSide);
  }
  if (!recvSide) {
    --writesInFlight_;
    if (wc.wr_id == kWrData) ++sendsDone_;
    return {};
  }
  RINA_TRY(postRecv());
  uint32_t imm = ntohl(wc.imm_data);
  if (imm & kCreditFlag) {
    Status s = window_.update(imm & kCounterMask);
    return s.ok() ? s
                  : s.prepend("rank " + std::to_string(ctx_->opt.rank) + ": peer " +
                              std::to_string(peer()) + ": ");
  }
  Status s = reader_->arrived(imm);
  return s.ok() ? s
                : s.prepend("rank " + std::to_string(ctx_->opt.rank) + ": peer " +
                            std::to_string(peer()) + ": ");
}

Status VerbsConnection::progress() {
  if (firstFlush_ && std::chrono::steady_clock::now() >= flushCauseBy_) {
    return failure(*firstFlush_, firstFlushRecv_);  // no cause came in time
  }
  ibv_cq* cq = nullptr;
  void* unused = nullptr;
  while (ibv_get_cq_event(q_.channel, &cq, &unused) == 0) ibv_ack_cq_events(cq, 1);
  uint64_t drain;
  while (read(kick_.get(), &drain, sizeof(drain)) > 0) {
  }
  while (!stash_.empty()) {
    const auto [w, recvSide] = stash_.front();
    stash_.erase(stash_.begin());
    Status st = handle(w, recvSide);
    if (!st.ok()) {
      stash_.clear();
      return st;
    }
  }
  ibv_wc wc[16];
  for (bool recvSide : {false, true}) {
    for (;;) {
      int n = ibv_poll_cq(recvSide ? q_.recvCq : q_.sendCq, 16, wc);
      if (n < 0) return fail("ibv_poll_cq", EIO);
      for (int i = 0; i < n; ++i) RINA_TRY(handle(wc[i], recvSide));
      if (n < 16) break;
    }
  }
  return {};
}

Status VerbsConnection::trySend(const void* data, size_t len, size_t* moved) {
  *moved = 0;
  RINA_TRY(progress());
  const char* src = static_cast<const char*>(data);
  while (*moved < len && sendsPosted_ - sendsDone_ < kSlots) {
    uint32_t slot;
    if (!window_.take(&slot)) break;
    auto n = static_cast<uint32_t>(std::min<size_t>(len - *moved, kSlotBytes));
    // The local staging slot follows the posted count; it is free once the
    // write that used it last has completed (at most kSlots outstanding).
    char* stage = sendRing_.get() + size_t{sendsPosted_ % kSlots} * kSlotBytes;
    std::memcpy(stage, src + *moved, n);
    RINA_TRY(postWrite(kWrData, stage, n, remote_.ringAddr + uint64_t{slot} * kSlotBytes, n));
    ++sendsPosted_;
    *moved += n;
  }
  return {};
}

Status VerbsConnection::returnCredits(bool force) {
  uint32_t counter;
  if (!returner_.due(force, &counter)) return {};
  return postWrite(kWrCredit, nullptr, 0, remote_.ringAddr, kCreditFlag | counter);
}

Status VerbsConnection::tryRecv(void* dst, size_t len, const RecvReduce& r, size_t* moved) {
  *moved = 0;
  RINA_TRY(progress());
  uint32_t freed = 0;
  reader_->read(dst, len, r, moved, &freed);
  for (uint32_t i = 0; i < freed; ++i) returner_.consumedOne();
  // Everything here consumed: give all credits back, so a blocked writer
  // never waits on a batch that will not fill.
  return returnCredits(reader_->pending() == 0);
}

void VerbsConnection::endMessage(Direction d) {
  if (d == Direction::kRecv) (void)returnCredits(true);
}

void VerbsConnection::armWait(WaitSet& ws, bool send, bool recv) {
  ibv_req_notify_cq(q_.sendCq, 0);
  ibv_req_notify_cq(q_.recvCq, 0);
  // A completion between the last poll and the arming raises no event:
  // take what is there now (handled by the next try) and wake at once.
  ibv_wc wc[4];
  for (bool recvSide : {false, true}) {
    int n = ibv_poll_cq(recvSide ? q_.recvCq : q_.sendCq, 4, wc);
    for (int i = 0; i < n; ++i) stash_.push_back({wc[i], recvSide});
  }
  if (!stash_.empty()) {
    uint64_t one = 1;
    (void)!write(kick_.get(), &one, sizeof(one));
  }
  ws.addFd(q_.channel->fd, POLLIN);
  ws.addFd(kick_.get(), POLLIN);
  (void)send;
  (void)recv;
}

Status VerbsConnection::checkAlive() {
  Status gone = checkSocketAlive(liveness_.get(), peer());
  if (gone.ok()) return gone;
  // The peer's process is gone. Writes still in flight end with the NIC's
  // verdict (retry exceeded once RINA_IB_TIMEOUT x 7 tries pass), which
  // says more than the socket: wait for it (the caller's RINA_TIMEOUT_MS
  // still bounds the wait).
  RINA_TRY(progress());
  // Bounded: past the NIC's retries the socket's word stands.
  const auto now = std::chrono::steady_clock::now();
  if (verdictBy_ == std::chrono::steady_clock::time_point{}) verdictBy_ = now + verdictWindow();
  if (now > verdictBy_) return gone;
  if (writesInFlight_ > 0) return {};
  // Nothing in flight (blocked on credits, or receiving): a one-byte write
  // into the last byte of the peer's ring asks the NIC. A peer whose
  // process is gone has no registration (remote access error) or no QP
  // (retry exceeded); one still being torn down may acknowledge it, and is
  // asked again on the next look. (Only ever sent to a peer whose socket
  // closed: a live peer's ring is never touched.)
  ibv_sge sge{reinterpret_cast<uintptr_t>(sendRing_.get()), 1, sendMr_.keys.lkey};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = kWrProbe;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = remote_.ringAddr + uint64_t{remote_.slots} * remote_.slotBytes - 1;
  wr.wr.rdma.rkey = remote_.ringRkey;
  if (ibv_post_send(q_.qp, &wr, &bad) != 0) return gone;  // the QP failed already
  ++writesInFlight_;
  return {};
}

class PendingImpl : public PendingVerbsConnection {
 public:
  explicit PendingImpl(std::unique_ptr<VerbsConnection> c) : conn_(std::move(c)) {}
  const QpInfo& localInfo() const override { return local_; }
  Status connect(const QpInfo& remote, std::unique_ptr<Connection>* out) override {
    RINA_TRY(conn_->connect(remote));
    *out = std::move(conn_);
    return {};
  }
  QpInfo local_;

 private:
  std::unique_ptr<VerbsConnection> conn_;
};

}  // namespace

Status prepareVerbsConnection(const VerbsContextPtr& ctx, int peer, Fd liveness,
                              std::unique_ptr<PendingVerbsConnection>* out) {
  auto conn = std::make_unique<VerbsConnection>(peer, ctx, std::move(liveness));
  QpInfo local;
  RINA_TRY(conn->setUp(&local));
  auto p = std::make_unique<PendingImpl>(std::move(conn));
  p->local_ = local;
  *out = std::move(p);
  return {};
}

}  // namespace rina::transport::verbs
