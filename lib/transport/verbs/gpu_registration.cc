// GPUDirect RDMA registration: GPU memory exported as a dmabuf by the CUDA
// driver (cuda::dmabufOf) and registered with ibv_reg_dmabuf_mr.
#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>

#include "cuda/cuda_support.h"
#include "transport/verbs/verbs_device.h"

namespace rina::transport::verbs {

#ifdef RINA_HAVE_IBV_DMABUF

bool verbsHasDmabuf() { return true; }

Status registerGpuMemory(const VerbsContextPtr& ctx, const void* p, size_t bytes, MrKeys* keys) {
  int fd = -1;
  uint64_t offset = 0;
  RINA_TRY(cuda::dmabufOf(p, bytes, &fd, &offset));
  ibv_mr* mr =
      ibv_reg_dmabuf_mr(ctx->pd, offset, bytes, reinterpret_cast<uintptr_t>(p), fd,
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  const int err = errno;
  ::close(fd);  // the registration holds its own reference
  if (!mr) {
    return systemErrorf(err, "rank %d: ibv_reg_dmabuf_mr of %zu bytes of GPU memory on %s",
                        ctx->opt.rank, bytes, ctx->name.c_str());
  }
  keys->handle = reinterpret_cast<uintptr_t>(mr);
  keys->lkey = mr->lkey;
  keys->rkey = mr->rkey;
  return {};
}

#else

bool verbsHasDmabuf() { return false; }

Status registerGpuMemory(const VerbsContextPtr& ctx, const void*, size_t, MrKeys*) {
  return errorf(rinaSystemError, "rank %d: librina's libibverbs has no ibv_reg_dmabuf_mr",
                ctx->opt.rank);
}

#endif

void deregisterMemory(const MrKeys& keys) {
  if (keys.handle) ibv_dereg_mr(reinterpret_cast<ibv_mr*>(keys.handle));
}

}  // namespace rina::transport::verbs
