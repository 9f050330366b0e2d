// Every RINA_* knob, declared once in one table (config.cc), as UCC's config
// tables are: its name, default, doc, how its text parses and the field of
// Options it fills.
//
// A communicator's knobs are parsed and checked once, into Options, when it
// is created (config::fromEnvironment is what rinaCommInitRank does; tests
// and tools may build Options themselves), and handed down from there, so
// a misspelt knob is a compile error and a bad value an error naming the
// knob and the value. Knobs of the process rather than of a communicator
// (RINA_DEBUG, RINA_INA_UDP_OFFLOAD, librina_mpi's RINA_MPI_*) are read
// through environment(), as are the tools' defaults.
#ifndef RINA_LIB_CORE_CONFIG_H_
#define RINA_LIB_CORE_CONFIG_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/status.h"

namespace rina::config {

// RINA_ALGO's choices. lib/algo's table of algorithms (algo/engine/algorithm.h;
// the check is in algorithm.cc) checks at compile time that these are its
// names in its order; this layer sits below algo and cannot read the table
// itself.
constexpr char kAlgorithmChoices[] = "auto|ring|rd|oneshot|twoshot|hier|rina|ps-ina";

// "N" collectives or "Ns" seconds (RINA_PLAN_INTERVAL, RINA_PLAN_CHECK_EVERY).
struct Every {
  uint64_t count = 0;
  double seconds = 0;
  bool inSeconds = false;
  bool operator==(const Every&) const = default;
};

// One field per knob; a default-constructed Options holds every default
// (from the table, so the defaults are written once).
struct Options {
  Options();

  // Logging and set-up.
  std::string debug;        // RINA_DEBUG (process)
  int64_t timeoutMs;        // RINA_TIMEOUT_MS
  std::string commId;       // RINA_COMM_ID
  std::string commSecret;   // RINA_COMM_SECRET_FILE (a file)
  std::string cpuAffinity;  // RINA_CPU_AFFINITY
  // Connections.
  std::string socketIfname;   // RINA_SOCKET_IFNAME
  bool shmDisable;            // RINA_SHM_DISABLE
  int64_t shmFifoBytes;       // RINA_SHM_FIFO_BYTES
  int64_t shmSpareSlots;      // RINA_SHM_SPARE_SLOTS
  int64_t socketBufBytes;     // RINA_SOCKET_BUF_BYTES
  int64_t socketNsocks;       // RINA_SOCKET_NSOCKS; 0: auto
  std::string tcpCongestion;  // RINA_TCP_CONGESTION; "": the kernel's default
  int64_t spinUs;             // RINA_SPIN_US
  std::string ibHca;          // RINA_IB_HCA
  int64_t ibGidIndex;         // RINA_IB_GID_INDEX
  int64_t ibTimeout;          // RINA_IB_TIMEOUT
  bool ibDisable;             // RINA_IB_DISABLE
  std::string ibGdr;          // RINA_IB_GDR
  // Algorithms.
  std::string algo;             // RINA_ALGO
  int64_t smallMsgBytes;        // RINA_SMALL_MSG_BYTES
  int64_t twoShotBytes;         // RINA_TWO_SHOT_BYTES
  int64_t allToAllSlotBytes;    // RINA_ALLTOALL_SLOT_BYTES
  int64_t allToAllStreamBytes;  // RINA_ALLTOALL_STREAM_BYTES
  int64_t sliceBytes;           // RINA_SLICE_BYTES
  int64_t cudaStageBytes;       // RINA_CUDA_STAGE_BYTES
  // Point-to-point.
  int64_t p2pEagerBytes;       // RINA_P2P_EAGER_BYTES
  int64_t p2pCopyBytes;        // RINA_P2P_COPY_BYTES
  int64_t p2pRendezvousBytes;  // RINA_P2P_RENDEZVOUS_BYTES
  // Racks and INA.
  std::string racks;         // RINA_RACKS
  std::string topoFile;      // RINA_TOPO_FILE
  std::string switches;      // RINA_SWITCH
  std::string switchdPath;   // RINA_SWITCHD_PATH
  std::string switchdArgs;   // RINA_SWITCHD_ARGS
  std::string switchAuth;    // RINA_SWITCH_AUTH_FILE (a file)
  int64_t inaSlots;          // RINA_INA_SLOTS
  bool inaPortMarkers;       // RINA_INA_PORT_MARKERS
  bool inaUdpOffload;        // RINA_INA_UDP_OFFLOAD (process)
  std::string inaTransport;  // RINA_INA_TRANSPORT
  int64_t inaTimeoutMs;      // RINA_INA_TIMEOUT_MS
  std::string inaPace;       // RINA_INA_PACE
  // Link rates, paths and plans.
  int64_t probeBytes;      // RINA_PROBE_BYTES
  int64_t probeTimeoutMs;  // RINA_PROBE_TIMEOUT_MS
  std::string paths;       // RINA_PATHS
  std::string spineAddrs;  // RINA_SPINE_ADDRS
  Every planInterval;      // RINA_PLAN_INTERVAL
  double planThreshold;    // RINA_PLAN_THRESHOLD
  Every planCheckEvery;    // RINA_PLAN_CHECK_EVERY
  std::string planIna;     // RINA_PLAN_INA
  // librina_mpi (process).
  int64_t mpiMinBytes;  // RINA_MPI_MIN_BYTES
  bool mpiDisable;      // RINA_MPI_DISABLE
  bool mpiStats;        // RINA_MPI_STATS
};

// How a knob's text parses.
enum class Type : uint8_t {
  kInt,     // integer, K/M/G suffixes (powers of 1024); optional word for 0 ("auto")
  kFlag,    // integer, nonzero = on
  kNumber,  // decimal number
  kText,    // free text
  kChoice,  // one of `choices`
  kEvery,   // N or Ns
};

using Field = std::variant<int64_t Options::*, bool Options::*, double Options::*,
                           std::string Options::*, Every Options::*>;

struct Knob {
  const char* name;          // "RINA_TIMEOUT_MS"
  const char* defaultValue;  // as text; "" = unset
  const char* doc;           // one line, shown by printConfig and in docs/knobs.md
  Type type;
  Field field;
  // kChoice: the words, '|'-separated ("auto|udp|rdma").
  const char* choices = nullptr;
  // kInt: the word that means 0 ("auto"), or null.
  const char* zeroWord = nullptr;
  // kInt, kNumber: the range. Outside it a value is an error, or with
  // clamp, the nearest end (a timeout of 0 ms is 1).
  int64_t min = INT64_MIN;
  int64_t max = INT64_MAX;
  bool clamp = false;
  // Text that does not parse: an error, or (lenient) a WARN once and the
  // default, as for plain numbers.
  bool lenient = false;
  // For errors: what a good value looks like ("1-8 or auto"); null: built
  // from the type and range.
  const char* expect = nullptr;
  // It shapes the schedule (which algorithm runs, its steps, the rack map,
  // the plan): ranks that differ would run different schedules, so every
  // rank takes rank 0's value at communicator creation (scheduleText).
  bool schedule = false;
};

std::span<const Knob> knobs();
// The knob of that name, or null.
const Knob* find(std::string_view name);

// Parses text as knob's value into o: an error naming the knob and the text
// when it does not parse or is out of range (lenient knobs too).
Status set(Options* o, std::string_view name, std::string_view text);
// The value of knob in o as text that set() reads back (128K, 0.5s, auto).
std::string valueText(const Options& o, const Knob& knob);

// Checks every value of o (ranges, choices): an error naming the first bad
// knob and its value; clamped knobs are moved into their range.
Status check(Options* o);

// The Options the environment gives: every RINA_* variable parsed and
// checked; a malformed value of a lenient knob is reported at WARN once and
// its default used, any other bad value is an error.
Status fromEnvironment(Options* out);
// The same, cached for the process (refreshed by reloadForTesting); a bad
// value keeps its default. For the process's knobs and code outside a
// communicator.
Options environment();

// The values in o of the knobs that shape the schedule, as NAME=value lines
// (what rank 0 sends every rank through the bootstrap). rinaInvalidArgument
// when a value holds a line break.
Status scheduleText(const Options& o, std::string* out);
// One knob whose value in o differed from the text's (which o now holds).
struct Adopted {
  const Knob* knob;
  std::string mine, theirs;
};
// Sets every knob that text (scheduleText of another rank) names to the
// value it gives; *adopted lists the ones that changed. An error when the
// text names no knob that shapes the schedule or a value does not parse.
Status adoptSchedule(Options* o, std::string_view text, std::vector<Adopted>* adopted);

// Logs every knob's value in o at INFO, and any RINA_* variable of the
// environment that no knob declares, once per process.
void printConfig(const Options& o);

// Re-reads the environment (tests that set variables in-process).
void reloadForTesting();
// Bumped by reloadForTesting; lets other caches (the log level) refresh.
uint64_t generation();

}  // namespace rina::config

#endif  // RINA_LIB_CORE_CONFIG_H_
