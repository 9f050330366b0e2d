// Logging controlled by RINA_DEBUG (WARN, the default, INFO or TRACE), in the
// NCCL manner: "host:pid:tid [rank] RINA INFO message" on stderr.
#ifndef RINA_LIB_CORE_LOG_H_
#define RINA_LIB_CORE_LOG_H_

namespace rina {

enum class LogLevel : int { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

LogLevel logLevel();
// The rank shown in this thread's log lines (-1: none).
void setLogRank(int rank);
void logMessage(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace rina

#define RINA_LOG_AT(level, ...)                 \
  do {                                          \
    if (::rina::logLevel() >= (level)) {        \
      ::rina::logMessage((level), __VA_ARGS__); \
    }                                           \
  } while (0)
#define RINA_WARN(...) RINA_LOG_AT(::rina::LogLevel::kWarn, __VA_ARGS__)
#define RINA_INFO(...) RINA_LOG_AT(::rina::LogLevel::kInfo, __VA_ARGS__)
#define RINA_TRACE(...) RINA_LOG_AT(::rina::LogLevel::kTrace, __VA_ARGS__)

#endif  // RINA_LIB_CORE_LOG_H_
