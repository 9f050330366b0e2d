#include "mpi/type_signature.h"

#include <vector>

#include "mpi/call_filter.h"

namespace rina::mpi {
namespace {

// Deeper constructions than this are walked no further (and taken as not
// contiguous, elements unknown): MPI allows any depth, programs do not.
constexpr int kMaxDepth = 32;

bool isPredefinedCombiner(int combiner) {
  return combiner == MPI_COMBINER_NAMED || combiner == MPI_COMBINER_F90_REAL ||
         combiner == MPI_COMBINER_F90_COMPLEX || combiner == MPI_COMBINER_F90_INTEGER;
}

// The arguments a derived type was built from; frees the derived types
// MPI made copies of (predefined ones must not be freed).
struct Contents {
  std::vector<int> ints;
  std::vector<MPI_Aint> addrs;
  std::vector<MPI_Datatype> types;

  bool read(MPI_Datatype type, int ni, int na, int nd) {
    ints.resize(static_cast<size_t>(ni));
    addrs.resize(static_cast<size_t>(na));
    types.resize(static_cast<size_t>(nd));
    if (PMPI_Type_get_contents(type, ni, na, nd, ints.data(), addrs.data(), types.data()) !=
        MPI_SUCCESS) {
      types.clear();
      return false;
    }
    return true;
  }

  ~Contents() {
    for (MPI_Datatype& t : types) {
      int ni = 0, na = 0, nd = 0, combiner = MPI_COMBINER_NAMED;
      if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) == MPI_SUCCESS &&
          !isPredefinedCombiner(combiner)) {
        PMPI_Type_free(&t);
      }
    }
  }
};

MPI_Aint extentOf(MPI_Datatype type) {
  MPI_Aint lb = 0, extent = 0;
  if (PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS) return -1;
  return extent;
}

// One instance covers [0, size) exactly, and the next begins right after.
bool tight(MPI_Datatype type) {
  int size = 0;
  MPI_Aint lb = 0, extent = 0, trueLb = 0, trueExtent = 0;
  if (PMPI_Type_size(type, &size) != MPI_SUCCESS ||
      PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent(type, &trueLb, &trueExtent) != MPI_SUCCESS) {
    return false;
  }
  return lb == 0 && trueLb == 0 && extent == size && trueExtent == size;
}

// The element kinds seen so far.
struct Elements {
  std::optional<rinaDataType_t> kind;
  bool mixed = false;

  void add(MPI_Datatype predefined) {
    int size = 0;
    // Markers without data (MPI_LB, MPI_UB) are no elements.
    if (PMPI_Type_size(predefined, &size) == MPI_SUCCESS && size == 0) return;
    std::optional<rinaDataType_t> r = rinaTypeOf(predefined);
    if (!r || (kind && *kind != *r)) {
      mixed = true;
    } else {
      kind = r;
    }
  }
};

// Blocks laid out one after the other from displacement 0, each of
// lengths[i] elements of the given extent, start[i] in bytes.
bool consecutive(const std::vector<MPI_Aint>& lengths, const std::vector<MPI_Aint>& starts,
                 const std::vector<MPI_Aint>& extents) {
  MPI_Aint expect = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] == 0) continue;
    if (starts[i] != expect) return false;
    expect += lengths[i] * extents[i];
  }
  return true;
}

// How a constructor places the blocks of its old type(s): in type-map order,
// one right after the other from displacement 0.
bool blocksInOrder(int combiner, const Contents& c) {
  const MPI_Aint oldExtent = extentOf(c.types[0]);
  switch (combiner) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_CONTIGUOUS:
    case MPI_COMBINER_RESIZED:  // tight() of the result decides
      return true;
    case MPI_COMBINER_VECTOR:  // count, blocklength, stride (in extents)
      return c.ints[0] <= 1 || c.ints[2] == c.ints[1];
    case MPI_COMBINER_HVECTOR:  // count, blocklength; stride in bytes
      return c.ints[0] <= 1 || c.addrs[0] == c.ints[1] * oldExtent;
    case MPI_COMBINER_INDEXED_BLOCK:     // count, blocklength, displacements (in extents)
    case MPI_COMBINER_HINDEXED_BLOCK: {  // count, blocklength; displacements in bytes
      const int count = c.ints[0];
      std::vector<MPI_Aint> lengths(static_cast<size_t>(count), c.ints[1]), starts(lengths.size()),
          extents(lengths.size(), oldExtent);
      for (int i = 0; i < count; ++i) {
        starts[i] = combiner == MPI_COMBINER_INDEXED_BLOCK ? c.ints[2 + i] * oldExtent : c.addrs[i];
      }
      return consecutive(lengths, starts, extents);
    }
    case MPI_COMBINER_INDEXED:     // count, blocklengths, displacements (in extents)
    case MPI_COMBINER_HINDEXED: {  // count, blocklengths; displacements in bytes
      const int count = c.ints[0];
      std::vector<MPI_Aint> lengths(static_cast<size_t>(count)), starts(lengths.size()),
          extents(lengths.size(), oldExtent);
      for (int i = 0; i < count; ++i) {
        lengths[i] = c.ints[1 + i];
        starts[i] =
            combiner == MPI_COMBINER_INDEXED ? c.ints[1 + count + i] * oldExtent : c.addrs[i];
      }
      return consecutive(lengths, starts, extents);
    }
    case MPI_COMBINER_STRUCT: {  // count, blocklengths; displacements; types
      const int count = c.ints[0];
      std::vector<MPI_Aint> lengths(static_cast<size_t>(count)), starts(lengths.size()),
          extents(lengths.size());
      for (int i = 0; i < count; ++i) {
        lengths[i] = c.ints[1 + i];
        starts[i] = c.addrs[i];
        extents[i] = extentOf(c.types[i]);
      }
      return consecutive(lengths, starts, extents);
    }
    default:  // subarray, darray, the Fortran-integer variants: packed
      return false;
  }
}

// Adds type's elements; returns whether one instance holds them in type-map
// order with no gaps from displacement 0 and the next instance follows right
// after (every level of the construction tight and in order).
bool walk(MPI_Datatype type, int depth, Elements* elements) {
  int ni = 0, na = 0, nd = 0, combiner = MPI_COMBINER_NAMED;
  if (depth > kMaxDepth || PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) != MPI_SUCCESS) {
    elements->mixed = true;
    return false;
  }
  if (combiner == MPI_COMBINER_NAMED) {
    elements->add(type);
    return tight(type);
  }
  if (combiner == MPI_COMBINER_F90_REAL || combiner == MPI_COMBINER_F90_INTEGER ||
      combiner == MPI_COMBINER_F90_COMPLEX) {
    // MPI_Type_create_f90_*: the predefined type of that class and size.
    int size = 0;
    MPI_Datatype match = MPI_DATATYPE_NULL;
    const int typeClass = combiner == MPI_COMBINER_F90_REAL      ? MPI_TYPECLASS_REAL
                          : combiner == MPI_COMBINER_F90_INTEGER ? MPI_TYPECLASS_INTEGER
                                                                 : MPI_TYPECLASS_COMPLEX;
    if (PMPI_Type_size(type, &size) != MPI_SUCCESS ||
        PMPI_Type_match_size(typeClass, size, &match) != MPI_SUCCESS) {
      elements->mixed = true;
      return false;
    }
    elements->add(match);
    return tight(type);
  }
  Contents c;
  if (!c.read(type, ni, na, nd) || c.types.empty()) {
    elements->mixed = true;
    return false;
  }
  bool inOrder = true;
  for (MPI_Datatype t : c.types) inOrder = walk(t, depth + 1, elements) && inOrder;
  return inOrder && blocksInOrder(combiner, c) && tight(type);
}

}  // namespace

bool typeSignature(MPI_Datatype type, TypeSignature* out) {
  *out = TypeSignature{};
  int size = 0;
  if (type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS || size < 0) {
    return false;
  }
  out->bytes = static_cast<size_t>(size);
  Elements elements;
  out->contiguous = walk(type, 0, &elements);
  if (!elements.mixed) out->element = elements.kind;
  return true;
}

}  // namespace rina::mpi
