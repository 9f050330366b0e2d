// One-shot allreduce over the host segment (transport/shm_group.h): every
// rank copies its buffer into its own slot and posts it, then reduces all
// slots in rank order 0..n-1, so every rank computes the same sum bit for
// bit. One dependent hand-off per call instead of the log2(n) rounds of
// recursive doubling, each of which could put a rank to sleep and cost a
// futex wake; a rank waits only for the peers it still needs, in the step
// engine's loop (spin, then futex, timeout and abort as everywhere).
#include <cstring>
#include <string>

#include "algo/flat/flat.h"
#include "reduce/reduce.h"
#include "transport/shm_group.h"

namespace rina::algo {
namespace {

constexpr int kSteps = 2;  // 1: our slot is free and posted; 2: every slot reduced

class OneShotTask : public EngineTask {
 public:
  OneShotTask(Context& ctx, transport::ShmGroup& group, uint64_t seq, const void* send, void* recv,
              size_t count, rinaDataType_t type, rinaRedOp_t op)
      : ctx_(ctx),
        g_(group),
        seq_(static_cast<uint32_t>(seq)),
        which_(static_cast<int>(seq & 1)),
        send_(static_cast<const char*>(send)),
        recv_(static_cast<char*>(recv)),
        count_(count),
        bytes_(count * reduce::dataTypeSize(type)),
        type_(type),
        op_(op),
        fn_(reduce::reduceFunction(type, op)),
        mine_{seq, count, static_cast<uint8_t>(type), static_cast<uint8_t>(op), kAllReduce, {}} {}

  Status progress(bool* moved) override {
    *moved = false;
    if (!posted_) {
      // Every peer must have finished reading the call this slot last
      // carried. With one-shot calls back to back they have (they posted
      // call seq-1 after reading seq-2); other collectives in between
      // (a broadcast) make this a real wait.
      transport::ShmGroupRank& me = g_.control(g_.rank());
      reuse_ = me.posted[which_].load(std::memory_order_relaxed);
      for (; waitPeer_ < g_.ranks(); ++waitPeer_) {
        if (waitPeer_ == g_.rank()) continue;
        seen_ = g_.control(waitPeer_).done.load(std::memory_order_acquire);
        if (!transport::seqAtLeast(seen_, reuse_)) return {};
      }
      std::memcpy(g_.slot(g_.rank(), which_), send_, bytes_);
      me.call[which_] = mine_;
      g_.post(which_, seq_);
      posted_ = true;
      waitPeer_ = 0;
      *moved = true;
    }
    while (waitPeer_ < g_.ranks()) {
      const int r = waitPeer_;
      if (r != g_.rank()) {
        seen_ = g_.control(r).posted[which_].load(std::memory_order_acquire);
        if (seen_ != seq_) return {};
        RINA_TRY(checkCall(r));
      }
      const char* in = g_.slot(r, which_);
      if (r == 0) {
        std::memcpy(recv_, in, bytes_);
      } else {
        fn_(recv_, recv_, in, count_);
      }
      ++waitPeer_;
      *moved = true;
    }
    if (op_ == rinaAvg) reduce::finishAverage(recv_, count_, type_, g_.ranks());
    g_.finish(seq_);
    done_ = true;
    return {};
  }

  bool done() const override { return done_; }

  void arm(transport::WaitSet& ws, int*) override {
    transport::ShmGroupRank& peer = g_.control(waitPeer_);
    std::atomic<uint32_t>* word = posted_ ? &peer.posted[which_] : &peer.done;
    ws.addFutex(word, seen_, &g_.control(g_.rank()).sleeping);
  }

  Status checkAlive() override {
    transport::Connection* c = ctx_.peer(waitPeer_);
    return c ? c->checkAlive() : Status();
  }

  std::string describe() const override {
    char buf[200];
    if (!posted_) {
      std::snprintf(buf, sizeof buf,
                    "one-shot step 1 of %d: waiting for rank %d to finish reading call #%u "
                    "(it is at #%u)",
                    kSteps, waitPeer_, reuse_, seen_);
    } else {
      std::snprintf(buf, sizeof buf,
                    "one-shot step 2 of %d: waiting for rank %d to post its buffer (%d of %d "
                    "ranks reduced; it posted #%u)",
                    kSteps, waitPeer_, waitPeer_, g_.ranks(), seen_);
    }
    return buf;
  }

 private:
  // The peer's call record must be ours: same call number, count, type, op.
  Status checkCall(int r) const {
    const transport::ShmGroupCall theirs = g_.control(r).call[which_];
    if (theirs.seq == mine_.seq && theirs.count == mine_.count &&
        theirs.datatype == mine_.datatype && theirs.op == mine_.op &&
        theirs.collective == mine_.collective) {
      return {};
    }
    return errorf(
        rinaInvalidUsage,
        "rank %d: calls do not match: peer %d is in %s #%llu (count %llu, %s, %s) "
        "while this rank is in allreduce #%llu (count %llu, %s, %s)",
        g_.rank(), r, collectiveName(theirs.collective),
        static_cast<unsigned long long>(theirs.seq), static_cast<unsigned long long>(theirs.count),
        reduce::dataTypeName(static_cast<rinaDataType_t>(theirs.datatype)),
        reduce::opName(static_cast<rinaRedOp_t>(theirs.op)),
        static_cast<unsigned long long>(mine_.seq), static_cast<unsigned long long>(mine_.count),
        reduce::dataTypeName(type_), reduce::opName(op_));
  }

  Context& ctx_;
  transport::ShmGroup& g_;
  const uint32_t seq_;
  const int which_;
  const char* send_;
  char* recv_;
  const size_t count_, bytes_;
  const rinaDataType_t type_;
  const rinaRedOp_t op_;
  const reduce::ReduceFn fn_;
  const transport::ShmGroupCall mine_;
  bool posted_ = false, done_ = false;
  int waitPeer_ = 0;    // the rank this call waits on (or reduces) next
  uint32_t seen_ = 0;   // that rank's word as last read
  uint32_t reuse_ = 0;  // the call our slot carried last
};

}  // namespace

bool oneShotFits(const Context& ctx, size_t bytes) {
  const transport::ShmGroup* g = ctx.hostGroup();
  return g && g->ranks() == ctx.size() && bytes <= g->slotBytes();
}

Status oneShotAllReduce(Context& ctx, const void* send, void* recv, size_t count,
                        rinaDataType_t type, rinaRedOp_t op) {
  const size_t bytes = count * reduce::dataTypeSize(type);
  if (!oneShotFits(ctx, bytes)) {
    return errorf(rinaInvalidUsage,
                  "rank %d: one-shot allreduce of %zu bytes needs every rank on this host and at "
                  "most %zu bytes (RINA_SMALL_MSG_BYTES)",
                  ctx.rank(), bytes, ctx.hostGroup() ? ctx.hostGroup()->slotBytes() : size_t{0});
  }
  ctx.hostGroup()->prepare(bytes);
  const uint64_t seq = ctx.nextSeq();
  OneShotTask task(ctx, *ctx.hostGroup(), seq, send, recv, count, type, op);
  Engine e(contextFor(ctx, kAllReduce, seq, kSteps));
  e.addTask(&task);
  return e.run();
}

}  // namespace rina::algo
