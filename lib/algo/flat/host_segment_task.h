// What the tasks that hand over through the host segment's control words
// (transport/shm_group.h) share: the word a task waits on, its value as last
// read and whose word it is; the engine sleeps on that word (a futex) and,
// after a quiet wait, checks that its owner is still alive.
#ifndef RINA_LIB_ALGO_FLAT_HOST_SEGMENT_TASK_H_
#define RINA_LIB_ALGO_FLAT_HOST_SEGMENT_TASK_H_

#include <atomic>
#include <cstdint>

#include "algo/engine/context.h"
#include "algo/engine/engine.h"
#include "transport/shm_group.h"

namespace rina::algo {

class HostSegmentTask : public EngineTask {
 public:
  HostSegmentTask(Context& ctx, transport::ShmGroup& g) : ctx_(ctx), g_(g) {}

  void arm(transport::WaitSet& ws, int*) override {
    if (std::atomic<uint32_t>* word = waitWord()) {
      ws.addFutex(word, seen_, &g_.control(g_.rank()).sleeping);
    }
  }

  Status checkAlive() override {
    transport::Connection* c = ctx_.peer(waitPeer_);
    return c ? c->checkAlive() : Status();
  }

 protected:
  // The word waited on: waitWord_ unless a task derives it (from its phase).
  virtual std::atomic<uint32_t>* waitWord() const { return waitWord_; }

  Context& ctx_;
  transport::ShmGroup& g_;
  std::atomic<uint32_t>* waitWord_ = nullptr;
  uint32_t seen_ = 0;  // that word as last read
  int waitPeer_ = 0;   // whose word it is
};

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_FLAT_HOST_SEGMENT_TASK_H_
