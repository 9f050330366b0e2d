// Without libibverbs: no devices, and nothing to open.
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

}  // namespace rina::transport::verbs
