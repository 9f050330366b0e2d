#include "algo/p2p/message_protocol.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "core/log.h"
#include "reduce/reduce.h"
#include "transport/wait_set.h"

namespace rina::algo {
namespace {

std::string tagText(int tag) { return tag == kAnyTag ? std::string("any") : std::to_string(tag); }

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

// The sender's check of the receiver's answer to a rendezvous: what to do
// next (stream the payload, help copy, wait for "copied"), or the
// receiver's refusal as an error. A shared copy's plan comes from the peer:
// it must describe this message.
Status takeAnswer(transport::Connection* conn, const MessageState& st, int rank, bool* stream,
                  bool* shared) {
  const Answer& a = st.answer;
  const int peer = conn->peer();
  *stream = a.verdict == kStream;
  *shared = a.verdict == kShared;
  if (a.magic != kAnswerMagic) {
    return errorf(rinaRemoteError, "rank %d: rank %d sent a corrupt answer to message #%llu", rank,
                  peer, ull(st.seq));
  }
  if (a.verdict == kShared) {
    const size_t bytes = bytesOf(*st.msg);
    if (st.header.pid == 0 || a.chunkBytes < 4096 || a.sharedFrom > bytes || a.recvAddr == 0) {
      return errorf(rinaRemoteError,
                    "rank %d: rank %d answered message #%llu (%zu bytes) with a bad shared copy "
                    "(from byte %llu, chunks of %u)",
                    rank, peer, ull(st.seq), bytes, ull(a.sharedFrom), a.chunkBytes);
    }
    return {};
  }
  if (a.verdict == kStream || a.verdict == kPulled) return {};
  if (a.verdict != kRefused) {
    return errorf(rinaRemoteError, "rank %d: rank %d answered message #%llu with verdict %u", rank,
                  peer, ull(st.seq), a.verdict);
  }
  const Message& m = *st.msg;
  const bool knownType = a.datatype < rinaNumTypes;
  return errorf(rinaInvalidUsage,
                "rank %d: send #%llu to rank %d does not match its receive: this rank sends %zu "
                "%s with tag %d, rank %d expects %llu %s with tag %s",
                rank, ull(st.seq), peer, m.count, reduce::dataTypeName(m.type), m.tag, peer,
                ull(a.count),
                knownType ? reduce::dataTypeName(static_cast<rinaDataType_t>(a.datatype)) : "?",
                tagText(a.tag).c_str());
}

transport::SharedCopyPlan planOf(const MessageState& st) {
  return transport::SharedCopyPlan{.job = st.seq,
                                   .from = st.answer.sharedFrom,
                                   .bytes = bytesOf(*st.msg),
                                   .chunk = st.answer.chunkBytes};
}

}  // namespace

size_t bytesOf(const Message& m) { return m.count * reduce::dataTypeSize(m.type); }

Mode fillHeader(transport::Connection* conn, const Message& m, uint64_t seq, int rank,
                const MessageLimits& limits, MessageHeader* h) {
  const size_t bytes = bytesOf(m);
  h->magic = kMessageMagic;
  h->datatype = static_cast<uint8_t>(m.type);
  h->tag = m.tag;
  h->from = rank;
  h->seq = seq;
  h->count = m.count;
  const int pid = conn->sharedHostPid();
  if (bytes > 0 && bytes >= (pid != 0 ? limits.eagerBytes : limits.rendezvousBytes)) {
    h->mode = kRendezvous;
    if (pid != 0) {
      h->addr = reinterpret_cast<uintptr_t>(m.sendBuf);
      h->pid = static_cast<int32_t>(getpid());
    }
  } else {
    h->mode = kEager;
  }
  return static_cast<Mode>(h->mode);
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
  // Rendezvous: the answer, then (shared) the second answer, then the
  // payload when asked to stream it.
  const int answerAt = static_cast<int>(e.recvs().size());
  const size_t copiedAt = e.recvs().size() + 1;
  const size_t payloadAt = e.sends().size();
  e.recvs().push_back(RecvItem{
      .conn = conn,
      .dst = reinterpret_cast<char*>(&st.answer),
      .len = sizeof st.answer,
      .step = step,
      .onDone = [&e, conn, &st, payloadAt, copiedAt, bytes, rank]() -> Status {
        bool stream = false, shared = false;
        RINA_TRY(takeAnswer(conn, st, rank, &stream, &shared));
        if (stream) e.sends()[payloadAt].len = bytes;
        if (shared) {
          // The receiver copies too: this rank's chunks now, then its word
          // that the buffer is free.
          transport::SharedCopyWords* words = conn->sharedCopy(transport::Direction::kSend);
          if (words) {
            transport::writeSharedChunks(*words, planOf(st),
                                         static_cast<const char*>(st.msg->sendBuf),
                                         conn->sharedHostPid(), st.answer.recvAddr);
          }
          e.recvs()[copiedAt].len = sizeof st.copied;
        }
        return {};
      }});
  e.recvs().push_back(RecvItem{.conn = conn,
                               .dst = reinterpret_cast<char*>(&st.copied),
                               .len = 0,
                               .step = step,
                               .onDone = [conn, &st, rank]() -> Status {
                                 if (st.copied.magic == 0) return {};  // not a shared copy
                                 if (st.copied.magic == kAnswerMagic &&
                                     st.copied.verdict == kCopied) {
                                   return {};
                                 }
                                 return errorf(rinaRemoteError,
                                               "rank %d: rank %d could not copy message #%llu "
                                               "out of this rank's memory (its log says why)",
                                               rank, conn->peer(), ull(st.seq));
                               }});
  e.sends().push_back(
      SendItem{.conn = conn, .data = payload, .len = 0, .afterRecv = answerAt, .step = step});
}

Status takeHeader(transport::Connection* conn, MessageState& st, int rank,
                  const MessageLimits& limits, bool allowShared, AfterHeader* next) {
  *next = AfterHeader{};
  Message& m = *st.msg;
  const MessageHeader& h = st.header;
  const int peer = conn->peer();
  if (h.magic != kMessageMagic || h.from != peer || h.datatype >= rinaNumTypes ||
      (h.mode != kEager && h.mode != kRendezvous)) {
    return errorf(rinaRemoteError, "rank %d: rank %d sent a corrupt message header (message #%llu)",
                  rank, peer, ull(st.seq));
  }
  if (h.seq != st.seq) {
    return errorf(rinaRemoteError, "rank %d: message #%llu from rank %d came as #%llu", rank,
                  ull(st.seq), peer, ull(h.seq));
  }
  m.source = peer;
  m.sourceTag = h.tag;
  const auto theirType = static_cast<rinaDataType_t>(h.datatype);
  if (h.count != m.count || theirType != m.type || (m.tag != kAnyTag && h.tag != m.tag)) {
    Status err =
        errorf(rinaInvalidUsage,
               "rank %d: message #%llu from rank %d does not match its receive: rank %d "
               "sends %llu %s with tag %d, this rank expects %zu %s with tag %s",
               rank, ull(st.seq), peer, peer, ull(h.count), reduce::dataTypeName(theirType), h.tag,
               m.count, reduce::dataTypeName(m.type), tagText(m.tag).c_str());
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
  if (h.mode == kEager) {
    next->payloadBytes = bytes;
    return {};
  }
  Verdict verdict = kStream;
  if (h.addr != 0 && h.pid != 0 && h.pid == conn->sharedHostPid() && bytes >= limits.copyBytes) {
    transport::SharedCopyWords* words = conn->sharedCopy(transport::Direction::kRecv);
    const bool share = allowShared && words && bytes > kSharedChunkBytes;
    // Shared: this rank's first chunk alone, which also shows the kernel
    // lets this rank read the sender's memory.
    Status pulled =
        transport::readProcessMemory(h.pid, h.addr, m.recvBuf, share ? kSharedChunkBytes : bytes);
    if (!pulled.ok()) {
      RINA_INFO("rank %d: message #%llu from rank %d comes through the channel instead: %s", rank,
                ull(st.seq), peer, pulled.message().c_str());
    } else if (share) {
      verdict = kShared;
      next->shared = true;
      next->plan = transport::SharedCopyPlan{
          .job = st.seq, .from = kSharedChunkBytes, .bytes = bytes, .chunk = kSharedChunkBytes};
      transport::openSharedCopy(*words, next->plan);
    } else {
      verdict = kPulled;
    }
  }
  if (verdict == kStream) next->payloadBytes = bytes;
  st.answer = Answer{.magic = kAnswerMagic, .verdict = verdict};
  if (verdict == kShared) {
    st.answer.recvAddr = reinterpret_cast<uintptr_t>(m.recvBuf);
    st.answer.sharedFrom = next->plan.from;
    st.answer.chunkBytes = static_cast<uint32_t>(next->plan.chunk);
  }
  next->answer = true;
  return {};
}

void addRecvItems(Engine& e, transport::Connection* conn, MessageState& st, int rank,
                  const MessageLimits& limits, bool headerIn) {
  const int step = static_cast<int>(st.seq);
  const int headerAt = static_cast<int>(e.recvs().size());
  const size_t answerAt = e.sends().size();
  const size_t payloadAt = e.recvs().size() + 1;
  e.recvs().push_back(
      RecvItem{.conn = conn,
               .dst = reinterpret_cast<char*>(&st.header),
               .len = headerIn ? 0 : sizeof st.header,
               .step = step,
               .onDone = [&e, conn, &st, answerAt, payloadAt, rank, &limits]() -> Status {
                 AfterHeader next;
                 RINA_TRY(takeHeader(conn, st, rank, limits, false, &next));
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

Status SharedCopyWait::progress(bool* moved) {
  transport::SharedCopyWords* words = conn_->sharedCopy(transport::Direction::kRecv);
  seen_ = words->done.load();
  RINA_TRY(transport::sharedCopyFinished(*words, plan_, pid_, src_, dst_, &finished_));
  *moved = finished_;
  return {};
}

void SharedCopyWait::arm(transport::WaitSet& ws, int* timeoutMs) {
  (void)timeoutMs;
  transport::SharedCopyWords* words = conn_->sharedCopy(transport::Direction::kRecv);
  ws.addFutex(&words->done, seen_, &words->sleeping);
}

std::string SharedCopyWait::describe() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "copying message #%llu with rank %d (%u of %u chunks settled)",
                ull(plan_.job), conn_->peer(),
                conn_->sharedCopy(transport::Direction::kRecv)->done.load(), plan_.chunks());
  return buf;
}

}  // namespace rina::algo
