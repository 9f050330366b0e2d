// GPUDirect RDMA by dmabuf: whether GPU memory can be registered with the
// RDMA adapter (ibv_reg_dmabuf_mr on a dmabuf fd from
// cuMemGetHandleForAddressRange), as a pure function of what was probed, so
// every case is tested without a GPU or an adapter. RINA_IB_GDR:
//
//   auto (default)  dmabuf when librina's rdma-core has ibv_reg_dmabuf_mr, an
//                   RDMA device was chosen, a GPU is usable and its driver
//                   exports device memory as dmabuf; else staging through
//                   pinned host memory, with the reason at INFO
//   0               always stage
//   1               dmabuf or an error naming what is missing
//
// A registration the kernel or adapter refuses (EOPNOTSUPP from an older
// kernel or NIC driver) is only known when tried: under auto the process
// stages from then on, under 1 it is an error (onDmabufFailure).
#ifndef RINA_LIB_TRANSPORT_VERBS_GPU_DIRECT_H_
#define RINA_LIB_TRANSPORT_VERBS_GPU_DIRECT_H_

#include <string>
#include <string_view>

#include "core/status.h"

namespace rina::transport::verbs {

enum class GdrMode { kAuto, kOff, kOn };

// "auto", "0", "1"; else rinaInvalidArgument naming RINA_IB_GDR.
Status parseGdrMode(std::string_view text, GdrMode* out);

struct GdrProbe {
  bool verbsDmabuf = false;  // built against an rdma-core with ibv_reg_dmabuf_mr
  bool rdmaDevice = false;   // an RDMA device was chosen (select.h)
  std::string rdmaWhy;       // that choice's reason when it was not
  bool gpu = false;          // cuda::usable()
  std::string gpuWhy;
  bool gpuDmabuf = false;  // cuda::dmabufSupported()
  std::string gpuDmabufWhy;
};

struct GdrChoice {
  bool dmabuf = false;
  std::string why;  // the INFO line
};

Status chooseGdr(GdrMode mode, const GdrProbe& probe, GdrChoice* out);

// A dmabuf registration failed with `failure`: auto stages from now on
// (*choice updated, returns ok), 1 returns the failure naming RINA_IB_GDR.
Status onDmabufFailure(GdrMode mode, const Status& failure, GdrChoice* choice);

}  // namespace rina::transport::verbs

#endif  // RINA_LIB_TRANSPORT_VERBS_GPU_DIRECT_H_
