// What an MPI datatype carries, as far as every rank must agree on it: MPI
// lets ranks describe the same data differently (MPI_INT x 2 against a
// contiguous type of 2 ints, 8 n MPI_BYTE against n MPI_DOUBLE) as long as
// the type signatures match, so whether rina takes a call may depend only on
// the signature (the kind of element and the bytes), never on the layout.
// The layout decides only how this rank hands its data to rina: straight
// from the buffer when the elements lie back to back in type-map order,
// else through PMPI_Pack / PMPI_Unpack (on one host the packed form is the
// elements' bytes in type-map order, as rina needs them).
#ifndef RINA_LIB_MPI_TYPE_SIGNATURE_H_
#define RINA_LIB_MPI_TYPE_SIGNATURE_H_

#include <mpi.h>

#include <cstddef>
#include <optional>

#include "rina/rina.h"

namespace rina::mpi {

struct TypeSignature {
  size_t bytes = 0;  // data in one instance (MPI_Type_size)
  // Every element is this rina type (MPI_INT and MPI_INT32_T alike are
  // int32); nothing when the elements are of several kinds or of a kind
  // rina does not reduce (MPI_SHORT, MPI_DOUBLE_INT, ...).
  std::optional<rinaDataType_t> element;
  // Instances lie back to back from the buffer, elements in type-map order
  // with no gaps: count instances are count x bytes bytes at the buffer.
  bool contiguous = false;
};

// False when MPI rejects the type (MPI_DATATYPE_NULL, freed): the caller
// delegates and the MPI library reports the error.
bool typeSignature(MPI_Datatype type, TypeSignature* out);

}  // namespace rina::mpi

#endif  // RINA_LIB_MPI_TYPE_SIGNATURE_H_
