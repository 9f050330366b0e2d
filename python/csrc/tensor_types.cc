#include "tensor_types.h"

namespace rina::torch_backend {

namespace {

// rina's type for t's dtype, if it has one.
bool rinaTypeOf(at::ScalarType s, rinaDataType_t* type) {
  switch (s) {
    case at::kFloat:
      *type = rinaFloat32;
      return true;
    case at::kDouble:
      *type = rinaFloat64;
      return true;
    case at::kHalf:
      *type = rinaFloat16;
      return true;
    case at::kBFloat16:
      *type = rinaBfloat16;
      return true;
    case at::kChar:
      *type = rinaInt8;
      return true;
    case at::kByte:
      *type = rinaUint8;
      return true;
    case at::kInt:
      *type = rinaInt32;
      return true;
    case at::kLong:
      *type = rinaInt64;
      return true;
    default:
      return false;
  }
}

}  // namespace

WireType wireTypeOf(const at::Tensor& t) {
  rinaDataType_t type;
  if (rinaTypeOf(t.scalar_type(), &type)) return WireType{type, static_cast<size_t>(t.numel())};
  return WireType{rinaUint8, bytesOf(t)};
}

at::Tensor contiguousOf(const at::Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }

void writeBack(at::Tensor& t, const at::Tensor& buf) {
  if (!buf.is_same(t)) t.copy_(buf);
}

rinaDataType_t reduceTypeOf(const at::Tensor& t, const char* call) {
  rinaDataType_t type;
  if (rinaTypeOf(t.scalar_type(), &type)) return type;
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
