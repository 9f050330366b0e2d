// Which of a call's datagrams in flight are lost, per switch port: what a
// SliceWindow and a rack all-gather's root both ask before they resend.
//
// A switch port (one aggregation thread) completes a worker's datagrams in
// the order the worker sent them: every worker sends in seq order over one
// path and the thread takes datagrams in arrival order, so slot s completes
// (at the last worker's contribution to it) before slot s + 1 (at the last
// worker's contribution to that, sent after its contribution to s), and a
// thread's answers leave in completion order. So, as TCP finds its losses:
//   - overtaken: an answer for a later datagram of the port, sent no
//     earlier, while one is in flight, means it was lost: resent at once,
//     once per send (no reordering needs tolerating; waiting for more
//     answers would turn every loss in a small window into a timeout);
//   - timeout: a port whose oldest datagram in flight went a retransmission
//     timeout without any answer of the port (the timer restarts at every
//     answer, not at every send, so a queue that drains slowly is no loss)
//     resends that datagram alone and backs the timeout off. The port's
//     answers then come in order: while they keep coming (within a
//     reordering allowance of a quarter round trip, at least a
//     millisecond) nothing more goes; once they stop with datagrams sent
//     before the timeout still in flight, those are lost, and they go
//     again oldest first, two per answer since the timeout (TCP's slow
//     start after a timeout), until none is left. A timeout that was only
//     a late switch or peer thus resends one datagram: the originals'
//     answers take the rest out of flight as they come.
// Every resend is a loss to the port's congestion window.
#ifndef RINA_LIB_INA_LOSS_RECOVERY_H_
#define RINA_LIB_INA_LOSS_RECOVERY_H_

#include <cstdint>
#include <vector>

#include "core/socket.h"
#include "ina/datagram_pump.h"

namespace rina::ina {

class LossRecovery {
 public:
  explicit LossRecovery(DatagramPump& pump);
  // The call starts sending: every port's timer starts now.
  void start(Clock::time_point now);
  // The first answer for e came at now (its slot is free again).
  void answered(const InFlight& e, Clock::time_point now);

  struct Found {
    uint64_t fast = 0;      // overtaken datagrams
    uint64_t timeouts = 0;  // the timer's and the recovery's after it
    uint64_t cuts = 0;      // of the congestion window
    bool timerFired = false;
    Clock::time_point next;  // when to look again, at the latest
  };
  // The call's datagrams in flight (busy, any order): the lost ones are
  // marked as resent (DatagramPump::markResent) and appended to *resend;
  // the caller sends them.
  Found find(std::vector<InFlight*>& busy, Clock::time_point now, std::vector<InFlight*>* resend);

 private:
  struct Port {
    uint32_t highestAnswered = 0;  // absolute seq; 0 = none yet
    Clock::time_point highestSentAt{};
    Clock::time_point lastAnswer{};  // the timer runs from here
    bool recovering = false;
    Clock::time_point recoveryStart{};  // datagrams sent before it may go again
    uint32_t recoveryAnswers = 0;
    uint32_t recoveryResends = 0;
  };
  void lose(InFlight& e, Clock::time_point now, bool timedOut, std::vector<InFlight*>* resend,
            Found* f);

  DatagramPump& pump_;
  std::vector<Port> ports_;
};

}  // namespace rina::ina

#endif  // RINA_LIB_INA_LOSS_RECOVERY_H_
