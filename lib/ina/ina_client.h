// Host side of in-network aggregation for one worker of a rack: streams
// buffers through the switch (rina-switchd or a Tofino running p4_agent/p4)
// in slices of the granted payload size. One datagram pump (datagram_pump.h:
// socket, sender, slots, retransmission timer) carries the calls on it:
//
//   allreduce, reduce to the port, reduce-scatter   reduce_call.h
//   rack all-gather (every worker a root)            gather_call.h
//   broadcast from one root                          broadcast_call.h
//
// A reduce call and an all-gather may run side by side on disjoint slots,
// driven from the caller's own loop (start / startGather, progress, finish);
// allreduce and broadcast run one call to its end. If the switch stops
// answering, a call ends with rinaTimeout within switchTimeoutMs; the caller
// falls back to host aggregation.
#ifndef RINA_LIB_INA_INA_CLIENT_H_
#define RINA_LIB_INA_INA_CLIENT_H_

#include <cstdint>
#include <memory>

#include "core/status.h"
#include "ina/broadcast_call.h"
#include "ina/datagram_pump.h"
#include "ina/gather_call.h"
#include "ina/ina_sender.h"
#include "ina/reduce_call.h"
#include "ina/switch_calls.h"
#include "rina/rina.h"
#include "transport/connection.h"
#include "wire/ctrl_protocol.h"
#include "wire/endpoint.h"

namespace rina::ina {

class InaClient final : public SwitchCalls {
 public:
  // sender: how datagrams leave; null = UDP on the client's socket.
  static Status create(const InaClientOptions& options, std::unique_ptr<InaClient>* out,
                       std::unique_ptr<InaSender> sender = nullptr);
  ~InaClient();

  const char* senderName() const { return pump_->senderName(); }

  // The UDP address to list as this worker's member address at registration.
  const Endpoint& localEndpoint() const { return pump_->localEndpoint(); }
  // The rack's job id and token, when they were not known at create (job 0
  // there): before the first grant, and again before a grant for another id.
  Status setJob(uint16_t job, uint64_t token) { return pump_->setJob(job, token); }
  // Slots to use, fresh from the controller (REGISTER / REQUEST reset the
  // slots in the switch). The slice sequence continues from the previous
  // grant (restarting at 1 only past 2^31), so late datagrams of an earlier
  // grant are never mistaken for this one's; every worker of the rack must
  // switch grants between the same two calls.
  Status setGrant(const Grant& grant) { return pump_->setGrant(grant); }
  const Grant& grant() const { return pump_->grant(); }
  // Slots a call may use (the grant, or fewer by InaClientOptions::window).
  uint32_t window() const override { return pump_->window(); }
  uint32_t grantedSlots() const override { return grant().length; }
  // Whether the switch NACKed a slot of this grant (preempted under us).
  bool lostSlots() const { return pump_->lostSlots(); }
  // Whether a call took a live result of this grant (NACKs, stale and
  // duplicate answers are no progress).
  bool resultSinceGrant() const { return pump_->resultSinceGrant(); }

  // Elements per slice (the switch's payload size).
  size_t sliceElems() const override { return grant().payloadElems; }

  // In place: buffer holds this worker's input, then the rack sum (except
  // hostSlices). Types: int32, float32, float16, bfloat16.
  Status allreduce(void* buffer, size_t count, rinaDataType_t type, const InaCallOptions& call,
                   InaCallResult* result);

  // allreduce for a caller that drives it from its own loop (the step
  // engine, beside its connections): start, progress() until done(), then
  // finish(). progress() never blocks; between passes sleep on fd()
  // (readable) for at most waitMs(). One call at a time.
  Status start(void* buffer, size_t count, rinaDataType_t type,
               const InaCallOptions& call) override;
  // Sends what the window allows, takes what arrived, resends what is late
  // (for the all-gather in progress too); *moved when anything went or
  // came. rinaTimeout when the switch is silent for switchTimeoutMs (the
  // call is then over: finish() says which slices never completed).
  Status progress(bool* moved) override;
  bool done() const override { return !reduce_ || reduce_->done(); }
  // The running reduce sends data slices [0, n) only, until a larger n: a
  // caller that consumes the sums in slice order keeps the switch's
  // datagrams from running far ahead of it on a shared host link.
  void limitReduce(uint32_t n) override {
    if (reduce_) reduce_->setSendLimit(n);
  }
  // ReduceCall::sliceFinal and sliceOnHost for the call in progress.
  bool sliceFinal(uint32_t i) const override { return reduce_ && reduce_->sliceFinal(i); }
  bool sliceOnHost(uint32_t i) const override { return reduce_ && reduce_->sliceOnHost(i); }
  int fd() const override { return pump_->fd(); }
  int waitMs() const override;
  // Ends the call: its status (the first error of progress(), if any) and
  // the result; after an error hostSlices also lists every slice that never
  // became final.
  Status finish(InaCallResult* result) override;
  // The switch's rate as this worker's reduce calls met it: datagram
  // payload bytes answered (kRecv) over the time datagrams were in flight,
  // smoothed as a connection's (transport::LinkCounters). A port marker
  // counts as a full datagram: a switch's cost is per datagram.
  const transport::LinkCounters& switchCounters() const { return switchCounters_; }

  // A rack all-gather through the switch, driven like start(): every worker
  // of the rack calls it with the same slices; each sends its own (as BCAST,
  // when ready) and takes the others' from the multicast. progress() sends,
  // receives and resends; gatherRootsDone() once this worker's own slices
  // came back from the switch (its acknowledgement) — the others' may still
  // be arriving, so keep calling progress() until the caller knows every
  // root is done, then finishGather(). rinaInvalidUsage when the grant has
  // fewer slots than the rack has workers.
  Status startGather(void* buffer, const InaGatherOptions& options) override;
  bool gatherHas(uint32_t i) const { return gather_ && gather_->has(i); }
  bool gatherRootsDone() const override { return !gather_ || gather_->rootsDone(); }
  Status gatherStatus() const override { return gather_ ? gather_->status() : Status(); }
  Status finishGather(InaGatherResult* result) override;

  // See broadcast_call.h. Every worker of the rack calls it with the same
  // size; exactly one is root.
  Status broadcast(void* buffer, size_t bytes, bool isRoot, int quietMs,
                   InaBroadcastResult* result);

 private:
  explicit InaClient(std::unique_ptr<DatagramPump> pump) : pump_(std::move(pump)) {}

  std::unique_ptr<DatagramPump> pump_;
  // The calls detach from the pump when they end: declared after it, so they
  // end first.
  std::unique_ptr<ReduceCall> reduce_;  // the call start() began
  std::unique_ptr<GatherCall> gather_;  // the all-gather startGather() began
  transport::LinkCounters switchCounters_;
};

}  // namespace rina::ina

#endif  // RINA_LIB_INA_INA_CLIENT_H_
