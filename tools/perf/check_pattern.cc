#include "perf/check_pattern.h"

#include <algorithm>
#include <limits>

#include "perf/dtype.h"

namespace rina::perf {
namespace {

// Inputs stay small: enough variety to catch misplaced data, far from any
// type's limits.
constexpr int64_t kValueCap = 100;

// Largest integer magnitude up to which every integer is exact in the type
// (for integers: no overflow).
int64_t exactIntegerLimit(rinaDataType_t type) {
  switch (type) {
    case rinaInt8:
      return 127;
    case rinaUint8:
      return 255;
    case rinaInt32:
      return std::numeric_limits<int32_t>::max();
    case rinaUint32:
      return std::numeric_limits<uint32_t>::max();
    case rinaFloat16:
      return 2048;
    case rinaBfloat16:
      return 256;
    case rinaFloat32:
      return int64_t{1} << 24;
    case rinaFloat64:
      return int64_t{1} << 53;
    default:
      return int64_t{1} << 62;  // int64, uint64
  }
}

// Most factors of two a product may hold (|product| <= 2^k stays exact and,
// for integers, in range; float16's largest finite value is 65504).
int64_t maxTwos(rinaDataType_t type) {
  switch (type) {
    case rinaInt8:
      return 6;
    case rinaUint8:
      return 7;
    case rinaUint32:
      return 31;
    case rinaFloat16:
      return 15;
    case rinaInt64:
    case rinaUint64:
    case rinaFloat64:
      return 62;
    default:
      return 30;  // int32, bfloat16, float32
  }
}

// Ranks r in [0, n) with r % period == residue.
int64_t countResidue(int64_t n, int64_t period, int64_t residue) {
  return residue < n ? (n - 1 - residue) / period + 1 : 0;
}

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

CheckPattern::CheckPattern(rinaDataType_t type, rinaRedOp_t op, int nranks)
    : type_(type), op_(op), nranks_(std::max(nranks, 1)), signed_(isSignedType(type)) {
  const int64_t n = nranks_;
  if (op == rinaProd) {
    twoPeriod_ = std::max<int64_t>(2, (n + maxTwos(type) - 1) / maxTwos(type));
    magnitudeBound_ = int64_t{1} << ((n + twoPeriod_ - 1) / twoPeriod_);
    return;
  }
  const bool sums = op == rinaSum || op == rinaAvg;
  // Every value has magnitude <= range; sums of n of them stay exact.
  const int64_t range = std::min(kValueCap, exactIntegerLimit(type) / (sums ? n : 1));
  magnitudeBound_ = sums ? range * n : range;
  if (op == rinaAvg) {
    // c(k) in [0, spread]; c(k) - c(k+1) in [-spread, spread].
    const int64_t spread = range / 3;
    bPeriod_ = spread + 1;
    aLow_ = signed_ ? -(range - spread) : spread;
    aSpan_ = signed_ ? 2 * (range - spread) + 1 : range - 2 * spread + 1;
    return;
  }
  const int64_t bWidth = range / 2;  // b(k) takes bWidth + 1 values
  const int64_t aMax = range - bWidth;
  bPeriod_ = bWidth + 1;
  bShift_ = signed_ ? bWidth / 2 : 0;
  aLow_ = signed_ ? -aMax : 0;
  aSpan_ = signed_ ? 2 * aMax + 1 : aMax + 1;
  bMin_ = std::numeric_limits<int64_t>::max();
  bMax_ = std::numeric_limits<int64_t>::min();
  for (int64_t k = 0; k < n; ++k) {
    bSum_ += offset(k);
    bMin_ = std::min(bMin_, offset(k));
    bMax_ = std::max(bMax_, offset(k));
  }
}

int64_t CheckPattern::hashed(size_t index) const {
  return aLow_ + static_cast<int64_t>(mix(index) % static_cast<uint64_t>(aSpan_));
}

int64_t CheckPattern::offset(int64_t k) const { return k % bPeriod_ - bShift_; }

int64_t CheckPattern::input(int rank, size_t index) const {
  const int64_t k = static_cast<int64_t>((rank + index) % static_cast<size_t>(nranks_));
  switch (op_) {
    case rinaProd: {
      const int64_t twoResidue = static_cast<int64_t>(index % static_cast<size_t>(twoPeriod_));
      const int64_t magnitude = (rank + twoResidue) % twoPeriod_ == 0 ? 2 : 1;
      const bool negative = signed_ && (rank + 3 * static_cast<int64_t>(index % 5)) % 5 == 1;
      return negative ? -magnitude : magnitude;
    }
    case rinaAvg:
      return hashed(index) + offset(k) - offset((k + 1) % nranks_);
    default:
      return hashed(index) + offset(k);
  }
}

int64_t CheckPattern::expected(size_t index) const {
  const int64_t n = nranks_;
  switch (op_) {
    case rinaSum:
      return n * hashed(index) + bSum_;
    case rinaAvg:
      return hashed(index);
    case rinaMin:
      return hashed(index) + bMin_;
    case rinaMax:
      return hashed(index) + bMax_;
    case rinaProd: {
      const int64_t i = static_cast<int64_t>(index % static_cast<size_t>(twoPeriod_));
      const int64_t twos = countResidue(n, twoPeriod_, (twoPeriod_ - i) % twoPeriod_);
      int64_t negatives = 0;
      if (signed_) {
        negatives = countResidue(n, 5, ((1 - 3 * static_cast<int64_t>(index % 5)) % 5 + 5) % 5);
      }
      const int64_t magnitude = int64_t{1} << twos;
      return negatives % 2 ? -magnitude : magnitude;
    }
    default:
      return 0;
  }
}

namespace {

// How a value is stored in, and read back from, an element of each type.
template <typename T>
struct PlainCodec {
  using Storage = T;
  static Storage encode(int64_t v) { return static_cast<T>(v); }
  static bool equals(Storage x, int64_t v) { return x == static_cast<T>(v); }
};
struct HalfCodec {
  using Storage = uint16_t;
  static Storage encode(int64_t v) { return floatToHalfBits(static_cast<float>(v)); }
  static bool equals(Storage x, int64_t v) { return halfBitsToFloat(x) == static_cast<float>(v); }
};
struct Bfloat16Codec {
  using Storage = uint16_t;
  static Storage encode(int64_t v) { return floatToBfloat16Bits(static_cast<float>(v)); }
  static bool equals(Storage x, int64_t v) {
    return bfloat16BitsToFloat(x) == static_cast<float>(v);
  }
};

template <typename Codec, typename ValueAt>
void fillWith(void* buf, size_t count, const ValueAt& valueAt) {
  auto* out = static_cast<typename Codec::Storage*>(buf);
  for (size_t i = 0; i < count; ++i) {
    out[i] = Codec::encode(valueAt(i));
  }
}

template <typename Codec, typename ValueAt>
size_t countDifferent(const void* buf, size_t count, const ValueAt& valueAt) {
  const auto* in = static_cast<const typename Codec::Storage*>(buf);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    wrong += Codec::equals(in[i], valueAt(i)) ? 0 : 1;
  }
  return wrong;
}

// Calls fn.template operator()<Codec>() for the codec of type.
template <typename Fn>
auto withCodec(rinaDataType_t type, const Fn& fn) {
  switch (type) {
    case rinaInt8:
      return fn.template operator()<PlainCodec<int8_t>>();
    case rinaUint8:
      return fn.template operator()<PlainCodec<uint8_t>>();
    case rinaInt32:
      return fn.template operator()<PlainCodec<int32_t>>();
    case rinaUint32:
      return fn.template operator()<PlainCodec<uint32_t>>();
    case rinaInt64:
      return fn.template operator()<PlainCodec<int64_t>>();
    case rinaUint64:
      return fn.template operator()<PlainCodec<uint64_t>>();
    case rinaFloat16:
      return fn.template operator()<HalfCodec>();
    case rinaBfloat16:
      return fn.template operator()<Bfloat16Codec>();
    case rinaFloat32:
      return fn.template operator()<PlainCodec<float>>();
    default:
      return fn.template operator()<PlainCodec<double>>();
  }
}

}  // namespace

void fillInput(const CheckPattern& pattern, int rank, void* buf, size_t count) {
  auto valueAt = [&](size_t i) { return pattern.input(rank, i); };
  withCodec(pattern.type(), [&]<typename Codec>() { fillWith<Codec>(buf, count, valueAt); });
}

size_t countWrongResults(const CheckPattern& pattern, const void* buf, size_t count) {
  auto valueAt = [&](size_t i) { return pattern.expected(i); };
  return withCodec(pattern.type(),
                   [&]<typename Codec>() { return countDifferent<Codec>(buf, count, valueAt); });
}

size_t countChangedInputs(const CheckPattern& pattern, int rank, const void* buf, size_t count) {
  auto valueAt = [&](size_t i) { return pattern.input(rank, i); };
  return withCodec(pattern.type(),
                   [&]<typename Codec>() { return countDifferent<Codec>(buf, count, valueAt); });
}

}  // namespace rina::perf
