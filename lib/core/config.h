// Every RINA_* environment knob, declared once (config.cc) with its default
// and a doc string; values are read once and cached. printConfig() lists them
// at INFO and reports RINA_* variables that no knob declares.
#ifndef RINA_LIB_CORE_CONFIG_H_
#define RINA_LIB_CORE_CONFIG_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace rina::config {

struct Knob {
  const char* name;          // "RINA_TIMEOUT_MS"
  const char* defaultValue;  // as text; "" = unset
  const char* doc;           // one line, shown by printConfig and in docs/knobs.md
};

std::span<const Knob> knobs();

// The value of a declared knob: the environment's, else the default.
// Calling these with an undeclared name is a bug and aborts.
std::string stringValue(std::string_view name);
// Integer value; accepts K/M/G suffixes (powers of 1024). A malformed value
// is reported at WARN once and the default is used.
int64_t intValue(std::string_view name);

// Logs every knob and any unknown RINA_* variable, once per process.
void printConfig();

// Re-reads the environment (tests that set variables in-process).
void reloadForTesting();
// Bumped by reloadForTesting; lets other caches (the log level) refresh.
uint64_t generation();

}  // namespace rina::config

#endif  // RINA_LIB_CORE_CONFIG_H_
