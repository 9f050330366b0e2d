#include "core/config.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "core/log.h"

extern char** environ;

namespace rina {

namespace config {
namespace {
std::atomic<uint64_t> generationCounter{1};
}  // namespace

uint64_t generation() { return generationCounter.load(std::memory_order_relaxed); }

namespace {

// The one list of knobs. docs/knobs.md documents each; keep them in step.
constexpr Knob kKnobs[] = {
    {"RINA_DEBUG", "WARN", "log level: WARN, INFO or TRACE"},
    {"RINA_TIMEOUT_MS", "60000",
     "longest wait for a peer (connect, rendezvous, a collective step) before an error"},
    {"RINA_COMM_ID", "", "host:port of the bootstrap root; replaces the unique id's address"},
    {"RINA_SOCKET_IFNAME", "",
     "interfaces to listen on: prefix list (eth,ens), ^ to exclude (^docker,lo), = for exact"},
    {"RINA_SHM_DISABLE", "0", "1: ranks on the same host talk over TCP instead of shared memory"},
    {"RINA_SHM_FIFO_BYTES", "1M", "shared-memory FIFO capacity per direction and peer"},
    {"RINA_SOCKET_BUF_BYTES", "4M", "SO_SNDBUF/SO_RCVBUF for peer sockets (0: kernel default)"},
    {"RINA_SOCKET_NSOCKS", "auto",
     "TCP sockets per peer on another host, 1-8; auto: one per 25 Gbit/s of the NIC, else 1"},
    {"RINA_ALGO", "auto", "allreduce algorithm: auto, ring, rd, hier, rina or ps-ina"},
    {"RINA_RACKS", "",
     "rack map short form, racks in rank order: 3:ina,2,1 (count, :ina = the ToR aggregates); "
     "unset: one rack per host"},
    {"RINA_SWITCH", "auto",
     "INA switch CTRL addresses, one per INA rack (ipv4:port,...), or auto: each INA rack's "
     "agent starts a local rina-switchd"},
    {"RINA_SWITCHD_PATH", "",
     "rina-switchd binary for RINA_SWITCH=auto; unset: next to librina, then PATH"},
    {"RINA_SWITCHD_ARGS", "", "extra flags for auto-started rina-switchd (--drop-rate 0.01)"},
    {"RINA_INA_SLOTS", "64",
     "aggregator slots an INA rack asks its switch for (slices in flight per worker)"},
    {"RINA_INA_PORT_MARKERS", "1",
     "rina's rack reduce-scatter: 1 = a slice's port sends a header-only marker and adds its "
     "own values on receive ((n-1)/n of the buffer up per worker), 0 = every worker sends all "
     "(a switch that does not know markers)"},
    {"RINA_INA_UDP_OFFLOAD", "1",
     "INA datagrams over UDP (clients and rina-switchd): 1 = segmented sends (UDP_SEGMENT) and "
     "coalesced receives (UDP_GRO) where the kernel takes them, 0 = one per datagram"},
    {"RINA_INA_TRANSPORT", "auto",
     "INA client backend: auto (RDMA UC writes when an RDMA device is found and the switch is "
     "not on loopback, else UDP), udp, or rdma (RDMA UC or an error)"},
    {"RINA_INA_TIMEOUT_MS", "2000",
     "switch silent this long: the rack falls back to host aggregation (hier)"},
    {"RINA_SMALL_MSG_BYTES", "128K",
     "allreduce below this size uses the latency algorithm under auto and ring (one-shot through "
     "a segment of the host when every rank is on it, else recursive doubling); 0 = never"},
    {"RINA_SLICE_BYTES", "128K", "ring pipeline slice size"},
    {"RINA_PROBE_BYTES", "0",
     "bytes each rank sends every connected peer at communicator creation to seed the link "
     "rates (0 = no probe; at most 64M; same value on every rank)"},
    {"RINA_PROBE_TIMEOUT_MS", "5000", "time limit of the whole link probe at creation"},
    {"RINA_SPIN_US", "50",
     "microseconds a blocked rank yields and retries before it sleeps on a futex or poll"},
    {"RINA_CPU_AFFINITY", "setup",
     "where rinaCommInitRank runs: setup (on the CPUs near the NIC in use, then the thread's "
     "mask is restored), pin (and left there) or off"},
    {"RINA_IB_HCA", "",
     "RDMA device[:port] for peers on other hosts and the INA UC client (mlx5_0:1); unset: the "
     "one nearest the GPU, else the first device, port 1"},
    {"RINA_IB_GID_INDEX", "0", "GID table index of the RDMA port (RoCEv2 usually needs 1 or 3)"},
    {"RINA_IB_TIMEOUT", "18",
     "RC ack timeout exponent: 4.096 us x 2^value per try (6 retries), 1-31"},
    {"RINA_IB_DISABLE", "0", "1: never use RDMA, peers on other hosts talk over TCP"},
    {"RINA_IB_GDR", "auto",
     "GPU memory registered with the RDMA adapter through dmabuf (GPUDirect RDMA): auto, 0 "
     "(never) or 1 (required)"},
    {"RINA_CUDA_STAGE_BYTES", "4M",
     "GPU buffers: chunk copied through pinned host memory per pipelined allreduce step"},
    {"RINA_TOPO_FILE", "",
     "rack map: JSON file naming racks, their hosts or rank counts, INA, switch and link rates"},
    {"RINA_MPI_MIN_BYTES", "0",
     "librina_mpi: calls moving fewer bytes go to the MPI library (its small-message path)"},
    {"RINA_MPI_DISABLE", "0", "librina_mpi: 1 sends every call to the MPI library"},
    {"RINA_MPI_STATS", "0",
     "librina_mpi: 1 prints per-communicator counts (handled, delegated and why) at MPI_Finalize"},
    {"RINA_PLAN_INTERVAL", "100",
     "re-plan every N collectives (\"100\") or seconds (\"5s\"); 0 = only on rate changes"},
    {"RINA_PATHS", "planned",
     "spine of each inter-rack hop: planned (from the topology's rates), fixed (spine 0) or "
     "hash ((src+dst) % spines)"},
    {"RINA_SPINE_ADDRS", "",
     "this rank's IPv4 address on each spine, comma-separated (else the topology file's "
     "spine_addrs)"},
    {"RINA_PLAN_THRESHOLD", "0.2",
     "re-plan when a measured link rate moves by more than this fraction (0 = never)"},
    {"RINA_PLAN_CHECK_EVERY", "0.5s",
     "with a threshold or a time interval: hier/rina collectives between looks at the rates, "
     "or Ns: about every N seconds (rank 0's value counts)"},
};

struct Cache {
  std::mutex mu;
  uint64_t gen = 0;
  std::map<std::string, std::string, std::less<>> values;
};

Cache& cache() {
  static Cache c;
  return c;
}

const Knob* find(std::string_view name) {
  for (const Knob& k : kKnobs) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

}  // namespace

std::span<const Knob> knobs() { return kKnobs; }

std::string stringValue(std::string_view name) {
  const Knob* knob = find(name);
  if (!knob) {
    std::fprintf(stderr, "rina: internal error: undeclared knob %.*s\n",
                 static_cast<int>(name.size()), name.data());
    std::abort();
  }
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  uint64_t gen = generation();
  if (c.gen != gen) {
    c.values.clear();
    c.gen = gen;
  }
  auto it = c.values.find(name);
  if (it != c.values.end()) return it->second;
  const char* env = std::getenv(knob->name);
  std::string v = env ? env : knob->defaultValue;
  c.values.emplace(knob->name, v);
  return v;
}

namespace {

bool parseInt(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 0);
  if (end == text.c_str()) return false;
  int64_t mult = 1;
  if (*end == 'K' || *end == 'k') mult = 1ll << 10, ++end;
  else if (*end == 'M' || *end == 'm') mult = 1ll << 20, ++end;
  else if (*end == 'G' || *end == 'g') mult = 1ll << 30, ++end;
  if (*end != '\0') return false;
  *out = static_cast<int64_t>(v) * mult;
  return true;
}

}  // namespace

int64_t intValue(std::string_view name) {
  std::string v = stringValue(name);
  int64_t out = 0;
  if (parseInt(v, &out)) return out;
  const Knob* knob = find(name);
  static std::once_flag warned[sizeof(kKnobs) / sizeof(kKnobs[0])];
  std::call_once(warned[knob - kKnobs], [&] {
    RINA_WARN("%s=%s is not an integer; using the default %s", knob->name, v.c_str(),
              knob->defaultValue);
  });
  parseInt(knob->defaultValue, &out);
  return out;
}

void printConfig() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const Knob& k : kKnobs) {
      const char* env = std::getenv(k.name);
      RINA_INFO("config %s=%s%s", k.name, env ? env : k.defaultValue, env ? "" : " (default)");
    }
    for (char** e = environ; e && *e; ++e) {
      if (std::strncmp(*e, "RINA_", 5) != 0) continue;
      const char* eq = std::strchr(*e, '=');
      std::string name(*e, eq ? static_cast<size_t>(eq - *e) : std::strlen(*e));
      if (!find(name)) RINA_INFO("unknown variable %s is ignored", name.c_str());
    }
  });
}

void reloadForTesting() { generationCounter.fetch_add(1); }

}  // namespace config
}  // namespace rina
