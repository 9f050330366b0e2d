// The opened RDMA device behind a VerbsContextPtr, for the files that make
// queue pairs on it (verbs_connection.cc, uc_queue_pair.cc). Needs
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

}  // namespace rina::transport::verbs

#endif  // RINA_LIB_TRANSPORT_VERBS_VERBS_DEVICE_H_
