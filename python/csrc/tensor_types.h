// What a torch call may hand rina: dtypes and reduce ops as rina's, and the
// checks every call makes on its tensors. Each check throws c10::Error
// (RuntimeError in Python) naming the call and what it cannot take.
#ifndef RINA_PYTHON_CSRC_TENSOR_TYPES_H_
#define RINA_PYTHON_CSRC_TENSOR_TYPES_H_

#include <ATen/ATen.h>

#include <torch/csrc/distributed/c10d/Types.hpp>
#include <vector>

#include "rina/rina.h"

namespace rina::torch_backend {

// float32, float64, float16, bfloat16, int8, uint8, int32, int64; any other
// dtype throws, naming the call and the dtype. Reductions need this;
// calls that only move data move bytes and take any dtype.
rinaDataType_t reduceTypeOf(const at::Tensor& t, const char* call);

// SUM, AVG, PRODUCT, MIN, MAX; the bitwise ops and PREMUL_SUM throw.
rinaRedOp_t reduceOpOf(const c10d::ReduceOp& op, const char* call);

// A dense CPU tensor (rina runs on host memory; no sparse tensors).
void checkDenseCpu(const at::Tensor& t, const char* call);

// Exactly one tensor per call (one device per process), dense on the CPU.
const at::Tensor& onlyTensor(const std::vector<at::Tensor>& tensors, const char* call);

// Same dtype and number of elements as `like`, else throws naming `what`.
void checkSameAs(const at::Tensor& t, const at::Tensor& like, const char* call, const char* what);

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

// Bytes of t's data.
inline size_t bytesOf(const at::Tensor& t) {
  return static_cast<size_t>(t.numel()) * t.element_size();
}

}  // namespace rina::torch_backend

#endif  // RINA_PYTHON_CSRC_TENSOR_TYPES_H_
