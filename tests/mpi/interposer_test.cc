// librina_mpi under mpirun: every call gives what the MPI library itself
// (PMPI_*) or a serial computation gives, and goes where it should (rina or
// PMPI, read back from the interposer's counters). Linked against
// librina_mpi before libmpi, so the program's MPI_* calls are interposed.
//
// interposer_test [--mode full|disabled|unavailable]
//   full:        every case (RINA_MPI_MIN_BYTES must be set to a plain number)
//   disabled:    RINA_MPI_DISABLE=1: every call is delegated, results right
//   unavailable: rina cannot be set up (bad RINA_SOCKET_IFNAME on some or all
//                ranks): delegated
// Rank 0 prints "interposer_test: N checks, 0 failures" and the exit code is 0
// only when no rank failed a check.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "rina/rina_mpi.h"

namespace {

int worldRank = 0;
int worldSize = 1;
int checks = 0;
int failures = 0;

void check(bool ok, const std::string& what) {
  ++checks;
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "FAIL rank %d: %s\n", worldRank, what.c_str());
  }
}

size_t thresholdBytes() {
  const char* v = std::getenv("RINA_MPI_MIN_BYTES");
  return v ? static_cast<size_t>(std::strtoull(v, nullptr, 10)) : size_t{64} << 10;
}

rinaMpiCommStats statsOf(MPI_Comm comm) {
  rinaMpiCommStats s{};
  int rc = rinaMpiGetCommStats(comm, &s);
  check(rc == MPI_SUCCESS, "rinaMpiGetCommStats returned " + std::to_string(rc));
  return s;
}

// Runs call() and checks that exactly one call was handled (reason < 0) or
// delegated for that reason on comm.
void expectRoute(MPI_Comm comm, int reason, const std::string& what,
                 const std::function<void()>& call) {
  rinaMpiCommStats before = statsOf(comm);
  call();
  rinaMpiCommStats after = statsOf(comm);
  if (reason < 0) {
    check(after.handledCalls == before.handledCalls + 1 &&
              after.delegatedCalls == before.delegatedCalls,
          what + ": expected rina to handle it");
  } else {
    check(after.delegatedCalls == before.delegatedCalls + 1 &&
              after.delegatedBy[reason] == before.delegatedBy[reason] + 1 &&
              after.handledCalls == before.handledCalls,
          what + ": expected delegation for " + rinaMpiDelegateReasonName(reason));
  }
}

// ---- every predefined datatype x op against PMPI_Allreduce ----

enum class Kind { kSigned, kUnsigned, kFloat, kOther };

struct TypeCase {
  MPI_Datatype type;
  const char* name;
  Kind kind;
  bool rinaHas;  // a type rina reduces (else delegated for its datatype)
};

// Small integral inputs every type holds, so that sums and products stay
// exact and in range: the reference and rina must agree bit for bit.
int64_t inputValue(int rank, size_t i, MPI_Op op, Kind kind) {
  if (op == MPI_PROD) {
    int64_t magnitude = ((static_cast<size_t>(rank) + i) % 3 == 0) ? 2 : 1;
    bool negative = kind != Kind::kUnsigned && (static_cast<size_t>(rank) * 3 + i) % 5 == 1;
    return negative ? -magnitude : magnitude;
  }
  int64_t v = static_cast<int64_t>((i * 7 + static_cast<size_t>(rank) * 13) % 11);
  return kind == Kind::kUnsigned ? v : v - 5;
}

template <typename T>
void fillTyped(void* buf, size_t count, int rank, MPI_Op op, Kind kind) {
  T* p = static_cast<T*>(buf);
  for (size_t i = 0; i < count; ++i) p[i] = static_cast<T>(inputValue(rank, i, op, kind));
}

void fill(const TypeCase& t, void* buf, size_t count, int rank, MPI_Op op) {
  int size = 0;
  MPI_Type_size(t.type, &size);
  if (t.kind == Kind::kFloat) {
    if (size == 4) return fillTyped<float>(buf, count, rank, op, t.kind);
    if (size == 8) return fillTyped<double>(buf, count, rank, op, t.kind);
    return fillTyped<long double>(buf, count, rank, op, t.kind);
  }
  if (size == 1) return fillTyped<int8_t>(buf, count, rank, op, t.kind);
  if (size == 2) return fillTyped<int16_t>(buf, count, rank, op, t.kind);
  if (size == 4) return fillTyped<int32_t>(buf, count, rank, op, t.kind);
  return fillTyped<int64_t>(buf, count, rank, op, t.kind);
}

std::vector<TypeCase> typeCases() {
  return {
      {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", Kind::kSigned, true},
      {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", Kind::kUnsigned, true},
      {MPI_SHORT, "MPI_SHORT", Kind::kSigned, false},
      {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", Kind::kUnsigned, false},
      {MPI_INT, "MPI_INT", Kind::kSigned, true},
      {MPI_UNSIGNED, "MPI_UNSIGNED", Kind::kUnsigned, true},
      {MPI_LONG, "MPI_LONG", Kind::kSigned, true},
      {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", Kind::kUnsigned, true},
      {MPI_LONG_LONG, "MPI_LONG_LONG", Kind::kSigned, true},
      {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", Kind::kUnsigned, true},
      {MPI_INT8_T, "MPI_INT8_T", Kind::kSigned, true},
      {MPI_UINT8_T, "MPI_UINT8_T", Kind::kUnsigned, true},
      {MPI_INT16_T, "MPI_INT16_T", Kind::kSigned, false},
      {MPI_INT32_T, "MPI_INT32_T", Kind::kSigned, true},
      {MPI_UINT32_T, "MPI_UINT32_T", Kind::kUnsigned, true},
      {MPI_INT64_T, "MPI_INT64_T", Kind::kSigned, true},
      {MPI_UINT64_T, "MPI_UINT64_T", Kind::kUnsigned, true},
      {MPI_AINT, "MPI_AINT", Kind::kSigned, true},
      {MPI_FLOAT, "MPI_FLOAT", Kind::kFloat, true},
      {MPI_DOUBLE, "MPI_DOUBLE", Kind::kFloat, true},
      {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", Kind::kFloat, false},
      {MPI_INTEGER, "MPI_INTEGER", Kind::kSigned, true},
      {MPI_INTEGER8, "MPI_INTEGER8", Kind::kSigned, true},
      {MPI_REAL, "MPI_REAL", Kind::kFloat, true},
      {MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", Kind::kFloat, true},
      {MPI_REAL8, "MPI_REAL8", Kind::kFloat, true},
  };
}

// forcedReason >= 0: every call must be delegated for that reason.
void testTypesAndOps(MPI_Comm comm, int forcedReason) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const struct {
    MPI_Op op;
    const char* name;
  } ops[] = {{MPI_SUM, "SUM"}, {MPI_PROD, "PROD"}, {MPI_MIN, "MIN"}, {MPI_MAX, "MAX"}};
  const size_t threshold = thresholdBytes();
  for (const TypeCase& t : typeCases()) {
    int size = 0;
    MPI_Type_size(t.type, &size);
    // 1 element, one just below 4 KiB, and one past the ring's small-message
    // switch (128 KiB), with an odd count so chunks do not divide evenly.
    const size_t counts[] = {1, 4093 / static_cast<size_t>(size),
                             (300 * 1024 + 7) / static_cast<size_t>(size)};
    for (const auto& o : ops) {
      for (size_t count : counts) {
        const size_t bytes = count * static_cast<size_t>(size);
        std::vector<char> send(bytes), got(bytes), want(bytes);
        fill(t, send.data(), count, rank, o.op);
        std::string what =
            std::string("allreduce ") + t.name + " " + o.name + " count " + std::to_string(count);
        int reason = -1;
        if (forcedReason >= 0)
          reason = forcedReason;
        else if (!t.rinaHas)
          reason = rinaMpiDatatype;
        else if (bytes < threshold)
          reason = rinaMpiBelowThreshold;
        auto call = [&] {
          int rc =
              MPI_Allreduce(send.data(), got.data(), static_cast<int>(count), t.type, o.op, comm);
          check(rc == MPI_SUCCESS, what + ": rc " + std::to_string(rc));
        };
        expectRoute(comm, reason, what, call);
        PMPI_Allreduce(send.data(), want.data(), static_cast<int>(count), t.type, o.op, comm);
        check(std::memcmp(got.data(), want.data(), bytes) == 0, what + ": differs from PMPI");
      }
    }
  }
}

// ---- random floats: identical on every rank, close to PMPI ----

template <typename T>
void testRandomFloats(MPI_Comm comm, MPI_Datatype type, const char* name) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const size_t count = 100003;
  std::mt19937 gen(1234u + static_cast<unsigned>(rank));
  std::uniform_real_distribution<T> dist(-1, 1);
  std::vector<T> send(count), got(count), want(count), root(count);
  for (T& v : send) v = dist(gen);
  int rc = MPI_Allreduce(send.data(), got.data(), static_cast<int>(count), type, MPI_SUM, comm);
  check(rc == MPI_SUCCESS, std::string("random ") + name + ": rc");
  root = got;
  PMPI_Bcast(root.data(), static_cast<int>(count * sizeof(T)), MPI_BYTE, 0, comm);
  check(std::memcmp(root.data(), got.data(), count * sizeof(T)) == 0,
        std::string("random ") + name + ": results not bitwise identical across ranks");
  PMPI_Allreduce(send.data(), want.data(), static_cast<int>(count), type, MPI_SUM, comm);
  size_t far = 0;
  for (size_t i = 0; i < count; ++i) {
    if (std::fabs(static_cast<double>(got[i] - want[i])) > 1e-4) ++far;
  }
  check(far == 0, std::string("random ") + name + ": " + std::to_string(far) +
                      " elements far from PMPI's sum");
}

// ---- MPI_IN_PLACE for the three collectives ----

void testInPlace(MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const size_t count = 50001;
  std::vector<int32_t> mine(count), want(count);
  for (size_t i = 0; i < count; ++i) mine[i] = static_cast<int32_t>(i % 1000) * (rank + 1);
  std::vector<int32_t> buf = mine;
  expectRoute(comm, -1, "allreduce in place", [&] {
    MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(count), MPI_INT, MPI_SUM, comm);
  });
  PMPI_Allreduce(mine.data(), want.data(), static_cast<int>(count), MPI_INT, MPI_SUM, comm);
  check(buf == want, "allreduce in place: differs from PMPI");

  // Reduce_scatter_block: every rank gives size blocks, gets its block.
  const size_t block = 20011;
  std::vector<float> whole(block * static_cast<size_t>(size));
  for (size_t i = 0; i < whole.size(); ++i) whole[i] = static_cast<float>((i % 97) + rank);
  std::vector<float> got(block), ref(block);
  expectRoute(comm, -1, "reduce_scatter_block", [&] {
    MPI_Reduce_scatter_block(whole.data(), got.data(), static_cast<int>(block), MPI_FLOAT, MPI_SUM,
                             comm);
  });
  PMPI_Reduce_scatter_block(whole.data(), ref.data(), static_cast<int>(block), MPI_FLOAT, MPI_SUM,
                            comm);
  check(got == ref, "reduce_scatter_block: differs from PMPI");
  std::vector<float> inplace = whole;
  expectRoute(comm, -1, "reduce_scatter_block in place", [&] {
    MPI_Reduce_scatter_block(MPI_IN_PLACE, inplace.data(), static_cast<int>(block), MPI_FLOAT,
                             MPI_SUM, comm);
  });
  check(std::memcmp(inplace.data(), ref.data(), block * sizeof(float)) == 0,
        "reduce_scatter_block in place: first block differs from PMPI");

  // Allgather, out of place and in place.
  std::vector<double> part(block), all(block * static_cast<size_t>(size)),
      allRef(block * static_cast<size_t>(size));
  for (size_t i = 0; i < block; ++i)
    part[i] = static_cast<double>(rank) * 1e6 + static_cast<double>(i);
  expectRoute(comm, -1, "allgather", [&] {
    MPI_Allgather(part.data(), static_cast<int>(block), MPI_DOUBLE, all.data(),
                  static_cast<int>(block), MPI_DOUBLE, comm);
  });
  PMPI_Allgather(part.data(), static_cast<int>(block), MPI_DOUBLE, allRef.data(),
                 static_cast<int>(block), MPI_DOUBLE, comm);
  check(all == allRef, "allgather: differs from PMPI");
  std::vector<double> allInPlace(all.size(), -1.0);
  std::memcpy(allInPlace.data() + static_cast<size_t>(rank) * block, part.data(),
              block * sizeof(double));
  expectRoute(comm, -1, "allgather in place", [&] {
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, allInPlace.data(), static_cast<int>(block),
                  MPI_DOUBLE, comm);
  });
  check(allInPlace == allRef, "allgather in place: differs from PMPI");
  // Send and receive described differently, the same bytes: rina's.
  std::vector<double> allBytes(all.size());
  expectRoute(comm, -1, "allgather MPI_BYTE send, MPI_DOUBLE receive", [&] {
    MPI_Allgather(part.data(), static_cast<int>(block * sizeof(double)), MPI_BYTE, allBytes.data(),
                  static_cast<int>(block), MPI_DOUBLE, comm);
  });
  check(allBytes == allRef, "allgather MPI_BYTE send: differs from PMPI");
}

// ---- communicators: split, dup, free and re-create ----

// A large int32 sum on comm, checked against a serial sum over the world
// ranks in it (given by members).
void checkedSum(MPI_Comm comm, const std::vector<int>& members, int reason,
                const std::string& what) {
  const size_t count = 40009;
  std::vector<int32_t> send(count), got(count);
  for (size_t i = 0; i < count; ++i) send[i] = static_cast<int32_t>(i % 501) + 1000 * worldRank;
  expectRoute(comm, reason, what, [&] {
    MPI_Allreduce(send.data(), got.data(), static_cast<int>(count), MPI_INT, MPI_SUM, comm);
  });
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    int64_t want = 0;
    for (int r : members) want += static_cast<int64_t>(i % 501) + 1000 * r;
    if (got[i] != want) ++wrong;
  }
  check(wrong == 0, what + ": " + std::to_string(wrong) + " elements differ from a serial sum");
}

void testCommunicators() {
  // Odd/even with reversed keys: the sub-communicator's rank order is the
  // reverse of the world's.
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, worldRank % 2, -worldRank, &half);
  std::vector<int> members;
  for (int r = worldSize - 1; r >= 0; --r) {
    if (r % 2 == worldRank % 2) members.push_back(r);
  }
  int halfRank = -1;
  MPI_Comm_rank(half, &halfRank);
  check(members[static_cast<size_t>(halfRank)] == worldRank, "split: reversed key order");
  checkedSum(half, members, members.size() > 1 ? -1 : static_cast<int>(rinaMpiSingleRank),
             "split odd/even");
  MPI_Comm_free(&half);

  std::vector<int> everyone;
  for (int r = 0; r < worldSize; ++r) everyone.push_back(r);
  for (int round = 0; round < 4; ++round) {
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    rinaMpiCommStats fresh = statsOf(dup);
    check(fresh.handledCalls == 0 && fresh.delegatedCalls == 0,
          "dup round " + std::to_string(round) + ": a new communicator starts with no counts");
    checkedSum(dup, everyone, -1, "dup round " + std::to_string(round));
    checkedSum(dup, everyone, -1, "dup round " + std::to_string(round) + " again");
    MPI_Comm_free(&dup);
  }
}

// ---- what goes to PMPI: intercomm, user ops, derived and pair types ----

void testIntercomm() {
  MPI_Comm local;
  const int color = worldRank % 2;
  MPI_Comm_split(MPI_COMM_WORLD, color, worldRank, &local);
  MPI_Comm inter;
  // Leaders: world rank 0 (even group) and world rank 1 (odd group).
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 77, &inter);
  const size_t count = 30011;
  std::vector<int64_t> send(count), got(count);
  for (size_t i = 0; i < count; ++i) send[i] = static_cast<int64_t>(i) * (worldRank + 1);
  expectRoute(inter, rinaMpiIntercomm, "intercomm allreduce", [&] {
    MPI_Allreduce(send.data(), got.data(), static_cast<int>(count), MPI_INT64_T, MPI_SUM, inter);
  });
  // Each side receives the reduction of the other side's contributions.
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    int64_t want = 0;
    for (int r = 0; r < worldSize; ++r) {
      if (r % 2 != color) want += static_cast<int64_t>(i) * (r + 1);
    }
    if (got[i] != want) ++wrong;
  }
  check(wrong == 0, "intercomm allreduce: " + std::to_string(wrong) + " elements wrong");
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
}

// 2x2 integer matrices multiplied modulo a prime: associative, not
// commutative, so a wrong order shows.
constexpr int64_t kModulus = 1009;

void matmulOp(void* in, void* inout, int* len, MPI_Datatype*) {
  const int64_t* a = static_cast<const int64_t*>(in);
  int64_t* b = static_cast<int64_t*>(inout);
  for (int k = 0; k < *len; ++k, a += 4, b += 4) {
    // inout = in x inout (in comes from the lower ranks).
    int64_t r[4] = {(a[0] * b[0] + a[1] * b[2]) % kModulus, (a[0] * b[1] + a[1] * b[3]) % kModulus,
                    (a[2] * b[0] + a[3] * b[2]) % kModulus, (a[2] * b[1] + a[3] * b[3]) % kModulus};
    std::memcpy(b, r, sizeof r);
  }
}

// User sums: over MPI_INT, and over the vector type below (3 ints at
// stride 2, extent 5 ints; MPI passes elements in the type's layout).
void intSumOp(void* in, void* inout, int* len, MPI_Datatype*) {
  const int* a = static_cast<const int*>(in);
  int* b = static_cast<int*>(inout);
  for (int i = 0; i < *len; ++i) b[i] += a[i];
}

void vectorSumOp(void* in, void* inout, int* len, MPI_Datatype*) {
  const int* a = static_cast<const int*>(in);
  int* b = static_cast<int*>(inout);
  for (int k = 0; k < *len; ++k) {
    for (int j = 0; j < 6; j += 2) b[5 * k + j] += a[5 * k + j];
  }
}

void testUserOpAndDerivedTypes() {
  const int kMatrices = 5000;  // 160 KB: above any test threshold
  MPI_Datatype matrix;
  MPI_Type_contiguous(4, MPI_INT64_T, &matrix);
  MPI_Type_commit(&matrix);
  MPI_Op matmul;
  MPI_Op_create(matmulOp, 0, &matmul);
  auto entry = [](int rank, int k, int j) {
    return static_cast<int64_t>((rank * 31 + k * 7 + j * 3) % 17 + 1);
  };
  std::vector<int64_t> send(4 * kMatrices), got(4 * kMatrices);
  for (int k = 0; k < kMatrices; ++k) {
    for (int j = 0; j < 4; ++j) send[4 * static_cast<size_t>(k) + j] = entry(worldRank, k, j);
  }
  expectRoute(MPI_COMM_WORLD, rinaMpiUserOp, "non-commutative user op", [&] {
    MPI_Allreduce(send.data(), got.data(), kMatrices, matrix, matmul, MPI_COMM_WORLD);
  });
  size_t wrong = 0;
  for (int k = 0; k < kMatrices; ++k) {
    int64_t acc[4] = {entry(0, k, 0), entry(0, k, 1), entry(0, k, 2), entry(0, k, 3)};
    for (int r = 1; r < worldSize; ++r) {
      int64_t m[4] = {entry(r, k, 0), entry(r, k, 1), entry(r, k, 2), entry(r, k, 3)};
      int64_t p[4] = {
          (acc[0] * m[0] + acc[1] * m[2]) % kModulus, (acc[0] * m[1] + acc[1] * m[3]) % kModulus,
          (acc[2] * m[0] + acc[3] * m[2]) % kModulus, (acc[2] * m[1] + acc[3] * m[3]) % kModulus};
      std::memcpy(acc, p, sizeof p);
    }
    if (std::memcmp(acc, &got[4 * static_cast<size_t>(k)], sizeof acc) != 0) ++wrong;
  }
  check(wrong == 0, "non-commutative user op: " + std::to_string(wrong) +
                        " products wrong (rank order not kept)");
  MPI_Op_free(&matmul);
  MPI_Type_free(&matrix);

  // A vector type (every other int) with a user sum (MPI defines predefined
  // ops on predefined types only): the gaps must stay untouched.
  MPI_Op vectorSum;
  MPI_Op_create(vectorSumOp, 1, &vectorSum);
  MPI_Datatype strided;
  MPI_Type_vector(3, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  const int kVectors = 20000;
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(strided, &lb, &extent);
  const size_t ints = static_cast<size_t>(extent / static_cast<MPI_Aint>(sizeof(int))) * kVectors;
  std::vector<int> vin(ints), vout(ints, -7);
  for (size_t i = 0; i < ints; ++i) vin[i] = static_cast<int>(i % 101) + worldRank;
  expectRoute(MPI_COMM_WORLD, rinaMpiUserOp, "vector derived type, user op", [&] {
    MPI_Allreduce(vin.data(), vout.data(), kVectors, strided, vectorSum, MPI_COMM_WORLD);
  });
  const size_t stride = ints / kVectors;
  check(stride == 5, "vector type extent is 5 ints");
  size_t bad = 0;
  for (size_t i = 0; i < ints; ++i) {
    const size_t within = i % stride;
    const bool data = within % 2 == 0 && within / 2 < 3;
    const int want =
        data ? static_cast<int>(i % 101) * worldSize + worldSize * (worldSize - 1) / 2 : -7;
    if (vout[i] != want) ++bad;
  }
  check(bad == 0, "vector derived type: " + std::to_string(bad) + " ints wrong (data or gaps)");
  MPI_Type_free(&strided);
  MPI_Op_free(&vectorSum);
  MPI_Op userSum;
  MPI_Op_create(intSumOp, 1, &userSum);

  // A commutative user op on a predefined type.
  std::vector<int> uin(30000), uout(30000);
  for (size_t i = 0; i < uin.size(); ++i) uin[i] = static_cast<int>(i % 77) - worldRank;
  expectRoute(MPI_COMM_WORLD, rinaMpiUserOp, "commutative user op on MPI_INT", [&] {
    MPI_Allreduce(uin.data(), uout.data(), static_cast<int>(uin.size()), MPI_INT, userSum,
                  MPI_COMM_WORLD);
  });
  size_t badSums = 0;
  for (size_t i = 0; i < uin.size(); ++i) {
    if (uout[i] != static_cast<int>(i % 77) * worldSize - worldSize * (worldSize - 1) / 2)
      ++badSums;
  }
  check(badSums == 0, "commutative user op: " + std::to_string(badSums) + " ints wrong");
  MPI_Op_free(&userSum);

  // A pair type with MAXLOC.
  struct DoubleInt {
    double value;
    int index;
  };
  const int kPairs = 20000;
  std::vector<DoubleInt> pin(kPairs), pout(kPairs);
  for (int i = 0; i < kPairs; ++i) {
    pin[static_cast<size_t>(i)] = {static_cast<double>((i + worldRank * 7) % worldSize), worldRank};
  }
  expectRoute(MPI_COMM_WORLD, rinaMpiDatatype, "MPI_DOUBLE_INT MAXLOC", [&] {
    MPI_Allreduce(pin.data(), pout.data(), kPairs, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
  });
  size_t badPairs = 0;
  for (int i = 0; i < kPairs; ++i) {
    double best = -1;
    int where = -1;
    for (int r = 0; r < worldSize; ++r) {
      double v = static_cast<double>((i + r * 7) % worldSize);
      if (v > best) best = v, where = r;  // ties keep the lowest rank
    }
    const DoubleInt& g = pout[static_cast<size_t>(i)];
    if (g.value != best || g.index != where) ++badPairs;
  }
  check(badPairs == 0, "MPI_DOUBLE_INT MAXLOC: " + std::to_string(badPairs) + " pairs wrong");

  // Logical and bitwise ops on int.
  const int kBits = 40000;
  std::vector<int> bin(kBits), bout(kBits);
  for (int i = 0; i < kBits; ++i) bin[static_cast<size_t>(i)] = (i + worldRank) & 0xff;
  expectRoute(MPI_COMM_WORLD, rinaMpiOp, "MPI_BOR", [&] {
    MPI_Allreduce(bin.data(), bout.data(), kBits, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
  });
  size_t badBits = 0;
  for (int i = 0; i < kBits; ++i) {
    int want = 0;
    for (int r = 0; r < worldSize; ++r) want |= (i + r) & 0xff;
    if (bout[static_cast<size_t>(i)] != want) ++badBits;
  }
  check(badBits == 0, "MPI_BOR: " + std::to_string(badBits) + " ints wrong");
}

int handlerCalls = 0;
int handlerCode = MPI_SUCCESS;

void recordError(MPI_Comm*, int* code, ...) {
  ++handlerCalls;
  handlerCode = *code;
}

// ---- derived datatypes with predefined ops: by their elements ----

// Whether the decision and the result follow the elements, not the layout:
// contiguous derived types go straight to rina, types with gaps through a
// packed copy (gaps untouched), checked against the MPI library on the same
// elements described as predefined types.
void testDerivedTypesByElements(MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int k = 20011;  // instances; odd so chunks do not divide evenly

  // Three doubles per instance, contiguous: float64 x 3k, exact integers.
  MPI_Datatype triple;
  MPI_Type_contiguous(3, MPI_DOUBLE, &triple);
  MPI_Type_commit(&triple);
  std::vector<double> d(3 * static_cast<size_t>(k)), dGot(d.size()), dRef(d.size());
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<double>((i * 31 + rank * 7) % 1000);
  expectRoute(comm, -1, "contiguous(3 MPI_DOUBLE) sum",
              [&] { MPI_Allreduce(d.data(), dGot.data(), k, triple, MPI_SUM, comm); });
  PMPI_Allreduce(d.data(), dRef.data(), 3 * k, MPI_DOUBLE, MPI_SUM, comm);
  check(dGot == dRef, "contiguous(3 MPI_DOUBLE) sum: differs from PMPI on MPI_DOUBLE x 3k");
  MPI_Type_free(&triple);

  // Two ints in every three (a gap after each pair), max; in place too.
  MPI_Datatype pairs;
  MPI_Type_vector(k, 2, 3, MPI_INT, &pairs);
  MPI_Type_commit(&pairs);
  std::vector<int> v(3 * static_cast<size_t>(k)), vGot(v.size(), -9),
      plain(2 * static_cast<size_t>(k)), ref(plain.size());
  for (int p = 0; p < k; ++p) {
    for (int j = 0; j < 2; ++j) {
      const int value = (p * 13 + j * 5 + rank * 101) % 4099 - 2000;
      v[3 * static_cast<size_t>(p) + j] = value;
      plain[2 * static_cast<size_t>(p) + j] = value;
    }
    v[3 * static_cast<size_t>(p) + 2] = 12345;
  }
  PMPI_Allreduce(plain.data(), ref.data(), 2 * k, MPI_INT, MPI_MAX, comm);
  auto checkPairs = [&](const std::vector<int>& got, int gapValue, const std::string& what) {
    size_t wrong = 0, gaps = 0;
    for (int p = 0; p < k; ++p) {
      for (int j = 0; j < 2; ++j)
        wrong += got[3 * static_cast<size_t>(p) + j] != ref[2 * static_cast<size_t>(p) + j];
      gaps += got[3 * static_cast<size_t>(p) + 2] != gapValue;
    }
    check(wrong == 0, what + ": " + std::to_string(wrong) + " elements differ from PMPI");
    check(gaps == 0, what + ": " + std::to_string(gaps) + " gaps written");
  };
  expectRoute(comm, -1, "vector with gaps max",
              [&] { MPI_Allreduce(v.data(), vGot.data(), 1, pairs, MPI_MAX, comm); });
  checkPairs(vGot, -9, "vector with gaps max");
  std::vector<int> vInPlace = v;
  expectRoute(comm, -1, "vector with gaps max in place",
              [&] { MPI_Allreduce(MPI_IN_PLACE, vInPlace.data(), 1, pairs, MPI_MAX, comm); });
  checkPairs(vInPlace, 12345, "vector with gaps max in place");
  MPI_Type_free(&pairs);

  // Reduce_scatter_block over blocks of (contiguous pair) and (gapped pair).
  const int perBlock = 5003;
  MPI_Datatype pair, gappedPair;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  MPI_Type_vector(1, 2, 2, MPI_INT, &gappedPair);  // 2 ints, then resized: a gap of one
  MPI_Datatype spaced;
  MPI_Type_create_resized(gappedPair, 0, 3 * sizeof(int), &spaced);
  MPI_Type_commit(&spaced);
  const size_t elems = 2 * static_cast<size_t>(perBlock) * size;
  std::vector<int> whole(elems), mine(2 * static_cast<size_t>(perBlock), -9), mineRef(mine.size());
  for (size_t i = 0; i < elems; ++i) whole[i] = static_cast<int>((i * 7 + rank) % 3001);
  expectRoute(comm, -1, "reduce_scatter_block contiguous(2 MPI_INT)", [&] {
    MPI_Reduce_scatter_block(whole.data(), mine.data(), perBlock, pair, MPI_SUM, comm);
  });
  PMPI_Reduce_scatter_block(whole.data(), mineRef.data(), 2 * perBlock, MPI_INT, MPI_SUM, comm);
  check(mine == mineRef, "reduce_scatter_block contiguous(2 MPI_INT): differs from PMPI");
  std::vector<int> spacedWhole(3 * elems / 2, 777);
  for (size_t p = 0; p < elems / 2; ++p) {
    spacedWhole[3 * p] = whole[2 * p];
    spacedWhole[3 * p + 1] = whole[2 * p + 1];
  }
  std::vector<int> spacedMine(3 * static_cast<size_t>(perBlock), -9);
  expectRoute(comm, -1, "reduce_scatter_block pairs with gaps", [&] {
    MPI_Reduce_scatter_block(spacedWhole.data(), spacedMine.data(), perBlock, spaced, MPI_SUM,
                             comm);
  });
  size_t wrong = 0, gaps = 0;
  for (int p = 0; p < perBlock; ++p) {
    for (int j = 0; j < 2; ++j)
      wrong +=
          spacedMine[3 * static_cast<size_t>(p) + j] != mineRef[2 * static_cast<size_t>(p) + j];
    gaps += spacedMine[3 * static_cast<size_t>(p) + 2] != -9;
  }
  check(wrong == 0 && gaps == 0, "reduce_scatter_block pairs with gaps: " + std::to_string(wrong) +
                                     " wrong, " + std::to_string(gaps) + " gaps written");
  expectRoute(comm, -1, "reduce_scatter_block pairs with gaps in place", [&] {
    MPI_Reduce_scatter_block(MPI_IN_PLACE, spacedWhole.data(), perBlock, spaced, MPI_SUM, comm);
  });
  wrong = gaps = 0;
  for (int p = 0; p < perBlock; ++p) {
    for (int j = 0; j < 2; ++j)
      wrong +=
          spacedWhole[3 * static_cast<size_t>(p) + j] != mineRef[2 * static_cast<size_t>(p) + j];
    gaps += spacedWhole[3 * static_cast<size_t>(p) + 2] != 777;
  }
  check(wrong == 0 && gaps == 0,
        "reduce_scatter_block pairs with gaps in place: " + std::to_string(wrong) + " wrong, " +
            std::to_string(gaps) + " gaps written");
  MPI_Type_free(&pair);
  MPI_Type_free(&gappedPair);
  MPI_Type_free(&spaced);

  // Allgather of a pair type with padding (MPI_DOUBLE_INT: 12 bytes of data
  // in 16), out of place and in place, against PMPI.
  struct DoubleInt {
    double value;
    int index;
  };
  const int n = 3001;
  std::vector<DoubleInt> part(n), all(static_cast<size_t>(n) * size), allRef(all.size());
  for (int i = 0; i < n; ++i) part[static_cast<size_t>(i)] = {rank * 1e5 + i, rank - i};
  expectRoute(comm, -1, "allgather MPI_DOUBLE_INT", [&] {
    MPI_Allgather(part.data(), n, MPI_DOUBLE_INT, all.data(), n, MPI_DOUBLE_INT, comm);
  });
  PMPI_Allgather(part.data(), n, MPI_DOUBLE_INT, allRef.data(), n, MPI_DOUBLE_INT, comm);
  size_t bad = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    bad += all[i].value != allRef[i].value || all[i].index != allRef[i].index;
  }
  check(bad == 0, "allgather MPI_DOUBLE_INT: " + std::to_string(bad) + " pairs differ from PMPI");
  std::vector<DoubleInt> inPlace(all.size(), DoubleInt{-1, -1});
  std::copy(part.begin(), part.end(), inPlace.begin() + static_cast<ptrdiff_t>(rank) * n);
  expectRoute(comm, -1, "allgather MPI_DOUBLE_INT in place", [&] {
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, inPlace.data(), n, MPI_DOUBLE_INT, comm);
  });
  bad = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    bad += inPlace[i].value != allRef[i].value || inPlace[i].index != allRef[i].index;
  }
  check(bad == 0, "allgather MPI_DOUBLE_INT in place: " + std::to_string(bad) + " pairs differ");
}

// ---- erroneous layouts: the error handler, on every rank, no waiting ----

void testLayoutErrors() {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Errhandler handler;
  MPI_Comm_create_errhandler(recordError, &handler);
  MPI_Comm_set_errhandler(comm, handler);
  const int n = 5000;
  std::vector<double> part(n, 1.0), all(static_cast<size_t>(n) * worldSize);
  // Sending fewer bytes than every rank receives from it: erroneous.
  handlerCalls = 0;
  int rc = MPI_Allgather(part.data(), n - 1, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, comm);
  check(rc == MPI_ERR_TYPE && handlerCalls == 1 && handlerCode == MPI_ERR_TYPE,
        "allgather send bytes != receive block: rc " + std::to_string(rc) + ", handler calls " +
            std::to_string(handlerCalls));
  MPI_Comm_free(&comm);

  // A type with gaps that was never committed: MPI refuses to pack it.
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, handler);
  MPI_Datatype uncommitted;
  MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &uncommitted);
  std::vector<double> strided(2 * static_cast<size_t>(n), 1.0), out(strided.size());
  handlerCalls = 0;
  rc = MPI_Allreduce(strided.data(), out.data(), 1, uncommitted, MPI_SUM, comm);
  check(rc == MPI_ERR_TYPE && handlerCalls >= 1 && handlerCode == MPI_ERR_TYPE,
        "allreduce of an uncommitted type with gaps: rc " + std::to_string(rc));
  MPI_Comm_free(&comm);

  // Receiving into it: rina gathers, MPI refuses to unpack.
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, handler);
  std::vector<double> gathered(2 * static_cast<size_t>(n) * worldSize);
  handlerCalls = 0;
  rc = MPI_Allgather(part.data(), n, MPI_DOUBLE, gathered.data(), 1, uncommitted, comm);
  check(rc == MPI_ERR_TYPE && handlerCalls >= 1 && handlerCode == MPI_ERR_TYPE,
        "allgather into an uncommitted type with gaps: rc " + std::to_string(rc));
  MPI_Comm_free(&comm);
  MPI_Type_free(&uncommitted);
  MPI_Errhandler_free(&handler);
}

// ---- nonblocking: not interposed, so the MPI library runs it ----

void testNonblocking() {
  const size_t count = 50000;
  std::vector<int32_t> send(count), got(count);
  for (size_t i = 0; i < count; ++i) send[i] = static_cast<int32_t>(i % 300) * (worldRank + 1);
  rinaMpiCommStats before = statsOf(MPI_COMM_WORLD);
  MPI_Request request;
  MPI_Iallreduce(send.data(), got.data(), static_cast<int>(count), MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                 &request);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  rinaMpiCommStats after = statsOf(MPI_COMM_WORLD);
  check(after.handledCalls == before.handledCalls && after.delegatedCalls == before.delegatedCalls,
        "MPI_Iallreduce reached the interposer");
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    if (got[i] != static_cast<int32_t>(i % 300) * worldSize * (worldSize + 1) / 2) ++wrong;
  }
  check(wrong == 0,
        "MPI_Iallreduce: " + std::to_string(wrong) + " elements differ from a serial sum");
}

// ---- counts 0 and 64 MiB ----

void testCounts() {
  int untouched = 12345;
  int dummy = 1;
  expectRoute(MPI_COMM_WORLD, rinaMpiCountZero, "count 0", [&] {
    int rc = MPI_Allreduce(&dummy, &untouched, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check(rc == MPI_SUCCESS, "count 0: rc " + std::to_string(rc));
  });
  check(untouched == 12345, "count 0: receive buffer written");

  const size_t count = size_t{16} << 20;  // 64 MiB of float
  std::vector<float> big(count);
  for (size_t i = 0; i < count; ++i) big[i] = static_cast<float>(i % 4096) + worldRank;
  expectRoute(MPI_COMM_WORLD, -1, "64 MiB in place", [&] {
    MPI_Allreduce(MPI_IN_PLACE, big.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
  });
  const float ranksSum = static_cast<float>(worldSize * (worldSize - 1) / 2);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    if (big[i] != static_cast<float>(i % 4096) * static_cast<float>(worldSize) + ranksSum) ++wrong;
  }
  check(wrong == 0, "64 MiB: " + std::to_string(wrong) + " elements differ from a serial sum");
}

// ---- MPI_THREAD_MULTIPLE: two threads, each on its own communicator ----

void testThreads(int provided) {
  if (provided < MPI_THREAD_MULTIPLE) {
    if (worldRank == 0) std::printf("interposer_test: MPI_THREAD_MULTIPLE not provided\n");
    check(false, "MPI_THREAD_MULTIPLE not provided by the MPI library");
    return;
  }
  MPI_Comm comms[2];
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
  std::vector<int> everyone;
  for (int r = 0; r < worldSize; ++r) everyone.push_back(r);
  std::thread threads[2];
  for (int t = 0; t < 2; ++t) {
    threads[t] = std::thread([&, t] {
      for (int round = 0; round < 3; ++round) {
        checkedSum(comms[t], everyone, -1,
                   "thread " + std::to_string(t) + " round " + std::to_string(round));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  MPI_Comm_free(&comms[0]);
  MPI_Comm_free(&comms[1]);
}

// ---- a failing rina call reaches the communicator's error handler ----

void testErrorHandler() {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Errhandler handler;
  MPI_Comm_create_errhandler(recordError, &handler);
  MPI_Comm_set_errhandler(comm, handler);
  // Counts that differ across ranks (an erroneous program, but one rina
  // detects): every rank's call must fail through the handler, not abort.
  const size_t count = worldRank == 0 ? 100000 : 200000;
  std::vector<float> a(count, 1.0f), b(count);
  handlerCalls = 0;
  int rc = MPI_Allreduce(a.data(), b.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm);
  check(rc == MPI_ERR_OTHER,
        "mismatched counts: rc " + std::to_string(rc) + ", expected MPI_ERR_OTHER");
  check(handlerCalls == 1 && handlerCode == MPI_ERR_OTHER,
        "mismatched counts: error handler calls " + std::to_string(handlerCalls));
  // The communicator's rina side is now unusable: the next call fails too.
  rc = MPI_Allreduce(a.data(), b.data(), 100000, MPI_FLOAT, MPI_SUM, comm);
  check(rc == MPI_ERR_OTHER && handlerCalls == 2, "call after a failure: rc " + std::to_string(rc));
  MPI_Comm_free(&comm);
  MPI_Errhandler_free(&handler);

  // An invalid communicator is the MPI library's to report (here to
  // MPI_COMM_WORLD's handler, made to return).
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  float one = 1.0f, out = 0.0f;
  rc = MPI_Allreduce(&one, &out, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_NULL);
  int errorClass = MPI_SUCCESS;
  MPI_Error_class(rc, &errorClass);
  check(errorClass == MPI_ERR_COMM, "MPI_COMM_NULL: error class " + std::to_string(errorClass));
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

  rinaMpiCommStats s;
  check(rinaMpiGetCommStats(MPI_COMM_WORLD, nullptr) == MPI_ERR_ARG, "stats NULL: MPI_ERR_ARG");
  check(rinaMpiGetCommStats(MPI_COMM_NULL, &s) == MPI_ERR_COMM,
        "stats MPI_COMM_NULL: MPI_ERR_COMM");
  check(std::string(rinaMpiDelegateReasonName(rinaMpiNumReasons)) == "?", "reason name range");
}

// ---- modes where rina is off ----

void testAllDelegated(rinaMpiDelegateReason_t reason) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  std::vector<int> everyone;
  for (int r = 0; r < worldSize; ++r) everyone.push_back(r);
  for (int round = 0; round < 3; ++round) {
    checkedSum(comm, everyone, reason, "delegated round " + std::to_string(round));
  }
  MPI_Comm_free(&comm);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  std::string mode = "full";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--mode") mode = argv[i + 1];
  }
  const auto start = std::chrono::steady_clock::now();
  if (mode == "full") {
    testTypesAndOps(MPI_COMM_WORLD, -1);
    testRandomFloats<float>(MPI_COMM_WORLD, MPI_FLOAT, "float");
    testRandomFloats<double>(MPI_COMM_WORLD, MPI_DOUBLE, "double");
    testInPlace(MPI_COMM_WORLD);
    testCommunicators();
    testIntercomm();
    testUserOpAndDerivedTypes();
    testDerivedTypesByElements(MPI_COMM_WORLD);
    testLayoutErrors();
    testNonblocking();
    testCounts();
    testThreads(provided);
    testErrorHandler();
  } else if (mode == "disabled") {
    testTypesAndOps(MPI_COMM_WORLD, rinaMpiDisabled);
    testAllDelegated(rinaMpiDisabled);
  } else if (mode == "unavailable") {
    testAllDelegated(rinaMpiUnavailable);
  } else {
    check(false, "unknown --mode " + mode);
  }
  int totalFailures = 0;
  PMPI_Allreduce(&failures, &totalFailures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (worldRank == 0) {
    std::printf("interposer_test: mode %s, %d ranks, %d checks on rank 0, %d failures, %.1f s\n",
                mode.c_str(), worldSize, checks, totalFailures, seconds);
  }
  MPI_Finalize();
  return totalFailures == 0 ? 0 : 1;
}
