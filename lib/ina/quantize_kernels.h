// The per-element loops of quantize.cc in two versions: scalar (the
// reference, any CPU) and AVX2 (quantize_avx2.cc), which quantize.cc picks
// once by asking the CPU. Both give the same bits.
#ifndef RINA_LIB_INA_QUANTIZE_KERNELS_H_
#define RINA_LIB_INA_QUANTIZE_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace rina::ina::detail {

bool cpuHasAvx2();

// The largest |x[i]| as float bits into *maxBits; false when some |x[i]| is
// NaN, Inf or at least 2^126 (the slice goes to the hosts).
bool maxMagnitudeBitsScalar(const float* x, size_t n, uint32_t* maxBits);
bool maxMagnitudeBitsAvx2(const float* x, size_t n, uint32_t* maxBits);
// q[i] = x[i] * scale rounded to nearest even (|x[i] * scale| <= 2^30).
void quantizeScalar(const float* x, size_t n, double scale, int32_t* q);
void quantizeAvx2(const float* x, size_t n, double scale, int32_t* q);
// y[i] = sum[i] * scale, rounded once to float.
void dequantizeScalar(const int32_t* sum, size_t n, double scale, float* y);
void dequantizeAvx2(const int32_t* sum, size_t n, double scale, float* y);

// Which versions quantize.cc uses ("avx2" or "scalar"), for tests to compare.
const char* quantizeIsaName();

}  // namespace rina::ina::detail

#endif  // RINA_LIB_INA_QUANTIZE_KERNELS_H_
