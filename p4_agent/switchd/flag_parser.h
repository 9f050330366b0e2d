// The command lines of the switch-side programs (rina-switchd,
// rina-bmv2ctl): bare switches and `--flag VALUE` pairs in any order, a later
// flag overriding an earlier one, each value checked by its flag's rule, and
// every error in one form that starts with the program's name.
#ifndef RINA_P4_AGENT_SWITCHD_FLAG_PARSER_H_
#define RINA_P4_AGENT_SWITCHD_FLAG_PARSER_H_

#include <charconv>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace rina::switchd {

// text as a whole number of T (std::from_chars: no sign on unsigned types,
// no spaces, nothing after it).
template <typename T>
bool parseNumber(std::string_view text, T* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

class FlagParser {
 public:
  // program: the start of every error ("rina-switchd").
  explicit FlagParser(std::string program) : program_(std::move(program)) {}

  // A flag without a value.
  void addSwitch(const std::string& name, std::function<void()> set);
  // A flag with a value; set says whether the value is good.
  void addValue(const std::string& name, std::function<bool(std::string_view)> set);
  // A number within [min, max].
  template <typename T>
  void addNumber(const std::string& name, T* out, T min, T max) {
    addValue(name, [out, min, max](std::string_view v) {
      return parseNumber(v, out) && *out >= min && *out <= max;
    });
  }
  // A number of at least min (no upper bound but the type's).
  template <typename T>
  void addNumber(const std::string& name, T* out, T min) {
    using Limits = std::numeric_limits<T>;
    addNumber(name, out, min, Limits::has_infinity ? Limits::infinity() : Limits::max());
  }
  // Any text but the empty one.
  void addText(const std::string& name, std::string* out);

  enum class Outcome { kParsed, kHelp, kError };
  // argv[1 .. argc) in order. kHelp at --help or -h (what follows is not
  // read). kError with *error, one of
  //   PROGRAM: FLAG needs a value        (the last argument, unless a switch)
  //   PROGRAM: unknown flag FLAG
  //   PROGRAM: bad value for FLAG: VALUE
  // Flags before the error have been set.
  Outcome parse(int argc, const char* const* argv, std::string* error) const;

 private:
  struct Flag {
    bool takesValue;
    std::function<bool(std::string_view)> set;
  };
  std::string program_;
  std::map<std::string, Flag, std::less<>> flags_;
};

}  // namespace rina::switchd

#endif  // RINA_P4_AGENT_SWITCHD_FLAG_PARSER_H_
