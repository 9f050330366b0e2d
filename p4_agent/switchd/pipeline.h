// The aggregation pipeline of rina-switchd, with no sockets: datagrams in,
// datagrams (with destinations) out. It mirrors the P4 programs' registers
// and actions (see p4_agent/README.md for the mapping).
//
// A Pipeline serves one shard of the slot space: global slot s belongs to
// shard s % shards. Each slot has two sets (the shadow bit of the slot field)
// and each set holds: the slice seq it aggregates, a contributor bitmap, a
// counter, the max exponent, an overflow flag and the int32 sums.
//
// Per DATA datagram, after the job/token/shape/source/ownership checks:
//   set empty or older seq  -> reset, then as "first"
//   seq older than the set  -> stale, dropped
//   bit already set         -> duplicate: dropped while pending; once the set is
//                              complete, the stored result goes back to the sender
//                              (dropped as duplicate_short when it is larger than
//                              the datagram: no answer outgrows its request)
//   otherwise               -> first writes, later adds (int32, saturating and
//                              flagged OVERFLOW), bit set, counter++, exponent max;
//                              a port marker (header-only, TO_PORT) adds zeros
//   counter == fan_in       -> RESULT multicast to every member (one send each),
//                              or, when a contributor set TO_PORT, the result to
//                              the port and a header-only RESULT (ack) to the rest;
//                              a set of port markers alone (its sum is zero) sends
//                              every member a header-only RESULT
// A slot not owned by the job (never granted or preempted) answers NACK.
// A DATA / BCAST counts only when it comes from the endpoint registered for
// its worker index (the RoCEv2 layout: from its address, any UDP port); any
// other source is dropped without an answer and counted (bad_source), so a
// host that learned a job's token and a seq cannot add to its sums.
// Single-threaded: one data-plane thread owns a Pipeline; control changes
// arrive as calls from that same thread.
#ifndef RINA_P4_AGENT_SWITCHD_PIPELINE_H_
#define RINA_P4_AGENT_SWITCHD_PIPELINE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "rina/ina_wire.h"
#include "wire/endpoint.h"

namespace rina::switchd {

using ina::Endpoint;

struct JobEntry {
  uint16_t id = 0;
  uint64_t token = 0;
  uint8_t fanIn = 1;
  std::vector<Endpoint> members;  // index = worker; the multicast group
};

struct PipelineConfig {
  uint32_t totalSlots = 8192;
  uint32_t payloadElems = ina::kDefaultPayloadElems;
  uint32_t shard = 0;
  uint32_t shards = 1;
};

// What happened to one datagram (tests assert on it; stats count it).
enum class Verdict : uint8_t {
  kFirst,             // first contribution written into a set
  kAdded,             // a later contribution added
  kCompleted,         // this contribution completed the slot; RESULT emitted
  kDuplicatePending,  // bit already set, slot not complete: dropped
  kDuplicateResent,   // bit already set, slot complete: stored result resent
  kStale,             // seq older than the one in the set: dropped
  kBcast,             // BCAST stored and multicast
  kNack,              // slot not owned by the job: NACK sent
  kUnknownJob,
  kBadToken,
  kMalformed,       // failed decode (see malformed counters)
  kBadShape,        // elems / fan-in disagree with the switch or the job
  kBadSlot,         // slot out of range or in another shard
  kBadSource,       // not from the address registered for the worker: dropped
  kUnexpectedType,  // RESULT / NACK / CTRL sent to the switch
  kDuplicateShort,  // bit already set, slot complete, but the stored answer is
                    // larger than the datagram (a header-only marker): dropped
  kCount
};
const char* verdictName(Verdict v);

// Single-writer counters another thread may read.
class Counter {
 public:
  void add(uint64_t n = 1) {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

struct PipelineStats {
  std::array<Counter, static_cast<size_t>(Verdict::kCount)> verdicts;
  std::array<Counter, static_cast<size_t>(ina::DecodeError::kCount)> malformed;
  Counter contributions;  // datagrams whose payload was written or added
  Counter overflows;      // slots that saturated
  Counter sent;           // datagrams emitted
};

// Emitted datagrams: bytes in one arena, each message a slice of it plus a
// destination (a multicast result is encoded once and listed per member).
struct OutMessage {
  Endpoint to;
  uint32_t offset = 0;
  uint32_t length = 0;
};
// Both keep their memory across clear(): after the first batches the data
// path allocates nothing.
class Output {
 public:
  void clear() {
    size_ = 0;
    messages_.clear();
  }
  std::span<uint8_t> reserve(size_t bytes, uint32_t* offset);
  void add(const Endpoint& to, uint32_t offset, uint32_t length) {
    messages_.push_back({to, offset, length});
  }
  const std::vector<OutMessage>& messages() const { return messages_; }
  const uint8_t* bytes(const OutMessage& m) const { return arena_.get() + m.offset; }
  // The bytes reserve() returned at offset (valid until the next reserve()).
  std::span<uint8_t> at(uint32_t offset, uint32_t length) {
    return {arena_.get() + offset, length};
  }

 private:
  std::unique_ptr<uint8_t[]> arena_;  // not zeroed: every byte is written before it is sent
  size_t size_ = 0, capacity_ = 0;
  std::vector<OutMessage> messages_;
};

class Pipeline {
 public:
  explicit Pipeline(const PipelineConfig& config);

  // answerToMember: the datagram's source is not where its sender listens (a
  // RoCEv2 packet leaves the NIC from an arbitrary UDP port), so only the
  // source address is checked against the worker's registered endpoint, and
  // the answers meant for the sender alone (NACK, a stored result resent) go
  // to that endpoint; otherwise the source must be the endpoint itself.
  Verdict process(std::span<const uint8_t> datagram, const Endpoint& from, uint64_t nowMs,
                  Output* out, bool answerToMember = false);

  // Control plane (same thread as process()).
  void installJob(const JobEntry& job);
  void removeJob(uint16_t job);  // also frees the job's slots
  // Global slots [begin, end) of this shard: owner = job (0 = free), both sets reset.
  void assignSlots(uint32_t begin, uint32_t end, uint16_t job);

  uint16_t owner(uint32_t slot) const;  // slot must be in this shard
  const JobEntry* job(uint16_t id) const {
    auto it = jobs_.find(id);
    return it == jobs_.end() ? nullptr : &it->second;
  }
  bool ownsSlot(uint32_t slot) const { return slot % config_.shards == config_.shard; }
  const PipelineStats& stats() const { return stats_; }
  // Last time (nowMs of process()) a datagram of the job was accepted; any thread.
  uint64_t lastActivityMs(uint16_t job) const {
    return activity_[job].load(std::memory_order_relaxed);
  }
  const PipelineConfig& config() const { return config_; }

 private:
  struct SlotSet {
    uint32_t seq = 0;
    uint32_t bitmap = 0;
    uint8_t count = 0;
    bool used = false;
    bool complete = false;
    bool overflow = false;
    bool toPort = false;
    bool payload = false;  // a contribution with values came (not port markers alone)
    uint8_t portWorker = 0;
    int8_t exponent = ina::kExponentZero;
  };

  // Whether sender is worker's registered endpoint (its address alone when
  // addressOnly).
  static bool fromMember(const JobEntry& job, uint8_t worker, const Endpoint& sender,
                         bool addressOnly);
  // The set h addresses, reset if h carries a newer seq; null if h's seq is
  // older than the set's (stale).
  SlotSet* claimSet(const ina::Header& h, int32_t** values);
  Verdict contribute(const ina::Header& h, const uint8_t* datagram, const JobEntry& job,
                     const Endpoint& from, Output* out);
  Verdict broadcast(const ina::Header& h, const uint8_t* datagram, const JobEntry& job,
                    Output* out);
  // The header of the set's result (payloadElems values when withPayload).
  ina::Header resultHeader(const ina::Header& h, const JobEntry& job, const SlotSet& s,
                           bool withPayload, uint8_t extraFlags) const;
  // Encodes the set's result (or a header-only ack) and returns its offset.
  uint32_t encodeResult(const ina::Header& h, const JobEntry& job, const SlotSet& s,
                        const int32_t* values, bool withPayload, uint8_t extraFlags, Output* out,
                        uint32_t* length);
  // fullOffset: where the full result's payload is already written (by the
  // contribution that completed the set, kNotWritten if not): only its
  // header is added.
  static constexpr uint32_t kNotWritten = UINT32_MAX;
  void emitResult(const ina::Header& h, const JobEntry& job, const SlotSet& s,
                  const int32_t* values, const Endpoint* onlyTo, Output* out,
                  uint32_t fullOffset = kNotWritten);
  void emitNack(const ina::Header& h, const Endpoint& to, Output* out);
  uint32_t local(uint32_t slot) const { return slot / config_.shards; }

  PipelineConfig config_;
  std::vector<uint16_t> owner_;  // per local slot
  std::vector<SlotSet> sets_;    // 2 per local slot
  // payloadElems per set. Uninitialized: a set's first contribution writes
  // its values before anything reads them, so the kernel maps pages only as
  // slots get used (8192 slots of 2048 elements are 128 MiB: zeroing them
  // made every start cost ~0.7 CPU-seconds, which a loaded host stretched
  // past the agent's start-up timeout).
  static constexpr size_t kLineBytes = 64, kLineElems = kLineBytes / 4;
  std::unique_ptr<int32_t[]> values_;
  int32_t* alignedValues_ = nullptr;  // values_, from its first cache line boundary
  std::unordered_map<uint16_t, JobEntry> jobs_;
  std::unique_ptr<std::atomic<uint64_t>[]> activity_;  // per job id
  PipelineStats stats_;
};

}  // namespace rina::switchd

#endif  // RINA_P4_AGENT_SWITCHD_PIPELINE_H_
