// rina-onehost-bench: rina against Open MPI and against a bare copy of the
// same bytes, for ping-pong, all-to-all and allreduce, on one host: all
// three in the same processes under mpirun, interleaved, so they share the
// machine's noise.
//
//   mpirun -np 2 rina-onehost-bench pingpong  [-b 8]   [-e 16M] [-f 2] [-r 7] [-o rina|mpi|copy]
//   mpirun -np 4 rina-onehost-bench alltoall  [-b 64K] [-e 64M] [-f 4] [-r 7] [-m]
//   mpirun -np 4 rina-onehost-bench allreduce [-b 8]   [-e 64M] [-f 4] [-r 7] [-i]
//
// Per size, each backend is first warmed untimed (ping-pong: up to 200
// calls; the others: one call) and its result checked. Then per round, one
// block of calls of each backend, the order rotating by round; a block's
// time is the slowest rank's, divided by its calls; rows give the median
// over rounds. Every rank's buffers for the copy live in one MPI
// shared-memory window (MPI_Win_allocate_shared), so the copy is what any
// transport on this host has to do at least:
//   pingpong  (2 ranks): rank 0 sends, rank 1 sends it back; one-way time =
//             round trip / 2. rina: rinaSend/rinaRecv; mpi: MPI_Send/MPI_Recv;
//             copy: each side memcpy's the bytes into the other's window
//             and raises a flag the other polls.
//   alltoall  (n ranks): every rank sends S bytes of float32, S / n to each
//             rank. rinaAllToAll; MPI_Alltoall; copy: a barrier, then each
//             rank copies the n blocks addressed to it straight out of the
//             others' send buffers. -m: rina's send and receive buffers
//             come from rinaMemAlloc (filled with the same values), which
//             the peers read straight from; MPI and the copy unchanged.
//   allreduce (n ranks): S bytes of float32, summed. rinaAllReduce;
//             MPI_Allreduce; copy: a barrier, then each rank copies S bytes
//             (the least an allreduce can move per rank). -i: in place.
// Columns: time per call (us) and bytes / time (GB/s) for each, then each
// one's share of the copy's bandwidth (copy time / its time: 1.0 = as fast
// as the bare copy) and rina's time over Open MPI's. Every backend's result
// is checked once per size; -o times one backend only (for profiling).
// Buffers start on a page (the copy's send buffers, in the window, always),
// or -a bytes past one (16: where malloc puts a large block).
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bootstrap/mpi_bootstrap.h"
#include "rina/rina.h"

namespace {

int rank = 0, nranks = 1;

size_t parseBytes(const char* text) {
  char* end = nullptr;
  size_t v = std::strtoull(text, &end, 10);
  if (*end == 'K' || *end == 'k') v <<= 10;
  if (*end == 'M' || *end == 'm') v <<= 20;
  if (*end == 'G' || *end == 'g') v <<= 30;
  return v;
}

void die(const std::string& what) {
  std::fprintf(stderr, "rina-onehost-bench: rank %d: %s\n", rank, what.c_str());
  MPI_Abort(MPI_COMM_WORLD, 2);
}

void rinaOk(rinaResult_t rc, rinaComm_t comm, const char* call) {
  if (rc == rinaSuccess) return;
  die(std::string(call) + ": " + rinaCommGetLastError(comm));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds for `iters` calls of fn, the slowest rank's (all start together).
double timeBlock(int iters, const std::function<void()>& fn) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) fn();
  double mine = MPI_Wtime() - t0, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

struct Args {
  size_t minBytes = 0, maxBytes = 0, factor = 4;
  int rounds = 7;
  bool inPlace = false;
  bool rinaMemory = false;  // -m: rina's all-to-all buffers from rinaMemAlloc
  size_t offset = 0;        // -a: buffers this many bytes past a page
  std::string only;         // -o: time one backend only
};

// Every rank's part of one shared-memory window: a flag line, then bytes.
struct SharedWindow {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Win win = MPI_WIN_NULL;
  std::vector<char*> part;  // by rank: 64 bytes of flag, then the buffer

  explicit SharedWindow(size_t bytes) {
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nodeSize = 0;
    MPI_Comm_size(node, &nodeSize);
    if (nodeSize != nranks) die("the copy needs every rank on this host");
    char* mine = nullptr;
    MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes + 64), 64, MPI_INFO_NULL, node, &mine,
                            &win);
    part.resize(nranks);
    for (int p = 0; p < nranks; ++p) {
      MPI_Aint size = 0;
      int unit = 0;
      MPI_Win_shared_query(win, p, &size, &unit, &part[p]);
    }
    std::memset(mine, 0, 64);
    MPI_Barrier(node);
  }
  ~SharedWindow() {
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
  }
  std::atomic_ref<uint64_t> flag(int p) {
    return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(part[p]));
  }
  char* buffer(int p) { return part[p] + 64; }
};

// Waits for flag == want, yielding now and then (ranks may share cores).
void waitFlag(std::atomic_ref<uint64_t> flag, uint64_t want) {
  for (unsigned spins = 0; flag.load(std::memory_order_acquire) != want; ++spins) {
    if (spins % 256 == 255) {
      sched_yield();
    } else {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
  }
}

void printHeader(const char* title) {
  if (rank != 0) return;
  std::printf("# %s\n", title);
  std::printf("# %10s %11s %11s %11s %9s %9s %9s %10s %10s %10s\n", "bytes", "copy_us", "rina_us",
              "mpi_us", "copy_GB/s", "rina_GB/s", "mpi_GB/s", "rina/copy", "mpi/copy", "rina/mpi");
}

// Rows: times (s per call) of the backends for `bytes`.
void printRow(size_t bytes, double copy, double rina, double mpi) {
  if (rank != 0) return;
  auto rate = [&](double t) { return t > 0 ? bytes / t / 1e9 : 0.0; };
  auto share = [&](double t) { return t > 0 && copy > 0 ? copy / t : 0.0; };
  std::printf("  %10zu %11.2f %11.2f %11.2f %9.3f %9.3f %9.3f %10.3f %10.3f %10.3f\n", bytes,
              copy * 1e6, rina * 1e6, mpi * 1e6, rate(copy), rate(rina), rate(mpi), share(rina),
              share(mpi), mpi > 0 ? rina / mpi : 0.0);
  std::fflush(stdout);
}

using Backends = std::vector<std::pair<std::string, std::function<void()>>>;

// count elements starting `offset` bytes past the start of a page (-a;
// 0: page-aligned, as the benchmarks of MPI libraries allocate; 16: where
// malloc puts a large block), zeroed.
template <typename T>
class Buffer {
 public:
  Buffer(size_t count, size_t offset)
      : base_(static_cast<char*>(
            std::aligned_alloc(4096, (count * sizeof(T) + offset + 4095) / 4096 * 4096))),
        data_(reinterpret_cast<T*>(base_ + offset)),
        count_(count) {
    if (!base_) die("out of memory");
    std::memset(data_, 0, count * sizeof(T));
  }
  ~Buffer() { std::free(base_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  T* data() { return data_; }
  T* begin() { return data_; }
  T* end() { return data_ + count_; }
  T& operator[](size_t i) { return data_[i]; }

 private:
  char* base_;
  T* data_;
  size_t count_;
};

// The median time per call of each backend over a.rounds rounds, the
// order rotating; -o keeps one of them.
std::map<std::string, double> timeRounds(const Args& a, int iters, const Backends& backends) {
  std::map<std::string, std::vector<double>> times;
  for (int r = 0; r < a.rounds; ++r) {
    for (size_t k = 0; k < backends.size(); ++k) {
      const auto& [name, fn] = backends[(r + k) % backends.size()];
      if (!a.only.empty() && name != a.only) continue;
      times[name].push_back(timeBlock(iters, fn) / iters);
    }
  }
  std::map<std::string, double> out;
  for (auto& [name, v] : times) out[name] = median(v);
  return out;
}

int itersFor(size_t bytes, size_t budget, int lo, int hi) {
  return static_cast<int>(std::clamp<size_t>(budget / std::max<size_t>(bytes, 1), lo, hi));
}

void pingpong(const Args& a, rinaComm_t comm) {
  if (nranks != 2) die("pingpong takes 2 ranks");
  const int peer = 1 - rank;
  SharedWindow shared(a.maxBytes);
  Buffer<char> out(a.maxBytes, a.offset), in(a.maxBytes, a.offset);
  std::memset(out.data(), rank + 1, a.maxBytes);
  uint64_t copies = 0;
  printHeader("rina-onehost-bench pingpong: 2 ranks; one-way time = round trip / 2");
  for (size_t bytes = a.minBytes; bytes <= a.maxBytes; bytes *= a.factor) {
    const int iters = itersFor(bytes, 32u << 20, 20, 2000);
    auto viaMpi = [&] {
      if (rank == 0) {
        MPI_Send(out.data(), static_cast<int>(bytes), MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        MPI_Recv(in.data(), static_cast<int>(bytes), MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(in.data(), static_cast<int>(bytes), MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        MPI_Send(out.data(), static_cast<int>(bytes), MPI_BYTE, peer, 1, MPI_COMM_WORLD);
      }
    };
    auto viaRina = [&] {
      if (rank == 0) {
        rinaOk(rinaSend(out.data(), bytes, rinaUint8, peer, comm), comm, "rinaSend");
        rinaOk(rinaRecv(in.data(), bytes, rinaUint8, peer, comm), comm, "rinaRecv");
      } else {
        rinaOk(rinaRecv(in.data(), bytes, rinaUint8, peer, comm), comm, "rinaRecv");
        rinaOk(rinaSend(out.data(), bytes, rinaUint8, peer, comm), comm, "rinaSend");
      }
    };
    // Into the peer's window, then its flag (the flag counts the copies).
    auto viaCopy = [&] {
      ++copies;
      if (rank == 1) waitFlag(shared.flag(rank), copies);
      std::memcpy(shared.buffer(peer), out.data(), bytes);
      shared.flag(peer).store(copies, std::memory_order_release);
      if (rank == 0) waitFlag(shared.flag(rank), copies);
    };
    Backends backends{{"copy", viaCopy}, {"rina", viaRina}, {"mpi", viaMpi}};
    for (auto& [name, fn] : backends) {
      std::memset(in.data(), 0, bytes);
      std::memset(shared.buffer(rank), 0, bytes);
      // Warm the path (channels, pages, the FIFO's lines) with up to one
      // block's calls, the same for every backend: at the smallest sizes a
      // block is 2000 calls, and a few calls left the first size's first
      // block paying for the warm-up.
      for (int i = 0; i < std::min(iters, 200); ++i) fn();
      const char* got = name == "copy" ? shared.buffer(rank) : in.data();
      if (got[0] != static_cast<char>(peer + 1) || got[bytes - 1] != static_cast<char>(peer + 1)) {
        die(name + " delivered the wrong bytes");
      }
    }
    std::map<std::string, double> t = timeRounds(a, iters, backends);
    printRow(bytes, t["copy"] / 2, t["rina"] / 2, t["mpi"] / 2);
  }
}

// The value rank `from` puts at element i of what it sends (exact in float32).
float valueOf(int from, size_t i) { return static_cast<float>((from * 131 + i) % 8191); }

void alltoall(const Args& a, rinaComm_t comm) {
  SharedWindow shared(a.maxBytes);
  float* send = reinterpret_cast<float*>(shared.buffer(rank));  // the copy reads it in place
  Buffer<float> recv(a.maxBytes / sizeof(float), a.offset);
  float* rinaSend = send;
  float* rinaRecv = recv.data();
  void* memory[2] = {nullptr, nullptr};
  if (a.rinaMemory) {
    for (void*& m : memory)
      rinaOk(rinaMemAlloc(&m, a.maxBytes + a.offset), nullptr, "rinaMemAlloc");
    rinaSend = reinterpret_cast<float*>(static_cast<char*>(memory[0]) + a.offset);
    rinaRecv = reinterpret_cast<float*>(static_cast<char*>(memory[1]) + a.offset);
  }
  printHeader(("rina-onehost-bench alltoall: " + std::to_string(nranks) +
               " ranks, float32, bytes = S sent per rank (S / n to each)" +
               (a.rinaMemory ? ", rina's buffers from rinaMemAlloc" : ""))
                  .c_str());
  for (size_t bytes = a.minBytes; bytes <= a.maxBytes; bytes *= a.factor) {
    const size_t count = bytes / sizeof(float) / nranks;  // per block
    const size_t block = count * sizeof(float);
    for (size_t i = 0; i < count * nranks; ++i) send[i] = valueOf(rank, i);
    if (rinaSend != send) std::copy(send, send + count * nranks, rinaSend);
    MPI_Win_sync(shared.win);
    const int iters = itersFor(bytes, 256u << 20, 5, 500);
    auto viaCopy = [&] {
      MPI_Barrier(shared.node);  // every send buffer is ready; the last call's reads are done
      for (int k = 0; k < nranks; ++k) {
        const int p = (rank + k) % nranks;
        std::memcpy(reinterpret_cast<char*>(recv.data()) + p * block,
                    shared.buffer(p) + rank * block, block);
      }
    };
    auto viaRina = [&] {
      rinaOk(rinaAllToAll(rinaSend, rinaRecv, count, rinaFloat32, comm), comm, "rinaAllToAll");
    };
    auto viaMpi = [&] {
      MPI_Alltoall(send, static_cast<int>(count), MPI_FLOAT, recv.data(), static_cast<int>(count),
                   MPI_FLOAT, MPI_COMM_WORLD);
    };
    Backends backends{{"copy", viaCopy}, {"rina", viaRina}, {"mpi", viaMpi}};
    for (auto& [name, fn] : backends) {
      float* got = name == "rina" ? rinaRecv : recv.data();
      std::fill(got, got + count * nranks, -1.0f);
      fn();
      MPI_Barrier(MPI_COMM_WORLD);
      for (int p = 0; p < nranks; ++p) {
        for (size_t i = 0; i < count; i += std::max<size_t>(1, count / 64)) {
          if (got[p * count + i] != valueOf(p, rank * count + i)) die(name + ": wrong result");
        }
      }
    }
    std::map<std::string, double> t = timeRounds(a, iters, backends);
    printRow(bytes, t["copy"], t["rina"], t["mpi"]);
  }
  for (void* m : memory) {
    if (m) rinaOk(rinaMemFree(m), nullptr, "rinaMemFree");
  }
}

void allreduce(const Args& a, rinaComm_t comm) {
  const size_t maxCount = std::max<size_t>(1, a.maxBytes / sizeof(float));
  Buffer<float> send(maxCount, a.offset), recv(maxCount, a.offset);
  std::vector<float> input(maxCount);
  for (size_t i = 0; i < maxCount; ++i) input[i] = valueOf(rank, i);
  printHeader(("rina-onehost-bench allreduce: " + std::to_string(nranks) + " ranks, float32 sum, " +
               (a.inPlace ? "in place" : "out of place"))
                  .c_str());
  for (size_t bytes = a.minBytes; bytes <= a.maxBytes; bytes *= a.factor) {
    const size_t count = std::max<size_t>(1, bytes / sizeof(float));
    const int iters = itersFor(bytes, 64u << 20, 5, 1000);
    // In place, each call sums what the last left: the timed calls do not
    // look at the values (the check below starts from the inputs).
    float* src = a.inPlace ? recv.data() : send.data();
    const void* rinaSrc = src;
    const void* mpiSrc = a.inPlace ? MPI_IN_PLACE : static_cast<const void*>(src);
    auto viaCopy = [&] {
      MPI_Barrier(MPI_COMM_WORLD);
      std::memcpy(recv.data(), send.data(), count * sizeof(float));
    };
    auto viaRina = [&] {
      rinaOk(rinaAllReduce(rinaSrc, recv.data(), count, rinaFloat32, rinaSum, comm), comm,
             "rinaAllReduce");
    };
    auto viaMpi = [&] {
      MPI_Allreduce(mpiSrc, recv.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    };
    Backends backends{{"copy", viaCopy}, {"rina", viaRina}, {"mpi", viaMpi}};
    for (auto& [name, fn] : backends) {
      std::copy(input.begin(), input.begin() + count, src);
      fn();
      if (name == "copy") continue;
      for (size_t i = 0; i < count; i += std::max<size_t>(1, count / 256)) {
        float want = 0;
        for (int p = 0; p < nranks; ++p) want += valueOf(p, i);
        if (recv[i] != want) die(name + ": wrong sum at element " + std::to_string(i));
      }
    }
    std::map<std::string, double> t = timeRounds(a, iters, backends);
    printRow(count * sizeof(float), t["copy"], t["rina"], t["mpi"]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "pingpong" && mode != "alltoall" && mode != "allreduce") {
    if (rank == 0) {
      std::fprintf(stderr,
                   "usage: rina-onehost-bench pingpong|alltoall|allreduce [-b MIN] [-e MAX] "
                   "[-f FACTOR] [-r ROUNDS] [-o rina|mpi|copy] [-a OFFSET] [-i] [-m]\n"
                   "  -i: allreduce in place; -m: alltoall with rina's send and receive buffers "
                   "from rinaMemAlloc\n");
    }
    MPI_Finalize();
    return 2;
  }
  Args a;
  a.minBytes = mode == "alltoall" ? 64 << 10 : 8;
  a.maxBytes = mode == "pingpong" ? 16 << 20 : 64 << 20;
  a.factor = mode == "pingpong" ? 2 : 4;
  for (int i = 2; i < argc; ++i) {
    const std::string opt = argv[i];
    if (opt == "-i") {
      a.inPlace = true;
      continue;
    }
    if (opt == "-m") {
      a.rinaMemory = true;
      continue;
    }
    if (i + 1 >= argc) die("option " + opt + " needs a value");
    const char* v = argv[++i];
    if (opt == "-b") {
      a.minBytes = parseBytes(v);
    } else if (opt == "-e") {
      a.maxBytes = parseBytes(v);
    } else if (opt == "-f") {
      a.factor = parseBytes(v);
    } else if (opt == "-r") {
      a.rounds = std::atoi(v);
    } else if (opt == "-o") {
      a.only = v;
    } else if (opt == "-a") {
      a.offset = parseBytes(v);
    } else {
      die("unknown option " + opt);
    }
  }
  if (a.factor < 2 || a.rounds < 1 || a.minBytes < 1 || a.maxBytes < a.minBytes ||
      a.offset > 4095 ||
      !(a.only.empty() || a.only == "rina" || a.only == "mpi" || a.only == "copy")) {
    die("bad options");
  }
  rinaComm_t comm = nullptr;
  if (rinaMpiCommInit(MPI_COMM_WORLD, &comm) != rinaSuccess) die(rinaCommGetLastError(nullptr));
  if (mode == "pingpong") {
    pingpong(a, comm);
  } else if (mode == "alltoall") {
    alltoall(a, comm);
  } else {
    allreduce(a, comm);
  }
  rinaCommDestroy(comm);
  MPI_Finalize();
  return 0;
}
