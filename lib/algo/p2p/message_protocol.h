// The wire protocol of point-to-point messages (point_to_point.h says what
// it does): the header and answer formats, the items that move one message
// on a channel, and what a receiver does with a header. Internal to lib/algo.
#ifndef RINA_LIB_ALGO_P2P_MESSAGE_PROTOCOL_H_
#define RINA_LIB_ALGO_P2P_MESSAGE_PROTOCOL_H_

#include <cstdint>
#include <string>

#include "algo/engine/engine.h"
#include "algo/p2p/message.h"
#include "core/status.h"
#include "transport/connection.h"

namespace rina::algo {

inline constexpr uint32_t kMessageMagic = 0x50325052;  // "RP2P"
inline constexpr uint32_t kAnswerMagic = 0x41325052;   // "RP2A"
inline constexpr size_t kInlineBytes = 16;
// From these sizes on, the receiver answers before the payload moves.
inline constexpr size_t kPullBytes = 32 << 10;       // shared memory: one copy
inline constexpr size_t kRendezvousBytes = 1 << 20;  // sockets

enum Mode : uint8_t { kInline = 1, kEager = 2, kRendezvous = 3 };
enum Verdict : uint32_t { kPulled = 1, kStream = 2, kRefused = 3 };

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
  char inlineBytes[kInlineBytes];
};
static_assert(sizeof(MessageHeader) == 64);

struct Answer {
  uint32_t magic = 0;
  uint32_t verdict = 0;  // Verdict
  uint64_t count = 0;    // refused: what the receive expects
  int32_t tag = 0;
  uint8_t datatype = 0;
  uint8_t pad[3] = {};
  uint64_t pad2 = 0;
};
static_assert(sizeof(Answer) == 32);

// One message's wire state; lives (at a fixed address) until the run ends.
struct MessageState {
  Message* msg = nullptr;
  uint64_t seq = 0;
  MessageHeader header{};
  Answer answer{};
  Status deferred;  // a rendezvous this rank refused: reported after answering
};

size_t bytesOf(const Message& m);

// Fills st.header for sending st.msg on conn (the mode follows the size and
// the transport); returns the mode.
Mode fillHeader(transport::Connection* conn, MessageState& st, int rank);

// The sender's items for one message on conn (after fillHeader), from
// `sent` bytes of it on (header first, then payload; a quick send may have
// moved some already).
void addSendItems(Engine& e, transport::Connection* conn, MessageState& st, int rank,
                  size_t sent = 0);

// What follows a header the receiver took.
struct AfterHeader {
  size_t payloadBytes = 0;  // to receive after it
  bool answer = false;      // st.answer goes back first
};
// The receiver's part once st.header is in: checks it against the receive
// (a mismatch is an error, or for a rendezvous a refusal answered and
// st.deferred), copies an inline payload, takes a rendezvous payload out of
// the sender's memory where it can; *next says what remains.
Status takeHeader(transport::Connection* conn, MessageState& st, int rank, AfterHeader* next);

// The receiver's items for one message on conn. headerIn: the header was
// already read (and is in st.header).
void addRecvItems(Engine& e, transport::Connection* conn, MessageState& st, int rank,
                  bool headerIn);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_P2P_MESSAGE_PROTOCOL_H_
