// Where torch 1.13 and torch 2.x differ for rina_torch, and nowhere else.
//
// torch 1.13 (Debian bookworm): a third-party backend is a c10d::ProcessGroup,
// returned by the creator that torch.distributed.Backend.register_backend
// calls. torch 2.x: it is a c10d::Backend, which torch wraps in a
// ProcessGroup per device type ("cpu:rina,cuda:gloo"); 2.x also asks for
// coalescing (startCoalescing / endCoalescing), the *_coalesced calls of
// flat tensors, abort() / shutdown(), getError(), and passes PREMUL_SUM's
// factor as one tensor instead of one per device. Everything else in
// rina_torch is written once against what both have.
#ifndef RINA_PYTHON_CSRC_TORCH_VERSION_H_
#define RINA_PYTHON_CSRC_TORCH_VERSION_H_

#include <ATen/ATen.h>
#include <c10/core/ScalarType.h>
#include <torch/version.h>

#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#define RINA_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||       \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// torch 2.x's c10d::Backend surface as this file uses it: 2.5 or newer
// (abort, shutdown, supportsCoalescing on Backend).
#if RINA_TORCH_AT_LEAST(2, 0) && !RINA_TORCH_AT_LEAST(2, 5)
#error "rina_torch builds against torch 1.13 or torch 2.5 and newer"
#endif

#if RINA_TORCH_AT_LEAST(2, 0)
#include <torch/csrc/distributed/c10d/Backend.hpp>
#define RINA_TORCH_BACKEND 1
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#define RINA_TORCH_BACKEND 0
#endif

// Backend::getError() (torch 2.6 on).
#define RINA_TORCH_HAS_GET_ERROR RINA_TORCH_AT_LEAST(2, 6)
// Backend::supportsShrinking / shrink, behind torch.distributed.shrink_group
// (checked on torch 2.15; 2.5 has neither).
#define RINA_TORCH_HAS_SHRINK RINA_TORCH_AT_LEAST(2, 10)
// The unsigned dtypes uint16, uint32, uint64 (torch 2.3 on).
#define RINA_TORCH_HAS_UNSIGNED RINA_TORCH_AT_LEAST(2, 3)

namespace rina::torch_backend {

// What rina_torch's backend derives from.
#if RINA_TORCH_BACKEND
using BackendBase = c10d::Backend;
#else
using BackendBase = c10d::ProcessGroup;
#endif

// The OpTypes of the calls torch 1.13 has no type for.
#if RINA_TORCH_BACKEND
constexpr c10d::OpType kCoalescedOp = c10d::OpType::COALESCED;
constexpr c10d::OpType kReduceScatterCoalescedOp = c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED;
constexpr c10d::OpType kAllgatherCoalescedOp = c10d::OpType::ALLGATHER_INTO_TENSOR_COALESCED;
#else
constexpr c10d::OpType kCoalescedOp = c10d::OpType::UNKNOWN;
constexpr c10d::OpType kReduceScatterCoalescedOp = c10d::OpType::REDUCE_SCATTER;
constexpr c10d::OpType kAllgatherCoalescedOp = c10d::OpType::ALLGATHER_COALESCED;
#endif

// PREMUL_SUM's factor: a number, or a one-element tensor (defined() says
// which). False when op carries none.
inline bool premulFactorOf(const c10d::ReduceOp& op, double* factor, at::Tensor* tensor) {
  const auto* s = dynamic_cast<const c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  if (s == nullptr) return false;
#if RINA_TORCH_BACKEND
  *tensor = s->tensor_factor;
#else
  // One factor per device tensor of the call; rina takes one tensor a call.
  *tensor = s->tensor_factors.empty() ? at::Tensor() : s->tensor_factors[0];
#endif
  *factor = s->double_factor;
  return true;
}

// Backend::supportsShrinking / shrink, behind torch.distributed.shrink_group
// (checked on torch 2.15; 2.5 has neither).
#define RINA_TORCH_HAS_SHRINK RINA_TORCH_AT_LEAST(2, 10)
// The unsigned dtypes that have no rina type of their own but a wider one.
inline bool isUint16(at::ScalarType s) {
#if RINA_TORCH_HAS_UNSIGNED
  return s == at::ScalarType::UInt16;
#else
  (void)s;
  return false;
#endif
}

inline bool isUint32(at::ScalarType s) {
#if RINA_TORCH_HAS_UNSIGNED
  return s == at::ScalarType::UInt32;
#else
  (void)s;
  return false;
#endif
}

inline bool isUint64(at::ScalarType s) {
#if RINA_TORCH_HAS_UNSIGNED
  return s == at::ScalarType::UInt64;
#else
  (void)s;
  return false;
#endif
}

inline at::ScalarType uint32Type() {
#if RINA_TORCH_HAS_UNSIGNED
  return at::ScalarType::UInt32;
#else
  return at::ScalarType::Undefined;
#endif
}

}  // namespace rina::torch_backend

#endif  // RINA_PYTHON_CSRC_TORCH_VERSION_H_
