// Fortran entry points of MPI_ALLREDUCE. Open MPI's Fortran bindings call
// PMPI_Allreduce, not MPI_Allreduce, so the C entry never sees Fortran
// calls; these replace the bindings' symbols (every name mangling gfortran
// and others use, and mpi_f08's, which takes the same arguments: an f08
// handle is a one-integer derived type passed by reference).
#include <mpi.h>

#include "mpi/collectives.h"

// The addresses Fortran passes for MPI_IN_PLACE and MPI_BOTTOM: common
// blocks defined by the MPI library (weak: absent in other MPI libraries).
extern "C" {
extern int mpi_fortran_in_place_ __attribute__((weak));
extern int mpi_fortran_in_place __attribute__((weak));
extern int mpi_fortran_in_place__ __attribute__((weak));
extern int MPI_FORTRAN_IN_PLACE __attribute__((weak));
extern int mpi_fortran_bottom_ __attribute__((weak));
extern int mpi_fortran_bottom __attribute__((weak));
extern int mpi_fortran_bottom__ __attribute__((weak));
extern int MPI_FORTRAN_BOTTOM __attribute__((weak));
}

namespace {

bool isOneOf(const void* p, const void* a, const void* b, const void* c, const void* d) {
  return p != nullptr && (p == a || p == b || p == c || p == d);
}

// Fortran sentinels to their C values.
const void* cBuffer(const void* fortran) {
  if (isOneOf(fortran, &mpi_fortran_in_place_, &mpi_fortran_in_place, &mpi_fortran_in_place__,
              &MPI_FORTRAN_IN_PLACE)) {
    return MPI_IN_PLACE;
  }
  if (isOneOf(fortran, &mpi_fortran_bottom_, &mpi_fortran_bottom, &mpi_fortran_bottom__,
              &MPI_FORTRAN_BOTTOM)) {
    return MPI_BOTTOM;
  }
  return fortran;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void mpi_allreduce_(
    const void* sendbuf, void* recvbuf, const MPI_Fint* count, const MPI_Fint* datatype,
    const MPI_Fint* op, const MPI_Fint* comm, MPI_Fint* ierror) {
  int rc = rina::mpi::allreduce(cBuffer(sendbuf), const_cast<void*>(cBuffer(recvbuf)),
                                static_cast<int>(*count), PMPI_Type_f2c(*datatype),
                                PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm));
  // mpi_f08's ierror is OPTIONAL: absent arrives as a null pointer.
  if (ierror != nullptr) *ierror = static_cast<MPI_Fint>(rc);
}

#define RINA_FORTRAN_ALIAS(name)                                                              \
  extern "C" __attribute__((visibility("default"), alias("mpi_allreduce_"))) void name(       \
      const void*, void*, const MPI_Fint*, const MPI_Fint*, const MPI_Fint*, const MPI_Fint*, \
      MPI_Fint*);
RINA_FORTRAN_ALIAS(mpi_allreduce)
RINA_FORTRAN_ALIAS(mpi_allreduce__)
RINA_FORTRAN_ALIAS(MPI_ALLREDUCE)
RINA_FORTRAN_ALIAS(mpi_allreduce_f08_)
