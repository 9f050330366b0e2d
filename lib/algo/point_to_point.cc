#include "algo/point_to_point.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "algo/engine.h"
#include "core/log.h"
#include "reduce/reduce.h"
#include "transport/cma.h"

namespace rina::algo {
namespace {

constexpr uint32_t kMessageMagic = 0x50325052;  // "RP2P"
constexpr uint32_t kAnswerMagic = 0x41325052;   // "RP2A"
constexpr size_t kInlineBytes = 16;
// From these sizes on, the receiver answers before the payload moves.
constexpr size_t kPullBytes = 32 << 10;       // shared memory: one copy
constexpr size_t kRendezvousBytes = 1 << 20;  // sockets
// A blocking send or receive on one channel first polls this long without
// giving up its core (the engine's loop then yields, then sleeps): the
// answer of a peer that is in its matching call comes within a few
// microseconds, sooner than a yield returns on a busy host.
constexpr int64_t kPollBeforeYieldUs = 20;

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

size_t bytesOf(const Message& m) { return m.count * reduce::dataTypeSize(m.type); }

std::string tagText(int tag) { return tag == kAnyTag ? std::string("any") : std::to_string(tag); }

// The sender's items for one message on conn.
void addSendItems(Engine& e, transport::Connection* conn, MessageState& st, int rank) {
  const Message& m = *st.msg;
  const size_t bytes = bytesOf(m);
  const int step = static_cast<int>(st.seq);
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
  e.sends().push_back(SendItem{
      .conn = conn, .data = reinterpret_cast<const char*>(&h), .len = sizeof h, .step = step});
  const char* payload = static_cast<const char*>(m.sendBuf);
  if (h.mode == kEager) {
    e.sends().push_back(SendItem{.conn = conn, .data = payload, .len = bytes, .step = step});
    return;
  }
  if (h.mode != kRendezvous) return;
  const int answerAt = static_cast<int>(e.recvs().size());
  const size_t payloadAt = e.sends().size();
  e.recvs().push_back(RecvItem{
      .conn = conn,
      .dst = reinterpret_cast<char*>(&st.answer),
      .len = sizeof st.answer,
      .step = step,
      .onDone = [&e, &st, payloadAt, bytes, rank, peer = conn->peer()]() -> Status {
        const Answer& a = st.answer;
        if (a.magic != kAnswerMagic) {
          return errorf(rinaRemoteError, "rank %d: rank %d sent a corrupt answer to message #%llu",
                        rank, peer, static_cast<unsigned long long>(st.seq));
        }
        if (a.verdict == kStream) {
          e.sends()[payloadAt].len = bytes;
          return {};
        }
        if (a.verdict == kPulled) return {};
        const Message& msg = *st.msg;
        const bool knownType = a.datatype < rinaNumTypes;
        return errorf(
            rinaInvalidUsage,
            "rank %d: send #%llu to rank %d does not match its receive: this rank "
            "sends %zu %s with tag %d, rank %d expects %llu %s with tag %s",
            rank, static_cast<unsigned long long>(st.seq), peer, msg.count,
            reduce::dataTypeName(msg.type), msg.tag, peer, static_cast<unsigned long long>(a.count),
            knownType ? reduce::dataTypeName(static_cast<rinaDataType_t>(a.datatype)) : "?",
            tagText(a.tag).c_str());
      }});
  e.sends().push_back(
      SendItem{.conn = conn, .data = payload, .len = 0, .afterRecv = answerAt, .step = step});
}

// The receiver's part once a header is in: checks it against the receive,
// then sizes the items that follow (the answer, the payload).
Status takeHeader(Engine& e, transport::Connection* conn, MessageState& st, size_t answerAt,
                  size_t payloadAt, int rank) {
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
    e.sends()[answerAt].len = sizeof st.answer;
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
    e.recvs()[payloadAt].len = bytes;
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
  if (verdict == kStream) e.recvs()[payloadAt].len = bytes;
  st.answer = Answer{.magic = kAnswerMagic, .verdict = verdict};
  e.sends()[answerAt].len = sizeof st.answer;
  return {};
}

// The receiver's items for one message on conn. headerIn: the header was
// already read (a receive from any peer found it).
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
                               .onDone = [&e, conn, &st, answerAt, payloadAt, rank]() {
                                 return takeHeader(e, conn, st, answerAt, payloadAt, rank);
                               }});
  e.sends().push_back(SendItem{.conn = conn,
                               .data = reinterpret_cast<const char*>(&st.answer),
                               .len = 0,
                               .afterRecv = headerAt,
                               .step = step});
  e.recvs().push_back(
      RecvItem{.conn = conn, .dst = static_cast<char*>(st.msg->recvBuf), .len = 0, .step = step});
}

// The engine settings for the messages of one channel.
EngineContext channelContext(const Context& ctx, bool sending, uint64_t firstSeq,
                             uint64_t lastSeq) {
  return contextFor(ctx, sending ? kSend : kRecv, firstSeq, static_cast<int>(lastSeq));
}

// Builds one channel's engine (its messages in order).
std::unique_ptr<Engine> channelEngine(Context& ctx, ChannelSource& src, transport::Connection* conn,
                                      bool sending, const std::vector<MessageState*>& states,
                                      bool headerIn) {
  const int peer = conn->peer();
  for (MessageState* st : states) {
    st->seq = sending ? src.nextSendSeq(peer) : src.nextRecvSeq(peer);
  }
  auto e = std::make_unique<Engine>(
      channelContext(ctx, sending, states.front()->seq, states.back()->seq));
  e->sends().reserve(3 * states.size());
  e->recvs().reserve(3 * states.size());
  for (MessageState* st : states) {
    if (sending) {
      addSendItems(*e, conn, *st, ctx.rank());
    } else {
      addRecvItems(*e, conn, *st, ctx.rank(), headerIn && st == states.front());
    }
  }
  return e;
}

// The messages of one directed channel, driven inside the batch's loop;
// its engine starts once the channel exists (a receive waits for the
// peer to open it).
class ChannelTask final : public EngineTask {
 public:
  ChannelTask(Context& ctx, ChannelSource& src, int peer, bool sending,
              std::vector<MessageState*> states)
      : ctx_(ctx), src_(src), peer_(peer), sending_(sending), states_(std::move(states)) {}

  Status progress(bool* moved) override {
    *moved = false;
    if (!engine_) {
      transport::Connection* conn = nullptr;
      if (sending_) {
        RINA_TRY(src_.sendChannel(peer_, &conn));
      } else {
        bool took = false;
        RINA_TRY(src_.takeArrivals(&took));
        conn = src_.recvChannel(peer_);
      }
      if (!conn) return {};
      engine_ = channelEngine(ctx_, src_, conn, sending_, states_, false);
      *moved = true;
    }
    bool polled = false;
    RINA_TRY(engine_->poll(&polled));
    *moved |= polled;
    return {};
  }
  bool done() const override { return engine_ && engine_->finished(); }
  void arm(transport::WaitSet& ws, int* timeoutMs) override {
    (void)timeoutMs;
    if (engine_) {
      engine_->arm(ws);
    } else {
      src_.armArrivals(ws);
    }
  }
  Status checkAlive() override { return engine_ ? engine_->checkAlive() : Status(); }
  std::string describe() const override {
    if (engine_) return engine_->waitingFor();
    return "waiting for rank " + std::to_string(peer_) + " to open its channel to this rank";
  }

 private:
  Context& ctx_;
  ChannelSource& src_;
  int peer_;
  bool sending_;
  std::vector<MessageState*> states_;
  std::unique_ptr<Engine> engine_;
};

// Waits for the first message header on any channel from a peer: reads it
// whole from the first channel that has bytes of one.
class AnyPeerProbe final : public EngineTask {
 public:
  AnyPeerProbe(ChannelSource& src, MessageHeader* header) : src_(src), header_(header) {}

  Status progress(bool* moved) override {
    *moved = false;
    bool took = false;
    RINA_TRY(src_.takeArrivals(&took));
    *moved = took;
    if (!from_) {
      const std::vector<transport::Connection*> chans = src_.recvChannels();
      for (size_t i = 0; i < chans.size() && !from_; ++i) {
        // Start where the last look ended, so no peer is always looked at last.
        transport::Connection* c = chans[(next_ + i) % chans.size()];
        size_t n = 0;
        RINA_TRY(c->tryRecv(header_, sizeof *header_, {}, &n));
        if (n > 0) {
          from_ = c;
          got_ = n;
          next_ = (next_ + i + 1) % chans.size();
        }
      }
    } else if (got_ < sizeof *header_) {
      size_t n = 0;
      RINA_TRY(
          from_->tryRecv(reinterpret_cast<char*>(header_) + got_, sizeof *header_ - got_, {}, &n));
      got_ += n;
    }
    if (from_ && !counted_) {
      *moved = true;
      if (got_ == sizeof *header_) {
        from_->counters().bytes[static_cast<int>(transport::Direction::kRecv)] += got_;
        from_->endMessage(transport::Direction::kRecv);
        counted_ = true;
      }
    }
    return {};
  }
  bool done() const override { return counted_; }
  void arm(transport::WaitSet& ws, int* timeoutMs) override {
    (void)timeoutMs;
    if (from_) {
      from_->armWait(ws, false, true);
      return;
    }
    for (transport::Connection* c : src_.recvChannels()) c->armWait(ws, false, true);
    src_.armArrivals(ws);
  }
  Status checkAlive() override { return from_ ? from_->checkAlive() : Status(); }
  std::string describe() const override {
    if (from_) return "receiving a message header from rank " + std::to_string(from_->peer());
    return "waiting for a message from any peer (" + std::to_string(src_.recvChannels().size()) +
           " channels open to this rank)";
  }
  transport::Connection* channel() const { return from_; }

 private:
  ChannelSource& src_;
  MessageHeader* header_;
  transport::Connection* from_ = nullptr;
  size_t got_ = 0;
  size_t next_ = 0;
  bool counted_ = false;
};

// Runs e: polls it for up to kPollBeforeYieldUs first (see there).
Status runPolledFirst(Engine& e) {
  const auto until = Clock::now() + std::chrono::microseconds(kPollBeforeYieldUs);
  for (;;) {
    bool moved = false;
    RINA_TRY(e.poll(&moved));
    if (e.finished() || Clock::now() >= until) break;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  return e.finished() ? Status() : e.run();
}

Status deferredErrors(const std::vector<MessageState>& states) {
  for (const MessageState& st : states) {
    if (!st.deferred.ok()) return st.deferred;
  }
  return {};
}

// A receive from whichever peer sends first (alone in its batch).
Status receiveFromAnyPeer(Context& ctx, ChannelSource& src, Message& m) {
  std::vector<MessageState> states(1);
  states[0].msg = &m;
  EngineContext probeCtx = contextFor(ctx, kRecv, src.nextBatch(), 1);
  probeCtx.collective = "point-to-point batch (a receive from any peer)";
  Engine probing(probeCtx);
  AnyPeerProbe probe(src, &states[0].header);
  probing.addTask(&probe);
  RINA_TRY(probing.run());
  std::unique_ptr<Engine> e = channelEngine(ctx, src, probe.channel(), false, {&states[0]}, true);
  RINA_TRY(e->run());
  return deferredErrors(states);
}

}  // namespace

Status runMessages(Context& ctx, ChannelSource& channels, std::vector<Message>& batch) {
  if (batch.empty()) return {};
  for (const Message& m : batch) ++(m.send ? ctx.stats().sends : ctx.stats().recvs);
  if (batch.size() == 1 && !batch[0].send && batch[0].peer == kAnyPeer) {
    return receiveFromAnyPeer(ctx, channels, batch[0]);
  }
  std::vector<MessageState> states(batch.size());
  // Each directed channel's messages, in batch order: (peer, sending).
  std::vector<std::pair<std::pair<int, bool>, std::vector<MessageState*>>> byChannel;
  for (size_t i = 0; i < batch.size(); ++i) {
    states[i].msg = &batch[i];
    const std::pair<int, bool> key{batch[i].peer, batch[i].send};
    auto it = std::find_if(byChannel.begin(), byChannel.end(),
                           [&](const auto& c) { return c.first == key; });
    if (it == byChannel.end()) {
      byChannel.push_back({key, {}});
      it = byChannel.end() - 1;
    }
    it->second.push_back(&states[i]);
  }
  if (byChannel.size() == 1) {
    // One channel: its engine alone (a blocking send or receive).
    const auto& [key, mine] = byChannel[0];
    transport::Connection* conn = nullptr;
    if (key.second) {
      RINA_TRY(channels.sendChannel(key.first, &conn));
    } else {
      conn = channels.recvChannel(key.first);
    }
    if (conn) {
      std::unique_ptr<Engine> e = channelEngine(ctx, channels, conn, key.second, mine, false);
      RINA_TRY(runPolledFirst(*e));
      return deferredErrors(states);
    }
  }
  std::vector<std::unique_ptr<ChannelTask>> tasks;
  EngineContext groupCtx = contextFor(ctx, batch[0].send ? kSend : kRecv, channels.nextBatch(),
                                      static_cast<int>(byChannel.size()));
  groupCtx.collective = "point-to-point batch";
  Engine loop(groupCtx);
  for (auto& [key, mine] : byChannel) {
    tasks.push_back(std::make_unique<ChannelTask>(ctx, channels, key.first, key.second, mine));
    loop.addTask(tasks.back().get());
  }
  RINA_TRY(loop.run());
  return deferredErrors(states);
}

}  // namespace rina::algo
