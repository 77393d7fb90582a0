! MPI calls with known counts and sizes for tests/test_profiler.py (exactly 2 ranks).
! Built twice: with "use mpi" and, with -DMPIF_H, with "include 'mpif.h'".
program known_calls_f
#ifndef MPIF_H
  use mpi
#endif
  implicit none
#ifdef MPIF_H
  include 'mpif.h'
#endif
  integer :: ierr, rank, nranks, other, i, sub, req(2), gat(6), x(10), a2a_s(8), a2a_r(8), bc(2)
  double precision :: s8(8), r8(8), a, b
  logical :: flag

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  if (nranks /= 2) call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  other = 1 - rank
  x = 0
  s8 = 0
  a2a_s = 0
  bc = 0

  ! 3 x 10 integers (40 B) from rank 0 to rank 1
  do i = 1, 3
    if (rank == 0) then
      call MPI_Send(x, 10, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, ierr)
    else
      call MPI_Recv(x, 10, MPI_INTEGER, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    end if
  end do

  ! 8 doubles (64 B) each way, one MPI_Waitall
  call MPI_Irecv(r8, 8, MPI_DOUBLE_PRECISION, other, 2, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(s8, 8, MPI_DOUBLE_PRECISION, other, 2, MPI_COMM_WORLD, req(2), ierr)
  call MPI_Waitall(2, req, MPI_STATUSES_IGNORE, ierr)

  ! probe for a message that never comes
  call MPI_Iprobe(other, 99, MPI_COMM_WORLD, flag, MPI_STATUS_IGNORE, ierr)

  ! Allreduce of 1 double (8 B); Bcast of 2 integers (8 B) from rank 1
  a = rank
  call MPI_Allreduce(a, b, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(bc, 2, MPI_INTEGER, 1, MPI_COMM_WORLD, ierr)

  ! Alltoall of 4 integers (16 B) per destination on a communicator from Comm_split
  call MPI_Comm_split(MPI_COMM_WORLD, 0, rank, sub, ierr)
  call MPI_Alltoall(a2a_s, 4, MPI_INTEGER, a2a_r, 4, MPI_INTEGER, sub, ierr)
  call MPI_Comm_free(sub, ierr)

  ! Gather of 3 integers (12 B) to rank 0, in place at the root (its sendcount 0 is ignored)
  if (rank == 0) then
    call MPI_Gather(MPI_IN_PLACE, 0, MPI_INTEGER, gat, 3, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  else
    call MPI_Gather(x, 3, MPI_INTEGER, gat, 3, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  end if

  ! only the second barrier is recorded
  call MPI_Pcontrol(0)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Pcontrol(1)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  call MPI_Finalize(ierr)
end program known_calls_f
