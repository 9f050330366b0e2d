#include "algo/engine/algorithm.h"

#include <string_view>

#include "core/config.h"

namespace rina::algo {
namespace {

// The table's names joined as "auto|ring|...".
constexpr bool choicesAreTableNames(std::string_view choices) {
  for (const AlgorithmEntry& e : kAlgorithmTable) {
    const std::string_view name = e.name;
    if (choices.substr(0, name.size()) != name) return false;
    choices.remove_prefix(name.size());
    if (&e != std::end(kAlgorithmTable) - 1) {
      if (choices.empty() || choices.front() != '|') return false;
      choices.remove_prefix(1);
    }
  }
  return choices.empty();
}
// The knob table (core, which sits below algo and cannot read this one)
// lists RINA_ALGO's choices; they must be this table's names in its order.
static_assert(choicesAreTableNames(config::kAlgorithmChoices),
              "config::kAlgorithmChoices must list kAlgorithmTable's names in its order");

}  // namespace

Status parseAlgorithm(const std::string& name, Algorithm* out) {
  std::string known;
  for (const AlgorithmEntry& a : kAlgorithmTable) {
    if (name == a.name) {
      *out = a.algorithm;
      return {};
    }
    known += known.empty() ? "" : ", ";
    known += a.name;
  }
  return errorf(rinaInvalidArgument, "unknown algorithm '%s' (known: %s)", name.c_str(),
                known.c_str());
}

const char* algorithmName(Algorithm a) {
  for (const AlgorithmEntry& e : kAlgorithmTable) {
    if (e.algorithm == a) return e.name;
  }
  return "auto";
}

}  // namespace rina::algo
