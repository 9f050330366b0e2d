#include "wire/ctrl_auth.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace rina::ina {
namespace {

constexpr size_t kMinSecretBytes = 16;
constexpr size_t kMaxSecretBytes = 4096;
constexpr size_t kNonceHexDigits = 32;
constexpr size_t kMacHexDigits = 64;

std::string hex(const unsigned char* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 15];
  }
  return out;
}

bool isHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

bool readSecretFile(const std::string& path, std::string* secret, std::string* error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot open " + path + ": " + strerror(errno);
    return false;
  }
  struct stat st {};
  std::string text;
  bool ok = ::fstat(fd, &st) == 0;
  if (!ok) {
    *error = "cannot stat " + path + ": " + strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    *error = path + " is not a regular file";
    ok = false;
  } else if (st.st_mode & 077) {
    *error = path + " is readable or writable by others than its owner (chmod 600 it)";
    ok = false;
  }
  char buf[kMaxSecretBytes + 2];
  while (ok) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = "cannot read " + path + ": " + strerror(errno);
      ok = false;
      break;
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxSecretBytes + 1) break;
  }
  ::close(fd);
  if (!ok) return false;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.size() < kMinSecretBytes || text.size() > kMaxSecretBytes) {
    *error = path + " must hold " + std::to_string(kMinSecretBytes) + " to " +
             std::to_string(kMaxSecretBytes) + " bytes of secret";
    return false;
  }
  *secret = std::move(text);
  return true;
}

bool writeSecretFile(const std::string& path, std::string* error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = "cannot create " + path + ": " + strerror(errno);
    return false;
  }
  std::string text = randomHex(32) + "\n";
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (!ok) *error = "cannot write " + path + ": " + strerror(errno);
  ok = ::close(fd) == 0 && ok;
  if (!ok) ::unlink(path.c_str());
  return ok;
}

std::string hmacSha256Hex(std::string_view key, std::string_view message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
  return hex(mac, len);
}

std::string randomHex(size_t n) {
  std::string bytes(n, '\0');
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::getrandom(bytes.data() + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) abort();  // no kernel randomness: nothing safe to fall back to
    got += static_cast<size_t>(r);
  }
  return hex(reinterpret_cast<const unsigned char*>(bytes.data()), n);
}

std::string signCtrlRequest(std::string_view secret, std::string_view nonce, uint64_t seq,
                            std::string_view request) {
  std::string body(request);
  body += " seq=" + std::to_string(seq);
  std::string message(nonce);
  message += ' ';
  message += body;
  return body + " mac=" + hmacSha256Hex(secret, message);
}

bool parseChallengeReply(std::string_view line, std::string* nonce) {
  constexpr std::string_view kPrefix = "OK CHALLENGE nonce=";
  if (line.substr(0, kPrefix.size()) != kPrefix) return false;
  std::string_view n = line.substr(kPrefix.size());
  if (n.size() != kNonceHexDigits || !isHex(n)) return false;
  *nonce = std::string(n);
  return true;
}

std::string redactTokens(std::string_view line) {
  std::string out;
  size_t pos = 0;
  for (;;) {
    size_t t = line.find("token=", pos);
    if (t == std::string_view::npos) break;
    size_t end = t + 6;
    while (end < line.size() && line[end] != ' ') ++end;
    out.append(line.substr(pos, t + 6 - pos));
    out += '*';
    pos = end;
  }
  out.append(line.substr(pos));
  return out;
}

std::string CtrlAuthSession::challenge() {
  nonce_ = randomHex(kNonceHexDigits / 2);
  lastSeq_ = 0;
  return "OK CHALLENGE nonce=" + nonce_;
}

bool CtrlAuthSession::check(std::string_view line, std::string_view* request, bool* authenticated,
                            std::string* error) {
  *authenticated = false;
  size_t macAt = line.rfind(" mac=");
  if (macAt == std::string_view::npos) {
    *request = line;
    return true;
  }
  std::string_view mac = line.substr(macAt + 5);
  std::string_view body = line.substr(0, macAt);
  size_t seqAt = body.rfind(" seq=");
  uint64_t seq = 0;
  if (seqAt == std::string_view::npos) {
    *error = "a signed request needs seq= before mac=";
    return false;
  }
  std::string_view seqText = body.substr(seqAt + 5);
  auto [end, ec] = std::from_chars(seqText.data(), seqText.data() + seqText.size(), seq);
  if (ec != std::errc() || end != seqText.data() + seqText.size() || seq == 0) {
    *error = "seq must be a positive integer";
    return false;
  }
  if (mac.size() != kMacHexDigits || !isHex(mac)) {
    *error = "mac must be 64 lowercase hex digits";
    return false;
  }
  if (nonce_.empty()) {
    *error = "no challenge on this connection (send CHALLENGE first)";
    return false;
  }
  std::string message = nonce_;
  message += ' ';
  message += body;
  std::string want = hmacSha256Hex(secret_, message);
  if (CRYPTO_memcmp(want.data(), mac.data(), kMacHexDigits) != 0) {
    *error = "bad mac (wrong secret, or signed for another connection's challenge)";
    return false;
  }
  if (seq <= lastSeq_) {
    *error = "seq " + std::to_string(seq) + " is not above the last one taken (" +
             std::to_string(lastSeq_) + "): a replay";
    return false;
  }
  lastSeq_ = seq;
  *request = body.substr(0, seqAt);
  *authenticated = true;
  return true;
}

}  // namespace rina::ina
