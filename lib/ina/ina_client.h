// Host side of in-network aggregation: streams a buffer through the switch
// (rina-switchd or a Tofino running p4_agent/p4) in slices of the granted
// payload size, keeping a window of slices in flight, retransmitting on an
// adaptive timeout, and returns the rack sum in place.
//
// int32 adds exactly. float32 / float16 / bfloat16 go through block floating
// point (quantize.h, with its error bound): the exponent every worker uses
// for slice i comes back with the result of the slice that used the same
// slot one window earlier, so a call on floats starts with a window of
// exponent-only slices.
//
// Slice seq t uses slot base + t % W, set (t / W) % 2, and a worker sends
// t + W only after the result of t: the shadow set keeps t's result for
// laggards while t + W aggregates (SwitchML's scheme).
//
// Slices the switch cannot deliver — slots preempted (NACK), int32 overflow,
// NaN/Inf in the input — are listed in InaCallResult::hostSlices and left
// holding this worker's input. Workers may disagree on that list (one got a
// result before the preemption, another did not), so the caller must take
// the union over the rack and aggregate those slices on the host for every
// worker. If the switch stops answering, allreduce returns rinaTimeout
// within switchTimeoutMs; the caller falls back to host aggregation.
//
// Datagrams leave through an InaSender (UDP, or RDMA UC writes: see
// ina_sender.h); answers arrive on the client's UDP socket in the native or
// the RoCEv2 layout (include/rina/ina_roce.h), and either is accepted.
#ifndef RINA_LIB_INA_INA_CLIENT_H_
#define RINA_LIB_INA_INA_CLIENT_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "core/status.h"
#include "ina/ctrl_protocol.h"
#include "ina/ina_sender.h"
#include "ina/net.h"
#include "ina/rto.h"
#include "rina/rina.h"

namespace rina::ina {

struct InaClientOptions {
  uint32_t switchAddr = 0x7F000001;  // data-plane IPv4; ports come with the grant
  Endpoint local{0x7F000001, 0};     // this worker's UDP address (port 0: any)
  uint16_t job = 0;
  uint32_t token = 0;
  uint8_t worker = 0;  // index in the rack, < fanIn
  uint8_t fanIn = 1;
  uint32_t window = 0;  // slices in flight; 0 = every granted slot
  int64_t initialRtoUs = 10000;
  int64_t minRtoUs = 2000;
  int64_t maxRtoUs = 200000;
  int switchTimeoutMs = 5000;  // no progress this long -> rinaTimeout
  int socketBufferBytes = 4 << 20;
  // With a sender other than UDP: a grant that sender cannot carry (setGrant)
  // makes the client send over UDP from then on, with an INFO line, instead
  // of failing (RINA_INA_TRANSPORT=auto).
  bool udpFallback = true;
};

struct InaCallOptions {
  // The port worker's extra upstream partial (same type and count as the
  // buffer), added to its contribution before it is sent.
  const void* upstreamPartial = nullptr;
  // Reduce to the port only (TO_PORT): the switch sends the sum to the
  // worker that set isPort and a bare acknowledgement to the others, whose
  // buffers keep their input. Every worker of the call passes the same
  // resultToPortOnly, and exactly one sets isPort.
  bool resultToPortOnly = false;
  bool isPort = false;
  // A reduce-scatter (with resultToPortOnly; replaces isPort): per data
  // slice, who gets the sum. kSlicePort: this worker, the slice's only
  // port; kSliceOther: another worker (this one gets a bare acknowledgement
  // and keeps its input); kSliceAll: every worker (a slice that straddles
  // two ports' ranges). The rack's workers must agree: each slice has one
  // port or is kSliceAll everywhere. Not with upstreamPartial.
  const std::vector<uint8_t>* sliceRoles = nullptr;
};
inline constexpr uint8_t kSliceOther = 0;
inline constexpr uint8_t kSlicePort = 1;
inline constexpr uint8_t kSliceAll = 2;

struct InaCallStats {
  uint64_t slices = 0;           // data slices of the call
  uint64_t datagramsSent = 0;    // first sends, prologue included
  uint64_t retransmissions = 0;  // all resends, fast ones included
  uint64_t fastRetransmissions = 0;
  uint64_t results = 0;
  uint64_t staleResults = 0;  // duplicates and results of earlier calls
  uint64_t nacks = 0;
  int64_t rtoUs = 0;  // at the end of the call
};

struct InaCallResult {
  std::vector<uint32_t> hostSlices;  // ascending slice indices
  InaCallStats stats;
};

struct InaBroadcastResult {
  // Slices this worker does not hold: NACKed at the root, or never arrived
  // here. The caller sends them over the host connections.
  std::vector<uint32_t> missingSlices;
  InaCallStats stats;
};

class InaClient {
 public:
  // sender: how datagrams leave; null = UDP on the client's socket.
  static Status create(const InaClientOptions& options, std::unique_ptr<InaClient>* out,
                       std::unique_ptr<InaSender> sender = nullptr);
  ~InaClient();

  const char* senderName() const { return sender_->name(); }

  // The UDP address to list as this worker's member address at registration.
  const Endpoint& localEndpoint() const { return local_; }
  // Slots to use, fresh from the controller (REGISTER / REQUEST reset the
  // slots in the switch). The slice sequence continues from the previous
  // grant (restarting at 1 only past 2^31), so late datagrams of an earlier
  // grant are never mistaken for this one's; every worker of the rack must
  // switch grants between the same two calls.
  Status setGrant(const Grant& grant);
  const Grant& grant() const { return grant_; }
  // Whether the switch NACKed a slot of this grant (preempted under us).
  bool lostSlots() const {
    return std::find(deadSlots_.begin(), deadSlots_.end(), true) != deadSlots_.end();
  }

  // Elements per slice (the switch's payload size) and slice i's range.
  size_t sliceElems() const { return grant_.payloadElems; }
  static size_t sliceCount(size_t count, size_t sliceElems) {
    return (count + sliceElems - 1) / sliceElems;
  }

  // In place: buffer holds this worker's input, then the rack sum (except
  // hostSlices). Types: int32, float32, float16, bfloat16.
  Status allreduce(void* buffer, size_t count, rinaDataType_t type, const InaCallOptions& call,
                   InaCallResult* result);

  // Switch broadcast (BCAST): the root's bytes reach every worker of the
  // rack bit for bit (any type: they travel as raw 32-bit words). Every
  // worker of the rack calls it with the same size; exactly one is root.
  // Slices of 4 x sliceElems() bytes. The root keeps a window in flight,
  // paced by its own copy of each multicast, and resends on timeout (the
  // switch multicasts its stored copy again); it returns rinaTimeout when
  // the switch is silent for switchTimeoutMs. A receiver returns when it
  // has every slice, or lists what is missing once nothing new came for
  // quietMs (switchTimeoutMs before the first slice).
  Status broadcast(void* buffer, size_t bytes, bool isRoot, int quietMs,
                   InaBroadcastResult* result);

 private:
  struct Call;
  struct Entry {
    uint32_t seq = 0;
    bool busy = false;
    bool retransmitted = false;
    bool fastResent = false;  // resent early since its send
    std::chrono::steady_clock::time_point sentAt;
    std::vector<uint8_t> bytes;
  };

  explicit InaClient(const InaClientOptions& options);
  // Which of the switch's data ports (threads) serves seq's slot.
  uint32_t portIndex(uint32_t seq) const { return (grant_.base + seq % window_) % grant_.ports; }
  void buildSlice(Call& c, uint32_t r, Entry& e);
  Status sendEntries(const std::vector<Entry*>& batch);
  // Up to kRxBatch answers into rxBuffers_ / rxLengths_, as native datagrams.
  int receiveBatch();
  void receive(Call& c);
  void onDatagram(Call& c, const uint8_t* data, size_t len);
  // Resends what timed out, and (fast retransmit) what is outstanding while
  // results for slices sent well after it came back; rinaTimeout when no
  // slice completed for switchTimeoutMs.
  Status retransmit(Call& c);
  // Sends, receives and resends until every slice of c completed.
  Status runCall(Call& c);
  // A datagram of this job for seq >= end (a later call: a broadcast the
  // root started while this worker was still busy) is kept for that call.
  bool keepIfEarly(const uint8_t* data, size_t len, uint32_t end);
  Status broadcastRoot(const uint8_t* buffer, size_t bytes, uint32_t base, uint32_t slices,
                       InaBroadcastResult* result);
  Status broadcastReceive(uint8_t* buffer, size_t bytes, uint32_t base, uint32_t slices,
                          int quietMs, InaBroadcastResult* result);

  InaClientOptions options_;
  Fd socket_;
  std::unique_ptr<InaSender> sender_;
  Endpoint local_;
  Grant grant_;
  uint32_t window_ = 0;
  uint32_t nextSeq_ = 1;
  std::vector<bool> deadSlots_;  // per window index; preempted under us
  std::vector<Entry> entries_;   // per window index
  RtoEstimator rto_;
  std::vector<std::vector<uint8_t>> rxBuffers_;
  std::vector<size_t> rxLengths_;
  std::vector<uint8_t> rxScratch_;  // a RoCEv2 answer on its way to the native layout
  std::deque<std::vector<uint8_t>> early_;
};

}  // namespace rina::ina

#endif  // RINA_LIB_INA_INA_CLIENT_H_
