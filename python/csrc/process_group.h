// rina as a torch.distributed process group (the torch 1.13 c10d API): one
// rina communicator per group, set up through the c10d Store that torch
// hands in (rank 0 makes the unique id and puts it there), its collectives
// run in issue order on the group's own thread (work_thread.h).
//
// What each call is in rina's terms:
//   allreduce, allreduce_coalesced (one flat buffer), reduce_scatter,
//   _reduce_scatter_base: rina's reductions (any RINA_ALGO, INA included);
//   reduce: rinaReduce (a chain into the root);
//   broadcast, allgather, _allgather_base, allgather_coalesced (one flat
//   buffer): rina's, moving bytes (any dtype);
//   gather, scatter: rinaGather, rinaScatter (straight to / from the root);
//   alltoall_base, alltoall: rinaAllToAll(v) (each block moved once);
//   send, recv (tags checked), recv_anysource: rina's point-to-point
//   messages, consecutive ones run as one rina group (work_thread.h);
//   barrier: a one-element allreduce.
#ifndef RINA_PYTHON_CSRC_PROCESS_GROUP_H_
#define RINA_PYTHON_CSRC_PROCESS_GROUP_H_

#include <chrono>
#include <functional>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "rina/rina.h"
#include "work_thread.h"

namespace rina::torch_backend {

class ProcessGroupRina : public c10d::ProcessGroup {
 public:
  // Collective over the group's ranks: rendezvous through store, and a
  // communicator whose every wait ends after `timeout` (rinaConfig_t).
  ProcessGroupRina(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                   std::chrono::milliseconds timeout);
  // Aborts the call in progress, fails what is queued, frees the communicator.
  ~ProcessGroupRina() override;

  const std::string getBackendName() const override { return "rina"; }
  std::chrono::milliseconds timeout() const { return timeout_; }

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

 private:
  // Queues run on the group's thread; outputs complete the work's Future.
  c10::intrusive_ptr<c10d::Work> post(c10d::OpType type, const char* title,
                                      std::vector<at::Tensor> outputs, std::function<void()> run);
  // A receive of t from peer (RINA_ANY_PEER: from whichever rank sends first).
  c10::intrusive_ptr<c10d::Work> postRecv(const at::Tensor& t, int peer, int tag, c10d::OpType type,
                                          const char* title);
  // Throws with rina's account of the failure (rank, peer, step) unless rc
  // is rinaSuccess.
  void check(rinaResult_t rc, const char* call) const;
  void checkRoot(int64_t root, const char* call) const;
  // Another rank of the group, for a send or receive.
  void checkPeer(int peer, const char* call) const;
  // gather's outputs / scatter's inputs: on the root one list of size
  // tensors, each like `like` (returned); on other ranks none (an empty
  // vector). `what` is "output" or "input", for the messages.
  std::vector<at::Tensor> rootList(const std::vector<std::vector<at::Tensor>>& lists,
                                   const at::Tensor& like, int root, const char* call,
                                   const char* what) const;

  // Run on the group's thread: t's bytes gathered from every rank into
  // out (size x t's bytes, contiguous), rank r's block at r.
  void allGatherBytes(const at::Tensor& in, at::Tensor& out, const char* call);

  std::chrono::milliseconds timeout_;
  rinaComm_t comm_ = nullptr;
  WorkThread thread_;
};

// The creator torch.distributed.Backend.register_backend calls.
c10::intrusive_ptr<ProcessGroupRina> createProcessGroupRina(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    std::chrono::milliseconds timeout);

}  // namespace rina::torch_backend

#endif  // RINA_PYTHON_CSRC_PROCESS_GROUP_H_
