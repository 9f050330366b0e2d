#include "communicator.h"

#include <c10/util/Exception.h>

#include <cstring>
#include <vector>

namespace rina::torch_backend {

namespace {

// Where rank 0 puts the unique id in the group's store (torch hands every
// group, and in torch 2.x every device of a group, a store of its own prefix).
constexpr const char* kUniqueIdKey = "rina_unique_id";

}  // namespace

Communicator::Communicator(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                           std::chrono::milliseconds timeout)
    : rank_(rank), timeout_(timeout) {
  TORCH_CHECK(timeout.count() > 0, "rina_torch: the process group's timeout must be positive, got ",
              timeout.count(), " ms");
  rinaUniqueId id;
  if (rank == 0) {
    const rinaResult_t rc = rinaGetUniqueId(&id);
    TORCH_CHECK(rc == rinaSuccess,
                "rina_torch rinaGetUniqueId failed on rank 0: ", rinaGetErrorString(rc), ": ",
                rinaCommGetLastError(nullptr));
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
  const rinaResult_t rc = rinaCommInitRankConfig(&comm_, size, id, rank, &config);
  TORCH_CHECK(rc == rinaSuccess, "rina_torch rinaCommInitRankConfig failed on rank ", rank, ": ",
              rinaGetErrorString(rc), ": ", rinaCommGetLastError(nullptr));
}

Communicator::Communicator(rinaComm_t comm, int rank, std::chrono::milliseconds timeout)
    : rank_(rank), timeout_(timeout), comm_(comm) {}

Communicator::~Communicator() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  if (comm_) rinaCommDestroy(comm_);
}

void Communicator::abort() {
  if (!aborted_.exchange(true) && comm_) rinaCommAbort(comm_);
}

std::string Communicator::lastError() const {
  const char* s = rinaCommGetLastError(comm_);
  return s ? s : "";
}

void Communicator::watch() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (!armed_) {
      wake_.wait(lock);
      continue;
    }
    if (wake_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ &&
        std::chrono::steady_clock::now() >= deadline_) {
      expired_ = true;
      armed_ = false;
      abort();
    }
  }
}

Communicator::Deadline::Deadline(Communicator& comm, std::chrono::milliseconds timeout)
    : comm_(comm) {
  // A call's own timeout matters only when it is shorter than the
  // communicator's, which bounds every wait anyway.
  if (timeout.count() <= 0 || timeout >= comm.timeout_) return;
  std::lock_guard<std::mutex> lock(comm.mu_);
  if (!comm.watchdog_.joinable()) comm.watchdog_ = std::thread([&c = comm] { c.watch(); });
  comm.armed_ = true;
  comm.expired_ = false;
  comm.deadlineTimeout_ = timeout;
  comm.deadline_ = std::chrono::steady_clock::now() + timeout;
  armed_ = true;
  comm.wake_.notify_all();
}

Communicator::Deadline::~Deadline() {
  if (!armed_) return;
  std::lock_guard<std::mutex> lock(comm_.mu_);
  comm_.armed_ = false;
  comm_.wake_.notify_all();
}

bool Communicator::deadlinePassed(std::chrono::milliseconds* timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  *timeout = deadlineTimeout_;
  return expired_;
}

}  // namespace rina::torch_backend
