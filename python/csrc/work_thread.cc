#include "work_thread.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "rina/rina.h"

namespace rina::torch_backend {

void CallQueue::push(Item item) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopped_) {
      items_.push_back(std::move(item));
      if (handed_) threadWake_.notify_one();
      return;
    }
  }
  CallQueue::complete(item, std::make_exception_ptr(std::runtime_error(stopReason_)));
}

void CallQueue::complete(Item& item, std::exception_ptr error) {
  if (c10::intrusive_ptr<RinaWork> work = item.work.lock()) {
    work->complete(error);
  } else {
    RinaWork::completeFuture(*item.future, item.outputs, error);
  }
}

bool CallQueue::queued(const RinaWork* work) const {
  return std::any_of(items_.begin(), items_.end(),
                     [work](const Item& item) { return item.id == work; });
}

void CallQueue::runGroup(std::vector<Item>& batch) {
  std::vector<std::exception_ptr> errors(batch.size());
  rinaGroupStart();
  for (size_t i = 0; i < batch.size(); ++i) {
    try {
      batch[i].pointToPoint.post();
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  const rinaResult_t rc = rinaGroupEnd();
  for (size_t i = 0; i < batch.size(); ++i) {
    if (errors[i]) continue;
    try {
      batch[i].pointToPoint.finish(rc);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  for (size_t i = 0; i < batch.size(); ++i) complete(batch[i], errors[i]);
}

void CallQueue::runFront(std::unique_lock<std::mutex>& lock) {
  std::vector<Item> batch;
  batch.push_back(std::move(items_.front()));
  items_.pop_front();
  const bool grouped = static_cast<bool>(batch[0].pointToPoint.post);
  while (grouped && !items_.empty() && items_.front().pointToPoint.post) {
    batch.push_back(std::move(items_.front()));
    items_.pop_front();
  }
  running_ = batch[0].id;
  lock.unlock();
  if (grouped) {
    runGroup(batch);
  } else {
    std::exception_ptr error;
    try {
      batch[0].run();
    } catch (...) {
      error = std::current_exception();
    }
    complete(batch[0], error);  // before the next call may start: in order
  }
  // The calls' tensors go before the lock is taken.
  batch.clear();
  lock.lock();
  running_ = nullptr;
  if (items_.empty()) handed_ = false;  // drained, by the thread or a waiter
  if (idleWaiters_ > 0) idle_.notify_all();
  if (handed_ && !held_ && !items_.empty()) threadWake_.notify_one();
}

void CallQueue::runThrough(const RinaWork* work) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopped_) {
    if (running_ != nullptr) {
      // Another call (or this one, on the thread) is running: after it.
      ++idleWaiters_;
      idle_.wait(lock, [this] { return running_ == nullptr || stopped_; });
      --idleWaiters_;
      continue;
    }
    if (!queued(work)) return;  // ran
    runFront(lock);
  }
}

void CallQueue::handToThread(const RinaWork* work) {
  std::lock_guard<std::mutex> lock(mu_);
  if (handed_ || !queued(work)) return;
  handed_ = true;
  threadWake_.notify_one();
}

bool CallQueue::runForThread() {
  std::unique_lock<std::mutex> lock(mu_);
  threadWake_.wait(lock, [this] {
    return stopped_ || (handed_ && !held_ && running_ == nullptr && !items_.empty());
  });
  if (stopped_) return false;
  runFront(lock);
  return true;
}

void CallQueue::hold(bool held) {
  std::lock_guard<std::mutex> lock(mu_);
  held_ = held;
  if (!held_ && handed_) threadWake_.notify_one();
}

void CallQueue::stop(const std::string& why, bool waitForRunning) {
  std::deque<Item> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopped_) {
      stopped_ = true;
      stopReason_ = "rina_torch: " + why + " before this call ran";
      dropped.swap(items_);
      threadWake_.notify_all();
      idle_.notify_all();
    }
  }
  for (Item& item : dropped) {
    complete(item, std::make_exception_ptr(std::runtime_error(stopReason_)));
  }
  if (!waitForRunning) return;
  // A call running in a waiting caller's thread ends before the group goes.
  std::unique_lock<std::mutex> lock(mu_);
  ++idleWaiters_;
  idle_.wait(lock, [this] { return running_ == nullptr; });
  --idleWaiters_;
}

RinaWork::RinaWork(int rank, c10d::OpType type, const char* profilingTitle,
                   std::vector<at::Tensor> outputs, std::shared_ptr<CallQueue> queue)
    : c10d::Work(rank, type, profilingTitle),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors())),
      queue_(queue) {}

c10::intrusive_ptr<c10::ivalue::Future> RinaWork::getFuture() {
  if (std::shared_ptr<CallQueue> q = queue_.lock()) q->handToThread(this);
  return future_;
}

bool RinaWork::isCompleted() {
  if (std::shared_ptr<CallQueue> q = queue_.lock()) q->handToThread(this);
  return c10d::Work::isCompleted();
}

bool RinaWork::wait(std::chrono::milliseconds timeout) {
  if (std::shared_ptr<CallQueue> q = queue_.lock()) q->runThrough(this);
  return c10d::Work::wait(timeout);
}

void RinaWork::release_resources() {
  if (std::shared_ptr<CallQueue> q = queue_.lock()) q->handToThread(this);
}

void RinaWork::complete(std::exception_ptr error) {
  finish(error);  // c10d::Work: wakes wait(), ends the profiler's record
  completeFuture(*future_, outputs_, error);
}

void RinaWork::completeFuture(c10::ivalue::Future& future, const std::vector<at::Tensor>& outputs,
                              std::exception_ptr error) {
  if (error) {
    future.setError(error);
  } else {
    future.markCompleted(c10::IValue(outputs));
  }
}

WorkThread::WorkThread() : queue_(std::make_shared<CallQueue>()) {
  thread_ = std::thread([q = queue_] {
    while (q->runForThread()) {
    }
  });
}

WorkThread::~WorkThread() { stop("the process group was destroyed"); }

void WorkThread::post(c10::intrusive_ptr<RinaWork> work, std::function<void()> run) {
  queue_->push(CallQueue::Item{c10::weak_intrusive_ptr<RinaWork>(work),
                               work.get(),
                               work->future(),
                               work->outputs(),
                               std::move(run),
                               {}});
}

void WorkThread::post(c10::intrusive_ptr<RinaWork> work, PointToPoint call) {
  queue_->push(CallQueue::Item{c10::weak_intrusive_ptr<RinaWork>(work),
                               work.get(),
                               work->future(),
                               work->outputs(),
                               {},
                               std::move(call)});
}

void WorkThread::stop(const std::string& why) {
  queue_->stop(why);
  if (thread_.joinable()) thread_.join();
}

}  // namespace rina::torch_backend
