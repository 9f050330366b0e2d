#include "work_thread.h"

#include <stdexcept>
#include <utility>

namespace rina::torch_backend {

RinaWork::RinaWork(int rank, c10d::OpType type, const char* profilingTitle,
                   std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type, profilingTitle),
      outputs_(std::move(outputs)),
      future_(
          c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
}

void RinaWork::complete(std::exception_ptr error) {
  finish(error);  // c10d::Work: wakes wait(), ends the profiler's record
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

WorkThread::WorkThread() : thread_([this] { loop(); }) {}

WorkThread::~WorkThread() { stop("the process group was destroyed"); }

void WorkThread::post(c10::intrusive_ptr<RinaWork> work, std::function<void()> run) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      queue_.push_back(Item{std::move(work), std::move(run)});
      wake_.notify_one();
      return;
    }
  }
  work->complete(std::make_exception_ptr(std::runtime_error(stopReason_)));
}

void WorkThread::stop(const std::string& why) {
  std::deque<Item> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    stopReason_ = "rina_torch: " + why + " before this call ran";
    dropped.swap(queue_);
    wake_.notify_one();
  }
  for (Item& item : dropped) {
    item.work->complete(std::make_exception_ptr(std::runtime_error(stopReason_)));
  }
  if (thread_.joinable()) thread_.join();
}

void WorkThread::loop() {
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    std::exception_ptr error;
    try {
      item.run();
    } catch (...) {
      error = std::current_exception();
    }
    item.work->complete(error);
  }
}

}  // namespace rina::torch_backend
