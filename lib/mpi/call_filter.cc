#include "mpi/call_filter.h"

#include <mutex>
#include <vector>

#include "core/config.h"

namespace rina::mpi {
namespace {

enum class Kind { kSigned, kUnsigned, kFloat };

struct TypeEntry {
  MPI_Datatype mpi;
  rinaDataType_t rina;
};

// The C and Fortran names of integers and floats rina reduces. The rina type
// follows from kind and MPI's size for the type, so MPI_LONG and MPI_INTEGER
// land on the right width whatever the platform or compiler flags.
std::vector<TypeEntry> buildTypeTable() {
  const struct {
    MPI_Datatype type;
    Kind kind;
  } candidates[] = {
      {MPI_SIGNED_CHAR, Kind::kSigned},
      {MPI_UNSIGNED_CHAR, Kind::kUnsigned},
      {MPI_INT, Kind::kSigned},
      {MPI_UNSIGNED, Kind::kUnsigned},
      {MPI_LONG, Kind::kSigned},
      {MPI_UNSIGNED_LONG, Kind::kUnsigned},
      {MPI_LONG_LONG_INT, Kind::kSigned},
      {MPI_LONG_LONG, Kind::kSigned},
      {MPI_UNSIGNED_LONG_LONG, Kind::kUnsigned},
      {MPI_INT8_T, Kind::kSigned},
      {MPI_UINT8_T, Kind::kUnsigned},
      {MPI_INT32_T, Kind::kSigned},
      {MPI_UINT32_T, Kind::kUnsigned},
      {MPI_INT64_T, Kind::kSigned},
      {MPI_UINT64_T, Kind::kUnsigned},
      {MPI_AINT, Kind::kSigned},
      {MPI_OFFSET, Kind::kSigned},
      {MPI_COUNT, Kind::kSigned},
      {MPI_FLOAT, Kind::kFloat},
      {MPI_DOUBLE, Kind::kFloat},
      {MPI_INTEGER, Kind::kSigned},
      {MPI_INTEGER1, Kind::kSigned},
      {MPI_INTEGER4, Kind::kSigned},
      {MPI_INTEGER8, Kind::kSigned},
      {MPI_REAL, Kind::kFloat},
      {MPI_REAL4, Kind::kFloat},
      {MPI_REAL8, Kind::kFloat},
      {MPI_DOUBLE_PRECISION, Kind::kFloat},
  };
  std::vector<TypeEntry> table;
  for (const auto& c : candidates) {
    int size = 0;
    // A Fortran type the MPI library was built without is not committed
    // or has size 0: skip it rather than guess.
    if (c.type == MPI_DATATYPE_NULL || PMPI_Type_size(c.type, &size) != MPI_SUCCESS) continue;
    std::optional<rinaDataType_t> rina;
    switch (c.kind) {
      case Kind::kSigned:
        if (size == 1) rina = rinaInt8;
        if (size == 4) rina = rinaInt32;
        if (size == 8) rina = rinaInt64;
        break;
      case Kind::kUnsigned:
        if (size == 1) rina = rinaUint8;
        if (size == 4) rina = rinaUint32;
        if (size == 8) rina = rinaUint64;
        break;
      case Kind::kFloat:
        if (size == 4) rina = rinaFloat32;
        if (size == 8) rina = rinaFloat64;
        break;
    }
    if (rina) table.push_back({c.type, *rina});
  }
  return table;
}

const std::vector<TypeEntry>& typeTable() {
  // Built on first use: MPI is initialized by then (PMPI_Type_size).
  static const std::vector<TypeEntry> table = buildTypeTable();
  return table;
}

bool isPredefinedOp(MPI_Op op) {
  const MPI_Op predefined[] = {MPI_MAX,    MPI_MIN,    MPI_SUM,     MPI_PROD, MPI_LAND,
                               MPI_BAND,   MPI_LOR,    MPI_BOR,     MPI_LXOR, MPI_BXOR,
                               MPI_MINLOC, MPI_MAXLOC, MPI_REPLACE, MPI_NO_OP};
  for (MPI_Op p : predefined) {
    if (op == p) return true;
  }
  return false;
}

}  // namespace

std::optional<rinaDataType_t> rinaTypeOf(MPI_Datatype type) {
  for (const TypeEntry& e : typeTable()) {
    if (e.mpi == type) return e.rina;
  }
  return std::nullopt;
}

ReductionPlan planReduction(size_t bytes, std::optional<rinaDataType_t> element, MPI_Op op) {
  ReductionPlan plan;
  plan.bytes = bytes;
  if (disabled()) {
    plan.delegate = rinaMpiDisabled;
    return plan;
  }
  if (bytes == 0) {
    plan.delegate = rinaMpiCountZero;
    return plan;
  }
  if (!element) {
    plan.delegate = rinaMpiDatatype;
    return plan;
  }
  if (op == MPI_SUM) {
    plan.op = rinaSum;
  } else if (op == MPI_PROD) {
    plan.op = rinaProd;
  } else if (op == MPI_MIN) {
    plan.op = rinaMin;
  } else if (op == MPI_MAX) {
    plan.op = rinaMax;
  } else {
    plan.delegate = isPredefinedOp(op) ? rinaMpiOp : rinaMpiUserOp;
    return plan;
  }
  plan.type = *element;
  if (bytes < minBytes()) plan.delegate = rinaMpiBelowThreshold;
  return plan;
}

size_t minBytes() {
  static const size_t value = static_cast<size_t>(config::environment().mpiMinBytes);
  return value;
}

bool disabled() {
  static const bool value = config::environment().mpiDisable;
  return value;
}

bool statsEnabled() {
  static const bool value = config::environment().mpiStats;
  return value;
}

}  // namespace rina::mpi
