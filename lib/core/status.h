// Status: a result code plus a message naming rank, peer, collective and step.
// Every internal function that can fail returns one; the C API turns it into
// a rinaResult_t and keeps the message for rinaCommGetLastError.
#ifndef RINA_LIB_CORE_STATUS_H_
#define RINA_LIB_CORE_STATUS_H_

#include <memory>
#include <string>
#include <utility>

#include "rina/rina.h"

namespace rina {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(rinaResult_t code, std::string message)
      : code_(code),
        message_(message.empty() ? nullptr : std::make_unique<std::string>(std::move(message))) {}
  Status(const Status& other) : code_(other.code_), message_(copyOf(other.message_)) {}
  Status& operator=(const Status& other) {
    if (this != &other) {
      code_ = other.code_;
      message_ = copyOf(other.message_);
    }
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  bool ok() const { return code_ == rinaSuccess; }
  rinaResult_t code() const { return code_; }
  const std::string& message() const { return message_ ? *message_ : emptyMessage(); }

  // Prefixes context ("allreduce #12: ") to the message; keeps the code.
  Status& prepend(const std::string& context) {
    if (message_) {
      message_->insert(0, context);
    } else {
      message_ = std::make_unique<std::string>(context);
    }
    return *this;
  }

 private:
  static std::unique_ptr<std::string> copyOf(const std::unique_ptr<std::string>& m) {
    return m ? std::make_unique<std::string>(*m) : nullptr;
  }
  static const std::string& emptyMessage() {
    static const std::string empty;
    return empty;
  }

  rinaResult_t code_ = rinaSuccess;
  // The message, held apart: a success (no message) is a code and a null
  // pointer, so the many ok results along a message's path cost a store
  // and a test each, not a string's construction and destruction.
  std::unique_ptr<std::string> message_;
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
