// The opened RDMA device behind a VerbsContextPtr, and the queue pairs made
// on it (verbs_connection.cc, uc_queue_pair.cc). Needs
// <infiniband/verbs.h>: only built with libibverbs.
#ifndef RINA_LIB_TRANSPORT_VERBS_VERBS_DEVICE_H_
#define RINA_LIB_TRANSPORT_VERBS_VERBS_DEVICE_H_

#include <infiniband/verbs.h>

#include <memory>
#include <string>

#include "core/log.h"
#include "transport/verbs/mr_cache.h"
#include "transport/verbs/verbs_context.h"

namespace rina::transport::verbs {

class VerbsContext {
 public:
  ~VerbsContext() {
    if (mrs) {
      RINA_INFO("rank %d: %s memory registrations: %llu hits, %llu misses, %llu evictions",
                opt.rank, name.c_str(), static_cast<unsigned long long>(mrs->hits()),
                static_cast<unsigned long long>(mrs->misses()),
                static_cast<unsigned long long>(mrs->evictions()));
    }
    mrs.reset();
    if (pd) ibv_dealloc_pd(pd);
    if (ctx) ibv_close_device(ctx);
  }
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_port_attr portAttr{};
  ibv_gid gid{};
  int port = 1;
  VerbsOptions opt;
  std::string name;
  std::unique_ptr<MrCache> mrs;
};

// A queue pair with the completion queues and the channel it is made of,
// destroyed in reverse (verbs_device.cc).
struct QueuePair {
  QueuePair() = default;
  QueuePair(const QueuePair&) = delete;
  QueuePair& operator=(const QueuePair&) = delete;
  ~QueuePair() { destroy(); }
  void destroy();

  ibv_comp_channel* channel = nullptr;  // its fd does not block
  ibv_cq* sendCq = nullptr;
  ibv_cq* recvCq = nullptr;  // raises completion events on channel
  ibv_qp* qp = nullptr;
};

struct QueuePairShape {
  ibv_qp_type type = IBV_QPT_RC;
  uint32_t sendDepth = 0;
  uint32_t recvDepth = 0;
  bool sendEvents = true;  // the send queue raises completion events on channel too
};

// Makes out's channel, queues and queue pair (one scatter-gather entry per
// request) and moves the pair to INIT on ctx's port, its memory open to the
// peer's writes. An error names the step; the caller says who it is.
Status createQueuePair(const VerbsContext& ctx, const QueuePairShape& shape, QueuePair* out);

}  // namespace rina::transport::verbs

#endif  // RINA_LIB_TRANSPORT_VERBS_VERBS_DEVICE_H_
