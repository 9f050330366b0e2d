#include "core/config.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "core/log.h"

extern char** environ;

namespace rina::config {
namespace {

// "head a, b or c" from "a|b|c", at compile time (a knob's doc that lists
// the choices another constant holds).
struct ListedChoices {
  char text[128] = {};
};
constexpr ListedChoices listChoices(std::string_view head, std::string_view choices) {
  ListedChoices out;
  size_t n = 0;
  auto put = [&](std::string_view s) {
    for (char c : s) out.text[n++] = c;
  };
  put(head);
  const size_t last = choices.rfind('|');
  for (size_t i = 0; i < choices.size(); ++i) {
    if (choices[i] != '|') {
      out.text[n++] = choices[i];
    } else {
      put(i == last ? " or " : ", ");
    }
  }
  return out;
}
constexpr ListedChoices kAlgoDoc = listChoices("allreduce algorithm: ", kAlgorithmChoices);

// The one list of knobs. docs/knobs.md documents each; keep them in step.
constexpr Knob kKnobs[] = {
    {.name = "RINA_DEBUG",
     .defaultValue = "WARN",
     .doc = "log level: WARN, INFO or TRACE",
     .type = Type::kText,
     .field = &Options::debug},
    {.name = "RINA_TIMEOUT_MS",
     .defaultValue = "60000",
     .doc = "longest wait for a peer (connect, rendezvous, a collective step) before an error",
     .type = Type::kInt,
     .field = &Options::timeoutMs,
     .min = 1,
     .lenient = true,
     .expect = "give a number of milliseconds > 0"},
    {.name = "RINA_COMM_ID",
     .defaultValue = "",
     .doc = "host:port of the bootstrap root; replaces the unique id's address",
     .type = Type::kText,
     .field = &Options::commId},
    {.name = "RINA_COMM_SECRET_FILE",
     .defaultValue = "",
     .doc = "a file (mode 0600) holding a secret every rank and the bootstrap root share: "
            "ranks and root prove it to each other (HMAC-SHA256, never sent); unset: none",
     .type = Type::kText,
     .field = &Options::commSecret},
    {.name = "RINA_SOCKET_IFNAME",
     .defaultValue = "",
     .doc =
         "interfaces to listen on: prefix list (eth,ens), ^ to exclude (^docker,lo), = for exact",
     .type = Type::kText,
     .field = &Options::socketIfname},
    {.name = "RINA_SHM_DISABLE",
     .defaultValue = "0",
     .doc = "1: ranks on the same host talk over TCP instead of shared memory",
     .type = Type::kFlag,
     .field = &Options::shmDisable,
     .lenient = true},
    {.name = "RINA_SHM_FIFO_BYTES",
     .defaultValue = "1M",
     .doc = "shared-memory FIFO capacity per direction and peer",
     .type = Type::kInt,
     .field = &Options::shmFifoBytes,
     .lenient = true},
    {.name = "RINA_SHM_SPARE_SLOTS",
     .defaultValue = "2",
     .doc = "room for this many more ranks in a host's shared-memory segment, which a grow on "
            "the host fills without a new segment (address space only until used)",
     .type = Type::kInt,
     .field = &Options::shmSpareSlots,
     .min = 0,
     .max = 64,
     .schedule = true},
    {.name = "RINA_SOCKET_BUF_BYTES",
     .defaultValue = "4M",
     .doc = "SO_SNDBUF/SO_RCVBUF for peer sockets (0: kernel default)",
     .type = Type::kInt,
     .field = &Options::socketBufBytes,
     .min = 0,
     .max = INT32_MAX,
     .clamp = true,
     .lenient = true},
    {.name = "RINA_SOCKET_NSOCKS",
     .defaultValue = "auto",
     .doc = "TCP sockets per peer on another host, 1-8; auto: one per 25 Gbit/s of the NIC, else 1",
     .type = Type::kInt,
     .field = &Options::socketNsocks,
     .zeroWord = "auto",
     .min = 1,
     .max = 8,
     .expect = "expected auto or 1-8"},
    {.name = "RINA_TCP_CONGESTION",
     .defaultValue = "",
     .doc = "TCP congestion control of peer sockets (cubic, bbr, reno, ...); unset: the "
            "kernel's default; a name the kernel refuses fails init",
     .type = Type::kText,
     .field = &Options::tcpCongestion},
    {.name = "RINA_ALGO",
     .defaultValue = "auto",
     .doc = kAlgoDoc.text,
     .type = Type::kChoice,
     .field = &Options::algo,
     .choices = kAlgorithmChoices,
     .schedule = true},
    {.name = "RINA_RACKS",
     .defaultValue = "",
     .doc = "rack map short form, racks in rank order: 3:ina,2,1 (count, :ina = the ToR "
            "aggregates); unset: one rack per host",
     .type = Type::kText,
     .field = &Options::racks,
     .schedule = true},
    {.name = "RINA_SWITCH",
     .defaultValue = "auto",
     .doc = "INA switch CTRL addresses, one per INA rack (ipv4:port,...), or auto: each INA "
            "rack's agent starts a local rina-switchd",
     .type = Type::kText,
     .field = &Options::switches,
     .schedule = true},
    {.name = "RINA_SWITCHD_PATH",
     .defaultValue = "",
     .doc = "rina-switchd binary for RINA_SWITCH=auto; unset: next to librina, then PATH",
     .type = Type::kText,
     .field = &Options::switchdPath},
    {.name = "RINA_SWITCHD_ARGS",
     .defaultValue = "",
     .doc = "extra flags for auto-started rina-switchd (--drop-rate 0.01)",
     .type = Type::kText,
     .field = &Options::switchdArgs},
    {.name = "RINA_SWITCH_AUTH_FILE",
     .defaultValue = "",
     .doc = "the admin secret file of the configured switches (rina-switchd --auth-file): "
            "CTRL requests are signed with it; unset: unsigned (RINA_SWITCH=auto makes its own)",
     .type = Type::kText,
     .field = &Options::switchAuth},
    {.name = "RINA_INA_SLOTS",
     .defaultValue = "64",
     .doc = "aggregator slots an INA rack asks its switch for (slices in flight per worker)",
     .type = Type::kInt,
     .field = &Options::inaSlots,
     .min = 1,
     .max = 16384,
     .lenient = true,
     .expect = "give 1 to 16384 slots",
     .schedule = true},
    {.name = "RINA_INA_PORT_MARKERS",
     .defaultValue = "1",
     .doc = "rina's rack reduce-scatter: 1 = a slice's port sends a header-only marker and adds "
            "its own values on receive ((n-1)/n of the buffer up per worker), 0 = every worker "
            "sends all (a switch that does not know markers)",
     .type = Type::kFlag,
     .field = &Options::inaPortMarkers,
     .min = 0,
     .max = 1,
     .lenient = true,
     .expect = "give 0 or 1",
     .schedule = true},
    {.name = "RINA_INA_UDP_OFFLOAD",
     .defaultValue = "1",
     .doc = "INA datagrams over UDP (clients and rina-switchd): 1 = segmented sends "
            "(UDP_SEGMENT) and coalesced receives (UDP_GRO) where the kernel takes them, 0 = "
            "one per datagram",
     .type = Type::kFlag,
     .field = &Options::inaUdpOffload,
     .lenient = true},
    {.name = "RINA_INA_TRANSPORT",
     .defaultValue = "auto",
     .doc = "INA client backend: auto (RDMA UC writes when an RDMA device is found and the "
            "switch is not on loopback, else UDP), udp, or rdma (RDMA UC or an error)",
     .type = Type::kChoice,
     .field = &Options::inaTransport,
     .choices = "auto|udp|rdma",
     .expect = "give auto, udp or rdma"},
    {.name = "RINA_INA_TIMEOUT_MS",
     .defaultValue = "2000",
     .doc = "switch silent this long: the rack falls back to host aggregation (hier)",
     .type = Type::kInt,
     .field = &Options::inaTimeoutMs,
     .min = 1,
     .max = INT32_MAX,
     .clamp = true,
     .lenient = true},
    {.name = "RINA_INA_PACE",
     .defaultValue = "off",
     .doc = "pace each INA worker's first sends: off, auto (the rack's host link rate from the "
            "topology; off where it gives none) or a rate in Mbit/s",
     .type = Type::kText,
     .field = &Options::inaPace},
    {.name = "RINA_SMALL_MSG_BYTES",
     .defaultValue = "128K",
     .doc = "allreduce below this size uses the latency algorithm under auto and ring (one-shot "
            "through a segment of the host when every rank is on it, else recursive doubling); "
            "0 = never",
     .type = Type::kInt,
     .field = &Options::smallMsgBytes,
     .min = 0,
     .clamp = true,
     .lenient = true,
     .schedule = true},
    {.name = "RINA_TWO_SHOT_BYTES",
     .defaultValue = "4M",
     .doc = "with every rank on one host, allreduce from RINA_SMALL_MSG_BYTES up to this size "
            "runs two-shot through the host segment (chunks of up to 1 MiB) instead of the ring; "
            "0 = never",
     .type = Type::kInt,
     .field = &Options::twoShotBytes,
     .min = 0,
     .clamp = true,
     .lenient = true,
     .schedule = true},
    {.name = "RINA_ALLTOALL_SLOT_BYTES",
     .defaultValue = "128M",
     .doc = "with every rank on one host, an all-to-all (equal blocks) of fewer bytes than this "
            "sent per rank goes through the host segment's slots (the sender copies its blocks "
            "in, each receiver copies its block out) instead of straight between the buffers; "
            "0 = never",
     .type = Type::kInt,
     .field = &Options::allToAllSlotBytes,
     .min = 0,
     .clamp = true,
     .lenient = true,
     .schedule = true},
    {.name = "RINA_ALLTOALL_STREAM_BYTES",
     .defaultValue = "8M",
     .doc = "an all-to-all through the host segment's slots of at least this many bytes sent per "
            "rank writes the blocks into the receive buffer with stores that bypass the cache; "
            "0 = always",
     .type = Type::kInt,
     .field = &Options::allToAllStreamBytes,
     .min = 0,
     .clamp = true,
     .lenient = true},
    {.name = "RINA_SLICE_BYTES",
     .defaultValue = "128K",
     .doc = "ring pipeline slice size",
     .type = Type::kInt,
     .field = &Options::sliceBytes,
     .min = 64,
     .clamp = true,
     .lenient = true,
     .schedule = true},
    {.name = "RINA_P2P_EAGER_BYTES",
     .defaultValue = "32K",
     .doc = "point-to-point over shared memory: below this size a message follows its header "
            "at once; from it the sender waits for the receiver's answer",
     .type = Type::kInt,
     .field = &Options::p2pEagerBytes,
     .min = 1,
     .clamp = true,
     .lenient = true},
    {.name = "RINA_P2P_COPY_BYTES",
     .defaultValue = "4M",
     .doc = "point-to-point over shared memory: from this size a message is copied straight "
            "between the two buffers (by both ranks for a blocking receive) instead of "
            "streaming through the channel",
     .type = Type::kInt,
     .field = &Options::p2pCopyBytes,
     .min = 1,
     .clamp = true,
     .lenient = true},
    {.name = "RINA_P2P_RENDEZVOUS_BYTES",
     .defaultValue = "1M",
     .doc = "point-to-point over sockets: from this size the sender waits for the receiver's "
            "answer before the payload",
     .type = Type::kInt,
     .field = &Options::p2pRendezvousBytes,
     .min = 1,
     .clamp = true,
     .lenient = true},
    {.name = "RINA_PROBE_BYTES",
     .defaultValue = "0",
     .doc = "bytes each rank sends every connected peer at communicator creation to seed the "
            "link rates (0 = no probe; at most 64M; same value on every rank)",
     .type = Type::kInt,
     .field = &Options::probeBytes,
     .min = 0,
     .max = int64_t{64} << 20,
     .lenient = true,
     .expect = "expected 0 (off) to 64M",
     .schedule = true},
    {.name = "RINA_PROBE_TIMEOUT_MS",
     .defaultValue = "5000",
     .doc = "time limit of the whole link probe at creation",
     .type = Type::kInt,
     .field = &Options::probeTimeoutMs,
     .min = 1,
     .lenient = true,
     .expect = "expected > 0"},
    {.name = "RINA_SPIN_US",
     .defaultValue = "200",
     .doc = "microseconds a blocked rank yields and retries before it sleeps on a futex or poll",
     .type = Type::kInt,
     .field = &Options::spinUs,
     .min = 0,
     .clamp = true,
     .lenient = true},
    {.name = "RINA_CPU_AFFINITY",
     .defaultValue = "setup",
     .doc = "where rinaCommInitRank runs: setup (on the CPUs near the NIC in use, then the "
            "thread's mask is restored), pin (and left there) or off",
     .type = Type::kChoice,
     .field = &Options::cpuAffinity,
     .choices = "setup|pin|off",
     .expect = "give setup, pin or off"},
    {.name = "RINA_IB_HCA",
     .defaultValue = "",
     .doc = "RDMA device[:port] for peers on other hosts and the INA UC client (mlx5_0:1); "
            "unset: the one nearest the GPU, else the first device, port 1",
     .type = Type::kText,
     .field = &Options::ibHca},
    {.name = "RINA_IB_GID_INDEX",
     .defaultValue = "0",
     .doc = "GID table index of the RDMA port (RoCEv2 usually needs 1 or 3)",
     .type = Type::kInt,
     .field = &Options::ibGidIndex,
     .min = INT32_MIN,
     .max = INT32_MAX,
     .clamp = true,
     .lenient = true},
    {.name = "RINA_IB_TIMEOUT",
     .defaultValue = "18",
     .doc = "RC ack timeout exponent: 4.096 us x 2^value per try (6 retries), 1-31",
     .type = Type::kInt,
     .field = &Options::ibTimeout,
     .min = INT32_MIN,
     .max = INT32_MAX,
     .clamp = true,
     .lenient = true},
    {.name = "RINA_IB_DISABLE",
     .defaultValue = "0",
     .doc = "1: never use RDMA, peers on other hosts talk over TCP",
     .type = Type::kFlag,
     .field = &Options::ibDisable,
     .lenient = true},
    {.name = "RINA_IB_GDR",
     .defaultValue = "auto",
     .doc = "GPU memory registered with the RDMA adapter through dmabuf (GPUDirect RDMA): auto, "
            "0 (never) or 1 (required)",
     .type = Type::kChoice,
     .field = &Options::ibGdr,
     .choices = "auto|0|1",
     .expect = "give auto, 0 or 1"},
    {.name = "RINA_CUDA_STAGE_BYTES",
     .defaultValue = "4M",
     .doc = "GPU buffers: chunk copied through pinned host memory per pipelined allreduce step",
     .type = Type::kInt,
     .field = &Options::cudaStageBytes,
     .min = 4096,
     .max = int64_t{1} << 30,
     .clamp = true,
     .lenient = true,
     .schedule = true},
    {.name = "RINA_TOPO_FILE",
     .defaultValue = "",
     .doc = "rack map: JSON file naming racks, their hosts or rank counts, INA, switch and link "
            "rates",
     .type = Type::kText,
     .field = &Options::topoFile,
     .schedule = true},
    {.name = "RINA_MPI_MIN_BYTES",
     .defaultValue = "0",
     .doc = "librina_mpi: calls moving fewer bytes go to the MPI library (its small-message path)",
     .type = Type::kInt,
     .field = &Options::mpiMinBytes,
     .min = 0,
     .clamp = true,
     .lenient = true},
    {.name = "RINA_MPI_DISABLE",
     .defaultValue = "0",
     .doc = "librina_mpi: 1 sends every call to the MPI library",
     .type = Type::kFlag,
     .field = &Options::mpiDisable,
     .lenient = true},
    {.name = "RINA_MPI_STATS",
     .defaultValue = "0",
     .doc = "librina_mpi: 1 prints per-communicator counts (handled, delegated and why) at "
            "MPI_Finalize",
     .type = Type::kFlag,
     .field = &Options::mpiStats,
     .lenient = true},
    {.name = "RINA_PLAN_INTERVAL",
     .defaultValue = "100",
     .doc = "re-plan every N collectives (\"100\") or seconds (\"5s\"); 0 = only on rate changes",
     .type = Type::kEvery,
     .field = &Options::planInterval,
     .min = 0,
     .max = int64_t{1000000000} * 1000000000,
     .expect = "expected a whole number of collectives or Ns (seconds)",
     .schedule = true},
    {.name = "RINA_PATHS",
     .defaultValue = "planned",
     .doc = "spine of each inter-rack hop: planned (from the topology's rates), fixed (spine 0) "
            "or hash ((src+dst) % spines)",
     .type = Type::kChoice,
     .field = &Options::paths,
     .choices = "planned|fixed|hash",
     .expect = "expected planned, fixed or hash",
     .schedule = true},
    {.name = "RINA_SPINE_ADDRS",
     .defaultValue = "",
     .doc = "this rank's IPv4 address on each spine, comma-separated (else the topology file's "
            "spine_addrs)",
     .type = Type::kText,
     .field = &Options::spineAddrs},
    {.name = "RINA_PLAN_THRESHOLD",
     .defaultValue = "0.2",
     .doc = "re-plan when a measured link rate moves by more than this fraction (0 = never)",
     .type = Type::kNumber,
     .field = &Options::planThreshold,
     .min = 0,
     .expect = "expected a number >= 0",
     .schedule = true},
    {.name = "RINA_PLAN_INA",
     .defaultValue = "choose",
     .doc = "rina's INA racks: choose (the plan sums each on its switch, on its hosts, or makes "
            "its hosts ring members, whichever the link model finds fastest) or on (every INA "
            "rack on its switch)",
     .type = Type::kChoice,
     .field = &Options::planIna,
     .choices = "choose|on",
     .expect = "expected choose or on",
     .schedule = true},
    {.name = "RINA_PLAN_CHECK_EVERY",
     .defaultValue = "0.5s",
     .doc = "with a threshold or a time interval: hier/rina collectives between looks at the "
            "rates, or Ns: about every N seconds (rank 0's value counts)",
     .type = Type::kEvery,
     .field = &Options::planCheckEvery,
     .min = 1,
     .max = 1 << 20,
     .expect = "expected a whole number of collectives from 1 to 1048576, or Ns (seconds > 0)",
     .schedule = true},
};

// Each knob's field has the type its parse fills.
constexpr bool fieldsMatchTypes() {
  for (const Knob& k : kKnobs) {
    const size_t want = k.type == Type::kInt      ? 0
                        : k.type == Type::kFlag   ? 1
                        : k.type == Type::kNumber ? 2
                        : k.type == Type::kEvery  ? 4
                                                  : 3;
    if (k.field.index() != want) return false;
    if ((k.type == Type::kChoice) != (k.choices != nullptr)) return false;
  }
  return true;
}
static_assert(fieldsMatchTypes(), "a knob's field does not have the type its parse fills");

std::atomic<uint64_t> generationCounter{1};

template <typename T>
T& fieldOf(Options* o, const Knob& k) {
  return o->*std::get<T Options::*>(k.field);
}
template <typename T>
const T& fieldOf(const Options& o, const Knob& k) {
  return o.*std::get<T Options::*>(k.field);
}

// An integer with an optional K/M/G suffix (powers of 1024).
bool parseInt(std::string_view text, int64_t* out) {
  if (text.empty() || text.size() > 32) return false;
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 0);
  if (end == s.c_str() || errno == ERANGE) return false;
  int shift = 0;
  switch (*end) {
    case 'K':
    case 'k':
      shift = 10;
      break;
    case 'M':
    case 'm':
      shift = 20;
      break;
    case 'G':
    case 'g':
      shift = 30;
      break;
  }
  if (shift != 0) ++end;
  if (*end != '\0') return false;
  const int64_t mult = int64_t{1} << shift;
  if (v > INT64_MAX / mult || v < INT64_MIN / mult) return false;
  *out = static_cast<int64_t>(v) * mult;
  return true;
}

// A non-negative decimal number, optionally with a fraction: no sign, no
// exponent-free surprises such as "inf" or "nan".
bool parseNumber(std::string_view text, double* out) {
  if (text.empty() || text.size() > 32) return false;
  if (!(text[0] >= '0' && text[0] <= '9')) return false;
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool isChoice(const Knob& k, std::string_view text) {
  std::string_view rest = k.choices;
  while (true) {
    const size_t bar = rest.find('|');
    if (rest.substr(0, bar) == text) return true;
    if (bar == std::string_view::npos) return false;
    rest.remove_prefix(bar + 1);
  }
}

// "expected a, b or c" from "a|b|c".
std::string choiceList(const Knob& k) {
  std::string s = k.choices, out;
  size_t last = s.rfind('|');
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '|') {
      out += s[i];
    } else {
      out += i == last ? " or " : ", ";
    }
  }
  return out;
}

std::string expectation(const Knob& k) {
  if (k.expect) return k.expect;
  switch (k.type) {
    case Type::kChoice:
      return "expected " + choiceList(k);
    case Type::kFlag:
      return "expected an integer (0: off)";
    case Type::kNumber:
      return "expected a number";
    case Type::kEvery:
      return "expected N or Ns";
    case Type::kInt: {
      std::string s = "expected an integer (K, M, G suffixes)";
      if (k.min != INT64_MIN || k.max != INT64_MAX) {
        s += " from " + std::to_string(k.min);
        if (k.max != INT64_MAX) s += " to " + std::to_string(k.max);
      }
      return s;
    }
    case Type::kText:
      break;
  }
  return "expected text";
}

Status bad(const Knob& k, std::string_view text) {
  return errorf(rinaInvalidArgument, "%s=%.*s: %s", k.name, static_cast<int>(text.size()),
                text.data(), expectation(k).c_str());
}

// A value against the knob's range: in it, clamped into it, or an error.
Status inRange(const Knob& k, std::string_view text, double v, double* out) {
  const double lo = static_cast<double>(k.min), hi = static_cast<double>(k.max);
  if (v >= lo && v <= hi) {
    *out = v;
    return {};
  }
  if (!k.clamp) return bad(k, text);
  *out = std::clamp(v, lo, hi);
  return {};
}

enum class Malformed { kError, kReport };

// Parses text into knob k's field of o. A text that does not parse is an
// error, or for a lenient knob under kReport, *malformed is set and the
// field left alone.
Status parseInto(const Knob& k, std::string_view text, Options* o, Malformed mode,
                 bool* malformed) {
  auto notParsed = [&]() -> Status {
    if (k.lenient && mode == Malformed::kReport) {
      *malformed = true;
      return {};
    }
    return bad(k, text);
  };
  switch (k.type) {
    case Type::kText:
      fieldOf<std::string>(o, k) = std::string(text);
      return {};
    case Type::kChoice:
      if (!isChoice(k, text)) return bad(k, text);
      fieldOf<std::string>(o, k) = std::string(text);
      return {};
    case Type::kInt:
    case Type::kFlag: {
      int64_t v = 0;
      if (k.zeroWord && text == k.zeroWord) {
        v = 0;
      } else if (!parseInt(text, &v)) {
        return notParsed();
      } else {
        double in = 0;
        RINA_TRY(inRange(k, text, static_cast<double>(v), &in));
        v = static_cast<int64_t>(in);
      }
      if (k.type == Type::kFlag) {
        fieldOf<bool>(o, k) = v != 0;
      } else {
        fieldOf<int64_t>(o, k) = v;
      }
      return {};
    }
    case Type::kNumber: {
      double v = 0;
      if (!parseNumber(text, &v)) return bad(k, text);
      RINA_TRY(inRange(k, text, v, &v));
      fieldOf<double>(o, k) = v;
      return {};
    }
    case Type::kEvery: {
      Every e;
      double v = 0;
      if (!text.empty() && text.back() == 's') {
        // Seconds: > 0 where the count must be at least 1.
        if (!parseNumber(text.substr(0, text.size() - 1), &v) || (k.min >= 1 && v <= 0)) {
          return bad(k, text);
        }
        e.inSeconds = true;
        e.seconds = v;
      } else {
        if (!parseNumber(text, &v) || v != std::floor(v) || v < static_cast<double>(k.min) ||
            v > static_cast<double>(k.max)) {
          return bad(k, text);
        }
        e.count = static_cast<uint64_t>(v);
      }
      fieldOf<Every>(o, k) = e;
      return {};
    }
  }
  return bad(k, text);
}

std::string intText(int64_t v) {
  for (const auto& [shift, suffix] : {std::pair{30, "G"}, std::pair{20, "M"}, std::pair{10, "K"}}) {
    const int64_t unit = int64_t{1} << shift;
    if (v != 0 && v % unit == 0) return std::to_string(v / unit) + suffix;
  }
  return std::to_string(v);
}

std::string numberText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // The shortest text that reads back as the same double.
  for (int digits = 1; digits <= 17; ++digits) {
    char shorter[32];
    std::snprintf(shorter, sizeof shorter, "%.*g", digits, v);
    if (std::strtod(shorter, nullptr) == v) return shorter;
  }
  return buf;
}

// What one knob's variable says, if it is set and not empty (empty counts
// as unset).
const char* envValue(const Knob& k) {
  const char* v = std::getenv(k.name);
  return v && *v ? v : nullptr;
}

// Reads the environment into *out. Malformed values of lenient knobs go to
// *malformedOut (their defaults stay); other bad values are the returned
// error, or with keepGoing skipped.
Status readEnvironment(Options* out, std::vector<const Knob*>* malformedOut, bool keepGoing) {
  Options o;
  Status first;
  for (const Knob& k : kKnobs) {
    const char* v = envValue(k);
    if (!v) continue;
    bool malformed = false;
    Status st = parseInto(k, v, &o, Malformed::kReport, &malformed);
    if (!st.ok()) {
      if (!keepGoing) return st;
      if (first.ok()) first = st;
      continue;
    }
    if (malformed) malformedOut->push_back(&k);
  }
  *out = std::move(o);
  return first;
}

void reportMalformed(const std::vector<const Knob*>& malformed) {
  // Once per knob and process. Not call_once: the warning reads the log
  // level, which reads the environment, which may report the same knob.
  static std::atomic<bool> warned[std::size(kKnobs)];
  for (const Knob* k : malformed) {
    if (warned[k - kKnobs].exchange(true)) continue;
    const char* v = envValue(*k);
    RINA_WARN("%s=%s is not an integer; using the default %s", k->name, v ? v : "",
              k->defaultValue);
  }
}

}  // namespace

Options::Options() {
  for (const Knob& k : kKnobs) {
    bool malformed = false;
    Status st = parseInto(k, k.defaultValue, this, Malformed::kError, &malformed);
    if (!st.ok()) {
      std::fprintf(stderr, "rina: internal error: the default of %s: %s\n", k.name,
                   st.message().c_str());
      std::abort();
    }
  }
}

std::span<const Knob> knobs() { return kKnobs; }

const Knob* find(std::string_view name) {
  for (const Knob& k : kKnobs) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

Status set(Options* o, std::string_view name, std::string_view text) {
  const Knob* k = find(name);
  if (!k) {
    return errorf(rinaInvalidArgument, "%.*s is not a rina knob", static_cast<int>(name.size()),
                  name.data());
  }
  bool malformed = false;
  return parseInto(*k, text, o, Malformed::kError, &malformed);
}

std::string valueText(const Options& o, const Knob& k) {
  switch (k.type) {
    case Type::kText:
    case Type::kChoice:
      return fieldOf<std::string>(o, k);
    case Type::kFlag:
      return fieldOf<bool>(o, k) ? "1" : "0";
    case Type::kInt: {
      const int64_t v = fieldOf<int64_t>(o, k);
      if (v == 0 && k.zeroWord) return k.zeroWord;
      return intText(v);
    }
    case Type::kNumber:
      return numberText(fieldOf<double>(o, k));
    case Type::kEvery: {
      const Every& e = fieldOf<Every>(o, k);
      return e.inSeconds ? numberText(e.seconds) + "s" : std::to_string(e.count);
    }
  }
  return "";
}

Status check(Options* o) {
  for (const Knob& k : kKnobs) {
    // A value set in code reads as its text would: the same parse and checks.
    bool malformed = false;
    RINA_TRY(parseInto(k, valueText(*o, k), o, Malformed::kError, &malformed));
  }
  return {};
}

Status fromEnvironment(Options* out) {
  std::vector<const Knob*> malformed;
  Status st = readEnvironment(out, &malformed, false);
  reportMalformed(malformed);
  return st;
}

namespace {

struct Cached {
  std::mutex mu;
  uint64_t gen = 0;
  std::shared_ptr<const Options> options;
};

// Never destroyed: threads that may outlive main (the detached bootstrap
// root of rinaGetUniqueId, which logs) read it while exit handlers run.
Cached& cached() {
  static Cached& c = *new Cached;
  return c;
}

}  // namespace

Options environment() {
  Cached& c = cached();
  std::vector<const Knob*> malformed;
  std::shared_ptr<const Options> now;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    const uint64_t gen = generation();
    if (c.gen != gen || !c.options) {
      auto fresh = std::make_shared<Options>();
      (void)readEnvironment(fresh.get(), &malformed, true);
      c.options = std::move(fresh);
      c.gen = gen;
    }
    now = c.options;
  }
  // Outside the lock: the warning reads the log level, which reads here.
  reportMalformed(malformed);
  return *now;
}

Status scheduleText(const Options& o, std::string* out) {
  out->clear();
  for (const Knob& k : kKnobs) {
    if (!k.schedule) continue;
    const std::string v = valueText(o, k);
    if (v.find('\n') != std::string::npos) {
      return errorf(rinaInvalidArgument, "%s: a value with a line break", k.name);
    }
    *out += k.name;
    *out += '=';
    *out += v;
    *out += '\n';
  }
  return {};
}

Status adoptSchedule(Options* o, std::string_view text, std::vector<Adopted>* adopted) {
  adopted->clear();
  size_t known = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    const size_t eq = line.find('=');
    const Knob* k = eq == std::string_view::npos ? nullptr : find(line.substr(0, eq));
    if (!k || !k->schedule) {
      return errorf(rinaInvalidArgument, "'%.*s' is not a knob that shapes the schedule",
                    static_cast<int>(line.size()), line.data());
    }
    ++known;
    const std::string_view theirs = line.substr(eq + 1);
    const std::string mine = valueText(*o, *k);
    if (mine == theirs) continue;
    bool malformed = false;
    RINA_TRY(parseInto(*k, theirs, o, Malformed::kError, &malformed));
    adopted->push_back(Adopted{k, mine, std::string(theirs)});
  }
  if (known == 0) return errorf(rinaInvalidArgument, "no knob values");
  return {};
}

void printConfig(const Options& o) {
  static std::once_flag once;
  std::call_once(once, [&o] {
    const Options defaults;
    for (const Knob& k : kKnobs) {
      const std::string v = valueText(o, k);
      RINA_INFO("config %s=%s%s", k.name, v.c_str(),
                v == valueText(defaults, k) ? " (default)" : "");
    }
    for (char** e = environ; e && *e; ++e) {
      if (std::strncmp(*e, "RINA_", 5) != 0) continue;
      const char* eq = std::strchr(*e, '=');
      std::string name(*e, eq ? static_cast<size_t>(eq - *e) : std::strlen(*e));
      if (!find(name)) RINA_INFO("unknown variable %s is ignored", name.c_str());
    }
  });
}

uint64_t generation() { return generationCounter.load(std::memory_order_relaxed); }

void reloadForTesting() { generationCounter.fetch_add(1); }

}  // namespace rina::config
