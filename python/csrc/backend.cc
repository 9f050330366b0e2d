// The backend's life (creation, failures, abort, shutdown, coalescing) and
// its reductions. Calls that only move data: movement_calls.cc; between
// pairs of ranks: exchange_calls.cc.
#include "backend.h"

#include <algorithm>
#include <utility>

#include "tensor_types.h"

namespace rina::torch_backend {

RinaBackend::RinaBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                         std::chrono::milliseconds timeout)
    : BackendBase(rank, size), comm_(std::make_unique<Communicator>(store, rank, size, timeout)) {
  init();
}

RinaBackend::RinaBackend(std::unique_ptr<Communicator> comm, int size)
    : BackendBase(comm->rank(), size), comm_(std::move(comm)) {
  init();
}

RinaBackend::~RinaBackend() { shutdownNow(); }

std::vector<int> RinaBackend::excludedRanks(const std::vector<int64_t>& ranks) const {
  TORCH_CHECK(!ranks.empty(), "rina_torch shrink: no rank to exclude");
  std::vector<bool> seen(size_, false);
  std::vector<int> out;
  for (int64_t r : ranks) {
    TORCH_CHECK(r >= 0 && r < size_, "rina_torch shrink: rank ", r, " is outside [0, ", size_, ")");
    TORCH_CHECK(!seen[r], "rina_torch shrink: rank ", r, " is excluded twice");
    seen[r] = true;
    out.push_back(static_cast<int>(r));
  }
  TORCH_CHECK(static_cast<int>(out.size()) < size_, "rina_torch shrink: all ", size_,
              " ranks are excluded");
  TORCH_CHECK(!seen[rank_], "rina_torch shrink: rank ", rank_,
              " excludes itself (excluded ranks do not call shrink)");
  return out;
}

#if RINA_TORCH_BACKEND && RINA_TORCH_HAS_SHRINK
c10::intrusive_ptr<c10d::Backend> RinaBackend::shrink(const std::vector<int64_t>& ranksToExclude,
                                                      int shrinkFlags,
                                                      const c10::intrusive_ptr<Options>&) {
  TORCH_CHECK(shrinkFlags == RINA_SHRINK_DEFAULT || shrinkFlags == RINA_SHRINK_ABORT,
              "rina_torch shrink: flags ", shrinkFlags, " are neither SHRINK_DEFAULT (",
              RINA_SHRINK_DEFAULT, ") nor SHRINK_ABORT (", RINA_SHRINK_ABORT, ")");
  const std::vector<int> excluded = excludedRanks(ranksToExclude);
  if (shrinkFlags == RINA_SHRINK_ABORT) {
    // Stops the call in progress here and on every other rank.
    rinaCommRevoke(comm());
  } else {
    // The calls queued so far run first (in issue order, as on every rank).
    c10::intrusive_ptr<c10d::Work> drained =
        post(c10d::OpType::UNKNOWN, "rina:shrink", {}, {}, std::chrono::milliseconds(0), [] {});
    withoutGil([&] { drained->wait(); });
  }
  withoutGil([this] { thread_.stop("the process group was shrunk"); });
  rinaComm_t next = nullptr;
  rinaResult_t rc = rinaSuccess;
  withoutGil([&] {
    rc = rinaCommShrink(comm(), excluded.data(), static_cast<int>(excluded.size()), &next,
                        shrinkFlags);
  });
  if (rc != rinaSuccess) {
    error_.store(rc == rinaTimeout ? kTimedOut : kFailed);
    TORCH_CHECK(false, "rina_torch shrink failed on rank ", rank_, ": ", rinaGetErrorString(rc),
                ": ", comm_->lastError());
  }
  int newRank = 0;
  for (int r = 0; r < rank_; ++r) {
    if (std::find(excluded.begin(), excluded.end(), r) == excluded.end()) ++newRank;
  }
  return c10::make_intrusive<RinaBackend>(
      std::make_unique<Communicator>(next, newRank, comm_->timeout()),
      size_ - static_cast<int>(excluded.size()));
}
#endif

void RinaBackend::abortNow() {
  comm_->abort();
  if (error_.load() == kNoError) error_.store(kFailed);
  thread_.queue()->stop("the process group was aborted", false);
}

void RinaBackend::shutdownNow() {
  // The call in progress may belong to ranks that have gone: abort it
  // rather than wait up to the timeout. The join may wait for a Future's
  // Python callbacks, which need the GIL.
  comm_->abort();
  withoutGil([this] { thread_.stop("the process group was destroyed"); });
}

#if RINA_TORCH_BACKEND && RINA_TORCH_HAS_GET_ERROR
c10d::ErrorType RinaBackend::getError() {
  switch (error_.load()) {
    case kNoError:
      return c10d::ErrorType::SUCCESS;
    case kTimedOut:
      return c10d::ErrorType::TIMEOUT;
    default:
      return c10d::ErrorType::COMM_ERROR;
  }
}
#endif

void RinaBackend::check(rinaResult_t rc, const char* call) {
  if (rc == rinaSuccess) return;
  std::chrono::milliseconds own{0};
  if (comm_->deadlinePassed(&own)) {
    error_.store(kTimedOut);
    TORCH_CHECK(false, "rina_torch ", call, " timed out on rank ", rank_, " after its timeout of ",
                own.count(), " ms; the communicator was aborted: ", comm_->lastError());
  }
  error_.store(rc == rinaTimeout ? kTimedOut : kFailed);
  if (rc != rinaRevoked && rc != rinaAborted && rc != rinaInvalidArgument) {
    // Ranks whose own peers are alive (not next to a dead one) then fail at
    // once, with this rank's error naming the one that failed, instead of
    // waiting out the group's timeout. No call runs here: this is the
    // group's thread, between calls.
    rinaCommRevoke(comm_->handle());
  }
  TORCH_CHECK(false, "rina_torch ", call, " failed on rank ", rank_, ": ", rinaGetErrorString(rc),
              ": ", comm_->lastError());
}

void RinaBackend::checkRoot(int64_t root, const char* call) const {
  TORCH_CHECK(root >= 0 && root < size_, "rina_torch ", call, ": root rank ", root,
              " is outside [0, ", size_, ")");
}

void RinaBackend::checkPeer(int peer, const char* call) const {
  TORCH_CHECK(peer >= 0 && peer < size_, "rina_torch ", call, ": rank ", peer, " is outside [0, ",
              size_, ")");
  TORCH_CHECK(peer != rank_, "rina_torch ", call, ": rank ", peer,
              " is this rank (a message to or from itself)");
}

std::vector<at::Tensor> RinaBackend::rootList(const std::vector<std::vector<at::Tensor>>& lists,
                                              const at::Tensor& like, int root, const char* call,
                                              const char* arg) const {
  if (rank_ != root) {
    TORCH_CHECK(lists.empty() || (lists.size() == 1 && lists[0].empty()), "rina_torch ", call,
                ": only the root (rank ", root, ") takes argument ", arg);
    return {};
  }
  TORCH_CHECK(lists.size() == 1 && static_cast<int>(lists[0].size()) == size_, "rina_torch ", call,
              ": argument ", arg, " must be one list of ", size_, " tensors on the root");
  for (size_t i = 0; i < lists[0].size(); ++i) {
    checkSameAs(lists[0][i], like, call, std::string(arg) + "[" + std::to_string(i) + "]",
                "the rank's own tensor");
  }
  return lists[0];
}

c10::intrusive_ptr<RinaWork> RinaBackend::newWork(c10d::OpType type, const char* title,
                                                  std::vector<at::Tensor> outputs) {
  if (type != c10d::OpType::SEND && type != c10d::OpType::RECV &&
      type != c10d::OpType::RECVANYSOURCE && type != kCoalescedOp) {
    ++sequence_;
  }
  auto work =
      c10::make_intrusive<RinaWork>(rank_, type, title, std::move(outputs), thread_.queue());
  std::lock_guard<std::mutex> lock(coalesceMu_);
  if (coalescing_) coalesced_.push_back(work->future());
  return work;
}

c10::intrusive_ptr<c10d::Work> RinaBackend::post(c10d::OpType type, const char* title,
                                                 std::vector<at::Tensor> outputs,
                                                 const std::vector<at::Tensor>& inputs,
                                                 std::chrono::milliseconds timeout,
                                                 std::function<void()> run) {
  std::vector<at::Tensor> all = outputs;
  all.insert(all.end(), inputs.begin(), inputs.end());
  DeviceOrder order(all, title);
  auto work = newWork(type, title, std::move(outputs));
  thread_.post(work, [this, order = std::move(order), run = std::move(run), timeout] {
    Communicator::Deadline deadline(*comm_, timeout);
    order.run(run);
  });
  return work;
}

void RinaBackend::beginCoalescing() {
  std::lock_guard<std::mutex> lock(coalesceMu_);
  TORCH_CHECK(!coalescing_, "rina_torch: startCoalescing while coalescing already");
  coalescing_ = true;
  coalesced_.clear();
  // Handles dropped inside the block (batch_isend_irecv drops each send's)
  // must not start the calls before their partners are queued.
  thread_.queue()->hold(true);
}

c10::intrusive_ptr<c10d::Work> RinaBackend::finishCoalescing() {
  std::vector<c10::intrusive_ptr<c10::ivalue::Future>> futures;
  {
    std::lock_guard<std::mutex> lock(coalesceMu_);
    TORCH_CHECK(coalescing_, "rina_torch: endCoalescing without startCoalescing");
    coalescing_ = false;
    futures.swap(coalesced_);
  }
  // Queued after every call of the block, so it runs when they all ran.
  auto work = newWork(kCoalescedOp, "rina:coalesced", {});
  thread_.post(work, [futures = std::move(futures)] {
    for (const auto& f : futures) {
      if (f->hasError()) std::rethrow_exception(f->exception_ptr());
    }
  });
  thread_.queue()->hold(false);
  return work;
}

// ---- reductions ------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> RinaBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                      const c10d::AllreduceOptions& opts) {
  const char* call = "allreduce";
  at::Tensor t = onlyTensor(tensors, call);
  const Reduction red = reductionOf(t, opts.reduceOp, call);
  return post(
      c10d::OpType::ALLREDUCE, "rina:all_reduce", {t}, {}, opts.timeout, [this, t, red]() mutable {
        at::Tensor buf = red.input(t, true);
        check(rinaAllReduce(buf.data_ptr(), buf.data_ptr(), buf.numel(), red.type, red.op, comm()),
              "allreduce");
        red.writeBack(t, buf);
      });
}

#if RINA_TORCH_BACKEND
c10::intrusive_ptr<c10d::Work> RinaBackend::allreduce_sparse(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    checkTensor(tensors[i], "allreduce", "tensors[" + std::to_string(i) + "]");
  }
  return allreduce(tensors, opts);
}
#endif

c10::intrusive_ptr<c10d::Work> RinaBackend::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  const char* call = "allreduce_coalesced";
  TORCH_CHECK(!tensors.empty(), "rina_torch ", call, ": argument tensors is empty");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string arg = "tensors[" + std::to_string(i) + "]";
    checkTensor(tensors[i], call, arg);
    TORCH_CHECK(tensors[i].scalar_type() == tensors[0].scalar_type() &&
                    tensors[i].device() == tensors[0].device(),
                "rina_torch ", call, ": argument ", arg, " is ", tensors[i].scalar_type(), " on ",
                tensors[i].device(), ", tensors[0] ", tensors[0].scalar_type(), " on ",
                tensors[0].device(), " (one dtype and device per call)");
  }
  const Reduction red = reductionOf(tensors[0], opts.reduceOp, call);
  return post(
      c10d::OpType::ALLREDUCE_COALESCED, "rina:allreduce_coalesced", tensors, {}, opts.timeout,
      [this, tensors, red]() mutable {
        std::vector<at::Tensor> flat;
        for (const at::Tensor& t : tensors) flat.push_back(t.reshape({-1}));
        at::Tensor buf = red.input(at::cat(flat), true);
        check(rinaAllReduce(buf.data_ptr(), buf.data_ptr(), buf.numel(), red.type, red.op, comm()),
              "allreduce_coalesced");
        int64_t offset = 0;
        for (at::Tensor& t : tensors) {
          red.writeBack(t, buf.narrow(0, offset, t.numel()));
          offset += t.numel();
        }
      });
}

c10::intrusive_ptr<c10d::Work> RinaBackend::reduce(std::vector<at::Tensor>& tensors,
                                                   const c10d::ReduceOptions& opts) {
  const char* call = "reduce";
  at::Tensor t = onlyTensor(tensors, call);
  checkRoot(opts.rootRank, call);
  const Reduction red = reductionOf(t, opts.reduceOp, call);
  const int root = static_cast<int>(opts.rootRank);
  return post(
      c10d::OpType::REDUCE, "rina:reduce", {t}, {}, opts.timeout, [this, t, red, root]() mutable {
        // In place on the root; other ranks keep their input.
        at::Tensor buf = red.input(t, rank_ == root);
        check(
            rinaReduce(buf.data_ptr(), buf.data_ptr(), buf.numel(), red.type, red.op, root, comm()),
            "reduce");
        if (rank_ == root) red.writeBack(t, buf);
      });
}

c10::intrusive_ptr<c10d::Work> RinaBackend::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const char* call = "reduce_scatter";
  at::Tensor out = onlyTensor(outputs, call, "output");
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_, "rina_torch ",
              call, ": argument input_list must hold ", size_, " tensors");
  for (int r = 0; r < size_; ++r) {
    checkSameAs(inputs[0][r], out, call, "input_list[" + std::to_string(r) + "]", "output");
  }
  const Reduction red = reductionOf(out, opts.reduceOp, call);
  std::vector<at::Tensor> ins = inputs[0];
  return post(c10d::OpType::REDUCE_SCATTER, "rina:reduce_scatter", {out}, ins, opts.timeout,
              [this, out, ins, red]() mutable {
                const int64_t n = out.numel();
                at::Tensor flat = red.output(out, size_ * n);
                for (int r = 0; r < size_; ++r) {
                  flat.narrow(0, r * n, n).copy_(red.input(ins[r], false).reshape({-1}));
                }
                at::Tensor buf = red.outputFor(out);
                check(
                    rinaReduceScatter(flat.data_ptr(), buf.data_ptr(), n, red.type, red.op, comm()),
                    "reduce_scatter");
                red.writeBack(out, buf);
              });
}

c10::intrusive_ptr<c10d::Work> RinaBackend::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  const char* call = "reduce_scatter_tensor";
  checkTensor(input, call, "input");
  checkTensor(output, call, "output");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "rina_torch ", call,
              ": argument output has dtype ", output.scalar_type(), ", input has ",
              input.scalar_type());
  TORCH_CHECK(input.numel() == size_ * output.numel(), "rina_torch ", call, ": argument input has ",
              input.numel(), " elements, expected ", size_, " x output's ", output.numel());
  const Reduction red = reductionOf(output, opts.reduceOp, call);
  return post(c10d::OpType::_REDUCE_SCATTER_BASE, "rina:_reduce_scatter_base", {output}, {input},
              opts.timeout, [this, output, input, red]() mutable {
                at::Tensor in = red.input(input, false);
                // In place when output is this rank's block of a contiguous
                // input that rina reads as it is.
                at::Tensor buf = red.outputFor(output);
                check(rinaReduceScatter(in.data_ptr(), buf.data_ptr(), output.numel(), red.type,
                                        red.op, comm()),
                      "reduce_scatter_tensor");
                red.writeBack(output, buf);
              });
}

c10::intrusive_ptr<c10d::Work> RinaBackend::reduceScatterTensorCoalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const char* call = "reduce_scatter_tensor_coalesced";
  checkCoalesced(outputs, inputs, size_, /*outputsPerRank=*/false, call);
  const Reduction red = reductionOf(outputs[0], opts.reduceOp, call);
  return post(
      kReduceScatterCoalescedOp, "rina:reduce_scatter_tensor_coalesced", outputs, inputs,
      opts.timeout, [this, outputs, inputs, red]() mutable {
        // One reduce-scatter: block r of the flat input holds every
        // input's block r, in order.
        int64_t block = 0;
        for (const at::Tensor& o : outputs) block += o.numel();
        at::Tensor flat = red.output(outputs[0], size_ * block);
        for (int r = 0; r < size_; ++r) {
          int64_t at = r * block;
          for (size_t i = 0; i < inputs.size(); ++i) {
            const int64_t n = outputs[i].numel();
            flat.narrow(0, at, n).copy_(
                red.input(inputs[i].reshape({-1}).narrow(0, r * n, n), false));
            at += n;
          }
        }
        at::Tensor buf = red.output(outputs[0], block);
        check(rinaReduceScatter(flat.data_ptr(), buf.data_ptr(), block, red.type, red.op, comm()),
              "reduce_scatter_tensor_coalesced");
        int64_t at = 0;
        for (at::Tensor& o : outputs) {
          red.writeBack(o, buf.narrow(0, at, o.numel()));
          at += o.numel();
        }
      });
}

c10::intrusive_ptr<RinaBackend> createRinaBackend(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int size,
                                                  std::chrono::milliseconds timeout) {
  return c10::make_intrusive<RinaBackend>(store, rank, size, timeout);
}

}  // namespace rina::torch_backend
