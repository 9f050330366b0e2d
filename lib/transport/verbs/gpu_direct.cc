#include "transport/verbs/gpu_direct.h"

namespace rina::transport::verbs {

Status parseGdrMode(std::string_view text, GdrMode* out) {
  if (text == "auto") {
    *out = GdrMode::kAuto;
  } else if (text == "0") {
    *out = GdrMode::kOff;
  } else if (text == "1") {
    *out = GdrMode::kOn;
  } else {
    return errorf(rinaInvalidArgument, "RINA_IB_GDR=%.*s: give auto, 0 or 1",
                  static_cast<int>(text.size()), text.data());
  }
  return {};
}

Status chooseGdr(GdrMode mode, const GdrProbe& p, GdrChoice* out) {
  *out = GdrChoice();
  if (mode == GdrMode::kOff) {
    out->why = "GPU buffers staged through host memory (RINA_IB_GDR=0)";
    return {};
  }
  std::string missing;
  if (!p.rdmaDevice) {
    missing = p.rdmaWhy.empty() ? std::string("no RDMA device") : p.rdmaWhy;
  } else if (!p.verbsDmabuf) {
    missing = "librina's libibverbs has no ibv_reg_dmabuf_mr (rdma-core 34 or newer has it)";
  } else if (!p.gpu) {
    missing = p.gpuWhy.empty() ? std::string("no usable GPU") : p.gpuWhy;
  } else if (!p.gpuDmabuf) {
    missing =
        p.gpuDmabufWhy.empty() ? std::string("the GPU driver exports no dmabuf") : p.gpuDmabufWhy;
  }
  if (missing.empty()) {
    out->dmabuf = true;
    out->why = "GPUDirect RDMA: GPU memory registered through dmabuf";
    return {};
  }
  if (mode == GdrMode::kOn) {
    return errorf(rinaSystemError,
                  "RINA_IB_GDR=1: cannot register GPU memory with the RDMA adapter: %s; unset it "
                  "to stage through host memory",
                  missing.c_str());
  }
  out->why = "GPU buffers staged through host memory: " + missing;
  return {};
}

Status onDmabufFailure(GdrMode mode, const Status& failure, GdrChoice* choice) {
  if (mode == GdrMode::kOn) return Status(failure).prepend("RINA_IB_GDR=1: ");
  choice->dmabuf = false;
  choice->why = "GPU buffers staged through host memory: dmabuf registration failed (" +
                failure.message() + ")";
  return {};
}

}  // namespace rina::transport::verbs
