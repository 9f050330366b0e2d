// The allreduce algorithms by name (RINA_ALGO, rinaCommSetAlgorithm): one
// table gives each its name, its enum value and its count in
// rinaCommGetStats, and parsing, the names printed and the statistics read
// it. A new algorithm is a row here (and its case in dispatch.cc).
#ifndef RINA_LIB_ALGO_ENGINE_ALGORITHM_H_
#define RINA_LIB_ALGO_ENGINE_ALGORITHM_H_

#include <cstdint>
#include <iterator>
#include <string>

#include "core/status.h"
#include "rina/rina.h"

namespace rina::algo {

// Users name them as the table below says: kInaMemberRing (INA racks and
// autonomous workers as the members of one ring) is "rina", kPsIna "ps-ina".
enum class Algorithm { kAuto, kRing, kRecursiveDoubling, kHier, kInaMemberRing, kPsIna, kOneShot };
inline constexpr int kAlgorithms = 7;

struct AlgorithmEntry {
  Algorithm algorithm;
  const char* name;                  // as RINA_ALGO and rinaCommSetAlgorithm spell it
  uint64_t rinaCommStats_t::*calls;  // its calls in rinaCommGetStats; null: never runs itself
};

// In the order names are listed (RINA_ALGO's choices, error messages).
inline constexpr AlgorithmEntry kAlgorithmTable[] = {
    {Algorithm::kAuto, "auto", nullptr},
    {Algorithm::kRing, "ring", &rinaCommStats_t::callsRing},
    {Algorithm::kRecursiveDoubling, "rd", &rinaCommStats_t::callsRd},
    {Algorithm::kOneShot, "oneshot", &rinaCommStats_t::callsOneShot},
    {Algorithm::kHier, "hier", &rinaCommStats_t::callsHier},
    {Algorithm::kInaMemberRing, "rina", &rinaCommStats_t::callsRina},
    {Algorithm::kPsIna, "ps-ina", &rinaCommStats_t::callsPsIna},
};

// Every enum value has one row.
constexpr bool algorithmTableComplete() {
  if (std::size(kAlgorithmTable) != kAlgorithms) return false;
  for (int a = 0; a < kAlgorithms; ++a) {
    int rows = 0;
    for (const AlgorithmEntry& e : kAlgorithmTable) rows += static_cast<int>(e.algorithm) == a;
    if (rows != 1) return false;
  }
  return true;
}
static_assert(algorithmTableComplete(), "kAlgorithmTable needs one row per Algorithm");

Status parseAlgorithm(const std::string& name, Algorithm* out);
// "auto" for a value outside the table (a peer's header).
const char* algorithmName(Algorithm a);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_ENGINE_ALGORITHM_H_
