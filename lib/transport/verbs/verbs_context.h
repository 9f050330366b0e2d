// The RDMA device a rank uses for all its peers: the opened adapter, its
// protection domain, the port's addressing, and the memory-registration
// cache. Built only with libibverbs (RINA_HAVE_VERBS); probeDevices() and
// openVerbsContext() exist in every build and say "not built" otherwise.
#ifndef RINA_LIB_TRANSPORT_VERBS_VERBS_CONTEXT_H_
#define RINA_LIB_TRANSPORT_VERBS_VERBS_CONTEXT_H_

#include <memory>

#include "core/socket.h"
#include "transport/connection.h"
#include "transport/verbs/mr_cache.h"
#include "transport/verbs/qp_info.h"
#include "transport/verbs/select.h"

namespace rina::transport::verbs {

// Lists RDMA devices (ibv_get_device_list); built=false without libibverbs.
DeviceProbe probeDevices();

struct VerbsOptions {
  int gidIndex = 0;  // RINA_IB_GID_INDEX
  int timeout = 18;  // RINA_IB_TIMEOUT: 4.096 us * 2^timeout per retry
  int rank = 0;
  // The device's memory-registration cache (mr_cache.h).
  size_t mrCacheEntries = 64;
  size_t mrCacheBytes = size_t{1} << 30;
};

class VerbsContext;  // opaque outside verbs_connection.cc

// Shared: every connection keeps the device open until the last one closes.
using VerbsContextPtr = std::shared_ptr<VerbsContext>;

Status openVerbsContext(const TransportChoice& choice, const VerbsOptions& opt,
                        VerbsContextPtr* out);

// A connection in the making: its QP and rings exist; connect() with the
// peer's info makes it a ready Connection.
class PendingVerbsConnection {
 public:
  virtual ~PendingVerbsConnection() = default;
  virtual const QpInfo& localInfo() const = 0;
  virtual Status connect(const QpInfo& remote, std::unique_ptr<Connection>* out) = 0;
};

Status prepareVerbsConnection(const VerbsContextPtr& ctx, int peer, Fd liveness,
                              std::unique_ptr<PendingVerbsConnection>* out);

// librina's libibverbs has ibv_reg_dmabuf_mr (rdma-core 34 or newer).
bool verbsHasDmabuf();
// GPU memory p[0, bytes) registered with ctx's adapter through a dmabuf
// (GPUDirect RDMA, gpu_direct.h): local and remote write and read. Released
// with deregisterMemory.
Status registerGpuMemory(const VerbsContextPtr& ctx, const void* p, size_t bytes, MrKeys* keys);
void deregisterMemory(const MrKeys& keys);

}  // namespace rina::transport::verbs

#endif  // RINA_LIB_TRANSPORT_VERBS_VERBS_CONTEXT_H_
