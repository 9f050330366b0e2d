// The process group's own thread: collectives run one at a time, in the
// order they were issued, so the caller (DDP's backward pass) goes on while
// rina moves the bytes. Each call is a RinaWork: a c10d::Work whose Future
// completes with the call's output tensors or its error.
//
// A caller that waits for a call which is next in line while nothing runs
// (a synchronous dist.all_reduce) runs it itself instead of handing it to
// the thread and sleeping until the thread hands it back: the same order,
// one call at a time, and no two thread wake-ups per call (each of which
// costs a scheduler slice on a busy machine).
#ifndef RINA_PYTHON_CSRC_WORK_THREAD_H_
#define RINA_PYTHON_CSRC_WORK_THREAD_H_

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

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

class RinaWork;

// The calls not yet run, shared by the thread and the works (a work may
// outlive its group: then nothing is left to run).
class CallQueue {
 public:
  struct Item {
    c10::intrusive_ptr<RinaWork> work;
    std::function<void()> run;
  };

  // Queues item unless stopped (then fails its work with the stop reason).
  void push(Item item);
  // Runs the first call if no call is running and, when `only` is set, the
  // first call is that work. False when it ran nothing.
  bool runFirst(const RinaWork* only);
  // Blocks until a call can run (true) or the queue stopped (false).
  bool waitForCall();
  // Takes no more calls, fails the queued ones with "rina_torch: <why>
  // before this call ran", and waits for the call running, if any.
  void stop(const std::string& why);

 private:
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<Item> items_;
  bool running_ = false;
  bool stopped_ = false;
  std::string stopReason_;
};

class RinaWork : public c10d::Work {
 public:
  RinaWork(int rank, c10d::OpType type, const char* profilingTitle, std::vector<at::Tensor> outputs,
           std::shared_ptr<CallQueue> queue);

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  std::vector<at::Tensor> result() override { return outputs_; }
  // Runs the call here when it is next and nothing runs; then waits.
  bool wait(std::chrono::milliseconds timeout) override;

  // Once, by whoever ran the call: wakes wait() and completes the Future
  // with the outputs, or with error when it is set.
  void complete(std::exception_ptr error);

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::weak_ptr<CallQueue> queue_;
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
