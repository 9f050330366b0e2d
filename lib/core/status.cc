#include "core/status.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace rina {
namespace {

std::string vformat(const char* fmt, va_list ap) {
  char small[512];
  va_list copy;
  va_copy(copy, ap);
  int n = std::vsnprintf(small, sizeof(small), fmt, copy);
  va_end(copy);
  if (n < 0) return fmt;
  if (static_cast<size_t>(n) < sizeof(small)) return std::string(small, n);
  std::string big(static_cast<size_t>(n) + 1, '\0');
  std::vsnprintf(big.data(), big.size(), fmt, ap);
  big.resize(static_cast<size_t>(n));
  return big;
}

}  // namespace

Status errorf(rinaResult_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  return Status(code, std::move(msg));
}

Status systemErrorf(int err, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  msg += ": ";
  msg += std::strerror(err);
  return Status(rinaSystemError, std::move(msg));
}

}  // namespace rina
