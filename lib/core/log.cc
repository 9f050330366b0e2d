#include "core/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "core/config.h"

namespace rina {
namespace {

thread_local int tlsRank = -1;

LogLevel parseLevel(const std::string& v) {
  if (v == "INFO" || v == "info") return LogLevel::kInfo;
  if (v == "TRACE" || v == "trace") return LogLevel::kTrace;
  if (v == "NONE" || v == "none" || v == "VERSION") return LogLevel::kNone;
  return LogLevel::kWarn;
}

const char* levelName(LogLevel level) {
  switch (level) {
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kTrace:
      return "TRACE";
    default:
      return "";
  }
}

}  // namespace

LogLevel logLevel() {
  // Read through config so tests that reload the environment see changes.
  static thread_local uint64_t seenGeneration = ~0ull;
  static thread_local LogLevel cached = LogLevel::kWarn;
  uint64_t gen = config::generation();
  if (gen != seenGeneration) {
    cached = parseLevel(config::environment().debug);
    seenGeneration = gen;
  }
  return cached;
}

void setLogRank(int rank) { tlsRank = rank; }

void logMessage(LogLevel level, const char* fmt, ...) {
  char host[64] = {0};
  gethostname(host, sizeof(host) - 1);
  char* dot = std::strchr(host, '.');
  if (dot) *dot = '\0';
  char prefix[160];
  if (tlsRank >= 0) {
    std::snprintf(prefix, sizeof(prefix), "%s:%d:%ld [%d] RINA %s ", host, getpid(),
                  static_cast<long>(syscall(SYS_gettid)), tlsRank, levelName(level));
  } else {
    std::snprintf(prefix, sizeof(prefix), "%s:%d:%ld RINA %s ", host, getpid(),
                  static_cast<long>(syscall(SYS_gettid)), levelName(level));
  }
  char body[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(body, sizeof(body), fmt, ap);
  va_end(ap);
  // One write per line so lines from ranks and threads do not interleave.
  std::string line = std::string(prefix) + body + "\n";
  ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace rina
