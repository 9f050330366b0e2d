#include "tensor_types.h"

namespace rina::torch_backend {

rinaDataType_t reduceTypeOf(const at::Tensor& t, const char* call) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return rinaFloat32;
    case at::kDouble:
      return rinaFloat64;
    case at::kHalf:
      return rinaFloat16;
    case at::kBFloat16:
      return rinaBfloat16;
    case at::kChar:
      return rinaInt8;
    case at::kByte:
      return rinaUint8;
    case at::kInt:
      return rinaInt32;
    case at::kLong:
      return rinaInt64;
    default:
      break;
  }
  TORCH_CHECK(false, "rina_torch ", call, ": dtype ", t.scalar_type(),
              " is not supported (float32, float64, float16, bfloat16, int8, uint8, int32, "
              "int64)");
}

rinaRedOp_t reduceOpOf(const c10d::ReduceOp& op, const char* call) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return rinaSum;
    case c10d::ReduceOp::AVG:
      return rinaAvg;
    case c10d::ReduceOp::PRODUCT:
      return rinaProd;
    case c10d::ReduceOp::MIN:
      return rinaMin;
    case c10d::ReduceOp::MAX:
      return rinaMax;
    case c10d::ReduceOp::BAND:
      TORCH_CHECK(false, "rina_torch ", call, ": op BAND is not supported");
    case c10d::ReduceOp::BOR:
      TORCH_CHECK(false, "rina_torch ", call, ": op BOR is not supported");
    case c10d::ReduceOp::BXOR:
      TORCH_CHECK(false, "rina_torch ", call, ": op BXOR is not supported");
    case c10d::ReduceOp::PREMUL_SUM:
      TORCH_CHECK(false, "rina_torch ", call, ": op PREMUL_SUM is not supported");
    default:
      break;
  }
  TORCH_CHECK(false, "rina_torch ", call, ": op ", static_cast<int>(op.op_),
              " is not supported (SUM, AVG, PRODUCT, MIN, MAX)");
}

void checkDenseCpu(const at::Tensor& t, const char* call) {
  TORCH_CHECK(t.device().is_cpu(), "rina_torch ", call, ": tensors must be on the CPU, got ",
              t.device());
  TORCH_CHECK(t.layout() == at::kStrided, "rina_torch ", call,
              ": only dense (strided) tensors, got layout ", t.layout());
}

const at::Tensor& onlyTensor(const std::vector<at::Tensor>& tensors, const char* call) {
  TORCH_CHECK(tensors.size() == 1, "rina_torch ", call,
              ": takes one tensor per process (one device), got ", tensors.size());
  checkDenseCpu(tensors[0], call);
  return tensors[0];
}

void checkSameAs(const at::Tensor& t, const at::Tensor& like, const char* call, const char* what) {
  checkDenseCpu(t, call);
  TORCH_CHECK(t.scalar_type() == like.scalar_type(), "rina_torch ", call, ": ", what, " has dtype ",
              t.scalar_type(), ", expected ", like.scalar_type());
  TORCH_CHECK(t.numel() == like.numel(), "rina_torch ", call, ": ", what, " has ", t.numel(),
              " elements, expected ", like.numel());
}

}  // namespace rina::torch_backend
