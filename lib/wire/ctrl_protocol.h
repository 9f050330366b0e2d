// The INA control protocol (CTRL), spoken over TCP between hosts (or a rack
// agent) and the switch controller. One request or reply per '\n'-terminated
// line: a verb, then space-separated key=value fields.
//
//   REGISTER job=J token=T fanin=K priority=P slots=N members=A:p,B:p,...
//                                         T: 64 bits, decimal (0..2^64-1)
//   REQUEST  job=J token=T slots=N        ask again for slots (after preemption)
//   RELEASE  job=J token=T
//   STATS                                 -> OK {json}
//   ENTRIES  job=J                        -> OK {json}: P4 table entries, mcast group
//   CHALLENGE, and any request signed with " seq=N mac=M": ctrl_auth.h (a
//   switch with an admin secret takes REGISTER, RELEASE, ENTRIES only so)
//
// Replies: "OK GRANT job=J base=B length=N payload=E port=U ports=S",
// "OK", "OK {json}", or "ERR message". A REGISTER for a job id that is
// live (registered, not released) under another token is refused with
// "ERR TAKEN job=J ..." (kCtrlTakenReply): the job's owner keeps it, and the
// caller may take another id or do without the switch. The controller may push
// "NOTICE PREEMPT job=J base=B length=N" on a job's registering connection.
// Parsing validates every field; it is fuzzed (tests/fuzz).
#ifndef RINA_LIB_WIRE_CTRL_PROTOCOL_H_
#define RINA_LIB_WIRE_CTRL_PROTOCOL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "wire/endpoint.h"

namespace rina::ina {

enum class CtrlVerb : uint8_t { kRegister, kRequest, kRelease, kStats, kEntries };

struct CtrlRequest {
  CtrlVerb verb = CtrlVerb::kStats;
  uint16_t job = 0;
  uint64_t token = 0;  // the job's secret; also in every datagram (ina_wire.h)
  uint8_t fanIn = 0;
  uint8_t priority = 0;
  uint32_t slots = 0;
  std::vector<Endpoint> members;  // index = worker index in the rack
};

// A contiguous slot range granted to a job, and how to reach the data plane:
// slot s is served on UDP port `port + s % ports`.
struct Grant {
  uint16_t job = 0;
  uint32_t base = 0;
  uint32_t length = 0;
  uint32_t payloadElems = 0;
  uint16_t port = 0;
  uint16_t ports = 1;
};

struct PreemptNotice {
  uint16_t job = 0;
  uint32_t base = 0;
  uint32_t length = 0;
};

// The longest request line the controller reads (a REGISTER of kMaxFanIn
// members fits many times over); a connection that sends a longer one is
// closed.
inline constexpr size_t kMaxCtrlLineBytes = 16 * 1024;

// Parses one request line. On failure returns false and says why in *error.
bool parseCtrlRequest(std::string_view line, CtrlRequest* out, std::string* error);
// The refusal of a REGISTER whose job id is live under another token.
inline constexpr std::string_view kCtrlTakenReply = "ERR TAKEN";
bool isTakenReply(std::string_view line);
std::string formatCtrlRequest(const CtrlRequest& req);

std::string formatGrant(const Grant& g);
bool parseGrant(std::string_view line, Grant* out);
std::string formatPreemptNotice(const PreemptNotice& n);
bool parsePreemptNotice(std::string_view line, PreemptNotice* out);

}  // namespace rina::ina

#endif  // RINA_LIB_WIRE_CTRL_PROTOCOL_H_
