#include "switchd/flag_parser.h"

#include <initializer_list>
#include <utility>

namespace rina::switchd {
namespace {

// program, ": ", then parts (appended to one string: gcc 12 at -O3 warns
// falsely on a temporary prepended to).
std::string message(const std::string& program, std::initializer_list<std::string_view> parts) {
  std::string text = program;
  text += ": ";
  for (std::string_view p : parts) text += p;
  return text;
}

}  // namespace

void FlagParser::addSwitch(const std::string& name, std::function<void()> set) {
  flags_[name] = Flag{false, [set = std::move(set)](std::string_view) {
                        set();
                        return true;
                      }};
}

void FlagParser::addValue(const std::string& name, std::function<bool(std::string_view)> set) {
  flags_[name] = Flag{true, std::move(set)};
}

void FlagParser::addText(const std::string& name, std::string* out) {
  addValue(name, [out](std::string_view v) {
    *out = std::string(v);
    return !out->empty();
  });
}

FlagParser::Outcome FlagParser::parse(int argc, const char* const* argv, std::string* error) const {
  for (int i = 1; i < argc; ++i) {
    const std::string_view name = argv[i];
    if (name == "--help" || name == "-h") return Outcome::kHelp;
    const auto flag = flags_.find(name);
    if (flag != flags_.end() && !flag->second.takesValue) {
      flag->second.set({});
      continue;
    }
    if (i + 1 >= argc) {
      *error = message(program_, {argv[i], " needs a value"});
      return Outcome::kError;
    }
    const std::string_view value = argv[++i];
    if (flag == flags_.end()) {
      *error = message(program_, {"unknown flag ", argv[i - 1]});
      return Outcome::kError;
    }
    if (!flag->second.set(value)) {
      *error = message(program_, {"bad value for ", argv[i - 1], ": ", argv[i]});
      return Outcome::kError;
    }
  }
  return Outcome::kParsed;
}

}  // namespace rina::switchd
