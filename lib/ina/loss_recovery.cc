#include "ina/loss_recovery.h"

#include <algorithm>

namespace rina::ina {
namespace {

bool before(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }

}  // namespace

LossRecovery::LossRecovery(DatagramPump& pump) : pump_(pump), ports_(pump.grant().ports) {}

void LossRecovery::start(Clock::time_point now) {
  for (Port& p : ports_) {
    p = Port{};
    p.lastAnswer = now;
  }
}

void LossRecovery::answered(const InFlight& e, Clock::time_point now) {
  Port& p = ports_[pump_.portOf(e.slot)];
  p.lastAnswer = now;
  if (p.recovering) p.recoveryAnswers++;
  if (p.highestAnswered == 0 || before(p.highestAnswered, e.seq)) {
    p.highestAnswered = e.seq;
    p.highestSentAt = e.sentAt;
  }
}

void LossRecovery::lose(InFlight& e, Clock::time_point now, bool timedOut,
                        std::vector<InFlight*>* resend, Found* f) {
  DatagramPump::markResent(e);
  e.fastResent = true;  // at most one early resend per send; then the timer
  if (pump_.congestion().lost(pump_.portOf(e.slot), e.seq, e.firstSentAt, now, timedOut)) {
    f->cuts++;
  }
  resend->push_back(&e);
}

LossRecovery::Found LossRecovery::find(std::vector<InFlight*>& busy, Clock::time_point now,
                                       std::vector<InFlight*>* resend) {
  Found f;
  const auto rto = std::chrono::microseconds(pump_.rto().rtoUs());
  const auto reorder = std::chrono::microseconds(std::max<int64_t>(1000, pump_.rto().srttUs() / 4));
  f.next = now + std::chrono::milliseconds(pump_.options().switchTimeoutMs);
  std::sort(busy.begin(), busy.end(),
            [](const InFlight* a, const InFlight* b) { return before(a->seq, b->seq); });
  const size_t first = resend->size();
  auto resent = [&](const InFlight* e) {
    return std::find(resend->begin() + static_cast<long>(first), resend->end(), e) != resend->end();
  };
  // Overtaken datagrams.
  for (InFlight* e : busy) {
    const Port& p = ports_[pump_.portOf(e->slot)];
    if (!e->fastResent && p.highestAnswered != 0 && before(e->seq, p.highestAnswered) &&
        e->sentAt <= p.highestSentAt) {
      lose(*e, now, false, resend, &f);
      f.fast++;
    }
  }
  for (uint32_t port = 0; port < ports_.size(); ++port) {
    Port& p = ports_[port];
    InFlight* oldest = nullptr;
    for (InFlight* e : busy) {
      if (pump_.portOf(e->slot) == port) {
        oldest = e;
        break;
      }
    }
    if (!oldest) {
      p.recovering = false;
      continue;
    }
    // After a timeout: once the port's answers pause, two more of the
    // datagrams sent before it per answer since.
    if (p.recovering) {
      const Clock::time_point quiet = p.lastAnswer + reorder;
      bool left = false;
      for (InFlight* e : busy) {
        if (pump_.portOf(e->slot) != port || e->sentAt >= p.recoveryStart || resent(e)) continue;
        left = true;
        if (p.recoveryAnswers == 0 || now < quiet ||
            p.recoveryResends >= 1 + 2 * p.recoveryAnswers) {
          break;
        }
        lose(*e, now, true, resend, &f);
        p.recoveryResends++;
        f.timeouts++;
      }
      p.recovering = left;
      if (left && p.recoveryAnswers > 0 && now < quiet) f.next = std::min(f.next, quiet);
    }
    // The timer: the oldest datagram, from the later of its send and the
    // port's last answer (a datagram resent just now restarts it).
    const Clock::time_point start = resent(oldest) ? now : std::max(oldest->sentAt, p.lastAnswer);
    if (now - start < rto) {
      f.next = std::min(f.next, start + rto);
      continue;
    }
    lose(*oldest, now, true, resend, &f);
    f.timeouts++;
    f.timerFired = true;
    p.lastAnswer = now;
    p.recovering = true;
    p.recoveryStart = now;
    p.recoveryAnswers = 0;
    p.recoveryResends = 1;
  }
  if (f.timerFired) {
    // The caller backs the timeout off: look again one (doubled) timeout on.
    f.next = std::min(f.next, now + 2 * rto);
  }
  return f;
}

}  // namespace rina::ina
