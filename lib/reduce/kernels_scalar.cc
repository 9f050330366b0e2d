// Portable kernels: plain loops over the element ops of scalar_ops.h. The
// fallback on CPUs without AVX2 and on other architectures; the compiler may
// still vectorize the integer and float32/float64 loops for the baseline ISA.
#include <cstddef>
#include <cstdint>

#include "reduce/kernels.h"
#include "reduce/scalar_ops.h"

namespace rina::reduce::detail {
namespace {

// Any byte address (kernels.h): elements are loaded and stored by memcpy.
template <class T, class Op>
void elementwise(void* dst, const void* a, const void* b, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    storeElement<T>(dst, i, Op::apply(loadElement<T>(a, i), loadElement<T>(b, i)));
  }
}

template <class T>
void averageIntegers(void* data, size_t count, int nranks) {
  for (size_t i = 0; i < count; ++i) {
    storeElement<T>(data, i, averageInteger(loadElement<T>(data, i), nranks));
  }
}

template <class F>
void averageFloats(void* data, size_t count, int nranks) {
  const F divisor = static_cast<F>(nranks);
  for (size_t i = 0; i < count; ++i) {
    storeElement<F>(data, i, averageFloat(loadElement<F>(data, i), divisor));
  }
}

template <class Codec>
void averageNarrow(void* data, size_t count, int nranks) {
  const float divisor = static_cast<float>(nranks);
  for (size_t i = 0; i < count; ++i) {
    storeElement<uint16_t>(
        data, i,
        Codec::narrow(averageFloat(Codec::widen(loadElement<uint16_t>(data, i)), divisor)));
  }
}

template <rinaDataType_t kType>
void fillRow(KernelTable& table) {
  using Ops = OpsFor<kType>;
  using T = typename Ops::Storage;
  table.reduce[kType][kKernelSum] = &elementwise<T, typename Ops::Sum>;
  table.reduce[kType][kKernelProd] = &elementwise<T, typename Ops::Prod>;
  table.reduce[kType][kKernelMin] = &elementwise<T, typename Ops::Min>;
  table.reduce[kType][kKernelMax] = &elementwise<T, typename Ops::Max>;
}

void copyWithLibrary(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }

KernelTable makeScalarTable() {
  KernelTable table{};
  table.isa = "scalar";
  table.copy = &copyWithLibrary;
  table.stream = &copyWithLibrary;
  fillRow<rinaInt8>(table);
  fillRow<rinaUint8>(table);
  fillRow<rinaInt32>(table);
  fillRow<rinaUint32>(table);
  fillRow<rinaInt64>(table);
  fillRow<rinaUint64>(table);
  fillRow<rinaFloat16>(table);
  fillRow<rinaBfloat16>(table);
  fillRow<rinaFloat32>(table);
  fillRow<rinaFloat64>(table);
  table.average[rinaInt8] = &averageIntegers<int8_t>;
  table.average[rinaUint8] = &averageIntegers<uint8_t>;
  table.average[rinaInt32] = &averageIntegers<int32_t>;
  table.average[rinaUint32] = &averageIntegers<uint32_t>;
  table.average[rinaInt64] = &averageIntegers<int64_t>;
  table.average[rinaUint64] = &averageIntegers<uint64_t>;
  table.average[rinaFloat16] = &averageNarrow<HalfCodec>;
  table.average[rinaBfloat16] = &averageNarrow<Bf16Codec>;
  table.average[rinaFloat32] = &averageFloats<float>;
  table.average[rinaFloat64] = &averageFloats<double>;
  return table;
}

}  // namespace

const KernelTable& scalarKernels() {
  static const KernelTable table = makeScalarTable();
  return table;
}

}  // namespace rina::reduce::detail
