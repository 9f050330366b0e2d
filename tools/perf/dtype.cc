#include "perf/dtype.h"

#include <array>
#include <bit>

namespace rina::perf {
namespace {

struct TypeInfo {
  const char* name;
  size_t size;
  bool isSigned;
  bool isFloat;
};

// Indexed by rinaDataType_t.
constexpr std::array<TypeInfo, rinaNumTypes> kTypes = {{
    {"int8", 1, true, false},
    {"uint8", 1, false, false},
    {"int32", 4, true, false},
    {"uint32", 4, false, false},
    {"int64", 8, true, false},
    {"uint64", 8, false, false},
    {"float16", 2, true, true},
    {"bfloat16", 2, true, true},
    {"float32", 4, true, true},
    {"float64", 8, true, true},
}};

constexpr std::array<const char*, rinaNumOps> kOps = {"sum", "prod", "min", "max", "avg"};

bool validType(rinaDataType_t type) { return type >= 0 && type < rinaNumTypes; }

}  // namespace

const char* typeName(rinaDataType_t type) { return validType(type) ? kTypes[type].name : "?"; }
size_t typeSize(rinaDataType_t type) { return validType(type) ? kTypes[type].size : 0; }
bool isSignedType(rinaDataType_t type) { return validType(type) && kTypes[type].isSigned; }
bool isFloatType(rinaDataType_t type) { return validType(type) && kTypes[type].isFloat; }

bool parseType(std::string_view name, rinaDataType_t* type) {
  for (int t = 0; t < rinaNumTypes; ++t) {
    if (name == kTypes[t].name) {
      *type = static_cast<rinaDataType_t>(t);
      return true;
    }
  }
  return false;
}

const char* opName(rinaRedOp_t op) { return op >= 0 && op < rinaNumOps ? kOps[op] : "?"; }

bool parseOp(std::string_view name, rinaRedOp_t* op) {
  for (int o = 0; o < rinaNumOps; ++o) {
    if (name == kOps[o]) {
      *op = static_cast<rinaRedOp_t>(o);
      return true;
    }
  }
  return false;
}

uint16_t floatToHalfBits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t absBits = bits & 0x7FFFFFFFu;
  if (absBits > 0x7F800000u) {  // NaN: keep it quiet and non-zero
    return static_cast<uint16_t>(sign | 0x7E00u | ((absBits >> 13) & 0x3FFu));
  }
  if (absBits >= 0x47800000u) {  // >= 65536 rounds to infinity; so does inf
    // 65520 and above round to inf; below 65536 is handled by the normal path.
    return static_cast<uint16_t>(sign | 0x7C00u);
  }
  if (absBits < 0x38800000u) {  // below 2^-14: subnormal half or zero
    // Scale so that the half's subnormal step (2^-24) becomes 1, in float
    // arithmetic: float's rounding to integer is round-to-nearest-even.
    const float scaled = std::bit_cast<float>(absBits) * 16777216.0f;  // * 2^24
    const float rounded = scaled + 8388608.0f - 8388608.0f;            // rne to integer
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(rounded));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits.
  uint32_t half = (absBits - 0x38000000u) >> 13;
  const uint32_t dropped = absBits & 0x1FFFu;
  if (dropped > 0x1000u || (dropped == 0x1000u && (half & 1u))) {
    ++half;  // may carry into the exponent, up to infinity: both correct
  }
  return static_cast<uint16_t>(sign | half);
}

float halfBitsToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  const uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) / 16777216.0f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1F) {
    return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t floatToBfloat16Bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    return static_cast<uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
  }
  const uint32_t roundingBias = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + roundingBias) >> 16);
}

float bfloat16BitsToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

}  // namespace rina::perf
