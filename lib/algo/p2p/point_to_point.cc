#include "algo/p2p/point_to_point.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "algo/engine/engine.h"
#include "algo/p2p/message_protocol.h"
#include "core/log.h"
#include "reduce/reduce.h"
#include "transport/cma.h"

namespace rina::algo {
namespace {

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
      fillHeader(conn, *st->msg, st->seq, ctx.rank(), src.limits(), &st->header);
      addSendItems(*e, conn, *st, ctx.rank());
    } else {
      addRecvItems(*e, conn, *st, ctx.rank(), src.limits(), headerIn && st == states.front());
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
    std::string what = "waiting for rank ";
    what += std::to_string(peer_);
    what += " to open its channel to this rank";
    return what;
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
    std::string what;
    if (from_) {
      what = "receiving a message header from rank ";
      what += std::to_string(from_->peer());
    } else {
      what = "waiting for a message from any peer (";
      what += std::to_string(src_.recvChannels().size());
      what += " channels open to this rank)";
    }
    return what;
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

// Runs e: polls it for up to pollUs first (ChannelSource::pollUs).
Status runPolledFirst(Engine& e, int64_t pollUs) {
  const auto until = Clock::now() + std::chrono::microseconds(pollUs);
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

// Bytes moved on conn outside an engine, counted as the engine counts them.
void countMoved(transport::Connection* conn, transport::Direction d, size_t bytes) {
  conn->counters().bytes[static_cast<int>(d)] += bytes;
}

// Polls for up to pollUs (from the first try that moves nothing) for as
// much of a message of len bytes as `move` (trySend / tryRecv from an
// offset) will move; *done gets what moved. A message completed here ends
// as the engine would end it.
template <typename Move>
Status moveFor(transport::Connection* conn, transport::Direction d, size_t len, int64_t pollUs,
               size_t* done, const Move& move) {
  Clock::time_point until{};
  const size_t before = *done;
  for (unsigned idle = 0; *done < len;) {
    size_t n = 0;
    RINA_TRY(move(*done, &n));
    *done += n;
    if (n > 0) continue;
    // The clock is read every 64th idle try, the polling counted from the
    // first read: a try is a few loads and a pause, a clock read on a
    // virtual machine costs several, and a small message that lands
    // during one waits for it.
    if (++idle % 64 == 0) {
      const Clock::time_point now = Clock::now();
      if (idle == 64) {
        until = now + std::chrono::microseconds(pollUs);
      } else if (now >= until) {
        break;
      }
    }
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  countMoved(conn, d, *done - before);
  if (*done == len) conn->endMessage(d);
  return {};
}

// One item's bytes on conn, polled first, the rest (if the peer is slow)
// in an engine: its sleep, timeout and liveness checks.
Status sendBytes(Context& ctx, ChannelSource& src, transport::Connection* conn, const void* data,
                 size_t len, uint64_t seq) {
  size_t sent = 0;
  const char* bytes = static_cast<const char*>(data);
  RINA_TRY(moveFor(conn, transport::Direction::kSend, len, src.pollUs(), &sent,
                   [&](size_t at, size_t* n) { return conn->trySend(bytes + at, len - at, n); }));
  if (sent == len) return {};
  Engine e(channelContext(ctx, true, seq, seq));
  e.sends().push_back(SendItem{
      .conn = conn, .data = bytes + sent, .len = len - sent, .step = static_cast<int>(seq)});
  return e.run();
}

Status recvBytes(Context& ctx, ChannelSource& src, transport::Connection* conn, void* data,
                 size_t len, uint64_t seq) {
  size_t got = 0;
  char* bytes = static_cast<char*>(data);
  RINA_TRY(
      moveFor(conn, transport::Direction::kRecv, len, src.pollUs(), &got,
              [&](size_t at, size_t* n) { return conn->tryRecv(bytes + at, len - at, {}, n); }));
  if (got == len) return {};
  Engine e(channelContext(ctx, false, seq, seq));
  e.recvs().push_back(
      RecvItem{.conn = conn, .dst = bytes + got, .len = len - got, .step = static_cast<int>(seq)});
  return e.run();
}

// A blocking send on an open channel: the header and an eager payload go
// straight into the connection together; what does not fit at once, and a
// rendezvous (the answer, a shared copy, the payload when asked for), goes
// on in the engine from where it stopped.
Status sendNow(Context& ctx, ChannelSource& src, transport::Connection* conn, Message& m) {
  const uint64_t seq = src.nextSendSeq(conn->peer());
  MessageHeader h{};
  const Mode mode = fillHeader(conn, m, seq, ctx.rank(), src.limits(), &h);
  const size_t total = sizeof h + (mode == kEager ? bytesOf(m) : 0);
  const char* header = reinterpret_cast<const char*>(&h);
  const char* payload = static_cast<const char*>(m.sendBuf);
  size_t sent = 0;
  RINA_TRY(moveFor(
      conn, transport::Direction::kSend, total, src.pollUs(), &sent, [&](size_t at, size_t* n) {
        if (at >= sizeof h) {
          return conn->trySend(payload + (at - sizeof h), total - at, n);
        }
        return conn->trySendGather(header + at, sizeof h - at, payload, total - sizeof h, n);
      }));
  if (sent == total && mode == kEager) return {};
  MessageState st;
  st.msg = &m;
  st.seq = seq;
  st.header = h;
  Engine e(channelContext(ctx, true, st.seq, st.seq));
  addSendItems(e, conn, st, ctx.rank(), sent);
  RINA_TRY(runPolledFirst(e, src.pollUs()));
  return st.deferred;
}

// A blocking receive on an open channel: polls for the header, checks it,
// and takes the payload: an eager one from the connection, a large one on
// one host out of the sender's memory (the largest copied by both ranks,
// this rank reading while the sender writes). Waits that outlast the
// polling go on in an engine.
Status receiveNow(Context& ctx, ChannelSource& src, transport::Connection* conn, Message& m) {
  MessageState st;
  st.msg = &m;
  st.seq = src.nextRecvSeq(conn->peer());
  RINA_TRY(recvBytes(ctx, src, conn, &st.header, sizeof st.header, st.seq));
  AfterHeader next;
  RINA_TRY(takeHeader(conn, st, ctx.rank(), src.limits(), true, &next));
  if (next.answer) RINA_TRY(sendBytes(ctx, src, conn, &st.answer, sizeof st.answer, st.seq));
  if (next.shared) {
    const int pid = st.header.pid;
    transport::SharedCopyWords* words = conn->sharedCopy(transport::Direction::kRecv);
    char* dst = static_cast<char*>(m.recvBuf);
    Status copy = transport::readSharedChunks(*words, next.plan, pid, st.header.addr, dst);
    if (copy.ok()) {
      SharedCopyWait wait(conn, next.plan, pid, st.header.addr, dst);
      Engine e(channelContext(ctx, false, st.seq, st.seq));
      e.addTask(&wait);
      copy = e.run();
    }
    if (!copy.ok()) RINA_WARN("rank %d: %s", ctx.rank(), copy.message().c_str());
    st.copied = Answer{.magic = kAnswerMagic, .verdict = copy.ok() ? kCopied : kCopyFailed};
    RINA_TRY(sendBytes(ctx, src, conn, &st.copied, sizeof st.copied, st.seq));
    return copy;
  }
  if (next.payloadBytes > 0) {
    RINA_TRY(recvBytes(ctx, src, conn, m.recvBuf, next.payloadBytes, st.seq));
  }
  return st.deferred;
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

Status runMessages(Context& ctx, ChannelSource& channels, std::span<Message> batch) {
  if (batch.empty()) return {};
  for (const Message& m : batch) ++(m.send ? ctx.stats().sends : ctx.stats().recvs);
  if (batch.size() == 1) {
    // One blocking send or receive: straight through its channel when open.
    Message& m = batch[0];
    if (!m.send && m.peer == kAnyPeer) return receiveFromAnyPeer(ctx, channels, m);
    transport::Connection* conn = nullptr;
    if (m.send) {
      RINA_TRY(channels.sendChannel(m.peer, &conn));
      return sendNow(ctx, channels, conn, m);
    }
    conn = channels.recvChannel(m.peer);
    if (conn) return receiveNow(ctx, channels, conn, m);
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
    // One channel: its engine alone (several messages to or from one peer).
    const auto& [key, mine] = byChannel[0];
    transport::Connection* conn = nullptr;
    if (key.second) {
      RINA_TRY(channels.sendChannel(key.first, &conn));
    } else {
      conn = channels.recvChannel(key.first);
    }
    if (conn) {
      std::unique_ptr<Engine> e = channelEngine(ctx, channels, conn, key.second, mine, false);
      RINA_TRY(runPolledFirst(*e, channels.pollUs()));
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
