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
#include <functional>
#include <memory>
#include <vector>

#include "core/status.h"
#include "ina/ina_sender.h"
#include "ina/rto.h"
#include "inanet/ctrl_protocol.h"
#include "inanet/net.h"
#include "inanet/udp_batch.h"
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
  // With sliceRoles: this worker's kSlicePort slices go as port markers
  // (header-only DATA with TO_PORT, include/rina/ina_wire.h): the switch
  // counts them as zeros and this worker adds its own values to the sum
  // when it comes, so a rack of n uploads (n-1)/n of the buffer per worker
  // instead of all of it. Needs a switch that knows markers (rina-switchd,
  // p4/); the rack's workers need not agree on it.
  bool portMarkers = false;
  // Where each data slice lies (null: slice i is elements [i P, i P + P) of
  // the buffer, the last one short). Slices of 1 to P elements anywhere in
  // the buffer, in the order they go to the switch, so a caller can send
  // what it needs first first and keep slices inside its own parts.
  const std::vector<struct SliceSpan>* spans = nullptr;
  // The part of the window this call uses (firstSlot .. firstSlot + slots -
  // 1; slots 0: the rest of the window), so an all-gather can run beside it
  // on other slots. Every worker of the rack passes the same.
  uint32_t firstSlot = 0;
  uint32_t slots = 0;
};
struct SliceSpan {
  size_t first = 0;  // element offset in the buffer
  uint32_t len = 0;  // elements, 1 to sliceElems()
};
inline constexpr uint8_t kSliceOther = 0;
inline constexpr uint8_t kSlicePort = 1;
inline constexpr uint8_t kSliceAll = 2;

struct InaCallStats {
  uint64_t slices = 0;           // data slices of the call
  uint64_t datagramsSent = 0;    // first sends, prologue included
  uint64_t bytesSent = 0;        // INA datagram bytes, first sends and resends
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

// One slice of a rack all-gather through the switch (InaClient::startGather).
struct GatherSlice {
  size_t offset = 0;   // bytes into the buffer
  uint32_t bytes = 0;  // 1 to 4 * sliceElems()
  uint8_t root = 0;    // the worker (index in the rack) whose bytes these are
};
struct InaGatherOptions {
  const std::vector<GatherSlice>* slices = nullptr;
  // Whether this worker's own slice i may go (its bytes are final); null:
  // all at once.
  std::function<bool(uint32_t)> ready;
  // The part of the window it uses (slots 0: the rest of the window); each
  // root gets slots / fan-in of it.
  uint32_t firstSlot = 0;
  uint32_t slots = 0;
};
struct InaGatherResult {
  // Other roots' slices that never arrived here (lost multicasts, or a root
  // that lost the switch): the caller fetches them over host connections.
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
  // Slots a call may use (the grant, or fewer by InaClientOptions::window).
  uint32_t window() const { return window_; }
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

  // allreduce for a caller that drives it from its own loop (the step
  // engine, beside its connections): start, progress() until done(), then
  // finish(). progress() never blocks; between passes sleep on fd()
  // (readable) for at most waitMs(). One call at a time.
  Status start(void* buffer, size_t count, rinaDataType_t type, const InaCallOptions& call);
  // Sends what the window allows, takes what arrived, resends what is late;
  // *moved when anything went or came. rinaTimeout when the switch is silent
  // for switchTimeoutMs (the call is then over: finish() says which slices
  // never completed).
  Status progress(bool* moved);
  bool done() const;
  // Data slice i of the call in progress is final here: the sum arrived, an
  // acknowledgement did (a slice another worker ports; the buffer keeps the
  // input), or it is left to the host (sliceOnHost: the input is kept).
  bool sliceFinal(uint32_t i) const;
  bool sliceOnHost(uint32_t i) const;
  int fd() const { return socket_.get(); }
  int waitMs() const;
  // A rack all-gather through the switch, driven like start(): every worker
  // of the rack calls it with the same slices; each sends its own (as BCAST,
  // when ready) and takes the others' from the multicast. Roots never wait
  // on each other: root w uses its own share of the granted slots (window /
  // fan-in of them) and numbers its j-th slice base + j * fanIn + w.
  // progress() sends, receives and resends; done() once this worker's own
  // slices came back from the switch (its acknowledgement) — the others'
  // may still be arriving, so keep calling progress() until the caller
  // knows every root is done, then finishGather(). rinaInvalidUsage when the
  // grant has fewer slots than the rack has workers.
  Status startGather(void* buffer, const InaGatherOptions& options);
  bool gatherHas(uint32_t i) const;
  // This worker's own slices all came back (or the gather failed).
  bool gatherRootsDone() const;
  const Status& gatherStatus() const { return gatherStatus_; }
  Status finishGather(InaGatherResult* result);

  // Ends the call: its status (the first error of progress(), if any) and
  // the result; after an error hostSlices also lists every slice that never
  // became final.
  Status finish(InaCallResult* result);

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
    uint32_t slot = 0;  // index in the window
    bool busy = false;
    bool retransmitted = false;
    bool fastResent = false;  // resent early since its send
    std::chrono::steady_clock::time_point sentAt;
    std::vector<uint8_t> bytes;
  };

  explicit InaClient(const InaClientOptions& options);
  // Which of the switch's data ports (threads) serves window slot w.
  uint32_t slotPort(uint32_t w) const { return (grant_.base + w) % grant_.ports; }
  void buildSlice(Call& c, uint32_t r, Entry& e);
  Status sendEntries(const std::vector<Entry*>& batch);
  // One recvmmsg of answers: the messages read (<= 0: none); rx_->datagrams()
  // then lists them as native datagrams (len 0: dropped).
  int receiveBatch();
  // Takes what arrived: results of c (may be null) and of the gather in
  // progress; datagrams of later calls are kept.
  void receive(Call* c);
  void onDatagram(Call& c, const uint8_t* data, size_t len);
  // Resends what timed out, and (fast retransmit) what is outstanding while
  // results for slices sent well after it came back; rinaTimeout when no
  // slice completed for switchTimeoutMs.
  Status retransmit(Call& c);
  // One non-blocking pass: send, receive, resend.
  Status pump(Call& c, bool* moved);
  // pump until every slice of c completed.
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
  std::unique_ptr<UdpBatchReceiver> rx_;  // answers, segmented receives where the kernel has them
  std::vector<uint8_t> rxScratch_;  // a RoCEv2 answer on its way to the native layout
  std::deque<std::vector<uint8_t>> early_;
  std::unique_ptr<Call> active_;  // the call start() began
  struct GatherCall;
  std::unique_ptr<GatherCall> gather_;  // or the gather startGather() began
  Status activeStatus_;
  Status gatherStatus_;
  void endCalls();  // drops a call or gather in progress
  Status pumpGather(GatherCall& g, bool* moved);
  int gatherWaitMs() const;
  static uint32_t gatherEnd(const GatherCall& g);
  bool inGather(const GatherCall& g, const uint8_t* data, size_t len) const;
  static bool gatherSlotsOverlap(const GatherCall& g, uint32_t first, uint32_t count);
  bool callSlotsOverlap(uint32_t first, uint32_t count) const;  // with the call in progress
  void onGatherDatagram(GatherCall& g, const uint8_t* data, size_t len);
};

}  // namespace rina::ina

#endif  // RINA_LIB_INA_INA_CLIENT_H_
