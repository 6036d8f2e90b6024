! The Fortran module at any rank count: arrays declared with global index bounds, used in place;
! every halo cell checked against the global coordinates encoded in the data, on 2-D (mpi_f08
! communicator) and 3-D (integer communicator) domains, periodic and not, with fields of
! different types and stencils in one exchange, an array section, components; bad input on
! every rank rejected with stat and errmsg, the arrays left as they were; the boundary rules
! beyond a non-periodic box against a model of each rule; two boxes per rank, one array each;
! an array in halox_allocate_node_shared memory, given its global bounds by pointer remapping;
! exchange options (staging, wait_timeout, host_shared_memory) and bad values of them; boundary
! callbacks, their cells and bounds against a model of the halo beyond each face.

!> The boundary callback of test_callbacks, a module procedure (a bind(C) procedure cannot be
!> internal): it writes 1000 i + j + add into each cell (i, j) it is given and records what it
!> was given.
module test_fortran_callbacks
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use, intrinsic :: iso_c_binding, only: c_ptr, c_int, c_int64_t, c_f_pointer, &
                                         c_associated
  implicit none
  private
  public :: face_fill, fill_face

  type :: face_fill
    real(real64), pointer :: u(:, :) => null()
    real(real64) :: add = 0
    integer :: calls = 0, cells = 0, outside = 0, block = 0
    integer(int64) :: lo(4) = 0, hi(4) = 0
    logical :: host_stream = .true.
  end type face_fill

contains

  subroutine fill_face(user, block, lo, hi, stream) bind(C)
    type(c_ptr), value :: user, stream
    integer(c_int), value :: block
    integer(c_int64_t), intent(in) :: lo(4), hi(4)
    type(face_fill), pointer :: ff
    integer(int64) :: i, j
    call c_f_pointer(user, ff)
    ff%calls = ff%calls + 1
    ff%block = block
    ff%lo = lo
    ff%hi = hi
    ff%host_stream = ff%host_stream .and. .not. c_associated(stream)
    do j = lo(2), hi(2)
      do i = lo(1), hi(1)
        ff%cells = ff%cells + 1
        if (i < lbound(ff%u, 1) .or. i > ubound(ff%u, 1) .or. j < lbound(ff%u, 2) .or. &
            j > ubound(ff%u, 2)) then
          ff%outside = ff%outside + 1
        else
          ff%u(i, j) = real(1000 * i + j, real64) + ff%add
        end if
      end do
    end do
  end subroutine fill_face

end module test_fortran_callbacks

program test_fortran
  use, intrinsic :: iso_fortran_env, only: int32, int64, real32, real64, error_unit
  use, intrinsic :: iso_c_binding, only: c_ptr, c_loc, c_f_pointer, c_associated
  use mpi_f08
  use halox
  use test_fortran_callbacks
  implicit none
  integer :: rank, nranks, failures, total

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  failures = 0
  call test_2d(.true.)
  call test_2d(.false.)
  call test_3d(.true.)
  call test_3d(.false.)
  call test_bad_input()
  call test_boundary()
  call test_blocks()
  call test_node_shared()
  call test_options()
  call test_callbacks()
  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a, i0, a)', 'test_fortran: ', nranks, ' rank(s), ', total, ' failure(s)'
  call MPI_Finalize()
  if (total /= 0) error stop 1

contains

  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (ok) return
    failures = failures + 1
    if (failures <= 10) write (error_unit, '(a, i0, 2a)') 'rank ', rank, ': ', what
  end subroutine expect

  !> The number a global cell (1-based) holds.
  pure real(real64) function code(g)
    integer, intent(in) :: g(:)
    integer :: i
    code = 1
    do i = size(g), 1, -1
      code = code * 100 + g(i)
    end do
  end function code

  !> What cell g holds after an exchange with halo widths w (box: corners too), -1 where no
  !> stencil region or a non-periodic edge leaves it unfilled.
  pure real(real64) function expected(g, lo, hi, n, periodic, w, box)
    integer, intent(in) :: g(:), lo(:), hi(:), n(:), w(:)
    logical, intent(in) :: periodic(:), box
    integer :: src(size(g)), i, outside
    expected = -1
    outside = 0
    src = g
    do i = 1, size(g)
      if (g(i) < lo(i) - w(i) .or. g(i) > hi(i) + w(i)) return
      if (g(i) < lo(i) .or. g(i) > hi(i)) outside = outside + 1
      if (g(i) < 1 .or. g(i) > n(i)) then
        if (.not. periodic(i)) return
        src(i) = modulo(g(i) - 1, n(i)) + 1
      end if
    end do
    if (outside > 1 .and. .not. box) return
    expected = code(src)
  end function expected

  !> 2-D: u (real64, box stencil of width 2, padding 2, two components) and v (int32, its own
  !> star stencil of width 1, padding 1), plus s, a real64 section of a 3-D array.
  subroutine test_2d(periodic)
    logical, intent(in) :: periodic
    integer, parameter :: n(2) = [9, 7]
    type(halox_domain) :: dom
    type(halox_stencil) :: box2, star1
    type(halox_field) :: fu, fv, fs
    type(halox_exchange) :: ex
    real(real64), allocatable, target :: u(:, :, :), big(:, :, :)
    integer(int32), allocatable, target :: v(:, :)
    integer :: lo(2), hi(2), i, j, c, bad
    character(64) :: what
    call halox_cartesian(dom, MPI_COMM_WORLD, n, periodic=[periodic, periodic])
    call dom%local_box(lo, hi)
    allocate (u(lo(1) - 2:hi(1) + 2, lo(2) - 2:hi(2) + 2, 2), v(lo(1) - 1:hi(1) + 1, lo(2) - 1:hi(2) + 1))
    allocate (big(lo(1) - 1:hi(1) + 1, 3, lo(2) - 1:hi(2) + 1))
    u = -1
    v = -1
    big = -1
    do j = lo(2), hi(2)
      do i = lo(1), hi(1)
        u(i, j, :) = code([i, j])
        v(i, j) = int(code([i, j]), int32)
        big(i, 2, j) = code([i, j])
      end do
    end do
    call halox_box(box2, [2, 2])
    call halox_star(star1, [1, 1])
    call halox_wrap(fu, dom, u, pad=[2, 2], components=.true., name='u')
    call halox_wrap(fv, dom, v, pad=[1, 1], name='v')
    call fv%set_stencil(star1)
    call halox_wrap(fs, dom, big(:, 2, :), pad=[1, 1], name='section')
    call fs%set_stencil(star1)
    call halox_make_exchange(ex, dom, box2, [fu, fv, fs])
    call ex%exchange()
    bad = 0
    do j = lbound(u, 2), ubound(u, 2)
      do i = lbound(u, 1), ubound(u, 1)
        do c = 1, 2
          if (u(i, j, c) /= expected([i, j], lo, hi, n, [periodic, periodic], [2, 2], .true.)) bad = bad + 1
        end do
        if (i >= lbound(v, 1) .and. i <= ubound(v, 1) .and. j >= lbound(v, 2) .and. j <= ubound(v, 2)) then
          if (v(i, j) /= expected([i, j], lo, hi, n, [periodic, periodic], [1, 1], .false.)) bad = bad + 1
          if (big(i, 2, j) /= expected([i, j], lo, hi, n, [periodic, periodic], [1, 1], .false.)) bad = bad + 1
        end if
      end do
    end do
    write (what, '(a, l1, a, i0, a)') '2-D periodic=', periodic, ': ', bad, ' wrong halo cells'
    call expect(bad == 0, trim(what))
    call expect(all(big(:, 1, :) == -1) .and. all(big(:, 3, :) == -1), 'cells beside the section changed')
    call expect(index(ex%describe(), '3 field(s)') > 0, 'describe(): '//ex%describe())
    call ex%destroy()
    call fu%destroy()
    call fv%destroy()
    call fs%destroy()
    call box2%destroy()
    call star1%destroy()
    call dom%destroy()
  end subroutine test_2d

  !> 3-D over an integer communicator: w (real32) and x (int64), box stencil of width 1,
  !> started and waited for.
  subroutine test_3d(periodic)
    logical, intent(in) :: periodic
    integer, parameter :: n(3) = [6, 5, 4]
    type(halox_domain) :: dom
    type(halox_stencil) :: st
    type(halox_field) :: fw, fx
    type(halox_exchange) :: ex
    real(real32), allocatable, target :: w(:, :, :)
    integer(int64), allocatable, target :: x(:, :, :)
    integer :: lo(3), hi(3), i, j, k, bad, stat
    logical :: p(3)
    character(64) :: what
    p = periodic
    call halox_cartesian(dom, MPI_COMM_WORLD%MPI_VAL, n, periodic=p)
    call dom%local_box(lo, hi)
    allocate (w(lo(1) - 1:hi(1) + 1, lo(2) - 1:hi(2) + 1, lo(3) - 1:hi(3) + 1))
    allocate (x(lo(1) - 1:hi(1) + 1, lo(2) - 1:hi(2) + 1, lo(3) - 1:hi(3) + 1))
    w = -1
    x = -1
    do k = lo(3), hi(3)
      do j = lo(2), hi(2)
        do i = lo(1), hi(1)
          w(i, j, k) = real(code([i, j, k]), real32)
          x(i, j, k) = int(code([i, j, k]), int64)
        end do
      end do
    end do
    call halox_box(st, [1, 1, 1])
    call halox_wrap(fw, dom, w, pad=[1, 1, 1])
    call halox_wrap(fx, dom, x, pad_lo=[1, 1, 1], pad_hi=[1, 1, 1])
    call halox_make_exchange(ex, dom, st, [fw, fx], label='three-d', stat=stat)
    call expect(stat == HALOX_SUCCESS, 'the 3-D exchange was not built')
    call ex%start()
    if (.not. ex%test()) call ex%wait()
    bad = 0
    do k = lbound(w, 3), ubound(w, 3)
      do j = lbound(w, 2), ubound(w, 2)
        do i = lbound(w, 1), ubound(w, 1)
          if (w(i, j, k) /= real(expected([i, j, k], lo, hi, n, p, [1, 1, 1], .true.), real32)) bad = bad + 1
          if (x(i, j, k) /= int(expected([i, j, k], lo, hi, n, p, [1, 1, 1], .true.), int64)) bad = bad + 1
        end do
      end do
    end do
    write (what, '(a, l1, a, i0, a)') '3-D periodic=', periodic, ': ', bad, ' wrong halo cells'
    call expect(bad == 0, trim(what))
    call ex%destroy()
    call fw%destroy()
    call fx%destroy()
    call st%destroy()
    call dom%destroy()
  end subroutine test_3d

  !> A 2-D periodic exchange of an array in node-shared memory (c_f_pointer, then its bounds by
  !> pointer remapping), every cell checked; the memory freed.
  subroutine test_node_shared()
    integer, parameter :: n(2) = [24, 20]
    type(halox_domain) :: dom
    type(halox_stencil) :: st
    type(halox_field) :: f
    type(halox_exchange) :: ex
    type(c_ptr) :: mem
    real(real64), pointer :: flat(:), u(:, :)
    integer :: lo(2), hi(2), i, j, bad, stat
    call halox_cartesian(dom, MPI_COMM_WORLD, n, periodic=[.true., .true.])
    call dom%local_box(lo, hi)
    call halox_allocate_node_shared(mem, int(8 * (hi(1) - lo(1) + 5) * (hi(2) - lo(2) + 5), int64), &
                                    stat=stat)
    call expect(stat == HALOX_SUCCESS .and. c_associated(mem), 'node-shared memory not allocated')
    call c_f_pointer(mem, flat, [(hi(1) - lo(1) + 5) * (hi(2) - lo(2) + 5)])
    u(lo(1) - 2:hi(1) + 2, lo(2) - 2:hi(2) + 2) => flat
    u = -1
    do j = lo(2), hi(2)
      do i = lo(1), hi(1)
        u(i, j) = code([i, j])
      end do
    end do
    call halox_box(st, [2, 2])
    call halox_wrap(f, dom, u, pad=[2, 2], name='node-shared')
    call halox_make_exchange(ex, dom, st, [f])
    call ex%exchange()
    bad = 0
    do j = lbound(u, 2), ubound(u, 2)
      do i = lbound(u, 1), ubound(u, 1)
        if (u(i, j) /= expected([i, j], lo, hi, n, [.true., .true.], [2, 2], .true.)) bad = bad + 1
      end do
    end do
    call expect(bad == 0, 'node-shared memory: wrong halo cells')
    call ex%destroy()
    call f%destroy()
    call st%destroy()
    call dom%destroy()
    call halox_free_node_shared(mem, stat=stat)
    call expect(stat == HALOX_SUCCESS .and. .not. c_associated(mem), 'node-shared memory not freed')
  end subroutine test_node_shared

  !> Builds an exchange of `a` that must fail on every rank with HALOX_ERROR and a message
  !> containing `needle`, leaving `a` as it was.
  subroutine expect_rejected(dom, st, a, pad, needle, what)
    type(halox_domain), intent(in) :: dom
    type(halox_stencil), intent(in) :: st
    real(real64), intent(inout), target :: a(:, :)
    integer, intent(in) :: pad(:)
    character(*), intent(in) :: needle, what
    real(real64) :: before(size(a, 1), size(a, 2))
    type(halox_field) :: f
    type(halox_exchange) :: ex
    character(400) :: msg
    integer :: stat
    before = a
    msg = ''
    call halox_wrap(f, dom, a, pad=pad)
    call halox_make_exchange(ex, dom, st, [f], stat=stat, errmsg=msg)
    call expect(stat == HALOX_ERROR, what//': stat is not HALOX_ERROR')
    call expect(index(msg, needle) > 0, what//': the message "'//trim(msg)//'" does not say '//needle)
    call expect(all(a == before), what//': the array changed')
    call f%destroy()
  end subroutine expect_rejected

  subroutine test_bad_input()
    type(halox_domain) :: dom, bad
    type(halox_stencil) :: st1, st2
    real(real64), allocatable, target :: a(:, :), wide(:, :)
    integer :: lo(2), hi(2), stat, i, j
    character(300) :: msg
    call halox_cartesian(dom, MPI_COMM_WORLD, [8, 6], periodic=[.true., .false.])
    call dom%local_box(lo, hi)
    allocate (a(lo(1) - 1:hi(1) + 1, lo(2) - 1:hi(2) + 1), wide(lo(1) - 1:hi(1) + 2, lo(2) - 1:hi(2) + 1))
    a = -1
    wide = -1
    forall (i=lo(1):hi(1), j=lo(2):hi(2)) a(i, j) = code([i, j])
    call halox_star(st1, [1, 1])
    call halox_star(st2, [2, 2])
    call expect_rejected(dom, st2, a, [1, 1], 'padding', 'halo wider than the padding')
    call expect_rejected(dom, st1, wide, [1, 1], 'extents', 'wrong extents')
    if (nranks > 1) then
      if (rank == 0) then
        call expect_rejected(dom, st1, a, [1, 1], 'rank', 'mismatched ranks')
      else
        call expect_rejected(dom, st2, a, [1, 1], 'rank', 'mismatched ranks')
      end if
    end if
    msg = ''
    call halox_cartesian(bad, MPI_COMM_WORLD, [8, 6, 4, 2, 2], stat=stat, errmsg=msg)
    call expect(stat == HALOX_ERROR .and. index(msg, 'dimension 5 is not 1 to 4') > 0, &
                'a 5-D domain: '//trim(msg))
    call st1%destroy()
    call st2%destroy()
    call dom%destroy()
  end subroutine test_bad_input

  !> Boundary rules on a non-periodic 2-D box, star stencil of width 1: u (real64) zero gradient
  !> at x low, 5 at x high, reflect with sign -1 at y low, mirror at y high; v (int32) 7 at x
  !> high only. Every cell of each array against the model; a rule on dimension 3 rejected.
  subroutine test_boundary()
    integer, parameter :: n(2) = [9, 7]
    type(halox_domain) :: dom
    type(halox_stencil) :: star1
    type(halox_field) :: fu, fv, fw
    type(halox_exchange) :: ex
    real(real64), allocatable, target :: u(:, :), w(:, :)
    integer(int32), allocatable, target :: v(:, :)
    integer :: lo(2), hi(2), i, j, bad, stat
    character(300) :: msg
    call halox_cartesian(dom, MPI_COMM_WORLD, n, periodic=[.false., .false.])
    call dom%local_box(lo, hi)
    allocate (u(lo(1) - 1:hi(1) + 1, lo(2) - 1:hi(2) + 1), v(lo(1) - 1:hi(1) + 1, lo(2) - 1:hi(2) + 1))
    allocate (w, mold=u)
    u = -1
    v = -1
    w = -1
    forall (i=lo(1):hi(1), j=lo(2):hi(2)) u(i, j) = code([i, j])
    forall (i=lo(1):hi(1), j=lo(2):hi(2)) v(i, j) = int(code([i, j]), int32)
    call halox_star(star1, [1, 1])
    call halox_wrap(fu, dom, u, pad=[1, 1], name='u')
    call halox_wrap(fv, dom, v, pad=[1, 1], name='v')
    call halox_boundary_zero_gradient(fu, 1, HALOX_LOW)
    call halox_boundary_constant(fu, 1, HALOX_HIGH, 5.0_real64)
    call halox_boundary_reflect(fu, 2, HALOX_LOW, [-1.0_real64])
    call halox_boundary_mirror(fu, 2, HALOX_HIGH)
    call halox_boundary_constant(fv, 1, HALOX_HIGH, 7_int32)
    ! A rule beyond the domain's dimensions: the exchange is refused on every rank.
    call halox_wrap(fw, dom, w, pad=[1, 1], name='w')
    call halox_boundary_mirror(fw, 3, HALOX_LOW)
    msg = ''
    call halox_make_exchange(ex, dom, star1, [fw], stat=stat, errmsg=msg)
    call expect(stat == HALOX_ERROR .and. index(msg, "field 'w' has a boundary rule on dimension") > 0, &
                'a rule on dimension 3: '//trim(msg))
    call fw%destroy()
    call halox_make_exchange(ex, dom, star1, [fu, fv])
    call ex%exchange()
    bad = count(u /= bc_model(lo, hi, n, .true.)) + &
          count(v /= int(bc_model(lo, hi, n, .false.), int32))
    write (msg, '(i0, a)') bad, ' cells differ from the boundary rules'' model'
    call expect(bad == 0, trim(msg))
    call ex%destroy()
    call fu%destroy()
    call fv%destroy()
    call star1%destroy()
    call dom%destroy()
  end subroutine test_boundary

  !> Two boxes per rank (box lists): 2P strips of 3 columns, strip k owned by rank mod(k-1, P),
  !> so a rank's two strips are apart (side by side on one rank); one array per strip, wrapped
  !> as one field; periodic, box stencil of width 1. Every cell of both arrays checked; a block
  !> of the wrong shape refused on every rank.
  subroutine test_blocks()
    type :: strip
      real(real64), allocatable :: a(:, :)
    end type strip
    type(halox_domain) :: dom
    type(halox_stencil) :: box1
    type(halox_field) :: f, wrong
    type(halox_exchange) :: ex
    type(strip), allocatable, target :: b(:)
    integer :: n(2), k, i, j, bad, stat, nb, lo(2, 2), hi(2, 2), ext(2, 2)
    integer, allocatable :: blo(:, :), bhi(:, :), owners(:)
    type(c_ptr) :: ptrs(2)
    character(300) :: msg
    n = [6 * nranks, 5]
    allocate (blo(2, 2 * nranks), bhi(2, 2 * nranks), owners(2 * nranks))
    do k = 1, 2 * nranks
      blo(:, k) = [3 * (k - 1) + 1, 1]
      bhi(:, k) = [3 * k, n(2)]
      owners(k) = modulo(k - 1, nranks)
    end do
    call halox_box_list(dom, MPI_COMM_WORLD, n, [.true., .true.], blo, bhi, owners)
    nb = dom%block_count()
    call expect(nb == 2, 'block_count() is not 2')
    allocate (b(2))
    do k = 1, 2
      call dom%local_box(lo(:, k), hi(:, k), block=k)
      allocate (b(k)%a(lo(1, k) - 1:hi(1, k) + 1, lo(2, k) - 1:hi(2, k) + 1))
      b(k)%a = -1
      forall (i=lo(1, k):hi(1, k), j=lo(2, k):hi(2, k)) b(k)%a(i, j) = code([i, j])
      ext(:, k) = shape(b(k)%a)
      ptrs(k) = c_loc(b(k)%a(lbound(b(k)%a, 1), lbound(b(k)%a, 2)))
    end do
    call halox_box(box1, [1, 1])
    ! Block 2 declared one column short: refused on every rank, the arrays untouched.
    call halox_wrap_blocks(wrong, dom, ptrs, HALOX_FLOAT64, ext - reshape([0, 0, 1, 0], [2, 2]), &
                           pad=[1, 1], name='short')
    msg = ''
    call halox_make_exchange(ex, dom, box1, [wrong], stat=stat, errmsg=msg)
    call expect(stat == HALOX_ERROR .and. index(msg, "field 'short'") > 0 .and. &
                index(msg, 'extents') > 0, 'a block of the wrong shape: '//trim(msg))
    call wrong%destroy()
    call halox_wrap_blocks(f, dom, ptrs, HALOX_FLOAT64, ext, pad=[1, 1], name='strips')
    call halox_make_exchange(ex, dom, box1, [f])
    call ex%exchange()
    bad = 0
    do k = 1, 2
      do j = lbound(b(k)%a, 2), ubound(b(k)%a, 2)
        do i = lbound(b(k)%a, 1), ubound(b(k)%a, 1)
          if (b(k)%a(i, j) /= expected([i, j], lo(:, k), hi(:, k), n, [.true., .true.], [1, 1], &
                                       .true.)) bad = bad + 1
        end do
      end do
    end do
    write (msg, '(i0, a)') bad, ' wrong cells in two blocks per rank'
    call expect(bad == 0, trim(msg))
    call ex%destroy()
    call f%destroy()
    call box1%destroy()
    call dom%destroy()
  end subroutine test_blocks

  !> A 2-D periodic exchange made with staging, wait_timeout and host_shared_memory = .false.:
  !> every cell checked, messages between ranks through MPI (describe; shared memory without
  !> the option); a staging of 17 and a negative timeout refused on every rank with the C
  !> layer's message, the array untouched.
  subroutine test_options()
    integer, parameter :: n(2) = [9, 7]
    type(halox_domain) :: dom
    type(halox_stencil) :: st
    type(halox_field) :: f
    type(halox_exchange) :: ex, nope
    real(real64), allocatable, target :: u(:, :)
    real(real64), allocatable :: before(:, :)
    integer :: lo(2), hi(2), i, j, bad, stat
    character(300) :: msg
    character(:), allocatable :: text
    call halox_cartesian(dom, MPI_COMM_WORLD, n, periodic=[.true., .true.])
    call dom%local_box(lo, hi)
    allocate (u(lo(1) - 1:hi(1) + 1, lo(2) - 1:hi(2) + 1))
    u = -1
    forall (i=lo(1):hi(1), j=lo(2):hi(2)) u(i, j) = code([i, j])
    before = u
    call halox_box(st, [1, 1])
    call halox_wrap(f, dom, u, pad=[1, 1], name='u')
    msg = ''
    call halox_make_exchange(nope, dom, st, [f], label='bad staging', staging=17, stat=stat, &
                             errmsg=msg)
    call expect(stat == HALOX_ERROR .and. index(msg, 'halox_options_set_staging: 17 is no ' &
                                                //'halox_staging') > 0, 'staging 17: '//trim(msg))
    if (nranks > 1) then  ! refused on rank 0 only: every rank fails, none waits for ever
      msg = ''
      call halox_make_exchange(nope, dom, st, [f], &
                               staging=merge(17, HALOX_STAGING_AUTO, rank == 0), stat=stat, &
                               errmsg=msg)
      call expect(stat == HALOX_ERROR .and. len_trim(msg) > 0, 'staging 17 on rank 0: '//trim(msg))
      if (rank == 0) call expect(index(msg, '17 is no halox_staging') > 0, &
                                 'staging 17 on rank 0: '//trim(msg))
    end if
    msg = ''  ! (refused even where HALOX_WAIT_TIMEOUT, which ctest sets, would replace it)
    call halox_make_exchange(nope, dom, st, [f], wait_timeout=-2.0_real64, stat=stat, errmsg=msg)
    call expect(stat == HALOX_ERROR .and. index(msg, 'wait_timeout: -2 s') > 0, &
                'wait_timeout -2: '//trim(msg))
    call expect(all(u == before), 'refused options: the array changed')
    msg = ''
    call halox_make_exchange(ex, dom, st, [f], label='options', staging=HALOX_STAGING_HOST_STAGED, &
                             wait_timeout=30.0_real64, host_shared_memory=.false., stat=stat, &
                             errmsg=msg)
    call expect(stat == HALOX_SUCCESS, 'the exchange with options was not built: '//trim(msg))
    call ex%exchange()
    bad = 0
    do j = lbound(u, 2), ubound(u, 2)
      do i = lbound(u, 1), ubound(u, 1)
        if (u(i, j) /= expected([i, j], lo, hi, n, [.true., .true.], [1, 1], .true.)) bad = bad + 1
      end do
    end do
    write (msg, '(i0, a)') bad, ' wrong halo cells with options'
    call expect(bad == 0, trim(msg))
    ! Between ranks of this node: MPI (named by how it packs) with the option, shared memory
    ! without it.
    text = ex%describe()
    call expect(index(text, 'shared memory') == 0, 'host_shared_memory=.false.: '//text)
    if (nranks > 1) call expect(index(text, 'via host fields only') > 0, &
                                'host_shared_memory=.false.: '//text)
    call ex%destroy()
    call halox_make_exchange(ex, dom, st, [f])
    if (nranks > 1) call expect(index(ex%describe(), 'via shared memory') > 0, &
                                'default options: '//ex%describe())
    call ex%destroy()
    call f%destroy()
    call st%destroy()
    call dom%destroy()
  end subroutine test_options

  !> Boundary callbacks on a non-periodic 2-D box, box stencil of widths (2, 1): one at x high,
  !> one at y low. Every cell against a model: the exchange's halo (expected), then 1000 i + j
  !> plus 0.25 (x high) or 0.5 (y low, run after x) over the cells beyond each face, the owned
  !> box grown by the stencil's widths across the face. Each callback ran once on a rank whose
  !> box touches its face (never elsewhere), for block 1, on the host, with exactly those
  !> bounds (1-based, inclusive) and cell count; the field's device callbacks are not tried here.
  subroutine test_callbacks()
    integer, parameter :: n(2) = [9, 7], w(2) = [2, 1]
    type(halox_domain) :: dom
    type(halox_stencil) :: st
    type(halox_field) :: f
    type(halox_exchange) :: ex
    real(real64), allocatable, target :: u(:, :)
    real(real64), allocatable :: m(:, :)
    type(face_fill), target :: xh, yl
    integer :: lo(2), hi(2), i, j, bad, stat
    integer :: xlo(2), xhi(2), ylo(2), yhi(2)
    logical :: at_xh, at_yl
    character(300) :: msg
    call halox_cartesian(dom, MPI_COMM_WORLD, n, periodic=[.false., .false.])
    call dom%local_box(lo, hi)
    allocate (u(lo(1) - w(1):hi(1) + w(1), lo(2) - w(2):hi(2) + w(2)))
    u = -1
    forall (i=lo(1):hi(1), j=lo(2):hi(2)) u(i, j) = code([i, j])
    xh%u => u
    xh%add = 0.25_real64
    yl%u => u
    yl%add = 0.5_real64
    call halox_box(st, w)
    call halox_wrap(f, dom, u, pad=w, name='u')
    call halox_boundary_callback(f, 1, HALOX_HIGH, fill_face, c_loc(xh))
    msg = ''
    call halox_boundary_callback(f, 2, HALOX_LOW, fill_face, c_loc(yl), stat=stat, errmsg=msg)
    call expect(stat == HALOX_SUCCESS, 'halox_boundary_callback: '//trim(msg))
    call halox_make_exchange(ex, dom, st, [f])
    call ex%exchange()
    ! The model: the exchange, then each face's cells beyond it.
    allocate (m, mold=u)
    do j = lbound(u, 2), ubound(u, 2)
      do i = lbound(u, 1), ubound(u, 1)
        m(i, j) = expected([i, j], lo, hi, n, [.false., .false.], w, .true.)
      end do
    end do
    at_xh = hi(1) == n(1)
    at_yl = lo(2) == 1
    xlo = [n(1) + 1, lo(2) - w(2)]
    xhi = [n(1) + w(1), hi(2) + w(2)]
    ylo = [lo(1) - w(1), 1 - w(2)]
    yhi = [hi(1) + w(1), 0]
    if (at_xh) forall (i=xlo(1):xhi(1), j=xlo(2):xhi(2)) m(i, j) = 1000 * i + j + 0.25_real64
    if (at_yl) forall (i=ylo(1):yhi(1), j=ylo(2):yhi(2)) m(i, j) = 1000 * i + j + 0.5_real64
    bad = count(u /= m)
    write (msg, '(i0, a)') bad, ' cells differ from the boundary callbacks'' model'
    call expect(bad == 0, trim(msg))
    call expect(xh%calls == merge(1, 0, at_xh) .and. yl%calls == merge(1, 0, at_yl), &
                'a callback ran where its face is not, or more than once')
    call expect(xh%outside == 0 .and. yl%outside == 0, 'a callback got cells outside the array')
    call expect(xh%host_stream .and. yl%host_stream, 'a host callback got a stream')
    if (at_xh) then
      call expect(xh%block == 1 .and. all(xh%lo(1:2) == xlo) .and. all(xh%hi(1:2) == xhi) .and. &
                  all(xh%lo(3:4) == 1) .and. all(xh%hi(3:4) == 1), 'x high: wrong block or bounds')
      call expect(xh%cells == w(1) * (hi(2) - lo(2) + 1 + 2 * w(2)), 'x high: wrong cell count')
    end if
    if (at_yl) then
      call expect(yl%block == 1 .and. all(yl%lo(1:2) == ylo) .and. all(yl%hi(1:2) == yhi), &
                  'y low: wrong block or bounds')
      call expect(yl%cells == w(2) * (hi(1) - lo(1) + 1 + 2 * w(1)), 'y low: wrong cell count')
    end if
    call ex%destroy()
    call f%destroy()
    call st%destroy()
    call dom%destroy()
  end subroutine test_callbacks

  !> test_boundary's model of one array (this rank's box lo..hi of the global n, one halo cell
  !> each side): owned and interior halo cells (star stencil) their code, the rest -1; then the
  !> rules in the order they were declared, each over the whole array along the other dimension
  !> (u: all four; v: the x-high constant only).
  function bc_model(lo, hi, n, all_rules) result(m)
    integer, intent(in) :: lo(2), hi(2), n(2)
    logical, intent(in) :: all_rules
    real(real64) :: m(lo(1) - 1:hi(1) + 1, lo(2) - 1:hi(2) + 1)
    integer :: i, j
    m = -1
    do j = lo(2) - 1, hi(2) + 1
      do i = lo(1) - 1, hi(1) + 1
        if (i < 1 .or. i > n(1) .or. j < 1 .or. j > n(2)) cycle
        if ((i >= lo(1) .and. i <= hi(1)) .or. (j >= lo(2) .and. j <= hi(2))) m(i, j) = code([i, j])
      end do
    end do
    if (all_rules .and. lo(1) == 1) m(0, :) = m(1, :)
    if (hi(1) == n(1)) m(n(1) + 1, :) = merge(5.0_real64, 7.0_real64, all_rules)
    if (.not. all_rules) return
    if (lo(2) == 1) m(:, 0) = -m(:, 1)
    if (hi(2) == n(2)) m(:, n(2) + 1) = m(:, n(2) - 1)
  end function bc_model

end program test_fortran
