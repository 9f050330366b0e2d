// The process group's own thread: collectives run on it one at a time, in
// the order they were issued, so the caller (DDP's backward pass) goes on
// while rina moves the bytes. Each call is a RinaWork: a c10d::Work whose
// Future completes with the call's output tensors or its error.
#ifndef RINA_PYTHON_CSRC_WORK_THREAD_H_
#define RINA_PYTHON_CSRC_WORK_THREAD_H_

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

namespace rina::torch_backend {

class RinaWork : public c10d::Work {
 public:
  RinaWork(int rank, c10d::OpType type, const char* profilingTitle,
           std::vector<at::Tensor> outputs);

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  std::vector<at::Tensor> result() override { return outputs_; }

  // Once, by the work thread: wakes wait() and completes the Future with
  // the outputs, or with error when it is set.
  void complete(std::exception_ptr error);

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

class WorkThread {
 public:
  WorkThread();
  ~WorkThread();  // stop("the process group was destroyed")
  WorkThread(const WorkThread&) = delete;
  WorkThread& operator=(const WorkThread&) = delete;

  // Queues run; its exception, if any, becomes the work's error.
  void post(c10::intrusive_ptr<RinaWork> work, std::function<void()> run);

  // Takes no more work, fails what is queued and not started with `why`,
  // waits for the call in progress (abort it first to make that quick),
  // and joins. Idempotent.
  void stop(const std::string& why);

 private:
  struct Item {
    c10::intrusive_ptr<RinaWork> work;
    std::function<void()> run;
  };
  void loop();

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::string stopReason_;
  std::thread thread_;
};

}  // namespace rina::torch_backend

#endif  // RINA_PYTHON_CSRC_WORK_THREAD_H_
