#include <cmath>
#include <cstring>
#include <vector>

#include "algo/flat/flat.h"
#include "reduce/half.h"

namespace rina::algo {
namespace {

// out[i] = in[i] * scale, widening half types to float and rounding once.
void scaleInto(rinaDataType_t type, const void* in, void* out, size_t count, double scale) {
  switch (type) {
    case rinaFloat64: {
      const double* a = static_cast<const double*>(in);
      double* b = static_cast<double*>(out);
      for (size_t i = 0; i < count; ++i) b[i] = a[i] * scale;
      break;
    }
    case rinaFloat32: {
      const float* a = static_cast<const float*>(in);
      float* b = static_cast<float*>(out);
      const float s = static_cast<float>(scale);
      for (size_t i = 0; i < count; ++i) b[i] = a[i] * s;
      break;
    }
    case rinaFloat16: {
      const uint16_t* a = static_cast<const uint16_t*>(in);
      uint16_t* b = static_cast<uint16_t*>(out);
      const float s = static_cast<float>(scale);
      for (size_t i = 0; i < count; ++i)
        b[i] = reduce::detail::floatToHalfBits(reduce::detail::halfBitsToFloat(a[i]) * s);
      break;
    }
    case rinaBfloat16: {
      const uint16_t* a = static_cast<const uint16_t*>(in);
      uint16_t* b = static_cast<uint16_t*>(out);
      const float s = static_cast<float>(scale);
      for (size_t i = 0; i < count; ++i)
        b[i] = reduce::detail::floatToBf16Bits(reduce::detail::bf16BitsToFloat(a[i]) * s);
      break;
    }
    default:
      break;
  }
}

size_t elementSize(rinaDataType_t type) {
  return type == rinaFloat64 ? 8 : type == rinaFloat32 ? 4 : 2;
}

}  // namespace

Status weightedAllReduce(const AllReduceFn& allReduce, const void* send, void* recv, size_t count,
                         rinaDataType_t type, double weight) {
  if (type != rinaFloat16 && type != rinaBfloat16 && type != rinaFloat32 && type != rinaFloat64) {
    return errorf(rinaInvalidArgument, "weighted allreduce: datatype %d is not a floating type",
                  static_cast<int>(type));
  }
  const bool bad = !std::isfinite(weight) || weight < 0;
  double local[2] = {bad ? 0.0 : weight, bad ? 1.0 : 0.0}, total[2];
  RINA_TRY(allReduce(local, total, 2, rinaFloat64, rinaSum));
  if (total[1] > 0) {
    return errorf(rinaInvalidArgument,
                  "weighted allreduce: %.0f rank(s) passed a negative or non-finite weight%s",
                  total[1], bad ? " (this rank among them)" : "");
  }
  if (!(total[0] > 0)) {
    return errorf(rinaInvalidArgument, "weighted allreduce: the weights sum to %g, not > 0",
                  total[0]);
  }
  std::vector<char> scaled(count * elementSize(type));
  scaleInto(type, send, scaled.data(), count, weight / total[0]);
  return allReduce(scaled.data(), recv, count, type, rinaSum);
}

}  // namespace rina::algo
