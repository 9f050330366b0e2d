! librina_mpi from Fortran (linked before the MPI libraries): MPI_ALLREDUCE
! through the mpi module and the mpi_f08 module, out of place and with
! MPI_IN_PLACE, checked against a serial computation. Rank 0 prints
! "interposer_fortran: N ranks, F failures"; the ctest entry checks the
! RINA_MPI_STATS report to see that the calls went through rina.
module f08_part
  implicit none
  private
  public :: run_f08
contains
  subroutine run_f08(failures)
    use mpi_f08
    integer, intent(inout) :: failures
    integer, parameter :: n = 50000
    real(8), allocatable :: a(:), b(:)
    integer :: rank, nranks, i, ierr
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, nranks)
    allocate(a(n), b(n))
    do i = 1, n
      a(i) = dble(mod(i, 97) + rank)
    end do
    ! ierror left out: optional in mpi_f08.
    call MPI_Allreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    do i = 1, n
      if (b(i) /= dble(nranks * mod(i, 97) + nranks * (nranks - 1) / 2)) then
        failures = failures + 1
        print '(a,i0,a,i0)', 'FAIL f08 sum rank ', rank, ' element ', i
        exit
      end if
    end do
    call MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS) failures = failures + 1
    do i = 1, n
      if (a(i) /= dble(mod(i, 97) + nranks - 1)) then
        failures = failures + 1
        print '(a,i0,a,i0)', 'FAIL f08 in-place max rank ', rank, ' element ', i
        exit
      end if
    end do
  end subroutine run_f08
end module f08_part

program interposer_fortran
  use mpi
  use f08_part
  implicit none
  integer, parameter :: n = 60000
  integer :: ierr, rank, nranks, failures, total, i
  integer, allocatable :: x(:), y(:)
  real, allocatable :: s(:)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  failures = 0
  allocate(x(n), y(n), s(n))
  do i = 1, n
    x(i) = mod(i, 1000) * (rank + 1)
    s(i) = real(mod(i, 50) + rank)
  end do

  call MPI_ALLREDUCE(x, y, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) failures = failures + 1
  do i = 1, n
    if (y(i) /= mod(i, 1000) * nranks * (nranks + 1) / 2) then
      failures = failures + 1
      print '(a,i0,a,i0)', 'FAIL integer sum rank ', rank, ' element ', i
      exit
    end if
  end do

  ! MPI_IN_PLACE: the sentinel must not be read as a send buffer.
  call MPI_ALLREDUCE(MPI_IN_PLACE, s, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) failures = failures + 1
  do i = 1, n
    if (s(i) /= real(nranks * mod(i, 50) + nranks * (nranks - 1) / 2)) then
      failures = failures + 1
      print '(a,i0,a,i0)', 'FAIL in-place real sum rank ', rank, ' element ', i
      exit
    end if
  end do

  call run_f08(failures)

  ! One integer: below the threshold, handed to MPI.
  call MPI_ALLREDUCE(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a,i0,a)', 'interposer_fortran: ', nranks, ' ranks, ', total, &
      ' failures'
  call MPI_Finalize(ierr)
  if (total /= 0) stop 1
end program interposer_fortran
