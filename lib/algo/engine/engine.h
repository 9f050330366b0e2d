// The pipelined step engine every algorithm is written on. An algorithm is
// two ordered lists: what to send (to which peer, from where, after which
// receive) and what to receive (from which peer, into where, copied or
// reduced, after which send). The engine moves bytes on all of them
// non-blockingly, so sends, receives and reductions of different slices
// overlap, and sleeps in a WaitSet when nothing can move. It owns every
// failure path: abort, per-wait timeout, dead peers, mismatched calls.
//
// Work that is not a byte stream on a connection (a switch call over UDP)
// joins the same loop as an EngineTask, and an item can wait for it through
// its `ready` gate: the loop drives tasks and items together and sleeps on
// both, so the switch and the host connections overlap in one thread.
#ifndef RINA_LIB_ALGO_ENGINE_ENGINE_H_
#define RINA_LIB_ALGO_ENGINE_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/socket.h"
#include "core/status.h"
#include "transport/connection.h"
#include "transport/wait_set.h"

namespace rina::algo {

struct SendItem {
  transport::Connection* conn;
  const char* data;
  size_t len;
  int afterRecv = -1;  // index of the receive that must complete first
  int step = 0;        // for messages: the algorithm's step and slice
  int slice = 0;
  std::function<bool()> ready = {};  // also wait for this (a task's progress)
};

struct RecvItem {
  transport::Connection* conn;
  char* dst;
  size_t len;
  transport::RecvReduce reduce = {};  // fn == nullptr: copy
  int afterSend = -1;                 // index of the send that must complete first
  int step = 0;
  int slice = 0;
  std::function<Status()> onDone = {};  // runs once the bytes are all in
  std::function<bool()> ready = {};     // also wait for this before the first byte
};

// Work the engine drives beside its items: progress() never blocks; arm()
// adds what to wake on (and may shorten *timeoutMs for a timer). An item's
// `ready` gate usually asks a task how far it got.
class EngineTask {
 public:
  virtual ~EngineTask() = default;
  virtual Status progress(bool* moved) = 0;
  virtual bool done() const = 0;
  virtual void arm(transport::WaitSet& ws, int* timeoutMs) = 0;
  // Connections it waits on that may have died (after a quiet wait).
  virtual Status checkAlive() { return {}; }
  // Whether waiting by spinning beats yielding the core: nothing this
  // task waits for can run on this CPU (a short, bounded spin).
  virtual bool spinsRatherThanYields() const { return false; }
  // For timeout messages: "switch reduce-scatter: 12 of 40 slices".
  virtual std::string describe() const = 0;
};

// Names the operation in error messages.
struct EngineContext {
  int rank;
  const char* collective;  // "allreduce"
  uint64_t seq;            // collective number on this communicator
  int steps;               // total steps, for "step 3 of 6"
  int64_t timeoutMs;
  const std::atomic<bool>* abort;
  int64_t spinUs = 0;  // yield-spin this long before sleeping
  // Looked at after every quiet wait, as liveness is: an error ends the run
  // (peers that run another schedule, a revoked communicator:
  // Context::callWatch). Not owned.
  const std::function<Status()>* watch = nullptr;
  // Readable: something for the watch to look at (a notice at the
  // communicator's listening socket), so a quiet wait ends; -1: none.
  int wakeFd = -1;
};

// Link accounting (transport::LinkCounters of each connection): every byte
// an item moves is counted on its connection. A connection-direction is
// busy from the start of the loop pass in which the first bytes of an item
// on it moved until the start of the pass after its last bytes moved; runs
// of items back to back merge. Waiting for the peer to begin an item is not
// busy; a partly moved item waiting for more is (the link is the limit).
// Busy runs of different connections overlap in time. The clock is read
// once per loop pass.
class Engine {
 public:
  explicit Engine(const EngineContext& ctx) : ctx_(ctx), spinUs_(ctx.spinUs) {}

  std::vector<SendItem>& sends() { return sends_; }
  std::vector<RecvItem>& recvs() { return recvs_; }
  // A hard end besides the per-wait timeout (the link probe's budget).
  void setDeadline(Deadline d, const char* knob) {
    deadline_ = d;
    deadlineKnob_ = knob;
  }
  // Driven until done() along with the items; not owned.
  void addTask(EngineTask* t) { tasks_.push_back(t); }

  // Until every item and task is done, or an error.
  Status run();

  // The same loop one pass at a time, for a task that drives an engine of
  // its own inside another engine's loop: poll() moves what it can without
  // blocking; arm() adds what a quiet pass waits on; checkAlive() looks at
  // the peers it is blocked on. Tasks of a polled engine are not driven.
  Status poll(bool* progressed);
  bool finished() const { return si_ == sends_.size() && ri_ == recvs_.size(); }
  // Receives completed so far (they complete in list order).
  size_t recvsDone() const { return ri_; }
  // Sends completed so far (in list order too).
  size_t sendsDone() const { return si_; }
  void arm(transport::WaitSet& ws) const;
  Status checkAlive() const;
  // The peers this rank still has to send to, other than the one a blocked
  // send waits on: none of them can have finished its part, so one that
  // hung up is dead (a ring's successor that died while this rank waits on
  // its predecessor, which would otherwise wait out RINA_TIMEOUT_MS): even
  // with bytes of its still unread (Connection::checkGone).
  Status checkPendingPeers() const;
  // "sending to rank 3 (step 2 of 6, ...)" for whatever it waits on.
  std::string waitingFor() const;

 private:
  struct BusyRun {
    transport::Connection* conn;
    int dir;
    Clock::time_point start;
    uint64_t bytesAtStart;
    bool ending;  // its item finished; closes at the next pass unless continued
  };
  // start: the clock when run() began (the first pass's time).
  Status runLoop(Clock::time_point start);
  // One sched_yield while waiting (the peer waited for is often runnable
  // on this core); traced from `now`, the pass's clock.
  void yieldCore(Clock::time_point now);
  // Every unfinished task would rather spin than yield (and there is one).
  bool tasksSpin() const;
  // One pass over the items: moves bytes, sets the blocked/gated flags.
  Status pass(Clock::time_point now, bool* progressed);
  bool tasksDone() const;
  void beginBusy(transport::Connection* c, int dir, Clock::time_point now);
  void endBusy(transport::Connection* c, int dir);
  void closeBusy(Clock::time_point now, bool all);
  // why: "no progress for N ms (RINA_TIMEOUT_MS)" unless given.
  Status stalled(int64_t waitedMs, const char* why = nullptr) const;

  // Where a collective's time went, logged at RINA_DEBUG=TRACE when it
  // ends: loop passes, yields while spinning and sleeps in futex / poll,
  // and the time spent in each (a yield's time is other processes' turn),
  // and the longest sleep with what it waited for.
  struct WaitTrace {
    uint64_t passes = 0, yields = 0, sleeps = 0;
    int64_t yieldedNs = 0, sleptNs = 0;
    int64_t longestNs = 0;
    std::string longestWhat;
  };
  EngineContext ctx_;
  int64_t spinUs_;
  bool everyPass_ = true;  // read the clock every loop pass (run)
  bool tracing_ = false;   // RINA_DEBUG=TRACE when run() began
  WaitTrace trace_;
  std::vector<SendItem> sends_;
  std::vector<RecvItem> recvs_;
  std::vector<BusyRun> busy_;
  std::vector<EngineTask*> tasks_;
  // Where the passes are: the next item of each list and the bytes of it moved.
  size_t si_ = 0, sdone_ = 0, ri_ = 0, rdone_ = 0;
  bool sendBlocked_ = false, recvBlocked_ = false;  // on a connection
  bool sendGated_ = false, recvGated_ = false;      // on a ready gate
  Deadline deadline_ = Deadline::max();
  const char* deadlineKnob_ = "";
};

// The first message of each collective between two ranks: both sides check
// that they are running the same call, with the same schedule (a rank that
// ran another algorithm, or cut slices at another size, would read the
// other's bytes as its own steps: a wrong sum or a hang).
inline constexpr uint32_t kCollHeaderMagic = 0x52484452;  // "RHDR"
struct CollHeader {
  uint32_t magic;
  uint8_t collective;
  uint8_t datatype;
  uint8_t op;
  uint8_t algorithm;  // allreduce: the algorithm that runs (algo::Algorithm); else 0
  uint64_t seq;
  uint64_t count;
  int32_t root;
  int32_t pad;
  uint64_t sliceBytes;     // RINA_SLICE_BYTES of the sender
  uint64_t smallMsgBytes;  // RINA_SMALL_MSG_BYTES of the sender
};
static_assert(sizeof(CollHeader) == 48);

enum CollKind : uint8_t {
  kAllReduce = 1,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kGatherLinkRates,
  kPlanExchange,
  kAllToAll,
  kReduce,
  kGather,
  kScatter,
  // Point-to-point: not collectives (no CollHeader, no collective number);
  // they name an engine's messages ("send #3": the 3rd message on a channel).
  kSend,
  kRecv,
  // What a communicator made from this one needs from every rank
  // (rinaCommSplit's colors and keys, rinaCommGrow's id): an all-gather of
  // its own kind, so a rank in another call is told, not misread.
  kMembership,
};
const char* collectiveName(uint8_t kind);

// theirs (a peer's header) against mine: rinaInvalidUsage naming both calls
// (kind, number, count, type, op, root) or both schedules when they differ,
// rinaRemoteError when it is not a header.
Status checkCollHeader(const CollHeader& mine, const CollHeader& theirs, int rank, int peer);

// Adds a header send to `to` and a header receive from `from` (as the next
// items), the receive checking the peer's header against `mine`.
void addHeaderExchange(Engine& e, const CollHeader& mine, CollHeader* theirs,
                       transport::Connection* to, transport::Connection* from, int rank);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_ENGINE_ENGINE_H_
