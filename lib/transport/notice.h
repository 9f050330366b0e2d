// Notices: short one-way messages a rank leaves at another rank's listening
// socket, outside every collective's byte stream, so they reach a rank
// whatever call it is in and whichever connections it holds: "this
// communicator is revoked" (rinaCommRevoke) and the agreement of
// rinaCommShrink (a survivor's proposal, the coordinator's verdict, a
// refusal). A notice opens a connection of its own (a hello of kind
// kNoticeHello, then a NoticeHeader, the ranks it names as a bitmap and a
// line of text); the proposal's connection stays open for the verdict.
// Everything in a notice is checked before it is believed: its size, its
// kind, its sender and every rank it names (a peer is untrusted input).
#ifndef RINA_LIB_TRANSPORT_NOTICE_H_
#define RINA_LIB_TRANSPORT_NOTICE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/socket.h"
#include "core/status.h"
#include "transport/mesh.h"

namespace rina::transport {

enum class NoticeKind : uint32_t {
  kRevoke = 1,    // the communicator is revoked; text: why
  kProposal = 2,  // a survivor's shrink: ranks = the ranks it excludes
  kVerdict = 3,   // the coordinator's answer: ranks = the agreed exclusion
  kRefusal = 4,   // a shrink attempt failed; text: why
};
const char* noticeKindName(NoticeKind k);

inline constexpr uint32_t kNoticeMagic = 0x43544e52;  // "RNTC"
inline constexpr uint32_t kMaxNoticeText = 1024;
// Notice flags.
inline constexpr uint32_t kNoticeAbort = 1;  // a proposal of rinaShrinkAbort

struct NoticeHeader {
  uint32_t magic;
  uint32_t kind;     // NoticeKind
  uint64_t attempt;  // the shrink attempt it belongs to (revoke: 0)
  int32_t from;      // the sender's rank
  int32_t nranks;    // the communicator's size: the bitmap has (nranks + 7) / 8 bytes
  uint32_t flags;
  uint32_t textBytes;  // at most kMaxNoticeText
  // A proposal: the last round the sender used in the host segment; a
  // verdict: the latest of its survivors', where the shrunk communicator's
  // rounds go on (transport::ShmGroup::renumber).
  uint32_t hostRound;
  uint32_t reserved;
};
static_assert(sizeof(NoticeHeader) == 40);

struct Notice {
  NoticeKind kind = NoticeKind::kRevoke;
  uint64_t attempt = 0;
  int from = -1;
  uint32_t flags = 0;
  uint32_t hostRound = 0;
  std::vector<bool> ranks;  // one per rank of the communicator
  std::string text;
};

// The bytes of a notice from `from` to `to` on communicator commId: its
// hello, header, bitmap and text (text cut at kMaxNoticeText).
std::string encodeNotice(const Notice& n, int to, uint64_t commId);

// Reads the rest of a notice whose hello (kind kNoticeHello, already read
// and checked for magic, communicator and addressee) arrived on fd; nranks
// is the size of the communicator it names. A notice that does not fit
// (another size, a sender outside the communicator or not the hello's, an
// unknown kind, an overlong text) is rinaRemoteError naming what.
Status readNotice(int fd, const PeerHello& hello, int nranks, Deadline deadline, Notice* out);

// Connects to addr (once: a rank that refuses is gone) and sends bytes;
// *fd keeps the connection (for an answer on it).
Status sendNotice(const PackedAddr& addr, const std::string& bytes, Deadline deadline, Fd* fd);

// Sends bytes[i] to addrs[i] for every i at once, each over a connection of
// its own that is then closed; *results gets each one's outcome. Bounded
// by deadline whatever the peers do.
void postNotices(const std::vector<PackedAddr>& addrs, const std::vector<std::string>& bytes,
                 Deadline deadline, std::vector<Status>* results);

}  // namespace rina::transport

#endif  // RINA_LIB_TRANSPORT_NOTICE_H_
