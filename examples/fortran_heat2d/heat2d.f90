! fortran_heat2d: explicit 2-D heat equation on a periodic n x n grid, two fields (temperature in
! real64, a tracer in real32) diffused side by side, their halos filled by one halox exchange per
! step. Every rank then runs the same problem serially on the whole grid (periodic copies by
! hand) and compares its owned cells bit for bit.
!
!   mpirun -np 4 fortran_heat2d [n] [steps]     (prints "verified" when every cell matches)
program fortran_heat2d
  use, intrinsic :: iso_fortran_env, only: real32, real64
  use mpi_f08
  use halox
  implicit none
  real(real64), parameter :: alpha = 0.2_real64
  type(halox_domain) :: dom
  type(halox_stencil) :: st
  type(halox_field) :: ft, fc
  type(halox_exchange) :: ex
  real(real64), allocatable, target :: t(:, :), tn(:, :), ts(:, :)
  real(real32), allocatable, target :: c(:, :), cn(:, :), cs(:, :)
  integer :: n, steps, lo(2), hi(2), step, rank, wrong, total

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  n = arg(1, 48)
  steps = arg(2, 50)

  ! The halox part: a periodic domain, a 5-point stencil, the two arrays as they are.
  call halox_cartesian(dom, MPI_COMM_WORLD, [n, n], periodic=[.true., .true.])
  call dom%local_box(lo, hi)
  allocate (t(lo(1) - 1:hi(1) + 1, lo(2) - 1:hi(2) + 1), c(lo(1) - 1:hi(1) + 1, lo(2) - 1:hi(2) + 1))
  allocate (tn, mold=t)
  allocate (cn, mold=c)
  call initial(t, c, lo, hi)
  call halox_star(st, [1, 1])
  call halox_wrap(ft, dom, t, pad=[1, 1], name='temperature')
  call halox_wrap(fc, dom, c, pad=[1, 1], name='tracer')
  call halox_make_exchange(ex, dom, st, [ft, fc])
  do step = 1, steps
    call ex%exchange()
    call diffuse(t, tn, c, cn, lo, hi)
  end do

  ! The serial reference: the whole grid on this rank, halos copied by hand.
  allocate (ts(0:n + 1, 0:n + 1), cs(0:n + 1, 0:n + 1))
  call initial(ts, cs, [1, 1], [n, n])
  deallocate (tn, cn)
  allocate (tn, mold=ts)
  allocate (cn, mold=cs)
  do step = 1, steps
    call periodic_copies(ts, cs, n)
    call diffuse(ts, tn, cs, cn, [1, 1], [n, n])
  end do
  wrong = count(t(lo(1):hi(1), lo(2):hi(2)) /= ts(lo(1):hi(1), lo(2):hi(2))) &
          + count(c(lo(1):hi(1), lo(2):hi(2)) /= cs(lo(1):hi(1), lo(2):hi(2)))
  call MPI_Allreduce(wrong, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0 .and. total == 0) print '(a, i0, a, i0, a)', 'fortran_heat2d: ', n, '^2, ', steps, &
    ' steps: verified bit for bit against the serial run'
  if (rank == 0 .and. total /= 0) print '(a, i0, a)', 'fortran_heat2d: ', total, ' cells differ'
  call ex%destroy()
  call ft%destroy()
  call fc%destroy()
  call st%destroy()
  call dom%destroy()
  call MPI_Finalize()
  if (total /= 0) error stop 1

contains

  integer function arg(k, default)
    integer, intent(in) :: k, default
    character(32) :: s
    arg = default
    if (command_argument_count() >= k) then
      call get_command_argument(k, s)
      read (s, *) arg
    end if
  end function arg

  !> A hot square and a tracer stripe, from global indices alone.
  subroutine initial(t, c, lo, hi)
    integer, intent(in) :: lo(2), hi(2)
    real(real64), intent(out) :: t(lo(1) - 1:, lo(2) - 1:)
    real(real32), intent(out) :: c(lo(1) - 1:, lo(2) - 1:)
    integer :: i, j
    t = 0
    c = 0
    do j = lo(2), hi(2)
      do i = lo(1), hi(1)
        if (abs(i - n / 3) < n / 6 .and. abs(j - n / 2) < n / 5) t(i, j) = 1
        c(i, j) = real(mod(i + 2 * j, 7), real32) / 7
      end do
    end do
  end subroutine initial

  subroutine diffuse(t, tn, c, cn, lo, hi)
    integer, intent(in) :: lo(2), hi(2)
    real(real64), intent(inout) :: t(lo(1) - 1:, lo(2) - 1:), tn(lo(1) - 1:, lo(2) - 1:)
    real(real32), intent(inout) :: c(lo(1) - 1:, lo(2) - 1:), cn(lo(1) - 1:, lo(2) - 1:)
    integer :: i, j
    do j = lo(2), hi(2)
      do i = lo(1), hi(1)
        tn(i, j) = t(i, j) + alpha * (t(i - 1, j) + t(i + 1, j) + t(i, j - 1) + t(i, j + 1) - 4 * t(i, j))
        cn(i, j) = c(i, j) + real(alpha, real32) * (c(i - 1, j) + c(i + 1, j) + c(i, j - 1) + c(i, j + 1) &
                                                    - 4 * c(i, j))
      end do
    end do
    t(lo(1):hi(1), lo(2):hi(2)) = tn(lo(1):hi(1), lo(2):hi(2))
    c(lo(1):hi(1), lo(2):hi(2)) = cn(lo(1):hi(1), lo(2):hi(2))
  end subroutine diffuse

  subroutine periodic_copies(t, c, n)
    integer, intent(in) :: n
    real(real64), intent(inout) :: t(0:, 0:)
    real(real32), intent(inout) :: c(0:, 0:)
    t(0, 1:n) = t(n, 1:n)
    t(n + 1, 1:n) = t(1, 1:n)
    t(:, 0) = t(:, n)
    t(:, n + 1) = t(:, 1)
    c(0, 1:n) = c(n, 1:n)
    c(n + 1, 1:n) = c(1, 1:n)
    c(:, 0) = c(:, n)
    c(:, n + 1) = c(:, 1)
  end subroutine periodic_copies
end program fortran_heat2d
