// Authentication of CTRL requests with a switch's admin secret (a file that
// rina-switchd --auth-file and its clients read): the secret never goes on
// the wire. A client asks for a challenge on its connection,
//
//   CHALLENGE                              -> OK CHALLENGE nonce=<32 hex digits>
//
// then signs each request with a counter that grows on that connection:
//
//   <request> seq=N mac=<64 hex digits>
//   mac = HMAC-SHA256(secret, "<nonce> <request> seq=N")
//
// The nonce is fresh per connection (a request signed for one connection
// means nothing on another) and the counter must grow (a request replayed
// on its own connection is refused).
#ifndef RINA_LIB_WIRE_CTRL_AUTH_H_
#define RINA_LIB_WIRE_CTRL_AUTH_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace rina::ina {

inline constexpr std::string_view kCtrlChallengeVerb = "CHALLENGE";
inline constexpr std::string_view kCtrlAuthRefusal = "ERR AUTH";

// Reads a secret file: at least 16 bytes (a trailing newline is not part of
// it), at most 4 KiB, readable by its owner only (no group or other bits).
// On failure says why in *error.
bool readSecretFile(const std::string& path, std::string* secret, std::string* error);
// Writes a fresh random secret (32 bytes, as 64 hex digits) to a new file,
// mode 0600. False (and *error) when the file exists or cannot be written.
bool writeSecretFile(const std::string& path, std::string* error);

// HMAC-SHA256 of message under key, as 64 lowercase hex digits.
std::string hmacSha256Hex(std::string_view key, std::string_view message);
// n random bytes as 2n hex digits (the kernel's generator).
std::string randomHex(size_t n);

// The signed form of a request line for a connection's nonce.
std::string signCtrlRequest(std::string_view secret, std::string_view nonce, uint64_t seq,
                            std::string_view request);
// Parses "OK CHALLENGE nonce=HEX" (32 hex digits); false when malformed.
bool parseChallengeReply(std::string_view line, std::string* nonce);

// A line with "token=<digits>" fields shown as "token=*" (for messages and
// logs: a token is a job's secret).
std::string redactTokens(std::string_view line);

// The switch's side of one connection: the nonce it issued and the last
// counter it took.
class CtrlAuthSession {
 public:
  explicit CtrlAuthSession(std::string secret) : secret_(std::move(secret)) {}

  // Issues a fresh nonce (forgetting the old one and its counter) and
  // returns the reply line.
  std::string challenge();
  // Looks at one request line. A line without " seq=N mac=HEX" at its end
  // passes as it is (*request = line, *authenticated = false). A signed
  // one passes, without those fields and authenticated, when its mac is
  // right for this connection's nonce and its counter is above the last;
  // otherwise returns false and says why in *error (nothing is learned
  // about the secret from the reason).
  bool check(std::string_view line, std::string_view* request, bool* authenticated,
             std::string* error);

  // For tests and fuzzing: a nonce chosen by the caller.
  void setNonceForTesting(std::string nonce) {
    nonce_ = std::move(nonce);
    lastSeq_ = 0;
  }

 private:
  std::string secret_;
  std::string nonce_;  // empty: no challenge issued yet
  uint64_t lastSeq_ = 0;
};

}  // namespace rina::ina

#endif  // RINA_LIB_WIRE_CTRL_AUTH_H_
