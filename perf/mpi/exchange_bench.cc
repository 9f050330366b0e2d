// rina-exchange-bench: rina's point-to-point and all-to-all against Open MPI
// and against a bare copy, in the same processes under mpirun, interleaved.
//
//   mpirun -np 2 rina-exchange-bench pingpong [-b 8] [-e 16M] [-f 4] [-r 7] [-o rina|mpi]
//   mpirun -np 4 rina-exchange-bench alltoall [-b 64K] [-e 64M] [-f 4] [-r 7]
//
// pingpong (2 ranks): rank 0 sends, rank 1 sends it back; one-way time =
// round trip / 2. Per size and round, a block of round trips through
// MPI_Send/MPI_Recv and one through rinaSend/rinaRecv, the order
// alternating by round; rows give the median block per backend: one-way
// time (us), bandwidth (GB/s, bytes / one-way time), and rina / MPI. -o
// times one of them only (the other's column reads 0), for profiling.
//
// alltoall (n ranks): every rank sends S bytes of float32 (S per rank, a
// block of S / n to each rank); per size and round a block of calls of each:
//   copy:  the bare exchange: every rank's send buffer lives in one
//          shared-memory window (MPI_Win_allocate_shared), and each call is
//          a barrier and then n memcpy's of the blocks addressed to this
//          rank straight out of the others' buffers: each block copied
//          once, nothing else moving;
//   rina:  rinaAllToAll;
//   mpi:   MPI_Alltoall.
// A block's time is the slowest rank's; rows give the median block's time
// per call, the throughput S / time (GB/s per rank) and rina's time over
// copy's and mpi's. Every backend's result is checked once per size.
#include <mpi.h>

#include <algorithm>
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

void die(const char* what) {
  std::fprintf(stderr, "rina-exchange-bench: rank %d: %s\n", rank, what);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

void rinaOk(rinaResult_t rc, rinaComm_t comm, const char* call) {
  if (rc == rinaSuccess) return;
  std::fprintf(stderr, "rina-exchange-bench: rank %d: %s: %s\n", rank, call,
               rinaCommGetLastError(comm));
  MPI_Abort(MPI_COMM_WORLD, 3);
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
  size_t minBytes, maxBytes, factor = 4;
  int rounds = 7;
  std::string only;  // -o rina|mpi: time one side only (for perf stat and the like)
};

void pingpong(const Args& a, rinaComm_t comm) {
  if (nranks != 2) die("pingpong takes 2 ranks");
  const int peer = 1 - rank;
  std::vector<char> out(a.maxBytes, static_cast<char>(rank + 1)), in(a.maxBytes);
  if (rank == 0) {
    std::printf(
        "# rina-exchange-bench pingpong: 2 ranks, %d rounds; one-way time = round trip / 2\n",
        a.rounds);
    std::printf("# %10s %12s %12s %10s %10s %12s\n", "bytes", "mpi_us", "rina_us", "mpi_GB/s",
                "rina_GB/s", "rina/mpi");
  }
  for (size_t bytes = a.minBytes; bytes <= a.maxBytes; bytes *= a.factor) {
    // About 32 MiB each way per block, 20 to 2000 round trips.
    const int iters = static_cast<int>(std::clamp<size_t>((32u << 20) / bytes, 20, 2000));
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
    // Warm both paths (channels, pages), and check what arrives.
    for (int i = 0; i < 3; ++i) viaMpi();
    std::memset(in.data(), 0, bytes);
    for (int i = 0; i < 3; ++i) viaRina();
    if (in[bytes - 1] != static_cast<char>(peer + 1)) die("rina delivered the wrong bytes");
    std::vector<double> mpi{0.0}, rina{0.0};
    if (!a.only.empty()) {
      for (int r = 0; r < a.rounds; ++r) {
        (a.only == "rina" ? rina : mpi)
            .push_back(timeBlock(iters, a.only == "rina" ? std::function<void()>(viaRina)
                                                         : std::function<void()>(viaMpi)) /
                       iters / 2);
      }
    }
    for (int r = 0; a.only.empty() && r < a.rounds; ++r) {
      if (r == 0) mpi.clear(), rina.clear();
      if (r % 2 == 0) {
        mpi.push_back(timeBlock(iters, viaMpi) / iters / 2);
        rina.push_back(timeBlock(iters, viaRina) / iters / 2);
      } else {
        rina.push_back(timeBlock(iters, viaRina) / iters / 2);
        mpi.push_back(timeBlock(iters, viaMpi) / iters / 2);
      }
    }
    const double m = median(mpi), q = median(rina);
    if (rank == 0) {
      std::printf("  %10zu %12.2f %12.2f %10.3f %10.3f %12.3f\n", bytes, m * 1e6, q * 1e6,
                  bytes / m / 1e9, bytes / q / 1e9, q / m);
      std::fflush(stdout);
    }
  }
}

void alltoall(const Args& a, rinaComm_t comm) {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int nodeSize = 0;
  MPI_Comm_size(node, &nodeSize);
  if (nodeSize != nranks) die("alltoall compares against a shared-memory copy: one host only");
  const size_t maxCount = a.maxBytes / sizeof(float);
  float* window = nullptr;
  MPI_Win win;
  MPI_Win_allocate_shared(static_cast<MPI_Aint>(a.maxBytes), sizeof(float), MPI_INFO_NULL, node,
                          &window, &win);
  std::vector<float*> sendOf(nranks);
  for (int p = 0; p < nranks; ++p) {
    MPI_Aint size = 0;
    int unit = 0;
    MPI_Win_shared_query(win, p, &size, &unit, &sendOf[p]);
  }
  float* send = window;  // this rank's send buffer is its part of the window
  std::vector<float> recv(maxCount);
  if (rank == 0) {
    std::printf(
        "# rina-exchange-bench alltoall: %d ranks, float32, S bytes sent per rank (S / %d "
        "to each), %d rounds\n",
        nranks, nranks, a.rounds);
    std::printf("# %10s %10s %10s %10s %9s %9s %9s %10s %10s\n", "S", "copy_us", "rina_us",
                "mpi_us", "copy_GB/s", "rina_GB/s", "mpi_GB/s", "rina/copy", "rina/mpi");
  }
  for (size_t bytes = a.minBytes; bytes <= a.maxBytes; bytes *= a.factor) {
    const size_t count = bytes / sizeof(float) / nranks;  // per block
    const size_t block = count * sizeof(float);
    for (size_t i = 0; i < count * nranks; ++i) {
      send[i] = static_cast<float>((rank * 131 + i) % 8191);
    }
    MPI_Win_sync(win);
    const int iters = static_cast<int>(std::clamp<size_t>((256u << 20) / bytes, 5, 500));
    auto viaCopy = [&] {
      MPI_Barrier(node);  // every send buffer is ready; the last call's reads are done
      for (int k = 0; k < nranks; ++k) {
        const int p = (rank + k) % nranks;
        std::memcpy(reinterpret_cast<char*>(recv.data()) + p * block,
                    reinterpret_cast<const char*>(sendOf[p]) + rank * block, block);
      }
    };
    auto viaRina = [&] {
      rinaOk(rinaAllToAll(send, recv.data(), count, rinaFloat32, comm), comm, "rinaAllToAll");
    };
    auto viaMpi = [&] {
      MPI_Alltoall(send, static_cast<int>(count), MPI_FLOAT, recv.data(), static_cast<int>(count),
                   MPI_FLOAT, MPI_COMM_WORLD);
    };
    std::vector<std::pair<const char*, std::function<void()>>> modes{
        {"copy", viaCopy}, {"rina", viaRina}, {"mpi", viaMpi}};
    for (auto& [name, fn] : modes) {
      std::fill(recv.begin(), recv.end(), -1.0f);
      fn();
      MPI_Barrier(MPI_COMM_WORLD);
      for (int p = 0; p < nranks; ++p) {
        for (size_t i = 0; i < count; i += std::max<size_t>(1, count / 64)) {
          if (recv[p * count + i] != static_cast<float>((p * 131 + rank * count + i) % 8191)) {
            die((std::string(name) + ": wrong result").c_str());
          }
        }
      }
    }
    std::map<std::string, std::vector<double>> times;
    for (int r = 0; r < a.rounds; ++r) {
      for (size_t k = 0; k < modes.size(); ++k) {
        auto& [name, fn] = modes[(r + k) % modes.size()];
        times[name].push_back(timeBlock(iters, fn) / iters);
      }
    }
    const double c = median(times["copy"]), q = median(times["rina"]), m = median(times["mpi"]);
    if (rank == 0) {
      std::printf("  %10zu %10.1f %10.1f %10.1f %9.2f %9.2f %9.2f %10.3f %10.3f\n", bytes, c * 1e6,
                  q * 1e6, m * 1e6, bytes / c / 1e9, bytes / q / 1e9, bytes / m / 1e9, q / c,
                  q / m);
      std::fflush(stdout);
    }
  }
  MPI_Win_free(&win);
  MPI_Comm_free(&node);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (argc < 2 || (std::strcmp(argv[1], "pingpong") && std::strcmp(argv[1], "alltoall"))) {
    if (rank == 0) {
      std::fprintf(stderr,
                   "usage: rina-exchange-bench pingpong|alltoall [-b MIN] [-e MAX] [-f FACTOR] "
                   "[-r ROUNDS]\n");
    }
    MPI_Finalize();
    return 2;
  }
  const bool ping = !std::strcmp(argv[1], "pingpong");
  Args a;
  a.minBytes = ping ? 8 : 64 << 10;
  a.maxBytes = ping ? 16 << 20 : 64 << 20;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "-b"))
      a.minBytes = parseBytes(argv[i + 1]);
    else if (!std::strcmp(argv[i], "-e"))
      a.maxBytes = parseBytes(argv[i + 1]);
    else if (!std::strcmp(argv[i], "-f"))
      a.factor = parseBytes(argv[i + 1]);
    else if (!std::strcmp(argv[i], "-r"))
      a.rounds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "-o") && ping)
      a.only = argv[i + 1];
    else
      die("unknown option");
  }
  if (a.factor < 2 || a.rounds < 1 || a.minBytes < 1 || a.maxBytes < a.minBytes ||
      !(a.only.empty() || a.only == "rina" || a.only == "mpi")) {
    die("bad options");
  }
  rinaComm_t comm = nullptr;
  if (rinaMpiCommInit(MPI_COMM_WORLD, &comm) != rinaSuccess) die(rinaCommGetLastError(nullptr));
  if (ping) {
    pingpong(a, comm);
  } else {
    alltoall(a, comm);
  }
  rinaCommDestroy(comm);
  MPI_Finalize();
  return 0;
}
