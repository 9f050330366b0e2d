// The datagram machinery that one worker's INA calls share: the UDP socket
// answers come back on, the sender datagrams leave through (UDP with the
// batch offloads, or RDMA UC writes: ina_sender.h), the granted slots and
// the datagram in flight in each, the retransmission timer, the slice
// sequence, and the hand-off of every answer to the call it belongs to.
//
// The calls on it (reduce_call.h, gather_call.h, broadcast_call.h) build
// their datagrams and read their answers; the pump moves them. A call owns
// a range of seqs and, while it runs, is attached: an answer goes to the
// attached call whose seqs hold its seq. An answer for a seq past every
// attached call (a broadcast a rack-mate started while this worker was still
// busy) is kept for the call that will own it; one for no call is stale.
//
// Answers arrive on the socket in the native or the RoCEv2 layout
// (include/rina/ina_roce.h), or through the sender (a UC queue pair's
// receive ring, written by a switch that answers through the NIC); all are
// accepted.
#ifndef RINA_LIB_INA_DATAGRAM_PUMP_H_
#define RINA_LIB_INA_DATAGRAM_PUMP_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "core/socket.h"
#include "core/status.h"
#include "ina/congestion.h"
#include "ina/ina_sender.h"
#include "ina/rto.h"
#include "ina/switch_calls.h"
#include "rina/ina_wire.h"
#include "wire/ctrl_protocol.h"
#include "wire/endpoint.h"
#include "wire/udp_batch.h"

namespace rina::ina {

// An InaClient's options; they all shape its pump.
struct InaClientOptions {
  uint32_t switchAddr = 0x7F000001;  // data-plane IPv4; ports come with the grant
  Endpoint local{0x7F000001, 0};     // this worker's UDP address (port 0: any)
  uint16_t job = 0;                  // 0: not known yet (InaClient::setJob before the grant)
  uint64_t token = 0;
  uint8_t worker = 0;  // index in the rack, < fanIn
  uint8_t fanIn = 1;
  uint32_t window = 0;  // slots a call may use; 0 = every granted slot
  // The congestion response (congestion.h): a window per switch port that
  // halves on loss and grows on progress; false keeps every slot in flight.
  bool congestionWindow = true;
  // First sends paced to this rate (bytes/s; 0: not paced), in bursts of at
  // most paceBurstBytes (0: a millisecond's worth, at least 4 datagrams).
  double paceBytesPerSec = 0;
  double paceBurstBytes = 0;
  int64_t initialRtoUs = 10000;
  // The floor of the retransmission timeout; the pump raises it above the
  // scheduler's quantum (schedulerRtoFloorUs()), so a descheduled peer or
  // switch thread does not look like a loss.
  int64_t minRtoUs = 2000;
  int64_t maxRtoUs = 200000;
  int switchTimeoutMs = 5000;  // no progress this long -> rinaTimeout
  int socketBufferBytes = 4 << 20;
  // With a sender other than UDP: a grant that sender cannot carry (setGrant)
  // makes the client send over UDP from then on, with an INFO line, instead
  // of failing (RINA_INA_TRANSPORT=auto).
  bool udpFallback = true;
};

inline int64_t microsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::microseconds>(b - a).count();
}

// Slices of sliceElems elements that count elements make.
inline size_t sliceCount(size_t count, size_t sliceElems) {
  return (count + sliceElems - 1) / sliceElems;
}

// The datagram in flight in one slot of the window.
struct InFlight {
  uint32_t seq = 0;
  uint32_t slot = 0;  // index in the window
  bool busy = false;
  bool retransmitted = false;
  bool fastResent = false;   // resent early since its send
  bool lateCounted = false;  // a second answer of this (resent) seq was counted
  Clock::time_point firstSentAt;
  Clock::time_point sentAt;  // the latest send
  std::vector<uint8_t> bytes;
};

// The retransmission timeout's floor for a host whose threads share CPUs:
// twice the scheduler's base time slice (EEVDF's default, 0.75 ms x (1 +
// log2 CPUs), at most 8 CPUs counted) plus a millisecond for the pump's
// own millisecond-grained waits.
int64_t schedulerRtoFloorUs();

// A call running on the pump: the seqs [seqBegin(), seqEnd()) are its.
class PumpCall {
 public:
  virtual ~PumpCall() = default;
  virtual const char* name() const = 0;  // "allreduce", ...
  // Whether it holds one of the window slots first .. first + count - 1.
  virtual bool holdsSlots(uint32_t first, uint32_t count) const { return false; }
  virtual uint32_t seqBegin() const = 0;
  virtual uint32_t seqEnd() const = 0;
  // An answer of this job (token checked) for one of its seqs; payload:
  // h.elems words as they are on the wire.
  virtual void onAnswer(const Header& h, const uint8_t* payload) = 0;
  // An answer of this job for no attached call: a late copy for a finished one.
  virtual void onStray(const Header& h) {}
};

class DatagramPump {
 public:
  // sender: how datagrams leave; null = UDP on the pump's socket.
  static Status create(const InaClientOptions& options, std::unique_ptr<InaSender> sender,
                       std::unique_ptr<DatagramPump>* out);

  const InaClientOptions& options() const { return options_; }
  const char* senderName() const { return sender_->name(); }
  const Endpoint& localEndpoint() const { return local_; }
  // Readable when an answer waits: the socket, or an epoll set of the
  // socket and the sender's receive side.
  int fd() const { return wait_.valid() ? wait_.get() : socket_.get(); }
  // "ina: worker W job J: ", the start of every message about this worker.
  std::string context() const;

  // See InaClient::setJob and setGrant.
  Status setJob(uint16_t job, uint64_t token);
  Status setGrant(const Grant& grant);
  const Grant& grant() const { return grant_; }
  uint32_t window() const { return window_; }
  // rinaInvalidUsage "<what> before a slot grant" while there is none.
  Status needGrant(const char* what) const;
  // Whether the switch NACKed slot w (preempted under us), for the rest of the grant.
  bool slotLost(uint32_t w) const { return lostSlots_[w]; }
  void loseSlot(uint32_t w) { lostSlots_[w] = true; }
  bool lostSlots() const;
  // A call took a live result of this grant (not a NACK, not a stale or
  // duplicate answer): the switch made progress since the grant.
  void noteResult() { resultSinceGrant_ = true; }
  bool resultSinceGrant() const { return resultSinceGrant_; }

  // The window slots a call (what) asks for: first .. first + *slots - 1,
  // where *slots 0 asks for the rest of the window. At least one, inside the
  // window, and none held by an attached call.
  Status claimSlots(const char* what, uint32_t first, uint32_t* slots) const;
  // Seqs base .. base + count - 1 for a call; rinaInvalidUsage near the
  // 32-bit wrap (the caller REQUESTs a fresh grant).
  Status takeSeqs(uint64_t count, uint32_t* base);
  // The header of this worker's datagram for seq in window slot w (set
  // shadow), with a full payload of the granted size.
  Header header(Type type, uint32_t w, bool shadow, uint32_t seq) const;

  InFlight& slot(uint32_t w) { return slots_[w]; }
  const InFlight& slot(uint32_t w) const { return slots_[w]; }
  void freeSlots(uint32_t first, uint32_t count);
  // Which of the switch's data ports (threads) serves window slot w.
  uint32_t portOf(uint32_t w) const { return (grant_.base + w) % grant_.ports; }
  // The window of datagrams in flight per switch port, and the pacer of
  // first sends (congestion.h), shared by every call on the pump.
  CongestionWindow& congestion() { return congestion_; }
  const CongestionWindow& congestion() const { return congestion_; }
  Pacer& pacer() { return pacer_; }
  // A stale answer: when it is the second copy of a seq this worker resent
  // (its slot's last datagram, already answered), counts it once as a late
  // answer, tells the congestion window its cut was not needed (*undone
  // when that undid a cut), and returns true.
  bool lateCopy(const Header& h, bool* undone);
  // Answers the kernel dropped at the socket so far (SO_RXQ_OVFL).
  uint64_t socketDrops() const { return socketDrops_; }
  // A call ends: the pump's own counts not yet given to a call (socket
  // drops, paced holds; calls side by side share the pump, so each count
  // goes to one call only) and the timer's state into its stats.
  void endCall(InaCallStats* stats);

  // Sends the batch (stamping each send time); an error only for a broken
  // path, prefixed with context() and what.
  Status send(const std::vector<InFlight*>& batch, const char* what = "");
  // Marks e to go again (its RESEND flag; no RTT sample from its answer).
  static void markResent(InFlight& e);
  // e's answer came at now: an RTT sample unless e was resent (Karn).
  void sampleRtt(const InFlight& e, Clock::time_point now);
  const RtoEstimator& rto() const { return rto_; }
  void backoff() { rto_.backoff(); }

  // While attached, c gets the answers for its seqs; attach hands it those
  // that came early.
  void attach(PumpCall& c);
  void detach(PumpCall& c);
  // Reads every answer waiting on the socket and in the sender and hands
  // each on. Never blocks.
  void receive();
  // Answers handed on to a call so far: a call's progress() that reads the
  // socket may take another call's answers, so a caller driving several
  // looks at this to know whether anything came.
  uint64_t answersRouted() const { return routed_; }
  // When the answers being handed on were read (one clock reading per
  // batch, not per answer).
  Clock::time_point answerTime() const { return answerTime_; }
  // Sleeps until the socket is readable, for at most ms.
  void waitReadable(int ms) const;

 private:
  explicit DatagramPump(const InaClientOptions& options);
  // One answer: to its call, or kept, or stray.
  void route(const uint8_t* data, size_t len);

  InaClientOptions options_;
  Fd socket_;
  std::unique_ptr<InaSender> sender_;
  Endpoint local_;
  Grant grant_;
  uint32_t window_ = 0;
  uint32_t nextSeq_ = 1;
  std::vector<bool> lostSlots_;  // per window index
  bool resultSinceGrant_ = false;
  std::vector<InFlight> slots_;  // per window index
  RtoEstimator rto_;
  CongestionWindow congestion_;
  Pacer pacer_;
  uint64_t socketDrops_ = 0;
  Clock::time_point answerTime_{};
  uint64_t reportedDrops_ = 0, reportedHolds_ = 0;  // given to calls by endCall()
  uint64_t routed_ = 0;                             // answersRouted()
  std::unique_ptr<UdpBatchReceiver> rx_;  // answers, segmented receives where the kernel has them
  std::vector<uint8_t> rxScratch_;        // a RoCEv2 answer on its way to the native layout
  std::vector<OutDatagram> out_;
  std::vector<PumpCall*> calls_;            // attached
  std::deque<std::vector<uint8_t>> early_;  // answers for calls not attached yet
  // What the sender received in one receive(): the bytes, each one's length.
  std::vector<uint8_t> nicBytes_;
  std::vector<uint32_t> nicLengths_;
  Fd wait_;  // epoll over the socket and the sender's fd, when it receives
};

}  // namespace rina::ina

#endif  // RINA_LIB_INA_DATAGRAM_PUMP_H_
