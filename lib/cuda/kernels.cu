// Reduction kernels on the GPU. The element operations are the CPU's own
// (reduce/scalar_ops.h, compiled here as __host__ __device__), so a GPU and
// a CPU combine the same two values into the same bits. Loads and stores are
// 16 bytes wide when all three pointers are 16-byte aligned.
#include <cuda_runtime.h>

#include <algorithm>

#include "cuda/cuda_support.h"
#include "reduce/scalar_ops.h"

namespace rina::cuda {
namespace {

using namespace rina::reduce::detail;

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 4096;

template <class Op, class T>
__global__ void reduceKernel(T* dst, const T* a, const T* b, size_t n, bool vectorized) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  size_t done = 0;
  if (vectorized) {
    constexpr int kPer = 16 / sizeof(T);
    struct alignas(16) Vec {
      T v[kPer];
    };
    const size_t nvec = n / kPer;
    const Vec* va = reinterpret_cast<const Vec*>(a);
    const Vec* vb = reinterpret_cast<const Vec*>(b);
    Vec* vd = reinterpret_cast<Vec*>(dst);
    for (size_t j = i; j < nvec; j += stride) {
      Vec x = va[j], y = vb[j], r;
#pragma unroll
      for (int k = 0; k < kPer; ++k) r.v[k] = Op::apply(x.v[k], y.v[k]);
      vd[j] = r;
    }
    done = nvec * kPer;
  }
  for (size_t j = done + i; j < n; j += stride) dst[j] = Op::apply(a[j], b[j]);
}

template <class T>
__global__ void averageIntKernel(T* data, size_t n, int nranks) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t j = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += stride) {
    data[j] = averageInteger(data[j], nranks);
  }
}

template <class F>
__global__ void averageFloatKernel(F* data, size_t n, F divisor) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t j = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += stride) {
    data[j] = averageFloat(data[j], divisor);
  }
}

template <class Codec>
__global__ void averageNarrowKernel(uint16_t* data, size_t n, float divisor) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t j = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += stride) {
    data[j] = Codec::narrow(averageFloat(Codec::widen(data[j]), divisor));
  }
}

unsigned blocksFor(size_t work) {
  return static_cast<unsigned>(std::clamp<size_t>((work + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <class Op, class T>
void launch(void* dst, const void* a, const void* b, size_t n, cudaStream_t s) {
  bool vec = aligned16(dst) && aligned16(a) && aligned16(b);
  size_t work = vec ? n / (16 / sizeof(T)) + 16 : n;
  reduceKernel<Op, T><<<blocksFor(work), kThreads, 0, s>>>(
      static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), n, vec);
}

template <class Ops>
void launchOp(rinaRedOp_t op, void* dst, const void* a, const void* b, size_t n, cudaStream_t s) {
  using T = typename Ops::Storage;
  switch (op) {
    case rinaProd:
      return launch<typename Ops::Prod, T>(dst, a, b, n, s);
    case rinaMin:
      return launch<typename Ops::Min, T>(dst, a, b, n, s);
    case rinaMax:
      return launch<typename Ops::Max, T>(dst, a, b, n, s);
    default:
      return launch<typename Ops::Sum, T>(dst, a, b, n, s);  // sum, avg
  }
}

Status launched(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return {};
  return errorf(rinaSystemError, "%s: kernel launch failed: %s (%s)", what, cudaGetErrorName(e),
                cudaGetErrorString(e));
}

}  // namespace

Status reduceOnDevice(void* dst, const void* a, const void* b, size_t count, rinaDataType_t type,
                      rinaRedOp_t op, void* stream) {
  if (count == 0) return {};
  auto s = static_cast<cudaStream_t>(stream);
  switch (type) {
    case rinaInt8:
      launchOp<OpsFor<rinaInt8>>(op, dst, a, b, count, s);
      break;
    case rinaUint8:
      launchOp<OpsFor<rinaUint8>>(op, dst, a, b, count, s);
      break;
    case rinaInt32:
      launchOp<OpsFor<rinaInt32>>(op, dst, a, b, count, s);
      break;
    case rinaUint32:
      launchOp<OpsFor<rinaUint32>>(op, dst, a, b, count, s);
      break;
    case rinaInt64:
      launchOp<OpsFor<rinaInt64>>(op, dst, a, b, count, s);
      break;
    case rinaUint64:
      launchOp<OpsFor<rinaUint64>>(op, dst, a, b, count, s);
      break;
    case rinaFloat16:
      launchOp<OpsFor<rinaFloat16>>(op, dst, a, b, count, s);
      break;
    case rinaBfloat16:
      launchOp<OpsFor<rinaBfloat16>>(op, dst, a, b, count, s);
      break;
    case rinaFloat32:
      launchOp<OpsFor<rinaFloat32>>(op, dst, a, b, count, s);
      break;
    case rinaFloat64:
      launchOp<OpsFor<rinaFloat64>>(op, dst, a, b, count, s);
      break;
    default:
      return errorf(rinaInvalidArgument, "reduceOnDevice: invalid datatype %d",
                    static_cast<int>(type));
  }
  return launched("reduceOnDevice");
}

Status averageOnDevice(void* data, size_t count, rinaDataType_t type, int nranks, void* stream) {
  if (count == 0 || nranks < 1) return {};
  auto s = static_cast<cudaStream_t>(stream);
  const unsigned blocks = blocksFor(count);
  switch (type) {
    case rinaInt8:
      averageIntKernel<<<blocks, kThreads, 0, s>>>(static_cast<int8_t*>(data), count, nranks);
      break;
    case rinaUint8:
      averageIntKernel<<<blocks, kThreads, 0, s>>>(static_cast<uint8_t*>(data), count, nranks);
      break;
    case rinaInt32:
      averageIntKernel<<<blocks, kThreads, 0, s>>>(static_cast<int32_t*>(data), count, nranks);
      break;
    case rinaUint32:
      averageIntKernel<<<blocks, kThreads, 0, s>>>(static_cast<uint32_t*>(data), count, nranks);
      break;
    case rinaInt64:
      averageIntKernel<<<blocks, kThreads, 0, s>>>(static_cast<int64_t*>(data), count, nranks);
      break;
    case rinaUint64:
      averageIntKernel<<<blocks, kThreads, 0, s>>>(static_cast<uint64_t*>(data), count, nranks);
      break;
    case rinaFloat16:
      averageNarrowKernel<HalfCodec><<<blocks, kThreads, 0, s>>>(static_cast<uint16_t*>(data),
                                                                 count, static_cast<float>(nranks));
      break;
    case rinaBfloat16:
      averageNarrowKernel<Bf16Codec><<<blocks, kThreads, 0, s>>>(static_cast<uint16_t*>(data),
                                                                 count, static_cast<float>(nranks));
      break;
    case rinaFloat32:
      averageFloatKernel<<<blocks, kThreads, 0, s>>>(static_cast<float*>(data), count,
                                                     static_cast<float>(nranks));
      break;
    case rinaFloat64:
      averageFloatKernel<<<blocks, kThreads, 0, s>>>(static_cast<double*>(data), count,
                                                     static_cast<double>(nranks));
      break;
    default:
      return errorf(rinaInvalidArgument, "averageOnDevice: invalid datatype %d",
                    static_cast<int>(type));
  }
  return launched("averageOnDevice");
}

}  // namespace rina::cuda
