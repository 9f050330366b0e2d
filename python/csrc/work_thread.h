// The process group's own thread: collectives run one at a time, in the
// order they were issued. Each call is a RinaWork: a c10d::Work whose Future
// completes with the call's output tensors or its error.
//
// Who runs a call: a caller that waits for it (Work.wait(), as a
// synchronous dist.all_reduce does at once) runs it, and every call queued
// before it, in its own thread. The thread runs the queue as soon as a call
// may not be waited for: its Future is asked for (DDP does so for each
// gradient bucket as it posts it, so communication overlaps the backward
// pass), whether it completed is asked, or its last handle is dropped. A
// synchronous call thus costs no thread wake-up at all (each one costs a
// scheduler slice on a busy machine: 30 to 90 us per call with 4 ranks on 2
// cores); an async_op=True call that is only waited for later starts at its
// wait.
//
// Point-to-point calls (send, recv, batch_isend_irecv's) run in groups:
// whoever runs the queue takes the queued point-to-point calls that follow
// one another at its front and runs them as one rina group
// (rinaGroupStart/End), so the sends and receives of a batch all progress
// together, as NCCL's and Gloo's do (a ring of isend/irecv cannot
// deadlock on the one thread that runs them).
#ifndef RINA_PYTHON_CSRC_WORK_THREAD_H_
#define RINA_PYTHON_CSRC_WORK_THREAD_H_

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

namespace rina::torch_backend {

class CallQueue;

class RinaWork : public c10d::Work {
 public:
  RinaWork(int rank, c10d::OpType type, const char* profilingTitle, std::vector<at::Tensor> outputs,
           std::shared_ptr<CallQueue> queue);

  // The Future, the completion check and dropping the last handle hand the
  // queue to the thread; wait() runs the call here when it is still queued.
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  bool isCompleted() override;
  std::vector<at::Tensor> result() override { return outputs_; }
  // A receive's sender (recv_anysource), once it ran; -1 before.
  int sourceRank() const override { return source_->load(); }
  const std::shared_ptr<std::atomic<int>>& source() const { return source_; }
  bool wait(std::chrono::milliseconds timeout) override;
  void release_resources() override;  // the last handle went

  // Once, by whoever ran the call: wakes wait() and completes the Future
  // with the outputs, or with error when it is set.
  void complete(std::exception_ptr error);
  // The Future's part of complete(), for a call whose work is gone.
  static void completeFuture(c10::ivalue::Future& future, const std::vector<at::Tensor>& outputs,
                             std::exception_ptr error);

  const c10::intrusive_ptr<c10::ivalue::Future>& future() const { return future_; }
  const std::vector<at::Tensor>& outputs() const { return outputs_; }

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::weak_ptr<CallQueue> queue_;
  std::shared_ptr<std::atomic<int>> source_ = std::make_shared<std::atomic<int>>(-1);
};

// A point-to-point call in two parts: post() inside a rina group (it only
// checks and posts), then finish(rc) with rinaGroupEnd's result (it throws
// on failure, else writes results back).
struct PointToPoint {
  std::function<void()> post;
  std::function<void(int groupResult)> finish;
};

// The calls not yet run, shared by the thread and the works (a work may
// outlive its group: then nothing is left to run).
class CallQueue {
 public:
  struct Item {
    // Weak: a call whose handles were all dropped still runs (the other
    // ranks wait for it), and completes its Future, which may outlive them.
    c10::weak_intrusive_ptr<RinaWork> work;
    const RinaWork* id;
    c10::intrusive_ptr<c10::ivalue::Future> future;
    std::vector<at::Tensor> outputs;
    std::function<void()> run;  // a call on its own; or:
    PointToPoint pointToPoint;  // a call that runs in a group with its neighbours
  };

  // Queues item unless stopped (then fails its work with the stop reason).
  void push(Item item);
  // A caller's wait: runs the queued calls in this thread, in order, up to
  // and including work; returns once work has run here or on the thread, or
  // the queue stopped.
  void runThrough(const RinaWork* work);
  // work (when still queued) may never be waited for: the thread runs the
  // queue until it is empty.
  void handToThread(const RinaWork* work);
  // The thread's loop: blocks until it has a call to run and runs it; false
  // once stopped.
  bool runForThread();
  // While held, the thread starts nothing (a caller's wait still runs the
  // queue): calls queued together start together (coalescing).
  void hold(bool held);
  // Takes no more calls, fails the queued ones with "rina_torch: <why>
  // before this call ran", and (waitForRunning) waits for the call running,
  // if any. A second call only waits.
  void stop(const std::string& why, bool waitForRunning = true);

 private:
  // Completes item's work, or its Future when the work is gone.
  static void complete(Item& item, std::exception_ptr error);
  // Runs items_.front() with mu_ released, and the point-to-point calls
  // queued right after it when it is one; lock holds mu_ before and after.
  void runFront(std::unique_lock<std::mutex>& lock);
  // Runs a batch of point-to-point calls as one rina group.
  static void runGroup(std::vector<Item>& batch);
  bool queued(const RinaWork* work) const;

  std::mutex mu_;
  std::condition_variable threadWake_;  // the thread: calls handed to it, or stop
  std::condition_variable idle_;        // waiters for the running call to end
  std::deque<Item> items_;
  const RinaWork* running_ = nullptr;  // the first of a point-to-point batch
  bool handed_ = false;                // the thread runs the queue until it is empty
  bool held_ = false;
  int idleWaiters_ = 0;
  bool stopped_ = false;
  std::string stopReason_;
};

class WorkThread {
 public:
  WorkThread();
  ~WorkThread();  // stop("the process group was destroyed")
  WorkThread(const WorkThread&) = delete;
  WorkThread& operator=(const WorkThread&) = delete;

  const std::shared_ptr<CallQueue>& queue() const { return queue_; }
  // Queues run for work; run's exception, if any, becomes the work's error.
  void post(c10::intrusive_ptr<RinaWork> work, std::function<void()> run);
  // Queues a point-to-point call (it runs grouped with its neighbours).
  void post(c10::intrusive_ptr<RinaWork> work, PointToPoint call);
  // Takes no more work, fails what is queued and not started with `why`,
  // waits for the call in progress (abort it first to make that quick), and
  // joins. Idempotent.
  void stop(const std::string& why);

 private:
  std::shared_ptr<CallQueue> queue_;
  std::thread thread_;
};

}  // namespace rina::torch_backend

#endif  // RINA_PYTHON_CSRC_WORK_THREAD_H_
