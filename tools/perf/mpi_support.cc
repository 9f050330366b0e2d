#include "perf/mpi_support.h"

#include <mpi.h>

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

namespace rina::perf {
namespace {

constexpr int kHostNameBytes = 256;

void abortJob(int exitCode) { PMPI_Abort(MPI_COMM_WORLD, exitCode); }

class MpiRankGroup final : public RankGroup {
 public:
  MpiRankGroup() {
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    PMPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void barrier() override { PMPI_Barrier(MPI_COMM_WORLD); }
  double maxOverRanks(double value) override {
    double result = 0;
    PMPI_Allreduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return result;
  }
  int64_t sumOverRanks(int64_t value) override {
    int64_t result = 0;
    PMPI_Allreduce(&value, &result, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    return result;
  }
  std::vector<std::string> hostNames() override {
    char mine[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    PMPI_Get_processor_name(mine, &length);
    std::vector<char> all(static_cast<size_t>(size_) * kHostNameBytes, '\0');
    std::string padded(mine, static_cast<size_t>(length));
    padded.resize(kHostNameBytes - 1);
    PMPI_Allgather(padded.c_str(), kHostNameBytes, MPI_CHAR, all.data(), kHostNameBytes, MPI_CHAR,
                   MPI_COMM_WORLD);
    std::vector<std::string> names;
    for (int r = 0; r < size_; ++r) {
      names.emplace_back(all.data() + static_cast<size_t>(r) * kHostNameBytes);
    }
    return names;
  }

 private:
  int rank_ = 0;
  int size_ = 1;
};

MPI_Datatype mpiType(rinaDataType_t type) {
  switch (type) {
    case rinaInt8:
      return MPI_INT8_T;
    case rinaUint8:
      return MPI_UINT8_T;
    case rinaInt32:
      return MPI_INT32_T;
    case rinaUint32:
      return MPI_UINT32_T;
    case rinaInt64:
      return MPI_INT64_T;
    case rinaUint64:
      return MPI_UINT64_T;
    case rinaFloat32:
      return MPI_FLOAT;
    case rinaFloat64:
      return MPI_DOUBLE;
    default:
      return MPI_DATATYPE_NULL;  // MPI 3.1 has no 16-bit float types
  }
}

MPI_Op mpiOp(rinaRedOp_t op) {
  switch (op) {
    case rinaProd:
      return MPI_PROD;
    case rinaMin:
      return MPI_MIN;
    case rinaMax:
      return MPI_MAX;
    default:
      return MPI_SUM;  // sum, and avg before the division
  }
}

template <typename T>
void divideAll(void* data, size_t count, int divisor) {
  T* values = static_cast<T*>(data);
  for (size_t i = 0; i < count; ++i) {
    values[i] = static_cast<T>(values[i] / static_cast<T>(divisor));
  }
}

// avg = sum / nranks, as rina defines it (integers truncate).
void divideByRanks(void* data, size_t count, rinaDataType_t type, int nranks) {
  switch (type) {
    case rinaInt8:
      return divideAll<int8_t>(data, count, nranks);
    case rinaUint8:
      return divideAll<uint8_t>(data, count, nranks);
    case rinaInt32:
      return divideAll<int32_t>(data, count, nranks);
    case rinaUint32:
      return divideAll<uint32_t>(data, count, nranks);
    case rinaInt64:
      return divideAll<int64_t>(data, count, nranks);
    case rinaUint64:
      return divideAll<uint64_t>(data, count, nranks);
    case rinaFloat32:
      return divideAll<float>(data, count, nranks);
    default:
      return divideAll<double>(data, count, nranks);
  }
}

class MpiAllreduce final : public AllreduceAlgorithm {
 public:
  MpiAllreduce() { PMPI_Comm_size(MPI_COMM_WORLD, &nranks_); }

  const std::string& name() const override { return name_; }

  std::string unsupportedReason(rinaDataType_t type, rinaRedOp_t) const override {
    return mpiType(type) == MPI_DATATYPE_NULL ? "MPI has no 16-bit float datatype" : "";
  }

  void run(const void* sendbuff, void* recvbuff, size_t count, rinaDataType_t type,
           rinaRedOp_t op) override {
    if (count > static_cast<size_t>(INT_MAX)) {
      fatal(kExitError, "mpi: count " + std::to_string(count) + " exceeds MPI's int count");
    }
    const void* source = sendbuff == recvbuff ? MPI_IN_PLACE : sendbuff;
    const int rc = PMPI_Allreduce(source, recvbuff, static_cast<int>(count), mpiType(type),
                                  mpiOp(op), MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
      fatal(kExitError, "PMPI_Allreduce failed with " + std::to_string(rc));
    }
    if (op == rinaAvg) {
      divideByRanks(recvbuff, count, type, nranks_);
    }
  }

 private:
  std::string name_ = "mpi";
  int nranks_ = 1;
};

}  // namespace

void initMpi(int* argc, char*** argv) {
  // MPI_Init, not PMPI_Init: a profiling layer may set itself up there.
  MPI_Init(argc, argv);
  setFatalHandler(abortJob);
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  setFatalRank(rank);
}

void finalizeMpi() { MPI_Finalize(); }

std::unique_ptr<RankGroup> makeMpiRankGroup() { return std::make_unique<MpiRankGroup>(); }

std::unique_ptr<AllreduceAlgorithm> makeMpiAllreduce() { return std::make_unique<MpiAllreduce>(); }

}  // namespace rina::perf
