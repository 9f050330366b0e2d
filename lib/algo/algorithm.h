// The allreduce algorithms by name (RINA_ALGO, rinaCommSetAlgorithm).
#ifndef RINA_LIB_ALGO_ALGORITHM_H_
#define RINA_LIB_ALGO_ALGORITHM_H_

#include <string>

#include "core/status.h"

namespace rina::algo {

enum class Algorithm { kAuto, kRing, kRecursiveDoubling, kHier, kRina, kPsIna, kOneShot };
inline constexpr int kAlgorithms = 7;
Status parseAlgorithm(const std::string& name, Algorithm* out);
const char* algorithmName(Algorithm a);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_ALGORITHM_H_
