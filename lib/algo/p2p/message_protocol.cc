#include "algo/p2p/message_protocol.h"

#include <unistd.h>

#include <cstring>

#include "core/log.h"
#include "reduce/reduce.h"
#include "transport/cma.h"

namespace rina::algo {
namespace {

std::string tagText(int tag) { return tag == kAnyTag ? std::string("any") : std::to_string(tag); }

// The sender's check of the receiver's answer to a rendezvous: go on (and
// stream the payload or not), or the receiver's refusal as an error.
Status takeAnswer(const MessageState& st, int rank, int peer, bool* stream) {
  const Answer& a = st.answer;
  const auto seq = static_cast<unsigned long long>(st.seq);
  if (a.magic != kAnswerMagic) {
    return errorf(rinaRemoteError, "rank %d: rank %d sent a corrupt answer to message #%llu", rank,
                  peer, seq);
  }
  *stream = a.verdict == kStream;
  if (a.verdict == kStream || a.verdict == kPulled) return {};
  const Message& m = *st.msg;
  const bool knownType = a.datatype < rinaNumTypes;
  return errorf(rinaInvalidUsage,
                "rank %d: send #%llu to rank %d does not match its receive: this rank sends %zu "
                "%s with tag %d, rank %d expects %llu %s with tag %s",
                rank, seq, peer, m.count, reduce::dataTypeName(m.type), m.tag, peer,
                static_cast<unsigned long long>(a.count),
                knownType ? reduce::dataTypeName(static_cast<rinaDataType_t>(a.datatype)) : "?",
                tagText(a.tag).c_str());
}

}  // namespace

size_t bytesOf(const Message& m) { return m.count * reduce::dataTypeSize(m.type); }

Mode fillHeader(transport::Connection* conn, MessageState& st, int rank) {
  const Message& m = *st.msg;
  const size_t bytes = bytesOf(m);
  MessageHeader& h = st.header;
  h.magic = kMessageMagic;
  h.datatype = static_cast<uint8_t>(m.type);
  h.tag = m.tag;
  h.from = rank;
  h.seq = st.seq;
  h.count = m.count;
  const int pid = conn->sharedHostPid();
  if (bytes <= kInlineBytes) {
    h.mode = kInline;
    if (bytes) std::memcpy(h.inlineBytes, m.sendBuf, bytes);
  } else if ((pid != 0 && bytes >= kPullBytes) || bytes >= kRendezvousBytes) {
    h.mode = kRendezvous;
    if (pid != 0) {
      h.addr = reinterpret_cast<uintptr_t>(m.sendBuf);
      h.pid = static_cast<int32_t>(getpid());
    }
  } else {
    h.mode = kEager;
  }
  return static_cast<Mode>(h.mode);
}

void addSendItems(Engine& e, transport::Connection* conn, MessageState& st, int rank, size_t sent) {
  const size_t bytes = bytesOf(*st.msg);
  const int step = static_cast<int>(st.seq);
  const MessageHeader& h = st.header;
  const char* payload = static_cast<const char*>(st.msg->sendBuf);
  if (sent < sizeof h) {
    e.sends().push_back(SendItem{.conn = conn,
                                 .data = reinterpret_cast<const char*>(&h) + sent,
                                 .len = sizeof h - sent,
                                 .step = step});
    sent = sizeof h;
  }
  if (h.mode == kEager) {
    const size_t done = sent - sizeof h;
    e.sends().push_back(
        SendItem{.conn = conn, .data = payload + done, .len = bytes - done, .step = step});
    return;
  }
  if (h.mode != kRendezvous) return;
  const int answerAt = static_cast<int>(e.recvs().size());
  const size_t payloadAt = e.sends().size();
  e.recvs().push_back(
      RecvItem{.conn = conn,
               .dst = reinterpret_cast<char*>(&st.answer),
               .len = sizeof st.answer,
               .step = step,
               .onDone = [&e, &st, payloadAt, bytes, rank, peer = conn->peer()]() -> Status {
                 bool stream = false;
                 RINA_TRY(takeAnswer(st, rank, peer, &stream));
                 if (stream) e.sends()[payloadAt].len = bytes;
                 return {};
               }});
  e.sends().push_back(
      SendItem{.conn = conn, .data = payload, .len = 0, .afterRecv = answerAt, .step = step});
}

Status takeHeader(transport::Connection* conn, MessageState& st, int rank, AfterHeader* next) {
  *next = AfterHeader{};
  Message& m = *st.msg;
  const MessageHeader& h = st.header;
  const int peer = conn->peer();
  const auto seq = static_cast<unsigned long long>(st.seq);
  if (h.magic != kMessageMagic || h.from != peer || h.datatype >= rinaNumTypes ||
      (h.mode != kInline && h.mode != kEager && h.mode != kRendezvous)) {
    return errorf(rinaRemoteError, "rank %d: rank %d sent a corrupt message header (message #%llu)",
                  rank, peer, seq);
  }
  if (h.seq != st.seq) {
    return errorf(rinaRemoteError, "rank %d: message #%llu from rank %d came as #%llu", rank, seq,
                  peer, static_cast<unsigned long long>(h.seq));
  }
  m.source = peer;
  m.sourceTag = h.tag;
  const auto theirType = static_cast<rinaDataType_t>(h.datatype);
  if (h.count != m.count || theirType != m.type || (m.tag != kAnyTag && h.tag != m.tag)) {
    Status err = errorf(rinaInvalidUsage,
                        "rank %d: message #%llu from rank %d does not match its receive: rank %d "
                        "sends %llu %s with tag %d, this rank expects %zu %s with tag %s",
                        rank, seq, peer, peer, static_cast<unsigned long long>(h.count),
                        reduce::dataTypeName(theirType), h.tag, m.count,
                        reduce::dataTypeName(m.type), tagText(m.tag).c_str());
    if (h.mode != kRendezvous) return err;
    // The sender waits for the answer: refuse, so it reports the mismatch too.
    st.answer = Answer{.magic = kAnswerMagic,
                       .verdict = kRefused,
                       .count = m.count,
                       .tag = m.tag,
                       .datatype = static_cast<uint8_t>(m.type)};
    next->answer = true;
    st.deferred = err;
    return {};
  }
  const size_t bytes = bytesOf(m);
  if (h.mode == kInline) {
    if (bytes > kInlineBytes) {
      return errorf(rinaRemoteError, "rank %d: rank %d sent %zu bytes inline (message #%llu)", rank,
                    peer, bytes, seq);
    }
    if (bytes) std::memcpy(m.recvBuf, h.inlineBytes, bytes);
    return {};
  }
  if (h.mode == kEager) {
    next->payloadBytes = bytes;
    return {};
  }
  Verdict verdict = kStream;
  if (h.addr != 0 && h.pid != 0 && h.pid == conn->sharedHostPid()) {
    Status pulled = transport::readProcessMemory(h.pid, h.addr, m.recvBuf, bytes);
    if (pulled.ok()) {
      verdict = kPulled;
    } else {
      RINA_INFO("rank %d: message #%llu from rank %d comes through the FIFO instead: %s", rank, seq,
                peer, pulled.message().c_str());
    }
  }
  if (verdict == kStream) next->payloadBytes = bytes;
  st.answer = Answer{.magic = kAnswerMagic, .verdict = verdict};
  next->answer = true;
  return {};
}

void addRecvItems(Engine& e, transport::Connection* conn, MessageState& st, int rank,
                  bool headerIn) {
  const int step = static_cast<int>(st.seq);
  const int headerAt = static_cast<int>(e.recvs().size());
  const size_t answerAt = e.sends().size();
  const size_t payloadAt = e.recvs().size() + 1;
  e.recvs().push_back(RecvItem{.conn = conn,
                               .dst = reinterpret_cast<char*>(&st.header),
                               .len = headerIn ? 0 : sizeof st.header,
                               .step = step,
                               .onDone = [&e, conn, &st, answerAt, payloadAt, rank]() -> Status {
                                 AfterHeader next;
                                 RINA_TRY(takeHeader(conn, st, rank, &next));
                                 e.recvs()[payloadAt].len = next.payloadBytes;
                                 if (next.answer) e.sends()[answerAt].len = sizeof st.answer;
                                 return {};
                               }});
  e.sends().push_back(SendItem{.conn = conn,
                               .data = reinterpret_cast<const char*>(&st.answer),
                               .len = 0,
                               .afterRecv = headerAt,
                               .step = step});
  e.recvs().push_back(
      RecvItem{.conn = conn, .dst = static_cast<char*>(st.msg->recvBuf), .len = 0, .step = step});
}

}  // namespace rina::algo
