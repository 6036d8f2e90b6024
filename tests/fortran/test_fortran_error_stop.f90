! Without stat=, a failing halox call stops the program with halox's message (checked by ctest
! on the output: the message, then ERROR STOP).
program test_fortran_error_stop
  use mpi_f08
  use halox
  implicit none
  type(halox_stencil) :: st
  call MPI_Init()
  call halox_star(st, [1, 1, 1, 1, 1])
  print '(a)', 'not reached'
  call MPI_Finalize()
end program test_fortran_error_stop
