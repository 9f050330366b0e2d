// A UC queue pair with libibverbs for the INA UC client. Writes are copied
// into a registered ring of send buffers (one per send-queue entry), so the
// caller's bytes may change as soon as post() returns; every write is
// signaled and reap() frees its buffer. UC needs no acknowledgement timer:
// a lost write is resent by the INA client's own retransmission.
//
// The receive side: a registered ring the switch writes answers into (RDMA
// WRITE with immediate = the slot), one posted receive per slot, and a
// completion channel whose fd the client sleeps on beside its socket.
#include "transport/verbs/uc_queue_pair.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "core/log.h"
#include "transport/verbs/verbs_device.h"
#include "transport/verbs/wc_status.h"

namespace rina::transport::verbs {
namespace {

constexpr uint32_t kDepth = 256;  // send-queue entries and send buffers
// Receive ring: slot 0 for control, then two per aggregator slot of a
// window of up to 256 (the switch picks 1 + (2 slot + set) mod 512).
constexpr uint32_t kRingSlots = 513;

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};

class IbvUcQueuePair : public UcQueuePair {
 public:
  explicit IbvUcQueuePair(VerbsContextPtr ctx) : ctx_(std::move(ctx)) {}
  ~IbvUcQueuePair() override {
    q_.destroy();
    if (mr_.id != 0) (void)ctx_->mrs->release(mr_.id);
    if (ringMr_.id != 0) (void)ctx_->mrs->release(ringMr_.id);
  }

  Status setUp();
  const std::string& device() const override { return ctx_->name; }
  uint32_t maxWriteBytes() const override { return 128u << ctx_->portAttr.active_mtu; }
  Status connect(uint32_t ipv4, uint32_t remoteQpn) override;
  Status post(const UcWriteRequest& wr, bool* posted) override;
  Status reap() override;
  bool receiveRing(UcReceiveRing* out) const override {
    *out = ring_;
    return true;
  }
  Status receive(const std::function<void(std::span<const uint8_t>)>& fn) override;
  int receiveFd() const override { return q_.channel->fd; }

 private:
  Status postReceive();
  Status take(const ibv_wc& wc, const std::function<void(std::span<const uint8_t>)>& fn);
  Status fail(const char* what, int err) const { return fail(systemErrorf(err, "%s", what)); }
  Status fail(Status s) const {
    return s.prepend("rank " + std::to_string(ctx_->opt.rank) + ": INA over RDMA UC (" +
                     ctx_->name + "): ");
  }

  VerbsContextPtr ctx_;
  QueuePair q_;
  std::unique_ptr<uint8_t, FreeDeleter> buffers_;
  MrRegion mr_;
  std::unique_ptr<uint8_t, FreeDeleter> ringBuffer_;
  MrRegion ringMr_;
  UcReceiveRing ring_;
  std::vector<uint8_t> scratch_;
  uint64_t posted_ = 0;  // writes posted; buffer = posted % kDepth
  uint64_t done_ = 0;
  bool connected_ = false;
};

Status IbvUcQueuePair::setUp() {
  // Sends are reaped by polling; the switch's answers (writes into the
  // receive ring) raise events.
  const QueuePairShape shape{
      .type = IBV_QPT_UC, .sendDepth = kDepth, .recvDepth = kRingSlots, .sendEvents = false};
  if (Status s = createQueuePair(*ctx_, shape, &q_); !s.ok()) return fail(s);
  const size_t bytes = size_t{kDepth} * maxWriteBytes();
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes) != 0) return fail("send buffers", ENOMEM);
  buffers_.reset(static_cast<uint8_t*>(p));
  RINA_TRY(ctx_->mrs->acquire(buffers_.get(), bytes, &mr_));
  const size_t ringBytes = size_t{kRingSlots} * maxWriteBytes();
  p = nullptr;
  if (posix_memalign(&p, 4096, ringBytes) != 0) return fail("receive ring", ENOMEM);
  ringBuffer_.reset(static_cast<uint8_t*>(p));
  RINA_TRY(ctx_->mrs->acquire(ringBuffer_.get(), ringBytes, &ringMr_));
  scratch_.resize(maxWriteBytes());
  for (uint32_t i = 0; i < kRingSlots; ++i) RINA_TRY(postReceive());
  if (ibv_req_notify_cq(q_.recvCq, 0) != 0) return fail("ibv_req_notify_cq", errno);
  ring_.qpn = q_.qp->qp_num;
  ring_.psn = std::random_device{}() & 0xffffff;
  ring_.addr = reinterpret_cast<uintptr_t>(ringBuffer_.get());
  ring_.rkey = ringMr_.keys.rkey;
  ring_.slots = kRingSlots;
  ring_.slotBytes = maxWriteBytes();
  return {};
}

Status IbvUcQueuePair::postReceive() {
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.num_sge = 0;  // write with immediate: the data lands at the RETH address
  int rc = ibv_post_recv(q_.qp, &wr, &bad);
  return rc == 0 ? Status() : fail("ibv_post_recv", rc);
}

Status IbvUcQueuePair::take(const ibv_wc& wc,
                            const std::function<void(std::span<const uint8_t>)>& fn) {
  if (wc.status != IBV_WC_SUCCESS) {
    return errorf(rinaSystemError, "rank %d: INA over RDMA UC (%s): receive failed: %s",
                  ctx_->opt.rank, ctx_->name.c_str(), wcStatusText(wc.status).c_str());
  }
  RINA_TRY(postReceive());
  const uint32_t slot = ntohl(wc.imm_data);
  if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || slot >= ring_.slots ||
      wc.byte_len > ring_.slotBytes) {
    return {};  // not an answer this ring can hold: dropped, as UDP would
  }
  // Copied out, then the first bytes compared again: a slot the switch
  // reused meanwhile (a late duplicate) is dropped rather than read torn.
  const uint8_t* at = ringBuffer_.get() + size_t{slot} * ring_.slotBytes;
  std::memcpy(scratch_.data(), at, wc.byte_len);
  const size_t check = std::min<size_t>(wc.byte_len, 32);
  if (std::memcmp(scratch_.data(), at, check) != 0) return {};
  fn({scratch_.data(), wc.byte_len});
  return {};
}

Status IbvUcQueuePair::receive(const std::function<void(std::span<const uint8_t>)>& fn) {
  ibv_cq* cq = nullptr;
  void* unused = nullptr;
  while (ibv_get_cq_event(q_.channel, &cq, &unused) == 0) ibv_ack_cq_events(cq, 1);
  ibv_wc wc[32];
  bool armed = false;
  for (;;) {
    int n = ibv_poll_cq(q_.recvCq, 32, wc);
    if (n < 0) return fail("ibv_poll_cq (receive)", EIO);
    for (int i = 0; i < n; ++i) RINA_TRY(take(wc[i], fn));
    if (n == 32) continue;
    if (armed) return {};
    // Arm, then look once more: a write between the poll and the arming
    // raises no event.
    if (ibv_req_notify_cq(q_.recvCq, 0) != 0) return fail("ibv_req_notify_cq", errno);
    armed = true;
  }
}

Status IbvUcQueuePair::connect(uint32_t ipv4, uint32_t remoteQpn) {
  if (connected_) return {};
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = ctx_->portAttr.active_mtu;
  a.dest_qp_num = remoteQpn;
  a.rq_psn = ring_.psn;
  a.ah_attr.port_num = static_cast<uint8_t>(ctx_->port);
  a.ah_attr.is_global = 1;
  // RoCEv2 addresses an IPv4 peer by its IPv4-mapped GID ::ffff:a.b.c.d.
  uint8_t* gid = a.ah_attr.grh.dgid.raw;
  gid[10] = 0xff;
  gid[11] = 0xff;
  const uint32_t be = htonl(ipv4);
  std::memcpy(gid + 12, &be, 4);
  a.ah_attr.grh.sgid_index = static_cast<uint8_t>(ctx_->opt.gidIndex);
  a.ah_attr.grh.hop_limit = 64;
  int rc = ibv_modify_qp(
      q_.qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN);
  if (rc != 0) return fail("QP to RTR (check RINA_IB_GID_INDEX: a RoCEv2 IPv4 GID)", rc);
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  // The switch does not check PSNs (include/rina/ina_roce.h); any start will do.
  a.sq_psn = std::random_device{}() & 0xffffff;
  rc = ibv_modify_qp(q_.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
  if (rc != 0) return fail("QP to RTS", rc);
  connected_ = true;
  RINA_INFO("rank %d: INA over RDMA UC: %s port %d, QPN %u -> switch QP %u, path MTU %u bytes",
            ctx_->opt.rank, ctx_->name.c_str(), ctx_->port, q_.qp->qp_num, remoteQpn,
            maxWriteBytes());
  return {};
}

Status IbvUcQueuePair::post(const UcWriteRequest& wr, bool* posted) {
  *posted = false;
  if (!connected_) return errorf(rinaInternalError, "INA UC: post before connect");
  if (wr.payload.size() > maxWriteBytes()) {
    return errorf(rinaInvalidUsage, "INA UC: a %zu-byte write exceeds the path MTU (%u bytes)",
                  wr.payload.size(), maxWriteBytes());
  }
  if (posted_ - done_ >= kDepth) return {};
  uint8_t* buf = buffers_.get() + (posted_ % kDepth) * maxWriteBytes();
  std::memcpy(buf, wr.payload.data(), wr.payload.size());
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), static_cast<uint32_t>(wr.payload.size()),
              mr_.keys.lkey};
  ibv_send_wr w{};
  ibv_send_wr* bad = nullptr;
  w.wr_id = posted_;
  w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  w.send_flags = IBV_SEND_SIGNALED;
  w.imm_data = htonl(wr.imm);
  w.sg_list = &sge;
  w.num_sge = 1;
  w.wr.rdma.remote_addr = wr.remoteAddr;
  w.wr.rdma.rkey = wr.rkey;
  int rc = ibv_post_send(q_.qp, &w, &bad);
  if (rc == ENOMEM) return {};  // queue full after all: the caller reaps and retries
  if (rc != 0) return fail("ibv_post_send", rc);
  ++posted_;
  *posted = true;
  return {};
}

Status IbvUcQueuePair::reap() {
  ibv_wc wc[32];
  for (;;) {
    int n = ibv_poll_cq(q_.sendCq, 32, wc);
    if (n < 0) return fail("ibv_poll_cq", EIO);
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        return errorf(rinaSystemError, "rank %d: INA over RDMA UC (%s): write failed: %s",
                      ctx_->opt.rank, ctx_->name.c_str(), wcStatusText(wc[i].status).c_str());
      }
      ++done_;
    }
    if (n < 32) return {};
  }
}

}  // namespace

Status openUcQueuePair(const VerbsContextPtr& ctx, std::unique_ptr<UcQueuePair>* out) {
  auto qp = std::make_unique<IbvUcQueuePair>(ctx);
  RINA_TRY(qp->setUp());
  *out = std::move(qp);
  return {};
}

}  // namespace rina::transport::verbs
