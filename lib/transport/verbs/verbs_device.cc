#include "transport/verbs/verbs_device.h"

#include <fcntl.h>

#include <cerrno>

namespace rina::transport::verbs {

void QueuePair::destroy() {
  if (qp) ibv_destroy_qp(qp);
  if (sendCq) ibv_destroy_cq(sendCq);
  if (recvCq) ibv_destroy_cq(recvCq);
  if (channel) ibv_destroy_comp_channel(channel);
  qp = nullptr;
  sendCq = recvCq = nullptr;
  channel = nullptr;
}

Status createQueuePair(const VerbsContext& ctx, const QueuePairShape& shape, QueuePair* out) {
  out->channel = ibv_create_comp_channel(ctx.ctx);
  if (!out->channel) return systemErrorf(errno, "ibv_create_comp_channel");
  const int fl = fcntl(out->channel->fd, F_GETFL);
  if (fl < 0 || fcntl(out->channel->fd, F_SETFL, fl | O_NONBLOCK) != 0)
    return systemErrorf(errno, "fcntl on the completion channel");
  out->sendCq = ibv_create_cq(ctx.ctx, static_cast<int>(shape.sendDepth), nullptr,
                              shape.sendEvents ? out->channel : nullptr, 0);
  out->recvCq = ibv_create_cq(ctx.ctx, static_cast<int>(shape.recvDepth), nullptr, out->channel, 0);
  if (!out->sendCq || !out->recvCq) return systemErrorf(errno, "ibv_create_cq");
  ibv_qp_init_attr ia{};
  ia.send_cq = out->sendCq;
  ia.recv_cq = out->recvCq;
  ia.qp_type = shape.type;
  ia.cap.max_send_wr = shape.sendDepth;
  ia.cap.max_recv_wr = shape.recvDepth;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  out->qp = ibv_create_qp(ctx.pd, &ia);
  if (!out->qp) {
    return systemErrorf(errno, "ibv_create_qp (%s)", shape.type == IBV_QPT_UC ? "UC" : "RC");
  }
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = static_cast<uint8_t>(ctx.port);
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  const int rc = ibv_modify_qp(
      out->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  return rc == 0 ? Status() : systemErrorf(rc, "QP to INIT");
}

}  // namespace rina::transport::verbs
