// librina built without CUDA: every buffer must be host memory.
#include "cuda/cuda_support.h"

namespace rina::cuda {
namespace {
Status notBuilt(const char* what) {
  return errorf(rinaSystemError, "%s: librina was built without CUDA", what);
}
}  // namespace

bool built() { return false; }

bool usable(std::string* why) {
  if (why) *why = "librina was built without CUDA";
  return false;
}

Status isDevicePointer(const void* p, size_t bytes, const char* what, bool* device) {
  *device = false;
  if (bytes == 0 || isKnownHostMemory(p, bytes)) return {};
  return errorf(
      rinaSystemError,
      "%s %p is not mapped host memory (a GPU pointer?) and librina was built without CUDA", what,
      p);
}

Status reduceOnDevice(void*, const void*, const void*, size_t, rinaDataType_t, rinaRedOp_t, void*) {
  return notBuilt("reduceOnDevice");
}
Status averageOnDevice(void*, size_t, rinaDataType_t, int, void*) {
  return notBuilt("averageOnDevice");
}
Status runStaged(const StagedBuffers&, void*, int, int64_t, const HostCollective&) {
  return notBuilt("staging");
}
Status runStagedPipelined(const StagedBuffers&, size_t, size_t, size_t, void*, int, int64_t,
                          const HostChunk&) {
  return notBuilt("staging");
}
Status synchronizeStream(void*, int, int64_t) { return notBuilt("stream-ordered call"); }

bool currentDeviceBusId(std::string*, std::string* why) {
  if (why) *why = "librina was built without CUDA";
  return false;
}
bool dmabufSupported(std::string* why) {
  if (why) *why = "librina was built without CUDA";
  return false;
}
Status dmabufOf(const void*, size_t, int*, uint64_t*) { return notBuilt("dmabuf export"); }

}  // namespace rina::cuda
