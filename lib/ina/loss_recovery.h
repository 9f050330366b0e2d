// Which of a call's datagrams in flight are lost, per switch port: what a
// SliceWindow and a rack all-gather's root both ask before they resend.
// A port answers a worker's datagrams in the order it sent them, so a
// later answer means loss, and the timer is a last resort; docs/racks.md
// ("Congestion") gives the argument and the timeout's recovery.
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
