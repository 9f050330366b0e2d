// rina as a torch.distributed backend: a c10d::Backend on torch 2.x, a
// c10d::ProcessGroup on torch 1.13 (torch_version.h; the calls are the
// same). One rina communicator per group (communicator.h, its one owner),
// set up through the c10d Store torch hands in; calls run in issue order
// (work_thread.h).
//
// What each call is in rina's terms:
//   allreduce, allreduce_coalesced (one flat buffer), reduce_scatter,
//   _reduce_scatter_base, reduce_scatter_tensor_coalesced (one flat
//   buffer): rina's reductions (any RINA_ALGO, INA included);
//   reduce: rinaReduce (a chain into the root);
//   broadcast, allgather, _allgather_base, allgather_coalesced,
//   allgather_into_tensor_coalesced (one flat buffer): rina's, moving
//   bytes (any dtype);
//   gather, scatter: rinaGather, rinaScatter (straight to / from the root);
//   alltoall_base, alltoall: rinaAllToAll(v) (each block moved once);
//   send, recv (tags checked), recv_anysource: rina's point-to-point
//   messages, consecutive ones run as one rina group (work_thread.h);
//   barrier: a one-element allreduce.
//   shrink (torch.distributed.shrink_group): rinaCommShrink; the new
//   backend owns the shrunk communicator, this one takes no more calls.
// Between startCoalescing and endCoalescing (torch 2.x's coalescing
// manager, batch_isend_irecv) calls are queued but not started; the Work
// endCoalescing returns completes when all of them did, failing with the
// first failure.
#ifndef RINA_PYTHON_CSRC_BACKEND_H_
#define RINA_PYTHON_CSRC_BACKEND_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "communicator.h"
#include "device_order.h"
#include "rina/rina.h"
#include "torch_version.h"
#include "work_thread.h"

namespace rina::torch_backend {

class RinaBackend : public BackendBase {
 public:
  // Collective over the group's ranks: rendezvous through store, and a
  // communicator whose every wait ends after `timeout`.
  RinaBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
              std::chrono::milliseconds timeout);
  // The backend of a communicator made from another one's (a shrink).
  RinaBackend(std::unique_ptr<Communicator> comm, int size);
  // shutdownNow(): aborts the call in progress, fails what is queued,
  // joins the thread, frees the communicator.
  ~RinaBackend() override;

  const std::string getBackendName() const override { return "rina"; }
  std::chrono::milliseconds timeout() const { return comm_->timeout(); }

  // Never blocks: the call in progress returns rinaAborted, queued calls
  // fail, later calls are refused. The thread is joined by shutdownNow()
  // or the destructor.
  void abortNow();
  // Aborts the call in progress, fails what is queued and waits for the
  // thread; idempotent.
  void shutdownNow();
  // Whether a call failed (or timed out), or the backend was aborted.
  bool errored() const { return error_.load() != kNoError; }
  bool timedOut() const { return error_.load() == kTimedOut; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits,
                                               std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  // Collectives issued on this group (point-to-point calls are not
  // counted: ranks issue different ones); every rank starts at 0 when the
  // group is made, so there is nothing to agree on.
  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override { return sequence_.load(); }

  // Both torches have these; torch 1.13 never calls them itself.
  c10::intrusive_ptr<c10d::Work> allgatherIntoTensorCoalesced(std::vector<at::Tensor>& outputs,
                                                              std::vector<at::Tensor>& inputs,
                                                              const c10d::AllgatherOptions& opts);
  c10::intrusive_ptr<c10d::Work> reduceScatterTensorCoalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts);
  void beginCoalescing();
  c10::intrusive_ptr<c10d::Work> finishCoalescing();

#if RINA_TORCH_BACKEND
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override {
    return allgatherIntoTensorCoalesced(outputs, inputs, opts);
  }
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override {
    return reduceScatterTensorCoalesced(outputs, inputs, opts);
  }
  c10::intrusive_ptr<c10d::Work> allreduce_sparse(std::vector<at::Tensor>& tensors,
                                                  const c10d::AllreduceOptions& opts) override;
  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override { beginCoalescing(); }
  c10::intrusive_ptr<c10d::Work> endCoalescing() override { return finishCoalescing(); }
  void abort() override { abortNow(); }
  void shutdown() override { shutdownNow(); }
#if RINA_TORCH_HAS_GET_ERROR
  c10d::ErrorType getError() override;
#endif
#if RINA_TORCH_HAS_SHRINK
  bool supportsShrinking() const override { return true; }
  // Collective over the ranks not excluded (the excluded ones do not
  // call it). shrinkFlags 0 (SHRINK_DEFAULT): after the calls queued so far
  // ran; 1 (SHRINK_ABORT): the call in progress is stopped and queued ones
  // fail. Either way this backend takes no calls afterwards. Options are
  // not taken: the shrunk group keeps this one's timeout.
  c10::intrusive_ptr<c10d::Backend> shrink(
      const std::vector<int64_t>& ranksToExclude, int shrinkFlags,
      const c10::intrusive_ptr<Options>& optsOverride) override;
#endif
#endif

 private:
  static constexpr int kNoError = 0, kFailed = 1, kTimedOut = 2;
  // ranks as rinaCommShrink takes them, or a message saying what is wrong
  // with them (empty, out of range, repeated, this rank, every rank).
  std::vector<int> excludedRanks(const std::vector<int64_t>& ranks) const;

  rinaComm_t comm() const { return comm_->handle(); }
  // Queues run (on the device of the tensors, after the caller's stream;
  // device_order.h) to run in issue order; outputs complete the Work's
  // Future. A timeout > 0 shorter than the group's aborts the communicator
  // when the call passes it.
  c10::intrusive_ptr<c10d::Work> post(c10d::OpType type, const char* title,
                                      std::vector<at::Tensor> outputs,
                                      const std::vector<at::Tensor>& inputs,
                                      std::chrono::milliseconds timeout, std::function<void()> run);
  // The Work of a call that is queued now; recorded while coalescing.
  c10::intrusive_ptr<RinaWork> newWork(c10d::OpType type, const char* title,
                                       std::vector<at::Tensor> outputs);
  // A receive of t from peer (RINA_ANY_PEER: from whichever rank sends first).
  c10::intrusive_ptr<c10d::Work> postRecv(const at::Tensor& t, int peer, int tag, c10d::OpType type,
                                          const char* title);
  // Throws with rina's account of the failure (rank, peer, step) unless rc
  // is rinaSuccess; a call past its own timeout says so.
  void check(rinaResult_t rc, const char* call);
  void checkRoot(int64_t root, const char* call) const;
  // Another rank of the group, for a send or receive.
  void checkPeer(int peer, const char* call) const;
  // gather's outputs / scatter's inputs: on the root one list of size
  // tensors, each like `like` (returned); on other ranks none (an empty
  // vector). `arg` names the list, for the messages.
  std::vector<at::Tensor> rootList(const std::vector<std::vector<at::Tensor>>& lists,
                                   const at::Tensor& like, int root, const char* call,
                                   const char* arg) const;

  // Run on the group's thread: t's bytes gathered from every rank into
  // out (size x t's bytes, contiguous), rank r's block at r.
  void allGatherBytes(const at::Tensor& in, at::Tensor& out, const char* call);

  std::unique_ptr<Communicator> comm_;  // the one owner of the rina communicator
  std::atomic<int> error_{kNoError};
  std::atomic<uint64_t> sequence_{0};
  std::mutex coalesceMu_;
  bool coalescing_ = false;
  std::vector<c10::intrusive_ptr<c10::ivalue::Future>> coalesced_;
  WorkThread thread_;  // declared last: stopped before the communicator goes
};

// The creator torch.distributed.Backend.register_backend calls.
c10::intrusive_ptr<RinaBackend> createRinaBackend(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int size,
                                                  std::chrono::milliseconds timeout);

// Runs fn with the GIL released when the calling thread holds it (module.cc):
// the group's thread may need the GIL to complete a Future while it is joined.
void withoutGil(const std::function<void()>& fn);

}  // namespace rina::torch_backend

#endif  // RINA_PYTHON_CSRC_BACKEND_H_
