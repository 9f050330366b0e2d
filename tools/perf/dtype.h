// Data types and reduction ops as the benchmark names and stores them. The
// tool keeps its own table (not lib/reduce's) so that what it checks does not
// depend on the code it checks.
#ifndef RINA_TOOLS_PERF_DTYPE_H_
#define RINA_TOOLS_PERF_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rina/rina.h"

namespace rina::perf {

const char* typeName(rinaDataType_t type);  // "float32"; "?" when out of range
size_t typeSize(rinaDataType_t type);       // bytes; 0 when out of range
bool isSignedType(rinaDataType_t type);     // every float type is signed
bool isFloatType(rinaDataType_t type);
bool parseType(std::string_view name, rinaDataType_t* type);

const char* opName(rinaRedOp_t op);  // "sum"; "?" when out of range
bool parseOp(std::string_view name, rinaRedOp_t* op);

// IEEE binary16 and bfloat16 bit patterns; float -> 16 bits rounds to
// nearest even, NaN stays NaN; 16 bits -> float is exact.
uint16_t floatToHalfBits(float value);
float halfBitsToFloat(uint16_t bits);
uint16_t floatToBfloat16Bits(float value);
float bfloat16BitsToFloat(uint16_t bits);

}  // namespace rina::perf

#endif  // RINA_TOOLS_PERF_DTYPE_H_
