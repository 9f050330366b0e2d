// rina's point-to-point, all-to-all and rooted calls against the MPI
// library's own (PMPI_*), under mpirun: the same inputs through both, the
// outputs compared bit for bit. The rina communicator comes from
// rinaMpiCommInit over MPI_COMM_WORLD.
//
//   mpirun -np N exchange_vs_pmpi
//
// Rank 0 prints "exchange_vs_pmpi: N ranks, C checks, 0 failures"; the exit
// code is 0 only when no rank failed a check.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bootstrap/mpi_bootstrap.h"
#include "rina/rina.h"

namespace {

int rank = 0, nranks = 1, checks = 0, failures = 0;

void check(bool ok, const std::string& what) {
  ++checks;
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "FAIL rank %d: %s\n", rank, what.c_str());
  }
}

void expectSuccess(rinaResult_t rc, rinaComm_t comm, const std::string& what) {
  check(rc == rinaSuccess, what + ": " + rinaGetErrorString(rc) + ": " +
                               (rc == rinaSuccess ? "" : rinaCommGetLastError(comm)));
}

// Random int32 values small enough that every sum over the ranks is exact in
// float32 too (so float sums may be compared bit for bit).
std::vector<int32_t> randomInts(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> d(-1000, 1000);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = d(gen);
  return v;
}

void allToAllv(rinaComm_t comm, int round) {
  // Rank s sends (s * 7 + d * 3 + round) % 5 * 1000 + d elements to rank d.
  auto countOf = [round](int s, int d) -> int { return (s * 7 + d * 3 + round) % 5 * 1000 + d; };
  std::vector<int> sc(nranks), sd(nranks), rc(nranks), rd(nranks);
  int sendTotal = 0, recvTotal = 0;
  for (int p = 0; p < nranks; ++p) {
    sc[p] = countOf(rank, p);
    sd[p] = sendTotal;
    sendTotal += sc[p];
    rc[p] = countOf(p, rank);
    rd[p] = recvTotal;
    recvTotal += rc[p];
  }
  std::vector<int32_t> send = randomInts(sendTotal, 100 + rank + round * 31);
  std::vector<int32_t> viaMpi(recvTotal, -1), viaRina(recvTotal, -2);
  PMPI_Alltoallv(send.data(), sc.data(), sd.data(), MPI_INT32_T, viaMpi.data(), rc.data(),
                 rd.data(), MPI_INT32_T, MPI_COMM_WORLD);
  std::vector<size_t> scz(sc.begin(), sc.end()), sdz(sd.begin(), sd.end()),
      rcz(rc.begin(), rc.end()), rdz(rd.begin(), rd.end());
  expectSuccess(rinaAllToAllv(send.data(), scz.data(), sdz.data(), viaRina.data(), rcz.data(),
                              rdz.data(), rinaInt32, comm),
                comm, "rinaAllToAllv");
  check(viaMpi == viaRina,
        "rinaAllToAllv differs from PMPI_Alltoallv, round " + std::to_string(round));
  // The even form, a block of 1 MiB per pair (one copy per block on this host).
  const size_t count = (1 << 20) / sizeof(float);
  std::vector<float> in(count * nranks), outMpi(count * nranks), outRina(count * nranks);
  std::vector<int32_t> ints = randomInts(in.size(), 900 + rank + round);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(ints[i]) / 8;
  PMPI_Alltoall(in.data(), static_cast<int>(count), MPI_FLOAT, outMpi.data(),
                static_cast<int>(count), MPI_FLOAT, MPI_COMM_WORLD);
  expectSuccess(rinaAllToAll(in.data(), outRina.data(), count, rinaFloat32, comm), comm,
                "rinaAllToAll");
  check(std::memcmp(outMpi.data(), outRina.data(), outMpi.size() * sizeof(float)) == 0,
        "rinaAllToAll differs from PMPI_Alltoall");
}

// rinaAllToAll one byte either side of where its path changes on one host:
// a rank's share of its 1 MiB slot for one peer (1 MiB / (n - 1), rounded
// down to 64 bytes; a larger block goes through the slots in chunks) and
// kSlotBytes sent per rank (RINA_ALLTOALL_SLOT_BYTES, set in main: from it
// straight between the buffers). From kStreamBytes sent per rank
// (RINA_ALLTOALL_STREAM_BYTES, set in main: from a block of share - 1 on)
// the slots' copies into the receive buffer bypass the cache. rina's
// buffers start one byte past an aligned address; with fromRinaMemory the
// even ranks' send buffers lie in memory from rinaMemAlloc (read straight
// by the receivers), the odd ranks' do not.
constexpr size_t kSlotBytes = 4 << 20;
constexpr size_t kStreamBytes = 1 << 20;

void allToAllCutOvers(rinaComm_t comm, bool fromRinaMemory) {
  const size_t share = (size_t{1} << 20) / std::max(1, nranks - 1) / 64 * 64;
  const size_t cut = (kSlotBytes + nranks - 1) / nranks;  // the least count sent straight
  for (size_t count :
       {size_t{1}, size_t{63}, size_t{65}, share - 1, share, share + 1, cut - 1, cut, cut + 1}) {
    const size_t bytes = count * nranks;
    std::vector<int32_t> ints = randomInts(bytes, 1100 + rank + static_cast<uint32_t>(count));
    std::vector<uint8_t> in(bytes), outMpi(bytes), plain(bytes + 1), outRina(bytes + 1);
    void* memory = nullptr;
    if (fromRinaMemory && rank % 2 == 0) {
      expectSuccess(rinaMemAlloc(&memory, bytes + 1), nullptr, "rinaMemAlloc");  // else plain
    }
    uint8_t* inRina = memory ? static_cast<uint8_t*>(memory) : plain.data();
    for (size_t i = 0; i < bytes; ++i) in[i] = inRina[i + 1] = static_cast<uint8_t>(ints[i]);
    PMPI_Alltoall(in.data(), static_cast<int>(count), MPI_BYTE, outMpi.data(),
                  static_cast<int>(count), MPI_BYTE, MPI_COMM_WORLD);
    expectSuccess(rinaAllToAll(inRina + 1, outRina.data() + 1, count, rinaUint8, comm), comm,
                  "rinaAllToAll of " + std::to_string(count) + " bytes per block" +
                      (memory ? " from rinaMemAlloc" : ""));
    if (memory) expectSuccess(rinaMemFree(memory), nullptr, "rinaMemFree");
    check(std::memcmp(outMpi.data(), outRina.data() + 1, bytes) == 0,
          "rinaAllToAll of " + std::to_string(count) +
              " bytes per block differs from "
              "PMPI_Alltoall");
  }
}

void rooted(rinaComm_t comm, int root) {
  const size_t count = 70001;
  std::vector<int32_t> ints = randomInts(count, 500 + rank * 13 + root);
  std::vector<float> x(count);
  for (size_t i = 0; i < count; ++i) x[i] = static_cast<float>(ints[i]);
  struct Op {
    rinaRedOp_t rina;
    MPI_Op mpi;
    const char* name;
  };
  for (const Op& o :
       {Op{rinaSum, MPI_SUM, "sum"}, Op{rinaMax, MPI_MAX, "max"}, Op{rinaMin, MPI_MIN, "min"}}) {
    const rinaRedOp_t op = o.rina;
    const MPI_Op mop = o.mpi;
    const char* name = o.name;
    std::vector<float> viaMpi(count, -1), viaRina(count, -2);
    PMPI_Reduce(x.data(), viaMpi.data(), static_cast<int>(count), MPI_FLOAT, mop, root,
                MPI_COMM_WORLD);
    expectSuccess(rinaReduce(x.data(), viaRina.data(), count, rinaFloat32, op, root, comm), comm,
                  std::string("rinaReduce ") + name);
    if (rank == root) {
      check(std::memcmp(viaMpi.data(), viaRina.data(), count * sizeof(float)) == 0,
            std::string("rinaReduce ") + name + " differs from PMPI_Reduce, root " +
                std::to_string(root));
    }
  }
  std::vector<int32_t> allMpi(count * nranks, -1), allRina(count * nranks, -2);
  PMPI_Gather(ints.data(), static_cast<int>(count), MPI_INT32_T, allMpi.data(),
              static_cast<int>(count), MPI_INT32_T, root, MPI_COMM_WORLD);
  expectSuccess(rinaGather(ints.data(), allRina.data(), count, rinaInt32, root, comm), comm,
                "rinaGather");
  if (rank == root) check(allMpi == allRina, "rinaGather differs from PMPI_Gather");
  std::vector<int32_t> blocks = randomInts(count * nranks, 700 + root);
  std::vector<int32_t> mineMpi(count, -1), mineRina(count, -2);
  PMPI_Scatter(blocks.data(), static_cast<int>(count), MPI_INT32_T, mineMpi.data(),
               static_cast<int>(count), MPI_INT32_T, root, MPI_COMM_WORLD);
  expectSuccess(rinaScatter(blocks.data(), mineRina.data(), count, rinaInt32, root, comm), comm,
                "rinaScatter");
  check(mineMpi == mineRina, "rinaScatter differs from PMPI_Scatter, root " + std::to_string(root));
}

// Random bytes (from randomInts).
std::vector<uint8_t> randomBytes(size_t n, uint32_t seed) {
  std::vector<int32_t> ints = randomInts(n / 4 + 1, seed);
  std::vector<uint8_t> v(n);
  std::memcpy(v.data(), ints.data(), n);
  return v;
}

// A ring exchange (send right, receive left) of each size through PMPI_Sendrecv
// and through a rina group; then blocking pairs (where a large message on
// this host is copied by both ranks). The sizes are every cut-over of the
// default point-to-point knobs and one byte either side; rina's buffers
// start one byte past an aligned address.
void pointToPoint(rinaComm_t comm) {
  if (nranks < 2) return;
  const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  for (size_t bytes :
       {size_t{1}, size_t{8}, size_t{56}, size_t{57}, size_t{4096}, size_t{32767}, size_t{32768},
        size_t{32769}, size_t{100000}, (size_t{1} << 20) - 1, size_t{1} << 20,
        (size_t{1} << 20) + 1, (size_t{4} << 20) - 1, size_t{4} << 20, (size_t{4} << 20) + 1}) {
    const std::vector<uint8_t> out = randomBytes(bytes, 1234 + rank + static_cast<uint32_t>(bytes));
    std::vector<uint8_t> outRina(bytes + 1), inRina(bytes + 1, 0xEE), viaMpi(bytes, 0xDD);
    std::copy(out.begin(), out.end(), outRina.begin() + 1);
    const int n = static_cast<int>(bytes);
    PMPI_Sendrecv(out.data(), n, MPI_BYTE, next, 5, viaMpi.data(), n, MPI_BYTE, prev, 5,
                  MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    rinaGroupStart();
    expectSuccess(rinaSend(outRina.data() + 1, bytes, rinaUint8, next, comm), comm, "rinaSend");
    expectSuccess(rinaRecv(inRina.data() + 1, bytes, rinaUint8, prev, comm), comm, "rinaRecv");
    expectSuccess(rinaGroupEnd(), comm, "rinaGroupEnd");
    check(std::equal(viaMpi.begin(), viaMpi.end(), inRina.begin() + 1),
          "ring of " + std::to_string(bytes) + " bytes differs from PMPI");
    // Blocking pairs: even ranks send first, odd ones receive first.
    const int partner = rank ^ 1;
    if (partner < nranks) {
      std::fill(inRina.begin(), inRina.end(), 0xEE);
      if (rank % 2 == 0) {
        expectSuccess(rinaSend(outRina.data() + 1, bytes, rinaUint8, partner, comm), comm,
                      "rinaSend");
        expectSuccess(rinaRecv(inRina.data() + 1, bytes, rinaUint8, partner, comm), comm,
                      "rinaRecv");
      } else {
        expectSuccess(rinaRecv(inRina.data() + 1, bytes, rinaUint8, partner, comm), comm,
                      "rinaRecv");
        expectSuccess(rinaSend(outRina.data() + 1, bytes, rinaUint8, partner, comm), comm,
                      "rinaSend");
      }
      std::vector<uint8_t> theirs(bytes);
      PMPI_Sendrecv(out.data(), n, MPI_BYTE, partner, 6, theirs.data(), n, MPI_BYTE, partner, 6,
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      check(std::equal(theirs.begin(), theirs.end(), inRina.begin() + 1),
            "blocking pair of " + std::to_string(bytes) + " bytes differs from PMPI");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  setenv("RINA_ALLTOALL_SLOT_BYTES", std::to_string(kSlotBytes).c_str(), 1);
  setenv("RINA_ALLTOALL_STREAM_BYTES", std::to_string(kStreamBytes).c_str(), 1);
  rinaComm_t comm = nullptr;
  const rinaResult_t rc = rinaMpiCommInit(MPI_COMM_WORLD, &comm);
  check(rc == rinaSuccess, std::string("rinaMpiCommInit: ") + rinaCommGetLastError(nullptr));
  if (rc == rinaSuccess) {
    for (int round = 0; round < 3; ++round) allToAllv(comm, round);
    allToAllCutOvers(comm, false);
    allToAllCutOvers(comm, true);
    for (int root = 0; root < nranks; ++root) rooted(comm, root);
    pointToPoint(comm);
    rinaCommDestroy(comm);
  }
  int total[2] = {checks, failures}, sum[2] = {0, 0};
  PMPI_Reduce(total, sum, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("exchange_vs_pmpi: %d ranks, %d checks, %d failures\n", nranks, sum[0], sum[1]);
  }
  MPI_Finalize();
  return failures ? 1 : 0;
}
