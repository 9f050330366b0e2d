#include "algo/engine/engine.h"

#include <poll.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "algo/engine/algorithm.h"
#include "core/log.h"
#include "core/socket.h"
#include "reduce/reduce.h"
#include "transport/wait_set.h"

namespace rina::algo {

const char* collectiveName(uint8_t kind) {
  switch (kind) {
    case kAllReduce:
      return "allreduce";
    case kReduceScatter:
      return "reduce-scatter";
    case kAllGather:
      return "allgather";
    case kBroadcast:
      return "broadcast";
    case kGatherLinkRates:
      return "gather link rates";
    case kPlanExchange:
      return "plan exchange";
    case kAllToAll:
      return "all-to-all";
    case kReduce:
      return "reduce";
    case kGather:
      return "gather";
    case kScatter:
      return "scatter";
    case kSend:
      return "send";
    case kRecv:
      return "recv";
    case kMembership:
      return "membership exchange";
    default:
      return "unknown collective";
  }
}

namespace {
constexpr uint32_t kHeaderMagic = kCollHeaderMagic;
constexpr int kWaitSliceMs = 100;  // abort and liveness are checked this often
constexpr int kSpins = 16;         // bounded spins per wait of a task-only engine
constexpr int kQuickYields = 4;    // yields before a task-only engine reads the clock
}  // namespace

Status checkCollHeader(const CollHeader& mine, const CollHeader& theirs, int rank, int peer) {
  if (theirs.magic != kHeaderMagic) {
    return errorf(rinaRemoteError, "rank %d: peer %d sent a corrupt collective header", rank, peer);
  }
  if (theirs.collective != mine.collective || theirs.seq != mine.seq ||
      theirs.count != mine.count || theirs.datatype != mine.datatype || theirs.op != mine.op ||
      theirs.root != mine.root) {
    return errorf(rinaInvalidUsage,
                  "rank %d: calls do not match: peer %d is in %s #%llu (count %llu, %s, %s, "
                  "root %d) while this rank is in %s #%llu (count %llu, %s, %s, root %d)",
                  rank, peer, collectiveName(theirs.collective),
                  static_cast<unsigned long long>(theirs.seq),
                  static_cast<unsigned long long>(theirs.count),
                  reduce::dataTypeName(static_cast<rinaDataType_t>(theirs.datatype)),
                  reduce::opName(static_cast<rinaRedOp_t>(theirs.op)), theirs.root,
                  collectiveName(mine.collective), static_cast<unsigned long long>(mine.seq),
                  static_cast<unsigned long long>(mine.count),
                  reduce::dataTypeName(static_cast<rinaDataType_t>(mine.datatype)),
                  reduce::opName(static_cast<rinaRedOp_t>(mine.op)), mine.root);
  }
  if (theirs.algorithm != mine.algorithm || theirs.sliceBytes != mine.sliceBytes ||
      theirs.smallMsgBytes != mine.smallMsgBytes) {
    return errorf(rinaInvalidUsage,
                  "rank %d: schedules do not match in %s #%llu: rank %d runs it with %s (slices "
                  "of %llu bytes, RINA_SMALL_MSG_BYTES %llu) while this rank runs %s (slices "
                  "of %llu bytes, RINA_SMALL_MSG_BYTES %llu); set the same algorithm "
                  "(rinaCommSetAlgorithm, RINA_ALGO) and knobs on every rank",
                  rank, collectiveName(mine.collective), static_cast<unsigned long long>(mine.seq),
                  peer, algorithmName(static_cast<Algorithm>(theirs.algorithm)),
                  static_cast<unsigned long long>(theirs.sliceBytes),
                  static_cast<unsigned long long>(theirs.smallMsgBytes),
                  algorithmName(static_cast<Algorithm>(mine.algorithm)),
                  static_cast<unsigned long long>(mine.sliceBytes),
                  static_cast<unsigned long long>(mine.smallMsgBytes));
  }
  return {};
}

void addHeaderExchange(Engine& e, const CollHeader& mine, CollHeader* theirs,
                       transport::Connection* to, transport::Connection* from, int rank) {
  static_assert(sizeof(CollHeader) % 8 == 0);
  if (to)
    e.sends().push_back(
        SendItem{.conn = to, .data = reinterpret_cast<const char*>(&mine), .len = sizeof(mine)});
  if (!from) return;
  RecvItem item{.conn = from, .dst = reinterpret_cast<char*>(theirs), .len = sizeof(*theirs)};
  item.onDone = [&mine, theirs, rank, peer = from->peer()]() -> Status {
    return checkCollHeader(mine, *theirs, rank, peer);
  };
  e.recvs().push_back(std::move(item));
}

std::string Engine::waitingFor() const {
  std::string what;
  char buf[256];
  if (ri_ < recvs_.size()) {
    const RecvItem& r = recvs_[ri_];
    std::snprintf(buf, sizeof(buf),
                  "receiving from rank %d (step %d of %d, slice %d, %zu of %zu bytes%s)",
                  r.conn->peer(), r.step, ctx_.steps, r.slice, rdone_, r.len,
                  recvGated_ ? ", not yet ready" : "");
    what = buf;
  }
  if (si_ < sends_.size()) {
    const SendItem& s = sends_[si_];
    std::snprintf(buf, sizeof(buf),
                  "sending to rank %d (step %d of %d, slice %d, %zu of %zu bytes%s)",
                  s.conn->peer(), s.step, ctx_.steps, s.slice, sdone_, s.len,
                  sendGated_ ? ", not yet ready" : "");
    if (!what.empty()) what += "; ";
    what += buf;
  }
  for (const EngineTask* t : tasks_) {
    if (t->done()) continue;
    if (!what.empty()) what += "; ";
    what += t->describe();
  }
  return what;
}

Status Engine::stalled(int64_t waitedMs, const char* why) const {
  const std::string what = waitingFor();
  if (why) {
    return errorf(rinaTimeout, "rank %d: %s #%llu: %s while %s", ctx_.rank, ctx_.collective,
                  static_cast<unsigned long long>(ctx_.seq), why, what.c_str());
  }
  return errorf(rinaTimeout,
                "rank %d: %s #%llu: no progress for %lld ms (RINA_TIMEOUT_MS) while %s", ctx_.rank,
                ctx_.collective, static_cast<unsigned long long>(ctx_.seq),
                static_cast<long long>(waitedMs), what.c_str());
}

void Engine::beginBusy(transport::Connection* c, int dir, Clock::time_point now) {
  for (BusyRun& b : busy_) {
    if (b.conn == c && b.dir == dir) {
      b.ending = false;
      return;
    }
  }
  busy_.push_back(BusyRun{c, dir, now, c->counters().bytes[dir], false});
}

void Engine::endBusy(transport::Connection* c, int dir) {
  for (BusyRun& b : busy_) {
    if (b.conn == c && b.dir == dir) b.ending = true;
  }
}

void Engine::closeBusy(Clock::time_point now, bool all) {
  for (size_t i = 0; i < busy_.size();) {
    BusyRun& b = busy_[i];
    if (!all && !b.ending) {
      ++i;
      continue;
    }
    transport::LinkCounters& k = b.conn->counters();
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - b.start).count();
    k.closeRun(static_cast<transport::Direction>(b.dir),
               static_cast<double>(k.bytes[b.dir] - b.bytesAtStart), ns);
    busy_[i] = busy_.back();
    busy_.pop_back();
  }
}

Status Engine::run() {
  tracing_ = logLevel() >= LogLevel::kTrace;
  // Link accounting, a hard deadline and tracing need the clock every pass;
  // an engine of tasks alone (the host segment's collectives) reads it only
  // once it has waited a while (runLoop).
  everyPass_ = tracing_ || spinUs_ <= 0 || !sends_.empty() || !recvs_.empty() ||
               deadline_ != Deadline::max();
  const auto start = everyPass_ ? Clock::now() : Clock::time_point{};
  Status st = runLoop(start);
  if (st.code() == rinaRemoteError && ctx_.watch && *ctx_.watch) {
    // A rank that revoked the communicator may have left right after: its
    // notice, not its closed connection, is what happened.
    Status w = (*ctx_.watch)();
    if (w.code() == rinaRevoked) {
      st = w.prepend("rank " + std::to_string(ctx_.rank) + ": " + ctx_.collective + " #" +
                     std::to_string(ctx_.seq) + ": ");
    }
  }
  // The clock only for what needs it: a small collective's call reads it
  // a few times in all (each read costs tens of ns on a virtual machine).
  if (busy_.empty() && !tracing_) return st;
  const auto end = Clock::now();
  closeBusy(end, true);
  RINA_TRACE(
      "rank %d: %s #%llu: %lld us, %llu passes, %llu yields (%lld us), %llu sleeps "
      "(%lld us; longest %lld us, %s)",
      ctx_.rank, ctx_.collective, static_cast<unsigned long long>(ctx_.seq),
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::microseconds>(end - start).count()),
      static_cast<unsigned long long>(trace_.passes),
      static_cast<unsigned long long>(trace_.yields),
      static_cast<long long>(trace_.yieldedNs / 1000),
      static_cast<unsigned long long>(trace_.sleeps), static_cast<long long>(trace_.sleptNs / 1000),
      static_cast<long long>(trace_.longestNs / 1000),
      trace_.longestWhat.empty() ? "-" : trace_.longestWhat.c_str());
  return st;
}

bool Engine::tasksDone() const {
  for (const EngineTask* t : tasks_) {
    if (!t->done()) return false;
  }
  return true;
}

Status Engine::pass(Clock::time_point now, bool* progressed) {
  constexpr int kSend = static_cast<int>(transport::Direction::kSend);
  constexpr int kRecv = static_cast<int>(transport::Direction::kRecv);
  sendBlocked_ = recvBlocked_ = sendGated_ = recvGated_ = false;
  while (si_ < sends_.size()) {
    const SendItem& s = sends_[si_];
    if (s.afterRecv >= 0 && ri_ <= static_cast<size_t>(s.afterRecv)) break;
    if (sdone_ == 0 && s.ready && !s.ready()) {
      sendGated_ = true;
      break;
    }
    if (sdone_ < s.len) {
      size_t moved = 0;
      Status st = s.conn->trySend(s.data + sdone_, s.len - sdone_, &moved);
      if (!st.ok()) {
        return st.prepend("rank " + std::to_string(ctx_.rank) + ": " + ctx_.collective + " #" +
                          std::to_string(ctx_.seq) + " step " + std::to_string(s.step) + ": ");
      }
      if (moved > 0) {
        if (sdone_ == 0) beginBusy(s.conn, kSend, now);
        s.conn->counters().bytes[kSend] += moved;
        *progressed = true;
      }
      sdone_ += moved;
    }
    if (sdone_ < s.len) {
      sendBlocked_ = true;
      break;
    }
    if (s.len > 0) endBusy(s.conn, kSend);
    s.conn->endMessage(transport::Direction::kSend);
    ++si_;
    sdone_ = 0;
    *progressed = true;
  }
  while (ri_ < recvs_.size()) {
    RecvItem& r = recvs_[ri_];
    if (r.afterSend >= 0 && si_ <= static_cast<size_t>(r.afterSend)) break;
    if (rdone_ == 0 && r.ready && !r.ready()) {
      recvGated_ = true;
      break;
    }
    if (rdone_ < r.len) {
      transport::RecvReduce red = r.reduce;
      if (red.fn) red.a = static_cast<const char*>(red.a) + rdone_;
      size_t moved = 0;
      Status st = r.conn->tryRecv(r.dst + rdone_, r.len - rdone_, red, &moved);
      if (!st.ok()) {
        return st.prepend("rank " + std::to_string(ctx_.rank) + ": " + ctx_.collective + " #" +
                          std::to_string(ctx_.seq) + " step " + std::to_string(r.step) + ": ");
      }
      if (moved > 0) {
        if (rdone_ == 0) beginBusy(r.conn, kRecv, now);
        r.conn->counters().bytes[kRecv] += moved;
        *progressed = true;
      }
      rdone_ += moved;
    }
    if (rdone_ < r.len) {
      recvBlocked_ = true;
      break;
    }
    if (r.len > 0) endBusy(r.conn, kRecv);
    r.conn->endMessage(transport::Direction::kRecv);
    if (r.onDone) RINA_TRY(r.onDone());
    ++ri_;
    rdone_ = 0;
    *progressed = true;
  }
  return {};
}

Status Engine::poll(bool* progressed) {
  *progressed = false;
  const auto now = Clock::now();
  if (!busy_.empty()) closeBusy(now, false);
  RINA_TRY(pass(now, progressed));
  if (finished()) closeBusy(now, true);
  return {};
}

void Engine::arm(transport::WaitSet& ws) const {
  if (sendBlocked_ && recvBlocked_ && sends_[si_].conn == recvs_[ri_].conn) {
    sends_[si_].conn->armWait(ws, true, true);
    return;
  }
  if (sendBlocked_) sends_[si_].conn->armWait(ws, true, false);
  if (recvBlocked_) recvs_[ri_].conn->armWait(ws, false, true);
}

Status Engine::checkAlive() const {
  Status st = sendBlocked_ ? sends_[si_].conn->checkAlive() : Status();
  if (st.ok() && recvBlocked_) st = recvs_[ri_].conn->checkAlive();
  return st;
}

Status Engine::checkPendingPeers() const {
  std::vector<transport::Connection*> seen;
  if (sendBlocked_ && si_ < sends_.size()) seen.push_back(sends_[si_].conn);
  for (size_t i = si_; i < sends_.size(); ++i) {
    transport::Connection* c = sends_[i].conn;
    if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
    seen.push_back(c);
    RINA_TRY(c->checkGone());
  }
  return {};
}

bool Engine::tasksSpin() const {
  bool any = false;
  for (EngineTask* t : tasks_) {
    if (t->done()) continue;
    if (!t->spinsRatherThanYields()) return false;
    any = true;
  }
  return any;
}

void Engine::yieldCore(Clock::time_point now) {
  sched_yield();
  ++trace_.yields;
  if (tracing_) {
    trace_.yieldedNs +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - now).count();
  }
}

Status Engine::runLoop(Clock::time_point start) {
  auto now = start, lastProgress = start;
  bool first = true;
  bool peerGone = false;  // one more try after a hang-up: data may still be queued
  // Without everyPass_, the first kQuickYields yields after progress read
  // no clock: a small call waits a yield or two, and two clock reads cost
  // it as much as the rest of its pass. Its time starts after them.
  int quietYields = 0;
  int spinsLeft = kSpins;
  auto prefixed = [&](Status st) {
    return st.prepend("rank " + std::to_string(ctx_.rank) + ": " + ctx_.collective + " #" +
                      std::to_string(ctx_.seq) + ": ");
  };
  while (!finished() || !tasksDone()) {
    // The one clock read of this pass.
    if (!first && (everyPass_ || quietYields > kQuickYields)) now = Clock::now();
    first = false;
    ++trace_.passes;
    if (!busy_.empty()) closeBusy(now, false);
    if (now >= deadline_) {
      const std::string why = std::string("out of time (") + deadlineKnob_ + ")";
      return stalled(0, why.c_str());
    }
    bool progressed = false;
    RINA_TRY(pass(now, &progressed));
    bool tasksPending = false;
    for (EngineTask* t : tasks_) {
      if (t->done()) continue;
      bool moved = false;
      RINA_TRY(t->progress(&moved));
      progressed |= moved;
      tasksPending |= !t->done();
    }
    if (progressed) {
      lastProgress = now;
      peerGone = false;
      quietYields = 0;
      spinsLeft = kSpins;
      continue;
    }
    if (ctx_.abort && ctx_.abort->load()) {
      return errorf(rinaAborted, "rank %d: %s #%llu aborted by rinaCommAbort", ctx_.rank,
                    ctx_.collective, static_cast<unsigned long long>(ctx_.seq));
    }
    // Where nothing a task waits for can run on this CPU, a yield would only
    // switch to a core-mate that waits for the same: spin a little instead
    // (at most kSpins times between two steps of progress).
    if (!everyPass_ && spinsLeft > 0 && tasksSpin()) {
      --spinsLeft;
      for (int i = 0; i < 64; ++i) __builtin_ia32_pause();
      continue;
    }
    if (!everyPass_ && quietYields <= kQuickYields) {
      if (quietYields++ < kQuickYields) {
        yieldCore(now);
        continue;
      }
      now = lastProgress = Clock::now();
    }
    int64_t waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - lastProgress).count();
    if (waited >= ctx_.timeoutMs) return stalled(waited);
    if (peerGone) {
      Status st = checkAlive();
      for (EngineTask* t : tasks_) {
        if (st.ok() && !t->done()) st = t->checkAlive();
      }
      if (!st.ok()) return prefixed(st);
    }
    if (!sendBlocked_ && !recvBlocked_ && !tasksPending) {
      return errorf(rinaInternalError, "rank %d: %s #%llu: schedule deadlock at send %zu, recv %zu",
                    ctx_.rank, ctx_.collective, static_cast<unsigned long long>(ctx_.seq), si_,
                    ri_);
    }
    // A short spin that yields the core first: on an oversubscribed host the
    // peer we wait for is often runnable, and a futex sleep + wake costs more
    // than the wait itself for small messages. Bounded by RINA_SPIN_US.
    if (spinUs_ > 0) {
      auto spun = std::chrono::duration_cast<std::chrono::microseconds>(now - lastProgress).count();
      if (spun < spinUs_) {
        yieldCore(now);
        continue;
      }
    }
    transport::WaitSet ws;
    arm(ws);
    int timeoutMs = static_cast<int>(std::min<int64_t>(kWaitSliceMs, ctx_.timeoutMs - waited));
    for (EngineTask* t : tasks_) {
      if (!t->done()) t->arm(ws, &timeoutMs);
    }
    if (ctx_.wakeFd >= 0) ws.addFd(ctx_.wakeFd, POLLIN);
    const auto asleep = Clock::now();
    ws.wait(timeoutMs);
    ++trace_.sleeps;
    const int64_t slept =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - asleep).count();
    trace_.sleptNs += slept;
    if (slept > trace_.longestNs && tracing_) {
      trace_.longestNs = slept;
      trace_.longestWhat = waitingFor();
    }
    if (ctx_.watch && *ctx_.watch) {
      Status w = (*ctx_.watch)();
      // A revoke names no call; this one is the call it stopped.
      if (!w.ok()) return w.code() == rinaRevoked ? prefixed(w) : w;
    }
    // Liveness: a peer that died never wakes us; look after every quiet wait.
    Status alive = checkAlive();
    for (EngineTask* t : tasks_) {
      if (alive.ok() && !t->done()) alive = t->checkAlive();
    }
    if (!alive.ok()) peerGone = true;
    // Once quiet for a whole slice, the peers further on in the schedule too
    // (a send's peer that hung up has nothing queued for this rank to read).
    if (alive.ok() && Clock::now() - lastProgress >= std::chrono::milliseconds(kWaitSliceMs)) {
      Status pending = checkPendingPeers();
      if (!pending.ok()) return prefixed(pending);
    }
  }
  return {};
}

}  // namespace rina::algo
