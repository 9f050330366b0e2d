#include "algo/engine.h"

#include <algorithm>
#include <sched.h>

#include <chrono>
#include <cmath>

#include "core/socket.h"
#include "reduce/reduce.h"
#include "transport/wait_set.h"

namespace rina::algo {

const char* collectiveName(uint8_t kind) {
  switch (kind) {
    case kAllReduce: return "allreduce";
    case kReduceScatter: return "reduce-scatter";
    case kAllGather: return "allgather";
    case kBroadcast: return "broadcast";
    case kGatherLinkRates: return "gather link rates";
    case kPlanExchange: return "plan exchange";
    default: return "unknown collective";
  }
}

namespace {
constexpr uint32_t kHeaderMagic = 0x52484452;  // "RHDR"
constexpr int kWaitSliceMs = 100;              // abort and liveness are checked this often
// A link's smoothed rate forgets older busy time with this time constant
// (in busy time, so many short transfers do not wash out a long one).
constexpr double kRateWindowNs = 100e6;
}  // namespace

void addHeaderExchange(Engine& e, const CollHeader& mine, CollHeader* theirs,
                       transport::Connection* to, transport::Connection* from, int rank) {
  static_assert(sizeof(CollHeader) % 8 == 0);
  if (to) e.sends().push_back(SendItem{to, reinterpret_cast<const char*>(&mine), sizeof(mine), -1, 0, 0});
  if (!from) return;
  RecvItem item{from, reinterpret_cast<char*>(theirs), sizeof(*theirs), {}, -1, 0, 0, {}};
  item.onDone = [&mine, theirs, rank, peer = from->peer()]() -> Status {
    if (theirs->magic != kHeaderMagic) {
      return errorf(rinaRemoteError, "rank %d: peer %d sent a corrupt collective header", rank,
                    peer);
    }
    if (theirs->collective != mine.collective || theirs->seq != mine.seq ||
        theirs->count != mine.count || theirs->datatype != mine.datatype ||
        theirs->op != mine.op || theirs->root != mine.root) {
      return errorf(rinaInvalidUsage,
                    "rank %d: calls do not match: peer %d is in %s #%llu (count %llu, %s, %s, "
                    "root %d) while this rank is in %s #%llu (count %llu, %s, %s, root %d)",
                    rank, peer, collectiveName(theirs->collective),
                    static_cast<unsigned long long>(theirs->seq),
                    static_cast<unsigned long long>(theirs->count),
                    reduce::dataTypeName(static_cast<rinaDataType_t>(theirs->datatype)),
                    reduce::opName(static_cast<rinaRedOp_t>(theirs->op)), theirs->root,
                    collectiveName(mine.collective), static_cast<unsigned long long>(mine.seq),
                    static_cast<unsigned long long>(mine.count),
                    reduce::dataTypeName(static_cast<rinaDataType_t>(mine.datatype)),
                    reduce::opName(static_cast<rinaRedOp_t>(mine.op)), mine.root);
    }
    return {};
  };
  e.recvs().push_back(std::move(item));
}

Status Engine::stalled(int64_t waitedMs, size_t si, size_t sdone, size_t ri, size_t rdone,
                       const char* why) const {
  std::string what;
  char buf[256];
  if (ri < recvs_.size()) {
    const RecvItem& r = recvs_[ri];
    std::snprintf(buf, sizeof(buf), "receiving from rank %d (step %d of %d, slice %d, %zu of %zu bytes)",
                  r.conn->peer(), r.step, ctx_.steps, r.slice, rdone, r.len);
    what = buf;
  }
  if (si < sends_.size()) {
    const SendItem& s = sends_[si];
    std::snprintf(buf, sizeof(buf), "sending to rank %d (step %d of %d, slice %d, %zu of %zu bytes)",
                  s.conn->peer(), s.step, ctx_.steps, s.slice, sdone, s.len);
    if (!what.empty()) what += "; ";
    what += buf;
  }
  if (why) {
    return errorf(rinaTimeout, "rank %d: %s #%llu: %s while %s", ctx_.rank, ctx_.collective,
                  static_cast<unsigned long long>(ctx_.seq), why, what.c_str());
  }
  return errorf(rinaTimeout, "rank %d: %s #%llu: no progress for %lld ms (RINA_TIMEOUT_MS) while %s",
                ctx_.rank, ctx_.collective, static_cast<unsigned long long>(ctx_.seq),
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
    const double bytes = static_cast<double>(k.bytes[b.dir] - b.bytesAtStart);
    k.busyNs[b.dir] += ns;
    const double keep = std::exp(-static_cast<double>(ns) / kRateWindowNs);
    k.smoothBytes[b.dir] = keep * k.smoothBytes[b.dir] + bytes;
    k.smoothNs[b.dir] = keep * k.smoothNs[b.dir] + static_cast<double>(ns);
    busy_[i] = busy_.back();
    busy_.pop_back();
  }
}

Status Engine::run() {
  Status st = runLoop();
  closeBusy(Clock::now(), true);
  return st;
}

Status Engine::runLoop() {
  constexpr int kSend = static_cast<int>(transport::Direction::kSend);
  constexpr int kRecv = static_cast<int>(transport::Direction::kRecv);
  size_t si = 0, sdone = 0, ri = 0, rdone = 0;
  transport::WaitSet ws;
  auto lastProgress = Clock::now();
  bool peerGone = false;  // one more try after a hang-up: data may still be queued
  while (si < sends_.size() || ri < recvs_.size()) {
    const auto now = Clock::now();  // the one clock read of this pass
    if (!busy_.empty()) closeBusy(now, false);
    if (now >= deadline_) {
      const std::string why = std::string("out of time (") + deadlineKnob_ + ")";
      return stalled(0, si, sdone, ri, rdone, why.c_str());
    }
    bool progressed = false;
    bool sendBlocked = false, recvBlocked = false;
    while (si < sends_.size()) {
      const SendItem& s = sends_[si];
      if (s.afterRecv >= 0 && ri <= static_cast<size_t>(s.afterRecv)) break;
      if (sdone < s.len) {
        size_t moved = 0;
        Status st = s.conn->trySend(s.data + sdone, s.len - sdone, &moved);
        if (!st.ok()) {
          return st.prepend("rank " + std::to_string(ctx_.rank) + ": " + ctx_.collective + " #" +
                            std::to_string(ctx_.seq) + " step " + std::to_string(s.step) + ": ");
        }
        if (moved > 0) {
          if (sdone == 0) beginBusy(s.conn, kSend, now);
          s.conn->counters().bytes[kSend] += moved;
          progressed = true;
        }
        sdone += moved;
      }
      if (sdone < s.len) {
        sendBlocked = true;
        break;
      }
      if (s.len > 0) endBusy(s.conn, kSend);
      s.conn->endMessage(transport::Direction::kSend);
      ++si;
      sdone = 0;
      progressed = true;
    }
    while (ri < recvs_.size()) {
      RecvItem& r = recvs_[ri];
      if (r.afterSend >= 0 && si <= static_cast<size_t>(r.afterSend)) break;
      if (rdone < r.len) {
        transport::RecvReduce red = r.reduce;
        if (red.fn) red.a = static_cast<const char*>(red.a) + rdone;
        size_t moved = 0;
        Status st = r.conn->tryRecv(r.dst + rdone, r.len - rdone, red, &moved);
        if (!st.ok()) {
          return st.prepend("rank " + std::to_string(ctx_.rank) + ": " + ctx_.collective + " #" +
                            std::to_string(ctx_.seq) + " step " + std::to_string(r.step) + ": ");
        }
        if (moved > 0) {
          if (rdone == 0) beginBusy(r.conn, kRecv, now);
          r.conn->counters().bytes[kRecv] += moved;
          progressed = true;
        }
        rdone += moved;
      }
      if (rdone < r.len) {
        recvBlocked = true;
        break;
      }
      if (r.len > 0) endBusy(r.conn, kRecv);
      r.conn->endMessage(transport::Direction::kRecv);
      if (r.onDone) RINA_TRY(r.onDone());
      ++ri;
      rdone = 0;
      progressed = true;
    }
    if (progressed) {
      lastProgress = now;
      peerGone = false;
      continue;
    }
    if (ctx_.abort && ctx_.abort->load()) {
      return errorf(rinaAborted, "rank %d: %s #%llu aborted by rinaCommAbort", ctx_.rank,
                    ctx_.collective, static_cast<unsigned long long>(ctx_.seq));
    }
    int64_t waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - lastProgress).count();
    if (waited >= ctx_.timeoutMs) return stalled(waited, si, sdone, ri, rdone);
    if (peerGone) {
      Status st = sendBlocked ? sends_[si].conn->checkAlive() : recvs_[ri].conn->checkAlive();
      if (st.ok() && sendBlocked && recvBlocked) st = recvs_[ri].conn->checkAlive();
      if (!st.ok()) {
        return st.prepend("rank " + std::to_string(ctx_.rank) + ": " + ctx_.collective + " #" +
                          std::to_string(ctx_.seq) + ": ");
      }
    }
    if (!sendBlocked && !recvBlocked) {
      return errorf(rinaInternalError, "rank %d: %s #%llu: schedule deadlock at send %zu, recv %zu",
                    ctx_.rank, ctx_.collective, static_cast<unsigned long long>(ctx_.seq), si, ri);
    }
    // A short spin that yields the core first: on an oversubscribed host the
    // peer we wait for is often runnable, and a futex sleep + wake costs more
    // than the wait itself for small messages. Bounded by RINA_SPIN_US.
    if (spinUs_ > 0) {
      auto spun = std::chrono::duration_cast<std::chrono::microseconds>(now - lastProgress).count();
      if (spun < spinUs_) {
        sched_yield();
        continue;
      }
    }
    ws.clear();
    if (sendBlocked && recvBlocked && sends_[si].conn == recvs_[ri].conn) {
      sends_[si].conn->armWait(ws, true, true);
    } else {
      if (sendBlocked) sends_[si].conn->armWait(ws, true, false);
      if (recvBlocked) recvs_[ri].conn->armWait(ws, false, true);
    }
    ws.wait(static_cast<int>(std::min<int64_t>(kWaitSliceMs, ctx_.timeoutMs - waited)));
    // Liveness: a peer that died never wakes us; look after every quiet wait.
    Status alive = sendBlocked ? sends_[si].conn->checkAlive() : Status();
    if (alive.ok() && recvBlocked) alive = recvs_[ri].conn->checkAlive();
    if (!alive.ok()) peerGone = true;
  }
  return {};
}

}  // namespace rina::algo
