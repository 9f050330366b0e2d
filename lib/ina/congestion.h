// How much one worker keeps in flight through the switch, and how fast it
// puts it there: the congestion response every call on a DatagramPump shares.
//
// Per switch data port (one aggregation thread, one queue of the switch) a
// window of datagrams in flight, as ATP and SwitchML bound theirs and TCP
// grows its own (AIMD): it starts at the port's share of the granted slots,
// halves on a loss (a retransmission timeout or a datagram overtaken by
// later answers of the same port), at most once per window of data (a loss
// of a datagram first sent before the last cut is the same congestion
// event), and grows by one datagram per window of answers. A cut whose
// resend proves unneeded (both the original's answer and the resend's came
// back) is undone, so a reordering or a late peer does not shrink the
// window for good. A datagram overtaken by later answers alone, with no
// other loss in the last window of first sends, is taken for a random loss,
// not a queue that overflowed (those drop in runs), and resent without a
// cut: a slot one worker lost is lost to every worker of the rack (each
// resends it), so under 1% of random loss per datagram every worker would
// halve several times per window and the rack would crawl.
//
// A pacer (token bucket) spreads first sends over time at the link's rate,
// so a window does not leave as one burst that queues behind itself.
#ifndef RINA_LIB_INA_CONGESTION_H_
#define RINA_LIB_INA_CONGESTION_H_

#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/socket.h"
#include "core/status.h"

namespace rina::ina {

// What the congestion response did over a pump's life (counts, not times).
struct CongestionStats {
  uint64_t cuts = 0;            // window halvings
  uint64_t undos = 0;           // halvings undone: their resend was not needed
  uint64_t isolated = 0;        // overtaken losses alone in their window: no halving
  uint32_t smallestWindow = 0;  // the smallest window any port had (0: no grant yet)
};

class CongestionWindow {
 public:
  // A new grant: `slotsPerPort[p]` window slots serve switch port p; each
  // window starts there (its ceiling). enabled false: the window stays at
  // the ceiling whatever happens (the fixed window of a plain SwitchML).
  void reset(const std::vector<uint32_t>& slotsPerPort, bool enabled);

  // Whether a first send may go to port p now.
  bool canSend(uint32_t p) const { return ports_[p].inFlight < limit(p); }
  // The datagrams port p may have in flight now (1 to its ceiling).
  uint32_t limit(uint32_t p) const;
  uint32_t inFlight(uint32_t p) const { return ports_[p].inFlight; }
  // A first send to port p left.
  void sent(uint32_t p) {
    ports_[p].inFlight++;
    if (ports_[p].sentSinceLoss != UINT32_MAX) ports_[p].sentSinceLoss++;
  }
  // A datagram of port p is out of flight: answered (`result`: a sum or an
  // acknowledgement, which grows the window), NACKed, or given up on.
  void done(uint32_t p, bool result);
  // A datagram of port p first sent at `firstSent` was lost (it is resent
  // now, at `now`; timedOut: found by the retransmission timer, else
  // overtaken): halves the window unless this congestion event already did
  // or it is an isolated overtaken loss (above); true when it did. seq
  // names it, for spurious().
  bool lost(uint32_t p, uint32_t seq, Clock::time_point firstSent, Clock::time_point now,
            bool timedOut);
  // Both copies of seq came back: its resend was not needed. Undoes the cut
  // it made, if it made the last one of its port; true when it did.
  bool spurious(uint32_t p, uint32_t seq);

  size_t ports() const { return ports_.size(); }
  const CongestionStats& stats() const { return stats_; }

 private:
  struct Port {
    double window = 1;
    uint32_t ceiling = 1;
    uint32_t inFlight = 0;
    Clock::time_point lastCut{};  // datagrams first sent before it: same event
    bool cutUndoable = false;
    uint32_t cutSeq = 0;                  // the datagram whose loss made the last cut
    double windowBeforeCut = 1;           // what undo() restores
    uint32_t sentSinceLoss = UINT32_MAX;  // first sends since the last loss
    uint32_t lastLossSeq = 0;
  };
  void noteSmallest(uint32_t w);

  bool enabled_ = true;
  std::vector<Port> ports_;
  CongestionStats stats_;
};

// Sends at most `rate` bytes per second on average, in bursts of at most
// `burst` bytes. Rate 0: no pacing.
// RINA_INA_PACE's text as bytes per second: "off" (0), "auto" (the rack's
// host link rate, linkMbit; 0 when unknown) or a rate in Mbit/s. Anything
// else: rinaInvalidArgument naming the knob.
Status paceBytesPerSec(std::string_view text, double linkMbit, double* bytesPerSec);

class Pacer {
 public:
  void configure(double bytesPerSec, double burstBytes);
  bool enabled() const { return rate_ > 0; }
  // Whether `bytes` may leave at now; if so they are taken from the bucket.
  bool take(size_t bytes, Clock::time_point now);
  // Microseconds from now until `bytes` may leave (0: now).
  int64_t waitUs(size_t bytes, Clock::time_point now) const;
  uint64_t holds() const { return holds_; }  // sends it held back

 private:
  double tokensAt(Clock::time_point now) const;

  double rate_ = 0;  // bytes per second
  double burst_ = 0;
  double tokens_ = 0;
  Clock::time_point last_{};
  uint64_t holds_ = 0;
};

}  // namespace rina::ina

#endif  // RINA_LIB_INA_CONGESTION_H_
