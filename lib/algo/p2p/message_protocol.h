// The wire protocol of point-to-point messages (point_to_point.h says what
// it does): the header and answer formats, the items that move one message
// on a channel, and what a receiver does with a header. Internal to lib/algo.
//
// A message is a 48-byte header, then by its size (MessageLimits):
//   - eager: the payload follows the header in the same send (over shared
//     memory one frame, transport/shm_frames.h; over a socket one sendmsg);
//   - rendezvous: the receiver answers first (48 bytes on the reverse
//     direction): "stream" (send it: through the channel's FIFO, which both
//     ranks copy into and out of at once), "refused" (the receive does not
//     match: its count, type and tag, so both sides report), and for the
//     largest over shared memory "pulled" (the receiver copied the payload
//     out of the sender's memory) or "shared" (the receiver copied the first
//     chunk, and both copy the rest in chunks, the sender writing into the
//     receiver's buffer, transport/cma.h; a second answer, "copied" or
//     "copy failed", tells the sender its buffer is free).
#ifndef RINA_LIB_ALGO_P2P_MESSAGE_PROTOCOL_H_
#define RINA_LIB_ALGO_P2P_MESSAGE_PROTOCOL_H_

#include <cstdint>
#include <string>

#include "algo/engine/engine.h"
#include "algo/p2p/message.h"
#include "core/status.h"
#include "transport/cma.h"
#include "transport/connection.h"

namespace rina::algo {

inline constexpr uint32_t kMessageMagic = 0x50325052;  // "RP2P"
inline constexpr uint32_t kAnswerMagic = 0x41325052;   // "RP2A"
// The chunks of a shared copy (and the part the receiver copies alone
// first, which also shows that the kernel lets it).
inline constexpr size_t kSharedChunkBytes = 256 << 10;

enum Mode : uint8_t { kEager = 1, kRendezvous = 2 };
enum Verdict : uint32_t {
  kPulled = 1,
  kStream = 2,
  kRefused = 3,
  kShared = 4,
  kCopied = 5,
  kCopyFailed = 6
};

struct MessageHeader {
  uint32_t magic;
  uint8_t datatype;
  uint8_t mode;  // Mode
  uint16_t pad;
  int32_t tag;
  int32_t from;  // the sender's rank
  uint64_t seq;  // the message's number on its channel, from 1
  uint64_t count;
  uint64_t addr;  // rendezvous: the payload in the sender's memory (0: none offered)
  int32_t pid;    // rendezvous: the sender's process
  uint32_t pad2;
};
static_assert(sizeof(MessageHeader) == 48);

struct Answer {
  uint32_t magic = 0;
  uint32_t verdict = 0;  // Verdict
  uint64_t count = 0;    // refused: what the receive expects
  int32_t tag = 0;       // refused
  uint8_t datatype = 0;  // refused
  uint8_t pad[3] = {};
  uint64_t recvAddr = 0;    // shared: the receive buffer
  uint64_t sharedFrom = 0;  // shared: the first byte both copy (the receiver has those before)
  uint32_t chunkBytes = 0;  // shared: the chunks both claim
  uint32_t pad2 = 0;
};
static_assert(sizeof(Answer) == 48);

// One message's wire state; lives (at a fixed address) until the run ends.
struct MessageState {
  Message* msg = nullptr;
  uint64_t seq = 0;
  MessageHeader header{};
  Answer answer{};
  Answer copied{};  // shared: the second answer
  Status deferred;  // a rendezvous this rank refused: reported after answering
};

size_t bytesOf(const Message& m);

// Fills *h (zeroed by the caller) for sending m as message #seq on conn
// (the mode follows the size, the transport and the limits); returns the
// mode. It takes the header alone so that a blocking send builds no
// MessageState (whose zeroing costs more than a small send) unless it
// has to go on in an engine.
Mode fillHeader(transport::Connection* conn, const Message& m, uint64_t seq, int rank,
                const MessageLimits& limits, MessageHeader* h);

// The sender's items for one message on conn (after fillHeader), from
// `sent` bytes of it on (header first, then an eager payload; a quick send
// may have moved some already). A "shared" answer is acted on when it
// arrives: this rank writes its chunks then.
void addSendItems(Engine& e, transport::Connection* conn, MessageState& st, int rank,
                  size_t sent = 0);

// What follows a header the receiver took.
struct AfterHeader {
  size_t payloadBytes = 0;  // to receive after it
  bool answer = false;      // st.answer goes back first
  bool shared = false;      // and then both copy (plan), and st.copied goes back
  transport::SharedCopyPlan plan;
};
// The receiver's part once st.header is in: checks it against the receive
// (a mismatch is an error, or for a rendezvous a refusal answered and
// st.deferred); from limits.copyBytes on, takes a rendezvous payload out of
// the sender's memory where it can (all of it; or with allowShared, its
// first chunk, the rest shared), else asks for it to stream; *next says
// what remains.
Status takeHeader(transport::Connection* conn, MessageState& st, int rank,
                  const MessageLimits& limits, bool allowShared, AfterHeader* next);

// The receiver's items for one message on conn. headerIn: the header was
// already read (and is in st.header).
void addRecvItems(Engine& e, transport::Connection* conn, MessageState& st, int rank,
                  const MessageLimits& limits, bool headerIn);

// Waits (in an engine's loop: spin, sleep, timeout, a dead peer) until
// every chunk of a shared copy is in, after this rank read its own.
class SharedCopyWait final : public EngineTask {
 public:
  SharedCopyWait(transport::Connection* conn, const transport::SharedCopyPlan& plan, int pid,
                 uint64_t src, char* dst)
      : conn_(conn), plan_(plan), pid_(pid), src_(src), dst_(dst) {}
  Status progress(bool* moved) override;
  bool done() const override { return finished_; }
  void arm(transport::WaitSet& ws, int* timeoutMs) override;
  Status checkAlive() override { return conn_->checkAlive(); }
  std::string describe() const override;

 private:
  transport::Connection* conn_;
  transport::SharedCopyPlan plan_;
  int pid_;
  uint64_t src_;
  char* dst_;
  uint32_t seen_ = 0;
  bool finished_ = false;
};

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_P2P_MESSAGE_PROTOCOL_H_
