// One aggregation thread of rina-switchd: a UDP socket, the Pipeline of its
// slot shard, batched receive (recvmmsg) and send (sendmmsg), receive-side
// fault injection and a token bucket modelling the switch's capacity.
// Control changes run on the thread itself (runOnThread), so the pipeline
// needs no locks.
#ifndef RINA_P4_AGENT_SWITCHD_DATA_THREAD_H_
#define RINA_P4_AGENT_SWITCHD_DATA_THREAD_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "ina/net.h"
#include "switchd/pipeline.h"

namespace rina::switchd {

struct DataThreadOptions {
  double dropRate = 0.0;  // probability of dropping a received datagram
  uint64_t seed = 1;
  double capacityPps = 0.0;  // this thread's share; 0 = unlimited
  int cpu = -1;              // pin to this CPU if >= 0
};

class DataThread {
 public:
  // Takes a bound UDP socket.
  DataThread(Fd socket, const PipelineConfig& config, const DataThreadOptions& options);
  ~DataThread();
  DataThread(const DataThread&) = delete;
  DataThread& operator=(const DataThread&) = delete;

  // Runs fn(pipeline) on the data thread; false if not done within timeoutMs.
  bool runOnThread(std::function<void(Pipeline&)> fn, int timeoutMs);

  const Pipeline& pipeline() const { return pipeline_; }
  uint64_t injectedDrops() const { return injectedDrops_.get(); }
  uint64_t capacityDrops() const { return capacityDrops_.get(); }
  uint64_t received() const { return received_.get(); }
  uint64_t sendErrors() const { return sendErrors_.get(); }

 private:
  void loop();
  void drainCommands();
  void sendAll();

  Fd socket_;
  Fd wakeup_;  // eventfd
  Pipeline pipeline_;
  Output output_;
  DataThreadOptions options_;
  std::atomic<bool> stop_{false};

  std::mutex mu_;
  std::condition_variable done_;
  std::deque<std::function<void(Pipeline&)>> commands_;
  uint64_t posted_ = 0;   // guarded by mu_
  uint64_t applied_ = 0;  // guarded by mu_

  Counter injectedDrops_, capacityDrops_, received_, sendErrors_;
  std::thread thread_;  // last: starts after every member above exists
};

}  // namespace rina::switchd

#endif  // RINA_P4_AGENT_SWITCHD_DATA_THREAD_H_
