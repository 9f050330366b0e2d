// What a torch call may hand rina: dtypes and reduce ops as rina's, and the
// checks every call makes on its tensors. Each check throws c10::Error
// (RuntimeError in Python) naming the call, the argument and what it cannot
// take.
#ifndef RINA_PYTHON_CSRC_TENSOR_TYPES_H_
#define RINA_PYTHON_CSRC_TENSOR_TYPES_H_

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "rina/rina.h"
#include "torch_version.h"

namespace rina::torch_backend {

// How one reduction runs on rina. Most dtypes are reduced as themselves;
// bool as uint8 (SUM and MAX are logical or, PRODUCT and MIN logical and,
// as NCCL does); int16 and uint16 in a wider integer (wrapping back as
// torch's own int16 arithmetic does). PREMUL_SUM multiplies each rank's
// input by its factor (in the tensor's dtype) and sums.
struct Reduction {
  rinaDataType_t type = rinaFloat32;
  rinaRedOp_t op = rinaSum;
  // The dtype rina reduces in when the tensor's own has no rina type
  // (Undefined: the tensor's own; bool travels as its bytes).
  at::ScalarType wide = at::ScalarType::Undefined;
  bool premul = false;
  double factor = 1.0;
  at::Tensor factorTensor;  // when the factor is a tensor

  // A contiguous buffer of t's values ready for rina: t itself when that
  // will do and writing it is allowed (mayWrite), else a copy (widened,
  // premultiplied). Its element count is t's.
  at::Tensor input(const at::Tensor& t, bool mayWrite) const;
  // A buffer to receive n elements of rina's type, like t.
  at::Tensor output(const at::Tensor& t, int64_t n) const;
  // Where rina writes the result for t: t itself (its uint8 view for bool)
  // when contiguous and not widened, else output(t, t.numel()).
  at::Tensor outputFor(const at::Tensor& t) const;
  // Writes buf (rina's result) into out, narrowing when widened.
  void writeBack(at::Tensor& out, const at::Tensor& buf) const;
};

// The reduction of t's dtype by op in call; throws naming the call, the dtype
// and the op when rina cannot do it.
Reduction reductionOf(const at::Tensor& t, const c10d::ReduceOp& op, const char* call);

// A dense tensor on the CPU or a CUDA device, else throws naming the call
// and the argument (e.g. "tensors[0]", "output").
void checkTensor(const at::Tensor& t, const char* call, const std::string& arg);

// Exactly one tensor per call (one device per process), checked.
const at::Tensor& onlyTensor(const std::vector<at::Tensor>& tensors, const char* call,
                             const char* arg = "tensors");

// Same dtype, device and number of elements as `like`, else throws naming
// arg and likeArg.
void checkSameAs(const at::Tensor& t, const at::Tensor& like, const char* call,
                 const std::string& arg, const std::string& likeArg);

// The tensors of a coalesced call (reduce_scatter_tensor_coalesced,
// allgather_into_tensor_coalesced): as many outputs as inputs, all of one
// dtype and device, and in each pair the bigger one has size x the other's
// elements (the outputs when outputsPerRank, else the inputs).
void checkCoalesced(const std::vector<at::Tensor>& outputs, const std::vector<at::Tensor>& inputs,
                    int size, bool outputsPerRank, const char* call);

// How a call that only moves data puts t on the wire: as rina's type when
// it has t's dtype (so a receive checks it), else as bytes.
struct WireType {
  rinaDataType_t type;
  size_t count;  // elements of type
};
WireType wireTypeOf(const at::Tensor& t);

// t itself when it is contiguous, else a contiguous copy (writeBack copies
// a result into t).
at::Tensor contiguousOf(const at::Tensor& t);
void writeBack(at::Tensor& t, const at::Tensor& buf);

// A contiguous tensor's bytes as a flat uint8 tensor (a view, same device).
at::Tensor bytesView(const at::Tensor& t);

// Bytes of t's data.
inline size_t bytesOf(const at::Tensor& t) {
  return static_cast<size_t>(t.numel()) * t.element_size();
}

}  // namespace rina::torch_backend

#endif  // RINA_PYTHON_CSRC_TENSOR_TYPES_H_
