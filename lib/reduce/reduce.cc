// Names, sizes and dispatch; the kernels live in kernels_scalar.cc and
// kernels_avx2.cc.
#include "reduce/reduce.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "reduce/half.h"
#include "reduce/kernels.h"

namespace rina::reduce {
namespace {

bool validType(rinaDataType_t type) { return type >= 0 && type < rinaNumTypes; }
bool validOp(rinaRedOp_t op) { return op >= 0 && op < rinaNumOps; }

}  // namespace

namespace detail {

const KernelTable& activeKernels() {
  static const KernelTable& table = avx2Kernels() != nullptr ? *avx2Kernels() : scalarKernels();
  return table;
}

}  // namespace detail

void copyBytes(void* dst, const void* src, size_t bytes) {
  // Small copies, and buffers at the same offset in a cache line, are the
  // C library's fast cases.
  constexpr size_t kSmall = 1024;
  const auto apart = reinterpret_cast<uintptr_t>(dst) ^ reinterpret_cast<uintptr_t>(src);
  if (bytes < kSmall || (apart & 63) == 0) {
    std::memcpy(dst, src, bytes);
    return;
  }
  detail::activeKernels().copy(dst, src, bytes);
}

void streamBytes(void* dst, const void* src, size_t bytes) {
  detail::activeKernels().stream(dst, src, bytes);
}

size_t dataTypeSize(rinaDataType_t type) {
  switch (type) {
    case rinaInt8:
    case rinaUint8:
      return 1;
    case rinaFloat16:
    case rinaBfloat16:
      return 2;
    case rinaInt32:
    case rinaUint32:
    case rinaFloat32:
      return 4;
    case rinaInt64:
    case rinaUint64:
    case rinaFloat64:
      return 8;
    case rinaNumTypes:
      break;
  }
  return 0;
}

const char* dataTypeName(rinaDataType_t type) {
  switch (type) {
    case rinaInt8:
      return "int8";
    case rinaUint8:
      return "uint8";
    case rinaInt32:
      return "int32";
    case rinaUint32:
      return "uint32";
    case rinaInt64:
      return "int64";
    case rinaUint64:
      return "uint64";
    case rinaFloat16:
      return "float16";
    case rinaBfloat16:
      return "bfloat16";
    case rinaFloat32:
      return "float32";
    case rinaFloat64:
      return "float64";
    case rinaNumTypes:
      break;
  }
  return "unknown";
}

const char* opName(rinaRedOp_t op) {
  switch (op) {
    case rinaSum:
      return "sum";
    case rinaProd:
      return "prod";
    case rinaMin:
      return "min";
    case rinaMax:
      return "max";
    case rinaAvg:
      return "avg";
    case rinaNumOps:
      break;
  }
  return "unknown";
}

ReduceFn reduceFunction(rinaDataType_t type, rinaRedOp_t op) {
  if (!validType(type) || !validOp(op)) return nullptr;
  int kernelOp = detail::kKernelSum;
  switch (op) {
    case rinaProd:
      kernelOp = detail::kKernelProd;
      break;
    case rinaMin:
      kernelOp = detail::kKernelMin;
      break;
    case rinaMax:
      kernelOp = detail::kKernelMax;
      break;
    default:  // sum, and avg: sum now, finishAverage() later
      break;
  }
  return detail::activeKernels().reduce[type][kernelOp];
}

void finishAverage(void* data, size_t count, rinaDataType_t type, int nranks) {
  if (!validType(type) || nranks < 1 || count == 0) return;
  detail::activeKernels().average[type](data, count, nranks);
}

const char* kernelIsaName() { return detail::activeKernels().isa; }

float halfToFloat(uint16_t bits) { return detail::halfBitsToFloat(bits); }
uint16_t floatToHalf(float value) { return detail::floatToHalfBits(value); }
float bf16ToFloat(uint16_t bits) { return detail::bf16BitsToFloat(bits); }
uint16_t floatToBf16(float value) { return detail::floatToBf16Bits(value); }

}  // namespace rina::reduce
