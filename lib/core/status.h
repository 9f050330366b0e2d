// Status: a result code plus a message naming rank, peer, collective and step.
// Every internal function that can fail returns one; the C API turns it into
// a rinaResult_t and keeps the message for rinaCommGetLastError.
#ifndef RINA_LIB_CORE_STATUS_H_
#define RINA_LIB_CORE_STATUS_H_

#include <string>
#include <utility>

#include "rina/rina.h"

namespace rina {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(rinaResult_t code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == rinaSuccess; }
  rinaResult_t code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes context ("allreduce #12: ") to the message; keeps the code.
  Status& prepend(const std::string& context) {
    message_ = context + message_;
    return *this;
  }

 private:
  rinaResult_t code_ = rinaSuccess;
  std::string message_;
};

// printf-style constructor: errorf(rinaRemoteError, "peer %d closed", p).
Status errorf(rinaResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// As errorf(rinaSystemError, ...) with ": strerror(err)" appended.
Status systemErrorf(int err, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace rina

#define RINA_TRY(expr)                   \
  do {                                   \
    ::rina::Status rina_try_s_ = (expr); \
    if (!rina_try_s_.ok()) {             \
      return rina_try_s_;                \
    }                                    \
  } while (0)

#endif  // RINA_LIB_CORE_STATUS_H_
