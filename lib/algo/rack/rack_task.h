// The inside of one rack during a rina allreduce over several members: one
// EngineTask beside the member ring (reduce, fix, gather, repair; over the
// switch or the hosts), whose host connections inside the rack it owns
// while it runs. docs/racks.md ("The rack's phases") describes each phase.
#ifndef RINA_LIB_ALGO_RACK_RACK_TASK_H_
#define RINA_LIB_ALGO_RACK_RACK_TASK_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algo/engine/engine.h"
#include "algo/rack/member.h"
#include "ina/switch_calls.h"

namespace rina::algo {

// Elements [begin, begin + count) of the buffer, and the rank that is their
// port in this rack, or kEveryWorker: every worker gets their sum (through
// the switch only: sumsOnSwitch).
inline constexpr int kEveryWorker = -1;
struct RackPiece {
  size_t begin = 0;
  size_t count = 0;
  int port = 0;
};

class RackTask final : public EngineTask {
 public:
  // Every worker of m passes the same pieces. reduceOrder: every piece of
  // the buffer, in the order the ring needs their sums; gatherOrder: the
  // pieces in the order they become final at their ports, where
  // isFinal(i, end) says whether piece gatherOrder[i]'s first `end`
  // elements are final at this rank (asked only of the pieces it ports).
  // Either list may be empty. input: this worker's input when it is not
  // data (out of place; the switch reads it there and data gets the
  // results), else null (a copy is kept where pieces of kEveryWorker need
  // one). Without the switch the input must be in data.
  RackTask(RackCall& call, const Member& m, char* data, std::vector<RackPiece> reduceOrder,
           std::vector<RackPiece> gatherOrder, std::function<bool(size_t, size_t)> isFinal,
           const char* input = nullptr);
  ~RackTask() override;

  Status start();
  // Before start(): the switch reduce sends only the first ahead() pieces
  // of reduceOrder, asked again at every pass, so the rack's datagrams stay
  // near the ring that consumes the sums instead of crowding its TCP out of
  // the host links.
  void limitSwitchReduce(std::function<size_t()> ahead) { ahead_ = std::move(ahead); }
  // Elements [b, e) of reduceOrder[p] (relative to the piece) hold the
  // rack's sum at the piece's port.
  bool reduced(size_t p, size_t b, size_t e) const;

  Status progress(bool* moved) override;
  bool done() const override { return phase_ == Phase::kDone; }
  void arm(transport::WaitSet& ws, int* timeoutMs) override;
  Status checkAlive() override;
  std::string describe() const override;

 private:
  enum class Phase {
    kSwitchReduce,
    kFixHeaders,
    kFixLists,
    kFixData,
    kHostReduce,
    kSwitchGather,
    kGatherDone,
    kRepairHeaders,
    kRepairLists,
    kRepairData,
    kHostGather,
    kDone
  };
  // What rack-mates tell each other between phases.
 public:
  enum MsgKind : uint8_t { kFix = 1, kGathered, kRepair };

 private:
  static constexpr uint32_t kTaskMagic = 0x5254534b;  // "RTSK"
  struct Msg {
    uint32_t magic = kTaskMagic;
    uint8_t kind = 0;
    uint8_t fallback = 0;  // this rank saw the switch fail
    uint16_t pad = 0;
    uint32_t count = 0;  // slices listed in the message that follows
    uint32_t pad2 = 0;
  };

  bool onSwitch() const;
  // The all-gather goes through the switch (gatherOnSwitch, rack_task_gather.cc).
  bool gatherOnSwitch() const;
  Engine& newEngine();
  // Phase starts.
  Status startSwitchReduce();
  // limitSwitchReduce's limit, as it stands, to the client.
  void limitToRing();
  void beginFix();  // the fix phase's first exchange, from mine_
  // A message of `kind` to every rack-mate and one from each (counts[i]:
  // what follows to rack-mate i; empty: none), on a fresh sub-engine.
  void exchangeMsgs(uint8_t kind, const std::vector<uint32_t>& counts, int step);
  // Checks rack-mate i's message is a `kind` and notes its fallback flag.
  Status takeMsg(size_t i, uint8_t kind);
  // After exchangeMsgs(kind, ...): sends *out[i] to rack-mate i and takes
  // the list rack-mate i announced into wantIn_[i].
  Status exchangeLists(uint8_t kind, const std::vector<const std::vector<uint32_t>*>& out,
                       int step);
  Status startHostReduce();
  Status startGather();
  // The switch all-gather, on window slots firstSlot.. (slots 0: all).
  Status beginSwitchGather(uint32_t firstSlot, uint32_t slots);
  Status startHostGather();
  Status afterFixHeaders();
  Status afterFixLists();
  // The fix of kEveryWorker slices: everyHost_ from the saved inputs,
  // summed at the agent and sent back, as items of e.
  void addEveryWorkerFix(Engine& e);
  Status afterGatherDone();
  Status afterRepairHeaders();
  Status afterRepairLists();
  void scanReduced();
  // The switch phases, polled: the reduce's end (true) takes the client's
  // result and starts the fix phase; the gather's own multicasts done start
  // the kGathered exchange (kGatherDone).
  bool pollSwitchReduce(bool* moved);
  void pollSwitchGather(bool* moved);
  Status next(bool* moved);  // runs phase ends until one is in progress
  void fallBack(const std::string& why);
  void finishTask();  // kDone, and the TRACE line of the phase times
  // Appends a switch call's numbers to that line (TRACE only).
  void noteInaStats(const char* what, const ina::InaCallStats& t);

  RackCall& call_;
  const Member& m_;
  RackSwitch* ina_;
  char* data_;
  size_t es_;
  std::vector<int> others_;  // the rack without this rank, ascending
  std::vector<RackPiece> reduceOrder_, gatherOrder_;
  std::function<bool(size_t, size_t)> isFinal_;
  Phase phase_ = Phase::kDone;
  std::unique_ptr<Engine> sub_;  // the phase's host messages

  // reduce: the switch call's slices, by piece.
  std::vector<ina::SliceSpan> spans_;
  std::vector<uint8_t> roles_;
  std::vector<size_t> firstSpan_;  // per reduce piece
  std::function<size_t()> ahead_;  // limitSwitchReduce
  enum SpanState : uint8_t { kPending, kClean, kOnHost };
  std::vector<uint8_t> state_;
  size_t scanFrom_ = 0;
  bool allReduced_ = false;       // host reduce: every piece in
  std::vector<size_t> hostDone_;  // host reduce: rack-mates' parts of each piece in
  bool lostSwitch_ = false;       // this rank saw the switch fail (this collective)
  bool rackFallBack_ = false;
  bool gatherActive_ = false;  // the client's all-gather is in progress
  std::string why_;
  // fix and repair: per rack-mate, the message and the slice lists each way.
  std::vector<Msg> msgOut_, msgIn_;
  std::vector<uint32_t> mine_;  // my host slices (fix) / my missing slices (repair)
  // kEveryWorker pieces: the inputs (the caller's, or a copy in the
  // context's scratch), and the slices some worker of the rack did not get
  // from the switch (ascending).
  const char* input_ = nullptr;
  std::vector<uint32_t> everyHost_;
  std::vector<std::vector<uint32_t>> wantOut_, wantIn_;
  // For the TRACE line at the end: when start() ran and each phase ended.
  Clock::time_point started_;
  std::vector<std::pair<const char*, Clock::time_point>> marks_;
  std::string inaStats_;  // the switch calls' numbers, for the same line
  void mark(const char* what) { marks_.emplace_back(what, Clock::now()); }
  // gather
  std::vector<ina::GatherSlice> gatherSlices_;
  std::vector<size_t> gatherPiece_;  // per gather slice: its gatherOrder_ index
};

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_RACK_RACK_TASK_H_
