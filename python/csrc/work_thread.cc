#include "work_thread.h"

#include <stdexcept>
#include <utility>

namespace rina::torch_backend {

void CallQueue::push(Item item) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopped_) {
      items_.push_back(std::move(item));
      ready_.notify_all();
      return;
    }
  }
  item.work->complete(std::make_exception_ptr(std::runtime_error(stopReason_)));
}

bool CallQueue::runFirst(const RinaWork* only) {
  Item item;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_ || items_.empty() || (only && items_.front().work.get() != only)) return false;
    item = std::move(items_.front());
    items_.pop_front();
    running_ = true;
  }
  std::exception_ptr error;
  try {
    item.run();
  } catch (...) {
    error = std::current_exception();
  }
  item.work->complete(error);  // before the next call may start: in order
  std::lock_guard<std::mutex> lock(mu_);
  running_ = false;
  ready_.notify_all();  // the thread may run the next call; stop() may go on
  return true;
}

bool CallQueue::waitForCall() {
  std::unique_lock<std::mutex> lock(mu_);
  ready_.wait(lock, [this] { return stopped_ || (!running_ && !items_.empty()); });
  return !stopped_;
}

void CallQueue::stop(const std::string& why) {
  std::deque<Item> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    stopReason_ = "rina_torch: " + why + " before this call ran";
    dropped.swap(items_);
    ready_.notify_all();
  }
  for (Item& item : dropped) {
    item.work->complete(std::make_exception_ptr(std::runtime_error(stopReason_)));
  }
  // A call running in a waiting caller's thread ends before the group goes.
  std::unique_lock<std::mutex> lock(mu_);
  ready_.wait(lock, [this] { return !running_; });
}

RinaWork::RinaWork(int rank, c10d::OpType type, const char* profilingTitle,
                   std::vector<at::Tensor> outputs, std::shared_ptr<CallQueue> queue)
    : c10d::Work(rank, type, profilingTitle),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors())),
      queue_(queue) {}

bool RinaWork::wait(std::chrono::milliseconds timeout) {
  if (std::shared_ptr<CallQueue> q = queue_.lock()) q->runFirst(this);
  return c10d::Work::wait(timeout);
}

void RinaWork::complete(std::exception_ptr error) {
  finish(error);  // c10d::Work: wakes wait(), ends the profiler's record
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

WorkThread::WorkThread() : queue_(std::make_shared<CallQueue>()) {
  thread_ = std::thread([q = queue_] {
    while (q->waitForCall()) q->runFirst(nullptr);
  });
}

WorkThread::~WorkThread() { stop("the process group was destroyed"); }

void WorkThread::post(c10::intrusive_ptr<RinaWork> work, std::function<void()> run) {
  queue_->push(CallQueue::Item{std::move(work), std::move(run)});
}

void WorkThread::stop(const std::string& why) {
  queue_->stop(why);
  if (thread_.joinable()) thread_.join();
}

}  // namespace rina::torch_backend
