// Test harness for INA integration tests: a rina-switchd child process on
// loopback, and a "rack" of k workers (threads) each with its own InaClient.
#ifndef RINA_TESTS_SUPPORT_INA_HARNESS_H_
#define RINA_TESTS_SUPPORT_INA_HARNESS_H_

#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "ina/ctrl_client.h"
#include "ina/ina_client.h"

namespace rina::ina::testing {

// rina-switchd started with the given flags (plus --listen/--control on
// `address`, loopback by default, with free ports), through `launcher` when
// given ({"ip", "netns", "exec", "ns"}: in another network namespace).
// Stopped (SIGTERM, then SIGKILL) on destruction.
class SwitchdProcess {
 public:
  explicit SwitchdProcess(const std::vector<std::string>& flags,
                          const std::vector<std::string>& launcher = {},
                          const std::string& address = "127.0.0.1");
  ~SwitchdProcess();
  bool ready() const { return ready_; }
  const Endpoint& data() const { return data_; }
  const Endpoint& control() const { return control_; }
  // The RoCEv2-layout port (--roce-port); port 0 when switchd runs without it.
  const Endpoint& roce() const { return roce_; }
  pid_t pid() const { return pid_; }
  void kill();
  // SIGSTOP / SIGCONT: a switch that stops answering but keeps its sockets.
  void pause();
  void resume();
  // One CTRL query ("STATS", "ENTRIES job=7"); the JSON reply or "".
  std::string query(const std::string& line) const;
  // A numeric field of the STATS JSON ("preemptions", "injected_drops", ...).
  long long statsField(const std::string& name) const;

 private:
  pid_t pid_ = -1;
  bool ready_ = false;
  Endpoint data_, control_, roce_;
};

// A private folder with a fresh admin secret file (a switch's --auth-file).
class SecretDir {
 public:
  SecretDir();
  ~SecretDir();
  bool ok() const { return ok_; }
  std::string file() const { return dir_ + "/auth"; }

 private:
  std::string dir_;
  bool ok_ = false;
};

// A number field of a JSON reply ("slots_used"), -1 when absent; every
// value of the field in order (the "fanin" of each job of STATS).
long long jsonField(const std::string& json, const std::string& name);
std::vector<long long> jsonFields(const std::string& json, const std::string& name);

// Holds one worker's contributions at a known point of a call, so a test can
// make something happen (a preemption) while the call surely has slices in
// flight, on any machine: the worker's datagrams for slices fromSeq and
// later wait in its sender until open(). The other workers' contributions to
// those slices reach the switch, which cannot complete them meanwhile.
class SliceGate {
 public:
  // A fresh client numbers its first call's slices from 1.
  explicit SliceGate(uint32_t fromSeq) : fromSeq_(fromSeq) {}
  // Waits until the worker tried to send slice fromSeq or later (its window
  // is then full of held slices). False after timeoutMs.
  bool waitHolding(int timeoutMs);
  // Lets the held datagrams and every later one go.
  void open();
  // A held send gave up waiting for open() (kHoldLimitMs) and went anyway:
  // the test never opened the gate in time.
  bool expired() const;
  // The worker's side (its sender): whether seq must wait, and the wait
  // until it may go.
  bool holds(uint32_t seq) const;
  void pass(uint32_t seq);

  static constexpr int kHoldLimitMs = 60000;

 private:
  const uint32_t fromSeq_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool holding_ = false;
  bool open_ = false;
  bool expired_ = false;
};

// The PREEMPT notices that reach a job's CTRL connection, waited for: at
// least one (appended to *notices), or false after timeoutMs.
bool waitForNotices(CtrlClient& ctrl, int timeoutMs, std::vector<PreemptNotice>* notices);

struct RackOptions {
  uint16_t job = 1;
  uint64_t token = 0x42000000000000A5ull;  // both halves non-zero
  uint8_t priority = 1;
  uint32_t slots = 64;
  InaClientOptions client;  // job/token/worker/fanIn are filled in per worker
  // Worker w's sender (ina_sender.h); unset or null: UDP.
  std::function<std::unique_ptr<InaSender>(int worker)> sender;
  // Worker gatedWorker's datagrams pass through this gate (not owned; it
  // must outlive the rack's calls).
  SliceGate* gate = nullptr;
  int gatedWorker = 0;
  // allreduce() sends a float call's prologue as port markers
  // (InaCallOptions::markerPrologue).
  bool markerPrologue = false;
};

// k workers registered as one job; the agent's CTRL connection stays open.
class Rack {
 public:
  static Status create(const SwitchdProcess& sw, int k, const RackOptions& options,
                       std::unique_ptr<Rack>* out);
  int size() const { return static_cast<int>(clients_.size()); }
  InaClient& client(int w) { return *clients_[static_cast<size_t>(w)]; }
  const Grant& grant() const { return grant_; }
  CtrlClient& ctrl() { return *ctrl_; }
  // Applies a new grant (after REQUEST) to every worker.
  Status setGrant(const Grant& grant);

  // Every worker reduces its own buffer in place, concurrently (one thread
  // each). statuses/results are per worker.
  // upstream[w] is worker w's upstream partial; port >= 0 reduces to that
  // worker only (TO_PORT).
  void allreduce(std::vector<std::vector<uint8_t>>& buffers, size_t count, rinaDataType_t type,
                 std::vector<Status>* statuses, std::vector<InaCallResult>* results,
                 const std::vector<const void*>& upstream = {}, int port = -1);
  // A reduce-scatter: worker w passes roles[w] as InaCallOptions::sliceRoles
  // (with resultToPortOnly), and portMarkers.
  void reduceScatter(std::vector<std::vector<uint8_t>>& buffers, size_t count, rinaDataType_t type,
                     const std::vector<std::vector<uint8_t>>& roles, std::vector<Status>* statuses,
                     std::vector<InaCallResult>* results, bool portMarkers = false);
  // Every worker calls InaClient::broadcast on its buffer (bytes long),
  // worker root as the root, concurrently.
  void broadcast(std::vector<std::vector<uint8_t>>& buffers, size_t bytes, int root,
                 std::vector<Status>* statuses, std::vector<InaBroadcastResult>* results);

 private:
  std::unique_ptr<CtrlClient> ctrl_;
  std::vector<std::unique_ptr<InaClient>> clients_;
  Grant grant_;
  bool markerPrologue_ = false;
};

// The union of every worker's host slices, ascending.
std::vector<uint32_t> unionOfHostSlices(const std::vector<InaCallResult>& results);

}  // namespace rina::ina::testing

#endif  // RINA_TESTS_SUPPORT_INA_HARNESS_H_
