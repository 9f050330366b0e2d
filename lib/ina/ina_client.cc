#include "ina/ina_client.h"

#include <algorithm>

namespace rina::ina {

InaClient::~InaClient() = default;

Status InaClient::create(const InaClientOptions& options, std::unique_ptr<InaClient>* out,
                         std::unique_ptr<InaSender> sender) {
  std::unique_ptr<DatagramPump> pump;
  RINA_TRY(DatagramPump::create(options, std::move(sender), &pump));
  out->reset(new InaClient(std::move(pump)));
  return Status();
}

Status InaClient::allreduce(void* buffer, size_t count, rinaDataType_t type,
                            const InaCallOptions& call, InaCallResult* result) {
  *result = InaCallResult{};
  RINA_TRY(start(buffer, count, type, call));
  if (!reduce_) return Status();  // nothing to do
  (void)reduce_->run();           // its status is finish()'s
  return finish(result);
}

Status InaClient::start(void* buffer, size_t count, rinaDataType_t type,
                        const InaCallOptions& call) {
  reduce_.reset();
  return ReduceCall::create(*pump_, buffer, count, type, call, &reduce_);
}

Status InaClient::progress(bool* moved) {
  *moved = false;
  const uint64_t routed = pump_->answersRouted();
  const bool reducing = !done();
  if (reducing) (void)reduce_->progress(moved);
  if (gather_) {
    bool gathered = false;
    (void)gather_->progress(&gathered);
    *moved |= gathered;
  }
  // The gather's pass may have read the reduce's answers, and the other way
  // round: either call's slices may have moved.
  *moved |= pump_->answersRouted() != routed;
  // The status of the call still running: the reduce call's first.
  if (reducing || !gather_) return reduce_ ? reduce_->status() : Status();
  return gather_->status();
}

int InaClient::waitMs() const {
  int ms = gather_ ? gather_->waitMs() : 50;
  if (!done()) ms = std::min(ms, reduce_->waitMs());
  return ms;
}

Status InaClient::finish(InaCallResult* result) {
  *result = InaCallResult{};
  if (!reduce_) return Status();
  Status st = reduce_->finish(result);
  reduce_.reset();
  const double answered = static_cast<double>(result->stats.results) *
                          static_cast<double>(kWordBytes * grant().payloadElems);
  switchCounters_.bytes[1] += static_cast<uint64_t>(answered);
  switchCounters_.closeRun(transport::Direction::kRecv, answered, result->stats.busyNs);
  return st;
}

Status InaClient::startGather(void* buffer, const InaGatherOptions& options) {
  gather_.reset();
  return GatherCall::create(*pump_, buffer, options, &gather_);
}

Status InaClient::finishGather(InaGatherResult* result) {
  *result = InaGatherResult{};
  if (!gather_) return Status();
  Status st = gather_->finish(result);
  gather_.reset();
  return st;
}

Status InaClient::broadcast(void* buffer, size_t bytes, bool isRoot, int quietMs,
                            InaBroadcastResult* result) {
  return broadcastThroughSwitch(*pump_, buffer, bytes, isRoot, quietMs, result);
}

}  // namespace rina::ina
