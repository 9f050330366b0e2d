#include "tensor_types.h"

namespace rina::torch_backend {

namespace {

// rina's type for the dtype s, if it has one.
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
      break;
  }
  if (isUint32(s)) {
    *type = rinaUint32;
    return true;
  }
  if (isUint64(s)) {
    *type = rinaUint64;
    return true;
  }
  return false;
}

const char* opName(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM:
      return "SUM";
    case c10d::ReduceOp::AVG:
      return "AVG";
    case c10d::ReduceOp::PRODUCT:
      return "PRODUCT";
    case c10d::ReduceOp::MIN:
      return "MIN";
    case c10d::ReduceOp::MAX:
      return "MAX";
    case c10d::ReduceOp::BAND:
      return "BAND";
    case c10d::ReduceOp::BOR:
      return "BOR";
    case c10d::ReduceOp::BXOR:
      return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM:
      return "PREMUL_SUM";
    default:
      return "UNUSED";
  }
}

constexpr const char* kReduceTypes =
    "float32, float64, float16, bfloat16, int8, uint8, int16, int32, int64, bool"
#if RINA_TORCH_HAS_UNSIGNED
    ", uint16, uint32, uint64"
#endif
    ;

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

at::Tensor bytesView(const at::Tensor& t) { return t.reshape({-1}).view(at::kByte); }

Reduction reductionOf(const at::Tensor& t, const c10d::ReduceOp& reduceOp, const char* call) {
  const at::ScalarType s = t.scalar_type();
  const c10d::ReduceOp::RedOpType op = reduceOp.op_;
  Reduction r;
  if (s == at::kBool) {
    // Logical or / and, as NCCL does for bool.
    r.type = rinaUint8;
    switch (op) {
      case c10d::ReduceOp::SUM:
      case c10d::ReduceOp::MAX:
      case c10d::ReduceOp::BOR:
        r.op = rinaMax;
        return r;
      case c10d::ReduceOp::PRODUCT:
      case c10d::ReduceOp::MIN:
      case c10d::ReduceOp::BAND:
        r.op = rinaMin;
        return r;
      default:
        TORCH_CHECK(false, "rina_torch ", call, ": op ", opName(op),
                    " is not supported for dtype Bool (SUM, PRODUCT, MIN, MAX, BAND, BOR)");
    }
  }
  if (!rinaTypeOf(s, &r.type)) {
    if (s == at::kShort) {
      r.type = rinaInt32;
      r.wide = at::kInt;
    } else if (isUint16(s)) {
      r.type = rinaUint32;
      r.wide = uint32Type();
    } else {
      TORCH_CHECK(false, "rina_torch ", call, ": dtype ", s, " is not supported (", kReduceTypes,
                  ")");
    }
  }
  switch (op) {
    case c10d::ReduceOp::SUM:
      r.op = rinaSum;
      return r;
    case c10d::ReduceOp::AVG:
      r.op = rinaAvg;
      return r;
    case c10d::ReduceOp::PRODUCT:
      r.op = rinaProd;
      return r;
    case c10d::ReduceOp::MIN:
      r.op = rinaMin;
      return r;
    case c10d::ReduceOp::MAX:
      r.op = rinaMax;
      return r;
    case c10d::ReduceOp::PREMUL_SUM: {
      TORCH_CHECK(at::isFloatingType(s), "rina_torch ", call,
                  ": op PREMUL_SUM takes floating-point tensors, not dtype ", s);
      TORCH_CHECK(premulFactorOf(reduceOp, &r.factor, &r.factorTensor), "rina_torch ", call,
                  ": op PREMUL_SUM without its factor (make it with "
                  "torch.distributed._make_nccl_premul_sum)");
      r.op = rinaSum;
      r.premul = true;
      return r;
    }
    default:
      TORCH_CHECK(false, "rina_torch ", call, ": op ", opName(op), " is not supported for dtype ",
                  s, " (SUM, AVG, PRODUCT, MIN, MAX, PREMUL_SUM; BAND and BOR for bool)");
  }
}

at::Tensor Reduction::input(const at::Tensor& t, bool mayWrite) const {
  if (wide != at::ScalarType::Undefined) return t.to(wide).contiguous();
  if (premul) {
    const bool inPlace = mayWrite && t.is_contiguous();
    at::Tensor buf = inPlace ? t : t.contiguous().clone();
    if (factorTensor.defined()) {
      buf.mul_(factorTensor.to(buf.options()).reshape({}));
    } else {
      buf.mul_(factor);
    }
    return buf;
  }
  at::Tensor buf = contiguousOf(t);
  return t.scalar_type() == at::kBool ? buf.view(at::kByte) : buf;
}

at::Tensor Reduction::output(const at::Tensor& t, int64_t n) const {
  at::ScalarType s = wide != at::ScalarType::Undefined ? wide : t.scalar_type();
  if (s == at::kBool) s = at::kByte;
  return at::empty({n}, t.options().dtype(s));
}

at::Tensor Reduction::outputFor(const at::Tensor& t) const {
  if (wide != at::ScalarType::Undefined || !t.is_contiguous()) return output(t, t.numel());
  return t.scalar_type() == at::kBool ? t.view(at::kByte) : t;
}

void Reduction::writeBack(at::Tensor& out, const at::Tensor& buf) const {
  // Nothing to do when rina wrote out itself (in place, or its uint8 view).
  if (out.is_contiguous() && buf.data_ptr() == out.data_ptr() &&
      buf.element_size() == out.element_size()) {
    return;
  }
  at::Tensor src =
      out.scalar_type() == at::kBool && buf.scalar_type() == at::kByte ? buf.view(at::kBool) : buf;
  out.copy_(src.reshape(out.sizes()));
}

void checkTensor(const at::Tensor& t, const char* call, const std::string& arg) {
  TORCH_CHECK(t.defined(), "rina_torch ", call, ": argument ", arg, " is an undefined tensor");
  TORCH_CHECK(t.layout() == at::kStrided, "rina_torch ", call, ": argument ", arg,
              " is not dense (layout ", t.layout(), "); rina takes dense tensors");
  TORCH_CHECK(t.device().is_cpu() || t.device().is_cuda(), "rina_torch ", call, ": argument ", arg,
              " is on device ", t.device(), "; this backend takes CPU and CUDA tensors");
}

const at::Tensor& onlyTensor(const std::vector<at::Tensor>& tensors, const char* call,
                             const char* arg) {
  TORCH_CHECK(tensors.size() == 1, "rina_torch ", call, ": argument ", arg,
              " must hold one tensor (one device per process), got ", tensors.size());
  checkTensor(tensors[0], call, std::string(arg) + "[0]");
  return tensors[0];
}

void checkSameAs(const at::Tensor& t, const at::Tensor& like, const char* call,
                 const std::string& arg, const std::string& likeArg) {
  checkTensor(t, call, arg);
  TORCH_CHECK(t.scalar_type() == like.scalar_type(), "rina_torch ", call, ": argument ", arg,
              " has dtype ", t.scalar_type(), ", ", likeArg, " has ", like.scalar_type());
  TORCH_CHECK(t.device() == like.device(), "rina_torch ", call, ": argument ", arg, " is on ",
              t.device(), ", ", likeArg, " on ", like.device());
  TORCH_CHECK(t.numel() == like.numel(), "rina_torch ", call, ": argument ", arg, " has ",
              t.numel(), " elements, ", likeArg, " has ", like.numel());
}

void checkCoalesced(const std::vector<at::Tensor>& outputs, const std::vector<at::Tensor>& inputs,
                    int size, bool outputsPerRank, const char* call) {
  TORCH_CHECK(!outputs.empty() && outputs.size() == inputs.size(), "rina_torch ", call,
              ": arguments outputs and inputs must hold as many tensors, got ", outputs.size(),
              " and ", inputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string o = "outputs[" + std::to_string(i) + "]";
    const std::string in = "inputs[" + std::to_string(i) + "]";
    checkTensor(outputs[i], call, o);
    checkTensor(inputs[i], call, in);
    for (const auto& [t, arg] : {std::pair{outputs[i], o}, std::pair{inputs[i], in}}) {
      TORCH_CHECK(t.scalar_type() == outputs[0].scalar_type() && t.device() == outputs[0].device(),
                  "rina_torch ", call, ": argument ", arg, " is ", t.scalar_type(), " on ",
                  t.device(), ", outputs[0] ", outputs[0].scalar_type(), " on ",
                  outputs[0].device(), " (one dtype and device per call)");
    }
    const at::Tensor& big = outputsPerRank ? outputs[i] : inputs[i];
    const at::Tensor& small = outputsPerRank ? inputs[i] : outputs[i];
    TORCH_CHECK(big.numel() == size * small.numel(), "rina_torch ", call, ": argument ",
                outputsPerRank ? o : in, " has ", big.numel(), " elements, expected ", size, " x ",
                outputsPerRank ? in : o, "'s ", small.numel());
  }
}

}  // namespace rina::torch_backend
