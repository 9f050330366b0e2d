// The calls a rack algorithm makes on its switch (lib/algo/rack), as
// those algorithms see them: the reduce call and the all-gather, driven
// from the caller's own loop, with their options and results. InaClient
// (ina_client.h, which says how each call behaves) is the one
// implementation; the algorithms include this header only.
#ifndef RINA_LIB_INA_SWITCH_CALLS_H_
#define RINA_LIB_INA_SWITCH_CALLS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <vector>

#include "core/status.h"
#include "rina/rina.h"

namespace rina::ina {

// What one call did on the wire.
struct InaCallStats {
  uint64_t slices = 0;               // data slices of the call
  uint64_t datagramsSent = 0;        // first sends, prologue included
  uint64_t bytesSent = 0;            // INA datagram bytes, first sends and resends
  uint64_t retransmissions = 0;      // all resends, fast ones included
  uint64_t fastRetransmissions = 0;  // resends of datagrams overtaken by later answers
  uint64_t results = 0;
  uint64_t staleResults = 0;  // duplicates and results of earlier calls
  // A second answer for a datagram this worker resent: its first copy was
  // only late, not lost (a lower bound of the resends that were not needed:
  // the switch drops a resend that finds its slot still waiting, and answers
  // nothing).
  uint64_t lateAnswers = 0;
  uint64_t nacks = 0;
  // Answers the kernel dropped at this worker's socket (receive buffer full)
  // while the call ran.
  uint64_t socketDrops = 0;
  // The congestion response during the call: window halvings (and how
  // many of them were undone), the smallest window a port of the call had,
  // and first sends the pacer held back.
  uint64_t windowCuts = 0;
  uint64_t windowUndos = 0;
  uint32_t smallestWindow = 0;
  uint64_t pacedHolds = 0;
  // Time with a datagram of the call in flight: its answers over it are
  // the rate the switch (and the path to it) summed at.
  int64_t busyNs = 0;
  int64_t rtoUs = 0;   // at the end of the call
  int64_t srttUs = 0;  // smoothed round trip at the end of the call (-1: no sample yet)
};

// Adds s's counts to *total (not its gauges: the smallest window, rto and
// srtt, which do not add up).
inline void addCounts(const InaCallStats& s, InaCallStats* total) {
  using S = InaCallStats;
  for (uint64_t S::*count :
       {&S::slices, &S::datagramsSent, &S::bytesSent, &S::retransmissions, &S::fastRetransmissions,
        &S::results, &S::staleResults, &S::lateAnswers, &S::nacks, &S::socketDrops, &S::windowCuts,
        &S::windowUndos, &S::pacedHolds}) {
    total->*count += s.*count;
  }
}

// The types the switch sums (int32, float32, float16, bfloat16): the size
// of one element on the wire, 0 for any other type.
size_t switchElementSize(rinaDataType_t type);

struct SliceSpan {
  size_t first = 0;  // element offset in the buffer
  uint32_t len = 0;  // elements, 1 to sliceElems()
};
inline constexpr uint8_t kSliceOther = 0;
inline constexpr uint8_t kSlicePort = 1;
inline constexpr uint8_t kSliceAll = 2;

struct InaCallOptions {
  // The port worker's extra upstream partial (same type and count as the
  // buffer), added to its contribution before it is sent.
  const void* upstreamPartial = nullptr;
  // This worker's input, when it is not in the buffer (out of place: same
  // type and count): values and exponents are read from here and sums
  // written to the buffer, whose slices that get no sum here (acknowledged,
  // or left to the host) are then left as they were. Not with
  // upstreamPartial.
  const void* input = nullptr;
  // Reduce to the port only (TO_PORT): the switch sends the sum to the
  // worker that set isPort and a bare acknowledgement to the others, whose
  // buffers keep their input. Every worker of the call passes the same
  // resultToPortOnly, and exactly one sets isPort.
  bool resultToPortOnly = false;
  bool isPort = false;
  // A reduce-scatter (with resultToPortOnly; replaces isPort): per data
  // slice, who gets the sum. kSlicePort: this worker, the slice's only
  // port; kSliceOther: another worker (this one gets a bare acknowledgement
  // and keeps its input); kSliceAll: every worker (a slice that straddles
  // two ports' ranges). The rack's workers must agree: each slice has one
  // port or is kSliceAll everywhere. Not with upstreamPartial.
  const std::vector<uint8_t>* sliceRoles = nullptr;
  // With sliceRoles: this worker's kSlicePort slices go as port markers
  // (header-only DATA with TO_PORT, include/rina/ina_wire.h): the switch
  // counts them as zeros and this worker adds its own values to the sum
  // when it comes, so a rack of n uploads (n-1)/n of the buffer per worker
  // instead of all of it. Needs a switch that knows markers (rina-switchd,
  // p4/); the rack's workers need not agree on it.
  bool portMarkers = false;
  // Where each data slice lies (null: slice i is elements [i P, i P + P) of
  // the buffer, the last one short). Slices of 1 to P elements anywhere in
  // the buffer, in the order they go to the switch, so a caller can send
  // what it needs first first and keep slices inside its own parts.
  const std::vector<SliceSpan>* spans = nullptr;
  // A float call's exponent-only datagrams (the prologue) go as port
  // markers (header-only, TO_PORT): the switch takes each worker's exponent
  // and bit, and one worker gets the (zero) sum, the others an
  // acknowledgement, instead of a window of zeros up and down every
  // worker's link. Needs a switch that knows markers, as portMarkers.
  bool markerPrologue = false;
  // The part of the window this call uses (firstSlot .. firstSlot + slots -
  // 1; slots 0: the rest of the window), so an all-gather can run beside it
  // on other slots. Every worker of the rack passes the same.
  uint32_t firstSlot = 0;
  uint32_t slots = 0;
};

struct InaCallResult {
  std::vector<uint32_t> hostSlices;  // ascending slice indices
  InaCallStats stats;
};

// One slice of a rack all-gather.
struct GatherSlice {
  size_t offset = 0;   // bytes into the buffer
  uint32_t bytes = 0;  // 1 to kWordBytes * sliceElems()
  uint8_t root = 0;    // the worker (index in the rack) whose bytes these are
};
struct InaGatherOptions {
  const std::vector<GatherSlice>* slices = nullptr;
  // Whether this worker's own slice i may go (its bytes are final); null:
  // all at once.
  std::function<bool(uint32_t)> ready;
  // The part of the window it uses (slots 0: the rest of the window); each
  // root gets slots / fan-in of it.
  uint32_t firstSlot = 0;
  uint32_t slots = 0;
};
struct InaGatherResult {
  // Other roots' slices that never arrived here (lost multicasts, or a root
  // that lost the switch): the caller fetches them over host connections.
  std::vector<uint32_t> missingSlices;
  InaCallStats stats;
};

class SwitchCalls {
 public:
  // Elements per slice (the switch's payload size).
  virtual size_t sliceElems() const = 0;
  // Slots a call may use, and slots the switch granted (at least as many).
  virtual uint32_t window() const = 0;
  virtual uint32_t grantedSlots() const = 0;

  // A reduce call: start, progress() until done(), then finish(); between
  // passes wait on fd() (readable) for at most waitMs(). One at a time.
  virtual Status start(void* buffer, size_t count, rinaDataType_t type,
                       const InaCallOptions& call) = 0;
  // Moves the reduce and the all-gather in progress; *moved when anything
  // went or came.
  virtual Status progress(bool* moved) = 0;
  virtual bool done() const = 0;
  // The reduce sends data slices [0, n) only, until a larger n.
  virtual void limitReduce(uint32_t n) = 0;
  // Slice i of the reduce has its sum here (sliceFinal), or is left to the
  // hosts (sliceOnHost).
  virtual bool sliceFinal(uint32_t i) const = 0;
  virtual bool sliceOnHost(uint32_t i) const = 0;
  virtual int fd() const = 0;
  virtual int waitMs() const = 0;
  virtual Status finish(InaCallResult* result) = 0;

  // A rack all-gather, on slots apart from the reduce's: every worker of
  // the rack calls it with the same slices.
  virtual Status startGather(void* buffer, const InaGatherOptions& options) = 0;
  // This worker's own slices came back from the switch.
  virtual bool gatherRootsDone() const = 0;
  virtual Status gatherStatus() const = 0;
  virtual Status finishGather(InaGatherResult* result) = 0;

 protected:
  ~SwitchCalls() = default;
};

}  // namespace rina::ina

#endif  // RINA_LIB_INA_SWITCH_CALLS_H_
