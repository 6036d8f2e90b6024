! fortran_heat2d_acc: fortran_heat2d on the GPU with OpenACC. The same periodic 2-D heat
! equation with two fields (temperature in real64, a tracer in real32), kept in device memory;
! halox is given their device addresses (host_data use_device) and fills their halos on the GPU,
! either scheduled on the CUDA stream of the OpenACC queue the kernels run on ("stream", no host
! wait per step) or as a blocking exchange between the kernels ("blocking"). Every rank then
! runs the same problem serially on the whole grid, with the same kernels on its GPU and the
! periodic copies by hand, and compares its owned cells bit for bit.
!
!   mpirun -np 2 fortran_heat2d_acc [n] [steps] [stream|blocking]
!     prints "verified bit for bit" when every cell matches; exits 77 where no GPU is visible.
program fortran_heat2d_acc
  use, intrinsic :: iso_c_binding, only: c_int, c_intptr_t, c_loc, c_null_ptr, c_ptr
  use, intrinsic :: iso_fortran_env, only: real32, real64
  use mpi_f08
  use openacc
  use halox
  implicit none
  real(real64), parameter :: alpha = 0.2_real64
  !> The OpenACC queue every kernel runs on; in "stream" mode halox's exchange joins it.
  integer, parameter :: q = 1
  real(real64), allocatable :: t(:, :), ts(:, :)
  real(real32), allocatable :: c(:, :), cs(:, :)
  integer :: n, steps, lo(2), hi(2), rank, wrong, total
  character(8) :: mode

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  n = arg(1, 48)
  steps = arg(2, 50)
  mode = 'stream'
  if (command_argument_count() >= 3) call get_command_argument(3, mode)
  if (mode /= 'stream' .and. mode /= 'blocking') error stop 'mode: stream or blocking'
  if (.not. select_gpu()) then
    if (rank == 0) print '(a)', 'fortran_heat2d_acc: no NVIDIA GPU visible to OpenACC: skipped'
    call MPI_Finalize()
    stop 77
  end if

  call halox_run(t, c, lo, hi)
  ! The serial reference: the whole grid on this rank's GPU, halos copied by hand.
  allocate (ts(0:n + 1, 0:n + 1), cs(0:n + 1, 0:n + 1))
  call serial_run(ts, cs)

  wrong = count(t(lo(1):hi(1), lo(2):hi(2)) /= ts(lo(1):hi(1), lo(2):hi(2))) &
          + count(c(lo(1):hi(1), lo(2):hi(2)) /= cs(lo(1):hi(1), lo(2):hi(2)))
  call MPI_Allreduce(wrong, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0 .and. total == 0) print '(a, i0, a, i0, 3a)', 'fortran_heat2d_acc: ', n, '^2, ', &
    steps, ' steps, exchange ', trim(mode), ': verified bit for bit against the serial run'
  if (rank == 0 .and. total /= 0) print '(a, i0, a)', 'fortran_heat2d_acc: ', total, ' cells differ'
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

  !> The distributed run: this rank's box lo..hi of t and c (allocated here) after `steps` steps
  !> on the device, their halos filled by halox from the device arrays.
  subroutine halox_run(t, c, lo, hi)
    real(real64), allocatable, intent(out) :: t(:, :)
    real(real32), allocatable, intent(out) :: c(:, :)
    integer, intent(out) :: lo(2), hi(2)
    type(halox_domain) :: dom
    type(halox_stencil) :: st
    type(halox_field) :: ft, fc
    type(halox_exchange) :: ex
    real(real64), allocatable :: tn(:, :)
    real(real32), allocatable :: cn(:, :)
    integer(c_intptr_t) :: stream
    type(c_ptr) :: pt, pc
    integer :: step
    call halox_cartesian(dom, MPI_COMM_WORLD, [n, n], periodic=[.true., .true.])
    call dom%local_box(lo, hi)
    allocate (t(lo(1) - 1:hi(1) + 1, lo(2) - 1:hi(2) + 1), c(lo(1) - 1:hi(1) + 1, lo(2) - 1:hi(2) + 1))
    allocate (tn, mold=t)
    allocate (cn, mold=c)
    call initial(t, c, lo, hi)
    !$acc enter data copyin(t, c) create(tn, cn) async(q)
    !$acc wait(q)
    stream = queue_stream(q)

    ! The halox part: the device arrays by address, column-major with a halo of one.
    call device_addresses(t, c, size(t), pt, pc)
    call halox_star(st, [1, 1])
    call halox_wrap_device(ft, dom, pt, HALOX_FLOAT64, shape(t), pad=[1, 1], name='temperature')
    call halox_wrap_device(fc, dom, pc, HALOX_FLOAT32, shape(c), pad=[1, 1], name='tracer')
    call halox_make_exchange(ex, dom, st, [ft, fc])
    do step = 1, steps
      if (mode == 'stream') then
        call ex%schedule(stream)       ! packs after the queue's last kernel, sends
        call ex%schedule_wait(stream)  ! the queue's next kernel runs after the unpack
      else
        !$acc wait(q)
        call ex%exchange()             ! returns with every halo filled
      end if
      call diffuse(t, tn, c, cn, lo, hi)
    end do
    !$acc exit data copyout(t, c) delete(tn, cn) async(q)
    !$acc wait(q)
    call ex%destroy()
    call ft%destroy()
    call fc%destroy()
    call st%destroy()
    call dom%destroy()
  end subroutine halox_run

  !> The same steps on the whole grid (ts, cs: 0..n+1 each way) with the same kernels.
  subroutine serial_run(ts, cs)
    real(real64), intent(inout) :: ts(0:n + 1, 0:n + 1)
    real(real32), intent(inout) :: cs(0:n + 1, 0:n + 1)
    real(real64), allocatable :: tsn(:, :)
    real(real32), allocatable :: csn(:, :)
    integer :: step
    allocate (tsn(0:n + 1, 0:n + 1), csn(0:n + 1, 0:n + 1))
    call initial(ts, cs, [1, 1], [n, n])
    !$acc enter data copyin(ts, cs) create(tsn, csn) async(q)
    do step = 1, steps
      call periodic_copies(ts, cs, n)
      call diffuse(ts, tsn, cs, csn, [1, 1], [n, n])
    end do
    !$acc exit data copyout(ts, cs) delete(tsn, csn) async(q)
    !$acc wait(q)
  end subroutine serial_run

  !> One GPU per rank of a node (round robin), shared by OpenACC and halox: the CUDA runtime's
  !> context of that GPU is made current first, so that OpenACC (libgomp) adopts it instead of
  !> creating its own, and the arrays, the queue's stream and halox's kernels live in one context.
  !> False where OpenACC sees no NVIDIA GPU.
  logical function select_gpu()
    interface
      integer(c_int) function cuda_set_device(device) bind(C, name='cudaSetDevice')
        import :: c_int
        integer(c_int), value :: device
      end function cuda_set_device
      integer(c_int) function cuda_free(p) bind(C, name='cudaFree')
        import :: c_int, c_ptr
        type(c_ptr), value :: p
      end function cuda_free
    end interface
    type(MPI_Comm) :: node
    integer :: devices, local
    devices = acc_get_num_devices(acc_device_nvidia)
    select_gpu = devices > 0
    if (.not. select_gpu) return
    call MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, node)
    call MPI_Comm_rank(node, local)
    call MPI_Comm_free(node)
    if (cuda_set_device(int(mod(local, devices), c_int)) /= 0) error stop 'cudaSetDevice failed'
    if (cuda_free(c_null_ptr) /= 0) error stop 'cudaFree(NULL) failed: no CUDA context'
    call acc_set_device_num(mod(local, devices), acc_device_nvidia)
  end function select_gpu

  !> The CUDA stream of OpenACC queue `queue` (which must have run something), as halox takes it.
  integer(c_intptr_t) function queue_stream(queue)
    integer, intent(in) :: queue
    interface
      ! libgomp has it in C only: GCC 12's openacc module does not declare it.
      type(c_ptr) function acc_get_cuda_stream(async) bind(C, name='acc_get_cuda_stream')
        import :: c_int, c_ptr
        integer(c_int), value :: async
      end function acc_get_cuda_stream
    end interface
    queue_stream = transfer(acc_get_cuda_stream(int(queue, c_int)), queue_stream)
    if (queue_stream == 0) error stop 'acc_get_cuda_stream: the queue has no CUDA stream'
  end function queue_stream

  !> The device addresses of t and c (present on the device). Explicit-shape dummies: GCC 12
  !> refuses allocatable arrays in use_device.
  subroutine device_addresses(t, c, cells, pt, pc)
    integer, intent(in) :: cells
    real(real64), target, intent(in) :: t(cells)
    real(real32), target, intent(in) :: c(cells)
    type(c_ptr), intent(out) :: pt, pc
    !$acc host_data use_device(t, c)
    pt = c_loc(t)
    pc = c_loc(c)
    !$acc end host_data
  end subroutine device_addresses

  !> A hot square and a tracer stripe, from global indices alone (on the host).
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

  !> One explicit step of both fields on the device, on queue q.
  subroutine diffuse(t, tn, c, cn, lo, hi)
    integer, intent(in) :: lo(2), hi(2)
    real(real64), intent(inout) :: t(lo(1) - 1:hi(1) + 1, lo(2) - 1:hi(2) + 1)
    real(real64), intent(inout) :: tn(lo(1) - 1:hi(1) + 1, lo(2) - 1:hi(2) + 1)
    real(real32), intent(inout) :: c(lo(1) - 1:hi(1) + 1, lo(2) - 1:hi(2) + 1)
    real(real32), intent(inout) :: cn(lo(1) - 1:hi(1) + 1, lo(2) - 1:hi(2) + 1)
    integer :: i, j
    !$acc parallel loop collapse(2) default(present) async(q)
    do j = lo(2), hi(2)
      do i = lo(1), hi(1)
        tn(i, j) = t(i, j) + alpha * (t(i - 1, j) + t(i + 1, j) + t(i, j - 1) + t(i, j + 1) - 4 * t(i, j))
        cn(i, j) = c(i, j) + real(alpha, real32) * (c(i - 1, j) + c(i + 1, j) + c(i, j - 1) + c(i, j + 1) &
                                                    - 4 * c(i, j))
      end do
    end do
    !$acc parallel loop collapse(2) default(present) async(q)
    do j = lo(2), hi(2)
      do i = lo(1), hi(1)
        t(i, j) = tn(i, j)
        c(i, j) = cn(i, j)
      end do
    end do
  end subroutine diffuse

  !> The serial run's halos: periodic images of the whole grid, on the device, on queue q.
  subroutine periodic_copies(t, c, n)
    integer, intent(in) :: n
    real(real64), intent(inout) :: t(0:n + 1, 0:n + 1)
    real(real32), intent(inout) :: c(0:n + 1, 0:n + 1)
    integer :: i, j
    !$acc parallel loop default(present) async(q)
    do j = 1, n
      t(0, j) = t(n, j)
      t(n + 1, j) = t(1, j)
      c(0, j) = c(n, j)
      c(n + 1, j) = c(1, j)
    end do
    !$acc parallel loop default(present) async(q)
    do i = 0, n + 1
      t(i, 0) = t(i, n)
      t(i, n + 1) = t(i, 1)
      c(i, 0) = c(i, n)
      c(i, n + 1) = c(i, 1)
    end do
  end subroutine periodic_copies
end program fortran_heat2d_acc
