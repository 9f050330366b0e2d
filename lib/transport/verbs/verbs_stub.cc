// Without libibverbs: no devices, and nothing to open.
#include "transport/verbs/uc_queue_pair.h"
#include "transport/verbs/verbs_context.h"

namespace rina::transport::verbs {

class VerbsContext {};

DeviceProbe probeDevices() { return DeviceProbe{}; }

Status openVerbsContext(const TransportChoice&, const VerbsOptions&, VerbsContextPtr*) {
  return errorf(rinaSystemError, "librina was built without libibverbs");
}

Status prepareVerbsConnection(const VerbsContextPtr&, int peer, Fd,
                              std::unique_ptr<PendingVerbsConnection>*) {
  return errorf(rinaSystemError, "peer %d: librina was built without libibverbs", peer);
}

bool verbsHasDmabuf() { return false; }

Status registerGpuMemory(const VerbsContextPtr&, const void*, size_t, MrKeys*) {
  return errorf(rinaSystemError, "librina was built without libibverbs");
}

void deregisterMemory(const MrKeys&) {}

Status openUcQueuePair(const VerbsContextPtr&, std::unique_ptr<UcQueuePair>*) {
  return errorf(rinaSystemError, "librina was built without libibverbs");
}

}  // namespace rina::transport::verbs
