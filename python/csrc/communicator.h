// The one owner of a backend's rina communicator (rinaComm_t): made by a
// rendezvous through the c10d Store torch hands the backend, aborted from
// any thread without blocking, destroyed once. Calls that carry their own
// timeout arm a deadline here: past it, the communicator is aborted (as
// NCCL's watchdog does), so the call in progress returns at once.
#ifndef RINA_PYTHON_CSRC_COMMUNICATOR_H_
#define RINA_PYTHON_CSRC_COMMUNICATOR_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "rina/rina.h"

namespace rina::torch_backend {

class Communicator {
 public:
  // Collective over the group's ranks: rank 0 makes the unique id and puts
  // it in store; every rank then creates its communicator, whose every
  // wait ends after `timeout` (rinaConfig_t.timeoutMs).
  Communicator(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
               std::chrono::milliseconds timeout);
  // Owns comm, a communicator made from another one (a shrink), of
  // which this process is `rank`.
  Communicator(rinaComm_t comm, int rank, std::chrono::milliseconds timeout);
  ~Communicator();  // rinaCommDestroy
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  rinaComm_t handle() const { return comm_; }
  int rank() const { return rank_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Makes the call in progress and every later one return rinaAborted.
  // Never blocks; any thread; idempotent.
  void abort();
  bool aborted() const { return aborted_.load(); }

  // rina's account of its last failure ("" when none).
  std::string lastError() const;
  // Whether the deadline of the call running (or the last one) passed and
  // aborted the communicator; *timeout gets that call's timeout.
  bool deadlinePassed(std::chrono::milliseconds* timeout);

  // While a Deadline lives, the communicator is aborted when it passes.
  class Deadline {
   public:
    // timeout <= 0: none (the communicator's own timeout still holds).
    Deadline(Communicator& comm, std::chrono::milliseconds timeout);
    ~Deadline();
    Deadline(const Deadline&) = delete;
    Deadline& operator=(const Deadline&) = delete;

   private:
    Communicator& comm_;
    bool armed_ = false;
  };

 private:
  void watch();  // the watchdog thread, started by the first Deadline

  int rank_;
  std::chrono::milliseconds timeout_;
  rinaComm_t comm_ = nullptr;
  std::atomic<bool> aborted_{false};

  std::mutex mu_;
  std::condition_variable wake_;
  bool armed_ = false;  // one call runs at a time: at most one deadline
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::milliseconds deadlineTimeout_{0};
  bool expired_ = false;
  bool stopping_ = false;
  std::thread watchdog_;
};

}  // namespace rina::torch_backend

#endif  // RINA_PYTHON_CSRC_COMMUNICATOR_H_
