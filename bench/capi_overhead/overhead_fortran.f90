! capi_overhead: what an exchange costs through the C interface and through the Fortran module,
! over the C++ call on the same exchange object, on one rank (a periodic n x n real64 field,
! box stencil of width 1: the exchange is local copies, so the layers' cost is not hidden by
! messages). Loops of `iters` calls alternate, `repeats` times; each row gives the median time
! per call of both loops and the median of the paired differences. Prints JSON lines.
!
!   mpirun -np 1 capi_overhead [n] [iters] [repeats]
program capi_overhead
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: real64
  use mpi_f08
  use halox
  implicit none
  interface
    real(c_double) function cxx_loop(ex, n) bind(C, name='overhead_cxx_loop')
      import :: c_ptr, c_double, c_int
      type(c_ptr), value :: ex
      integer(c_int), value :: n
    end function
    real(c_double) function c_loop(ex, n) bind(C, name='overhead_c_loop')
      import :: c_ptr, c_double, c_int
      type(c_ptr), value :: ex
      integer(c_int), value :: n
    end function
    real(c_double) function now() bind(C, name='overhead_now')
      import :: c_double
    end function
  end interface
  type(halox_domain) :: dom
  type(halox_stencil) :: st
  type(halox_field) :: f
  type(halox_exchange) :: ex
  real(real64), allocatable, target :: u(:, :)
  integer :: n, iters, repeats, lo(2), hi(2)
  real(real64), allocatable :: t_cxx(:), t_c(:), t_f(:)
  call MPI_Init()
  n = arg(1, 8)
  iters = arg(2, 20000)
  repeats = arg(3, 15)
  call halox_cartesian(dom, MPI_COMM_WORLD, [n, n], periodic=[.true., .true.])
  call dom%local_box(lo, hi)
  allocate (u(lo(1) - 1:hi(1) + 1, lo(2) - 1:hi(2) + 1))
  u = 0
  call halox_box(st, [1, 1])
  call halox_wrap(f, dom, u, pad=[1, 1])
  call halox_make_exchange(ex, dom, st, [f])
  call measure()
  call report('c', t_c, t_cxx)
  call report('fortran', t_f, t_cxx)
  call ex%destroy()
  call f%destroy()
  call st%destroy()
  call dom%destroy()
  call MPI_Finalize()

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

  subroutine measure()
    integer :: r, i
    real(real64) :: t0
    allocate (t_cxx(repeats), t_c(repeats), t_f(repeats))
    t0 = cxx_loop(ex%ptr, iters) + c_loop(ex%ptr, iters)  ! warm up
    do r = 1, repeats
      t_cxx(r) = cxx_loop(ex%ptr, iters) / iters
      t_c(r) = c_loop(ex%ptr, iters) / iters
      t0 = now()
      do i = 1, iters
        call ex%exchange()
      end do
      t_f(r) = (now() - t0) / iters
    end do
  end subroutine measure

  !> One JSON line: the layer's and C++'s median per call, the median paired difference (µs).
  subroutine report(layer, t, base)
    character(*), intent(in) :: layer
    real(real64), intent(in) :: t(:), base(:)
    print '(3a, i0, a, i0, 7a)', '{"layer":"', layer, '","n":', n, ',"iters":', iters, &
      ',"layer_us":', json(1e6 * median(t)), ',"cxx_us":', json(1e6 * median(base)), &
      ',"overhead_us":', json(1e6 * median(t - base)), '}'
  end subroutine report

  !> `x` as a JSON number with four decimals (f0.4 leaves out the leading zero JSON needs).
  function json(x) result(s)
    real(real64), intent(in) :: x
    character(:), allocatable :: s
    character(32) :: buf
    write (buf, '(f12.4)') x
    s = trim(adjustl(buf))
  end function json

  real(real64) function median(x)
    real(real64), intent(in) :: x(:)
    real(real64) :: s(size(x)), v
    integer :: i, j
    s = x
    do i = 2, size(s)  ! insertion sort: a handful of values
      v = s(i)
      j = i - 1
      do while (j >= 1)
        if (s(j) <= v) exit
        s(j + 1) = s(j)
        j = j - 1
      end do
      s(j + 1) = v
    end do
    median = s((size(s) + 1) / 2)
  end function median
end program capi_overhead
