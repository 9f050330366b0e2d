#include "process_group.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include "tensor_types.h"

namespace rina::torch_backend {

namespace {

// Where rank 0 puts the unique id in the group's store (torch hands every
// group a store of its own prefix).
constexpr const char* kUniqueIdKey = "rina_unique_id";

}  // namespace

ProcessGroupRina::ProcessGroupRina(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   std::chrono::milliseconds timeout)
    : c10d::ProcessGroup(rank, size), timeout_(timeout) {
  TORCH_CHECK(timeout.count() > 0, "rina_torch: the process group's timeout must be positive, got ",
              timeout.count(), " ms");
  rinaUniqueId id;
  if (rank == 0) {
    check(rinaGetUniqueId(&id), "rinaGetUniqueId");
    const auto* p = reinterpret_cast<const uint8_t*>(&id);
    store->set(kUniqueIdKey, std::vector<uint8_t>(p, p + sizeof id));
  } else {
    store->wait({kUniqueIdKey}, timeout);
    std::vector<uint8_t> v = store->get(kUniqueIdKey);
    TORCH_CHECK(v.size() == sizeof id, "rina_torch: the store's ", kUniqueIdKey, " has ", v.size(),
                " bytes, expected ", sizeof id);
    std::memcpy(&id, v.data(), sizeof id);
  }
  rinaConfig_t config = RINA_CONFIG_INITIALIZER;
  config.timeoutMs = timeout.count();
  check(rinaCommInitRankConfig(&comm_, size, id, rank, &config), "rinaCommInitRankConfig");
  init();
}

ProcessGroupRina::~ProcessGroupRina() {
  if (comm_) rinaCommAbort(comm_);
  thread_.stop("the process group was destroyed");
  if (comm_) rinaCommDestroy(comm_);
}

void ProcessGroupRina::check(rinaResult_t rc, const char* call) const {
  if (rc == rinaSuccess) return;
  TORCH_CHECK(false, "rina_torch ", call, " failed on rank ", rank_, ": ", rinaGetErrorString(rc),
              ": ", rinaCommGetLastError(comm_));
}

void ProcessGroupRina::checkRoot(int64_t root, const char* call) const {
  TORCH_CHECK(root >= 0 && root < size_, "rina_torch ", call, ": root rank ", root,
              " is outside [0, ", size_, ")");
}

void ProcessGroupRina::checkPeer(int peer, const char* call) const {
  TORCH_CHECK(peer >= 0 && peer < size_, "rina_torch ", call, ": rank ", peer, " is outside [0, ",
              size_, ")");
  TORCH_CHECK(peer != rank_, "rina_torch ", call, ": rank ", peer,
              " is this rank (a message to or from itself)");
}

std::vector<at::Tensor> ProcessGroupRina::rootList(
    const std::vector<std::vector<at::Tensor>>& lists, const at::Tensor& like, int root,
    const char* call, const char* what) const {
  if (rank_ != root) {
    TORCH_CHECK(lists.empty() || (lists.size() == 1 && lists[0].empty()), "rina_torch ", call,
                ": only the root (rank ", root, ") takes ", what, " tensors");
    return {};
  }
  TORCH_CHECK(lists.size() == 1 && static_cast<int>(lists[0].size()) == size_, "rina_torch ", call,
              ": the root needs one list of ", size_, " ", what, " tensors");
  const std::string each = std::string("an ") + what + " tensor";
  for (const at::Tensor& t : lists[0]) checkSameAs(t, like, call, each.c_str());
  return lists[0];
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::post(c10d::OpType type, const char* title,
                                                      std::vector<at::Tensor> outputs,
                                                      std::function<void()> run) {
  auto work =
      c10::make_intrusive<RinaWork>(rank_, type, title, std::move(outputs), thread_.queue());
  thread_.post(work, std::move(run));
  return work;
}

void ProcessGroupRina::allGatherBytes(const at::Tensor& in, at::Tensor& out, const char* call) {
  at::Tensor buf = contiguousOf(in);
  check(rinaAllGather(buf.data_ptr(), out.data_ptr(), bytesOf(buf), rinaUint8, comm_), call);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  const char* call = "allreduce";
  at::Tensor t = onlyTensor(tensors, call);
  const rinaDataType_t type = reduceTypeOf(t, call);
  const rinaRedOp_t op = reduceOpOf(opts.reduceOp, call);
  return post(c10d::OpType::ALLREDUCE, "rina:all_reduce", {t}, [this, t, type, op]() mutable {
    at::Tensor buf = contiguousOf(t);
    check(rinaAllReduce(buf.data_ptr(), buf.data_ptr(), buf.numel(), type, op, comm_), "allreduce");
    writeBack(t, buf);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  const char* call = "allreduce_coalesced";
  TORCH_CHECK(!tensors.empty(), "rina_torch ", call, ": no tensors");
  for (const at::Tensor& t : tensors) {
    checkDenseCpu(t, call);
    TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(), "rina_torch ", call,
                ": tensors of one dtype only, got ", tensors[0].scalar_type(), " and ",
                t.scalar_type());
  }
  const rinaDataType_t type = reduceTypeOf(tensors[0], call);
  const rinaRedOp_t op = reduceOpOf(opts.reduceOp, call);
  return post(c10d::OpType::ALLREDUCE_COALESCED, "rina:allreduce_coalesced", tensors,
              [this, tensors, type, op]() mutable {
                std::vector<at::Tensor> flat;
                for (const at::Tensor& t : tensors) flat.push_back(t.reshape({-1}));
                at::Tensor buf = at::cat(flat);
                check(rinaAllReduce(buf.data_ptr(), buf.data_ptr(), buf.numel(), type, op, comm_),
                      "allreduce_coalesced");
                int64_t offset = 0;
                for (at::Tensor& t : tensors) {
                  t.copy_(buf.narrow(0, offset, t.numel()).view(t.sizes()));
                  offset += t.numel();
                }
              });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  const char* call = "broadcast";
  at::Tensor t = onlyTensor(tensors, call);
  checkRoot(opts.rootRank, call);
  const int root = static_cast<int>(opts.rootRank);
  return post(c10d::OpType::BROADCAST, "rina:broadcast", {t}, [this, t, root]() mutable {
    at::Tensor buf = contiguousOf(t);
    check(rinaBroadcast(buf.data_ptr(), buf.data_ptr(), bytesOf(buf), rinaUint8, root, comm_),
          "broadcast");
    if (rank_ != root) writeBack(t, buf);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  const char* call = "reduce";
  at::Tensor t = onlyTensor(tensors, call);
  checkRoot(opts.rootRank, call);
  const rinaDataType_t type = reduceTypeOf(t, call);
  const rinaRedOp_t op = reduceOpOf(opts.reduceOp, call);
  const int root = static_cast<int>(opts.rootRank);
  return post(c10d::OpType::REDUCE, "rina:reduce", {t}, [this, t, type, op, root]() mutable {
    at::Tensor buf = contiguousOf(t);
    // In place on the root; other ranks keep their input.
    check(rinaReduce(buf.data_ptr(), buf.data_ptr(), buf.numel(), type, op, root, comm_), "reduce");
    if (rank_ == root) writeBack(t, buf);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const char* call = "allgather";
  at::Tensor in = onlyTensor(inputs, call);
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_, "rina_torch ",
              call, ": expected one list of ", size_, " output tensors");
  for (const at::Tensor& o : outputs[0]) checkSameAs(o, in, call, "an output tensor");
  std::vector<at::Tensor> outs = outputs[0];
  return post(c10d::OpType::ALLGATHER, "rina:all_gather", outs, [this, in, outs]() mutable {
    at::Tensor flat = at::empty({size_, in.numel()}, in.options());
    allGatherBytes(in, flat, "allgather");
    for (int r = 0; r < size_; ++r) outs[r].copy_(flat[r].view(outs[r].sizes()));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  const char* call = "_allgather_base";
  checkDenseCpu(input, call);
  checkDenseCpu(output, call);
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "rina_torch ", call, ": output dtype ",
              output.scalar_type(), " differs from input dtype ", input.scalar_type());
  TORCH_CHECK(output.numel() == size_ * input.numel(), "rina_torch ", call, ": output has ",
              output.numel(), " elements, expected ", size_, " x ", input.numel());
  return post(c10d::OpType::_ALLGATHER_BASE, "rina:_all_gather_base", {output},
              [this, output, input]() mutable {
                at::Tensor out = contiguousOf(output);
                // In place when input is this rank's block of a contiguous output.
                allGatherBytes(input, out, "_allgather_base");
                writeBack(output, out);
              });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  const char* call = "gather";
  at::Tensor in = onlyTensor(inputs, call);
  checkRoot(opts.rootRank, call);
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> outs = rootList(outputs, in, root, call, "output");
  return post(c10d::OpType::GATHER, "rina:gather", outs, [this, in, outs, root]() mutable {
    at::Tensor buf = contiguousOf(in);
    // Only the root holds the blocks (one flat buffer, then each output).
    at::Tensor flat = rank_ == root ? at::empty({size_, in.numel()}, in.options()) : buf;
    check(rinaGather(buf.data_ptr(), flat.data_ptr(), bytesOf(buf), rinaUint8, root, comm_),
          "gather");
    for (size_t r = 0; r < outs.size(); ++r) outs[r].copy_(flat[r].view(outs[r].sizes()));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  const char* call = "scatter";
  at::Tensor out = onlyTensor(outputs, call);
  checkRoot(opts.rootRank, call);
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> ins = rootList(inputs, out, root, call, "input");
  return post(c10d::OpType::SCATTER, "rina:scatter", {out}, [this, out, ins, root]() mutable {
    // The root's blocks in one flat buffer; each rank receives its own.
    at::Tensor flat;
    if (rank_ == root) {
      flat = at::empty({size_, out.numel()}, out.options());
      for (size_t r = 0; r < ins.size(); ++r) flat[r].copy_(ins[r].reshape({-1}));
    }
    at::Tensor buf = contiguousOf(out);
    check(rinaScatter(rank_ == root ? flat.data_ptr() : nullptr, buf.data_ptr(), bytesOf(buf),
                      rinaUint8, root, comm_),
          "scatter");
    writeBack(out, buf);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const char* call = "reduce_scatter";
  at::Tensor out = onlyTensor(outputs, call);
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_, "rina_torch ",
              call, ": expected one list of ", size_, " input tensors");
  for (const at::Tensor& i : inputs[0]) checkSameAs(i, out, call, "an input tensor");
  const rinaDataType_t type = reduceTypeOf(out, call);
  const rinaRedOp_t op = reduceOpOf(opts.reduceOp, call);
  std::vector<at::Tensor> ins = inputs[0];
  return post(
      c10d::OpType::REDUCE_SCATTER, "rina:reduce_scatter", {out},
      [this, out, ins, type, op]() mutable {
        at::Tensor flat = at::empty({size_, out.numel()}, out.options());
        for (int r = 0; r < size_; ++r) flat[r].copy_(ins[r].reshape({-1}));
        at::Tensor buf = contiguousOf(out);
        check(rinaReduceScatter(flat.data_ptr(), buf.data_ptr(), out.numel(), type, op, comm_),
              "reduce_scatter");
        writeBack(out, buf);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  const char* call = "_reduce_scatter_base";
  checkDenseCpu(input, call);
  checkDenseCpu(output, call);
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "rina_torch ", call, ": output dtype ",
              output.scalar_type(), " differs from input dtype ", input.scalar_type());
  TORCH_CHECK(input.numel() == size_ * output.numel(), "rina_torch ", call, ": input has ",
              input.numel(), " elements, expected ", size_, " x ", output.numel());
  const rinaDataType_t type = reduceTypeOf(output, call);
  const rinaRedOp_t op = reduceOpOf(opts.reduceOp, call);
  return post(
      c10d::OpType::_REDUCE_SCATTER_BASE, "rina:_reduce_scatter_base", {output},
      [this, output, input, type, op]() mutable {
        at::Tensor in = contiguousOf(input);
        // In place when output is this rank's block of a contiguous input.
        at::Tensor buf = contiguousOf(output);
        check(rinaReduceScatter(in.data_ptr(), buf.data_ptr(), output.numel(), type, op, comm_),
              "_reduce_scatter_base");
        writeBack(output, buf);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::barrier(const c10d::BarrierOptions& opts) {
  return post(c10d::OpType::BARRIER, "rina:barrier", {}, [this] {
    // Runs after every call issued before it (one thread, in order).
    int32_t one = 1, sum = 0;
    check(rinaAllReduce(&one, &sum, 1, rinaInt32, rinaSum, comm_), "barrier");
  });
}

c10::intrusive_ptr<ProcessGroupRina> createProcessGroupRina(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    std::chrono::milliseconds timeout) {
  return c10::make_intrusive<ProcessGroupRina>(store, rank, size, timeout);
}

}  // namespace rina::torch_backend
