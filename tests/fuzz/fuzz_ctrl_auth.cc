// libFuzzer target: authenticated CTRL requests (lib/wire/ctrl_auth.h)
// through the switch's per-connection check and the controller with a
// secret. The input is lines; a line whose first byte is odd is signed by
// the harness (the next counter, this connection's nonce) before it goes
// in, so the controller's authenticated paths are reached too; the others go
// as they are (forgeries, replays, malformed signatures).
// Properties: nothing crashes; a line the check takes as authenticated is
// exactly the signature of what it passes on, under this connection's nonce
// and a counter above every one taken before (no forgery, no replay); a
// line it takes unauthenticated has no mac; an admin verb unauthenticated is
// refused with ERR AUTH; every reply is OK or ERR, and only an authenticated
// ENTRIES shows a token.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "null_data_plane.h"
#include "switchd/control.h"
#include "wire/ctrl_auth.h"
#include "wire/ctrl_protocol.h"

namespace {

const std::string kSecret = "fuzzing secret of thirty-two b..";
const std::string kNonce = "0123456789abcdef0123456789abcdef";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rina::ina;
  static rina::fuzz::NullDataPlane dataPlane;
  rina::switchd::ControllerOptions options{64, 16, 9000, 1, 100, true, 4};
  rina::switchd::Controller controller(options, dataPlane);
  CtrlAuthSession session(kSecret);
  session.setNonceForTesting(kNonce);
  uint64_t signSeq = 0, lastTaken = 0, now = 0;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t lines = 0;
  while (!input.empty() && lines++ < 16) {
    size_t nl = input.find('\n');
    std::string_view raw = input.substr(0, nl);
    input = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
    if (raw.empty()) continue;
    const bool sign = (static_cast<uint8_t>(raw[0]) & 1) != 0;
    std::string line(raw.substr(1));
    if (sign) line = signCtrlRequest(kSecret, kNonce, ++signSeq, line);
    std::string_view request;
    bool authenticated = false;
    std::string error;
    if (!session.check(line, &request, &authenticated, &error)) {
      if (error.empty() || authenticated) abort();
      continue;
    }
    if (authenticated) {
      // Only a true signature passes: re-signing what it passes on, with the
      // counter the line carries, gives the line back.
      size_t seqAt = line.rfind(" seq=", line.rfind(" mac="));
      uint64_t seq = std::strtoull(line.c_str() + seqAt + 5, nullptr, 10);
      if (signCtrlRequest(kSecret, kNonce, seq, request) != line) abort();
      if (seq <= lastTaken) abort();  // a replay got through
      lastTaken = seq;
    } else if (line.find(" mac=") != std::string::npos) {
      abort();  // a signed-looking line passed unauthenticated
    }
    std::vector<PreemptNotice> notices;
    std::string reply = controller.handle(request, now += 7, &notices, nullptr, authenticated);
    if (reply.rfind("OK", 0) != 0 && reply.rfind("ERR ", 0) != 0) abort();
    CtrlRequest req;
    std::string parseError;
    const bool parsed = parseCtrlRequest(request, &req, &parseError);
    if (!authenticated && parsed &&
        (req.verb == CtrlVerb::kRegister || req.verb == CtrlVerb::kRelease ||
         req.verb == CtrlVerb::kEntries) &&
        reply.rfind(kCtrlAuthRefusal, 0) != 0) {
      abort();  // an admin verb without the secret was served
    }
    // Only an authenticated ENTRIES prints a job's token (as its words; an
    // error may quote the request's own text).
    constexpr std::string_view kTokenWords = "\"token_hi\":";
    if ((!parsed || req.verb != CtrlVerb::kEntries || !authenticated) &&
        reply.find(kTokenWords) != std::string::npos &&
        request.find(kTokenWords) == std::string_view::npos) {
      abort();
    }
  }
  return 0;
}
