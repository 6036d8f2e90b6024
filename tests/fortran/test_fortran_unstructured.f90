! The Fortran module's unstructured patterns at any rank count: a ring of entities dealt out
! round-robin, each rank needing the neighbours of its entities as ghosts; integer(int64) ids
! beyond 32 bits (mpi_f08 communicator) and default-integer ids (integer communicator); every
! ghost value of three fields (components first, one value, entities first in an array section)
! checked against a value computed from its global id, with exchange and start/test/wait; the
! owners halox found; a reverse sum against a serial count of who ghosts what; bad input on
! every rank rejected with stat and errmsg, the arrays left as they were (a bad staging option
! on one rank included).
program test_fortran_unstructured
  use, intrinsic :: iso_fortran_env, only: int32, int64, real32, real64, error_unit
  use mpi_f08
  use halox
  implicit none
  integer :: rank, nranks, failures, total, n

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  failures = 0
  n = 6 * nranks + 1  ! entities 1..n on a ring
  call test_forward()
  call test_reverse()
  call test_local_order()
  call test_bad_input()
  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a, i0, a)', 'test_fortran_unstructured: ', nranks, ' rank(s), ', &
    total, ' failure(s)'
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

  !> The rank that owns ring entity g (1..n).
  pure integer function owner(g)
    integer, intent(in) :: g
    owner = mod(g, nranks)
  end function owner

  !> Ring entity g as a global id beyond 32 bits.
  elemental integer(int64) function big_id(g)
    integer, intent(in) :: g
    big_id = int(g, int64) * 1000000007_int64
  end function big_id

  !> The ring entities rank q owns, in increasing order.
  function owned_of(q) result(ids)
    integer, intent(in) :: q
    integer, allocatable :: ids(:)
    integer :: g
    allocate (ids(count([(owner(g) == q, g = 1, n)])))
    ids(:) = pack([(g, g = 1, n)], [(owner(g) == q, g = 1, n)])
  end function owned_of

  !> Rank q's ghosts: the ring neighbours of its entities that other ranks own, each once, the
  !> high neighbour first.
  function ghosts_of(q) result(ids)
    integer, intent(in) :: q
    integer, allocatable :: ids(:), own(:)
    integer :: found(n), k, g, nb(2), j, m
    allocate (own, source=owned_of(q))
    m = 0
    do k = 1, size(own)
      g = own(k)
      nb = [modulo(g, n) + 1, modulo(g - 2, n) + 1]
      do j = 1, 2
        if (owner(nb(j)) == q .or. any(found(1:m) == nb(j))) cycle
        m = m + 1
        found(m) = nb(j)
      end do
    end do
    allocate (ids(m))
    ids(:) = found(1:m)
  end function ghosts_of

  !> The ring entity of each local entity: owned first, then ghosts.
  function local_of(q) result(ids)
    integer, intent(in) :: q
    integer, allocatable :: ids(:), own(:), ghosts(:)
    allocate (own, source=owned_of(q))
    allocate (ghosts, source=ghosts_of(q))
    allocate (ids(size(own) + size(ghosts)))
    ids(:) = [own, ghosts]
  end function local_of

  !> Owned entities hold their values, ghosts -1: u(c, e) = 10 g + c, v(e) = 7 g + 3,
  !> w(e, c) = 4 g + c.
  subroutine fill(ids, nown, u, v, w)
    integer, intent(in) :: ids(:), nown
    real(real64), intent(out) :: u(:, :)
    integer(int32), intent(out) :: v(:)
    real(real32), intent(out) :: w(:, :)
    integer :: e, c
    u = -1
    v = -1
    w = -1
    do e = 1, nown
      u(:, e) = [(10.0_real64 * big_id(ids(e)) + c, c = 1, 2)]
      v(e) = 7 * ids(e) + 3
      w(e, 1:3) = [(real(4 * ids(e) + c, real32), c = 1, 3)]
    end do
  end subroutine fill

  subroutine verify(ids, u, v, w, what)
    integer, intent(in) :: ids(:)
    real(real64), intent(in) :: u(:, :)
    integer(int32), intent(in) :: v(:)
    real(real32), intent(in) :: w(:, :)
    character(*), intent(in) :: what
    integer :: e, c
    do e = 1, size(ids)
      do c = 1, 2
        call expect(u(c, e) == 10.0_real64 * big_id(ids(e)) + c, what//': u')
      end do
      call expect(v(e) == 7 * ids(e) + 3, what//': v')
      do c = 1, 3
        call expect(w(e, c) == real(4 * ids(e) + c, real32), what//': w')
      end do
    end do
  end subroutine verify

  subroutine test_forward()
    type(halox_pattern) :: pat
    type(halox_entity_field) :: fu, fv, fw
    type(halox_exchange) :: ex
    real(real64), allocatable, target :: u(:, :)
    integer(int32), allocatable, target :: v(:)
    real(real32), allocatable, target :: w(:, :)  ! entities first, two spare rows
    integer, allocatable :: ids(:), ghosts(:), owners(:)
    integer :: nl, nown, k
    integer(int64) :: counts(3)
    allocate (ids, source=local_of(rank))
    allocate (ghosts, source=ghosts_of(rank))
    nl = size(ids)
    nown = nl - size(ghosts)
    call halox_unstructured(pat, MPI_COMM_WORLD, [(big_id(ids(k)), k = 1, nown)], &
                            [(big_id(ghosts(k)), k = 1, size(ghosts))])
    counts = [pat%owned_count(), pat%ghost_count(), pat%local_count()]
    call expect(all(counts == [nown, size(ghosts), nl]), 'counts')
    allocate (owners(size(ghosts)))
    call pat%ghost_owners(owners)
    do k = 1, size(ghosts)
      call expect(owners(k) == owner(ghosts(k)), 'ghost owner')
    end do
    allocate (u(2, nl), v(nl), w(nl + 2, 3))
    call halox_wrap(fu, pat, u, name='u')
    call halox_wrap(fv, pat, v)
    call halox_wrap(fw, pat, w(1:nl, :), entities_first=.true., name='w')
    call halox_make_exchange(ex, pat, [fu, fv, fw], label='ring')
    call fill(ids, nown, u, v, w(1:nl, :))
    w(nl + 1:, :) = 99
    call ex%exchange()
    call verify(ids, u, v, w(1:nl, :), 'exchange')
    call expect(all(w(nl + 1:, :) == 99), 'the rows beyond the section were written')
    call fill(ids, nown, u, v, w(1:nl, :))
    call ex%start()
    do while (.not. ex%test())
    end do
    call verify(ids, u, v, w(1:nl, :), 'start/test')
    call fill(ids, nown, u, v, w(1:nl, :))
    call ex%start()
    call ex%wait()
    call verify(ids, u, v, w(1:nl, :), 'start/wait')
    call expect(index(ex%describe(), '3 field(s)') > 0, 'describe: '//ex%describe())
    call ex%destroy()
    call fu%destroy()
    call fv%destroy()
    call fw%destroy()
    call pat%destroy()
  end subroutine test_forward

  !> Reverse sum over default-integer ids and an integer communicator: ghosts on rank q hold
  !> q + 1, owned entities 0; afterwards owned entity g holds the sum of q + 1 over the ranks q
  !> that ghost it, counted serially from every rank's ghost list.
  subroutine test_reverse()
    type(halox_pattern) :: pat
    type(halox_entity_field) :: f
    type(halox_exchange) :: ex
    real(real64), allocatable, target :: c(:)
    integer, allocatable :: ids(:), ghosts(:)
    real(real64) :: want
    integer :: nown, q, e
    allocate (ids, source=local_of(rank))
    allocate (ghosts, source=ghosts_of(rank))
    nown = size(ids) - size(ghosts)
    call halox_unstructured(pat, MPI_COMM_WORLD%MPI_VAL, ids(1:nown), ghosts)
    allocate (c(size(ids)))
    c = rank + 1
    c(1:nown) = 0
    call halox_wrap(f, pat, c, name='count')
    call halox_make_exchange(ex, pat, [f], reverse=HALOX_SUM)
    call ex%exchange()
    do e = 1, nown
      want = 0
      do q = 0, nranks - 1
        if (any(ghosts_of(q) == ids(e))) want = want + q + 1
      end do
      call expect(c(e) == want, 'reverse sum')
    end do
    call expect(all(c(nown + 1:) == rank + 1), 'the reverse exchange wrote a ghost')
    call ex%destroy()
    call f%destroy()
    call pat%destroy()
  end subroutine test_reverse

  !> Your own local order, owners given (1-based local indices): the ghosts first, reversed,
  !> two spare entries, then the owned entities; every ghost filled, the spare entries
  !> untouched. Then a ghost index out of range (the last rank) and owners of the wrong length
  !> (rank 0), rejected on every rank.
  subroutine test_local_order()
    type(halox_pattern) :: pat
    type(halox_entity_field) :: f
    type(halox_exchange) :: ex
    real(real64), allocatable, target :: x(:), want(:)
    integer, allocatable :: own(:), ghosts(:), owners(:), own_at(:), ghost_at(:)
    integer :: ng, nl, k, stat
    character(300) :: msg
    character(80) :: text
    allocate (own, source=owned_of(rank))
    allocate (ghosts, source=ghosts_of(rank))
    ng = size(ghosts)
    nl = size(own) + ng + 2
    allocate (owners(ng), own_at(size(own)), ghost_at(ng), x(nl), want(nl))
    owners(:) = [(owner(ghosts(k)), k = 1, ng)]
    ghost_at(:) = [(ng + 1 - k, k = 1, ng)]
    own_at(:) = [(ng + 2 + k, k = 1, size(own))]
    x = -1
    x(ng + 1:ng + 2) = -7
    want = -7
    x(own_at) = 10.0_real64 * big_id(own) + 1
    want(own_at) = x(own_at)
    want(ghost_at) = 10.0_real64 * big_id(ghosts) + 1
    call halox_unstructured(pat, MPI_COMM_WORLD, own, ghosts, ghost_owners=owners, &
                            owned_local=own_at, ghost_local=ghost_at, local_count=nl)
    call halox_wrap(f, pat, x)
    call halox_make_exchange(ex, pat, [f])
    call ex%exchange()
    call expect(all(x == want), 'local order')
    call ex%destroy()
    call f%destroy()
    call pat%destroy()
    if (nranks == 1) return  ! no ghosts
    if (rank == nranks - 1) ghost_at(1) = nl + 1
    write (text, '(a, i0, a)') 'rank ', nranks - 1, ': ghost_local[0] = '
    call halox_unstructured(pat, MPI_COMM_WORLD, own, ghosts, owned_local=own_at, &
                            ghost_local=ghost_at, local_count=nl, stat=stat, errmsg=msg)
    call expect(stat == HALOX_ERROR .and. index(msg, trim(text)) > 0, &
                'ghost index out of range: '//trim(msg))
    call halox_unstructured(pat, MPI_COMM_WORLD, own, ghosts, &
                            ghost_owners=owners(1:merge(ng - 1, ng, rank == 0)), stat=stat, &
                            errmsg=msg)
    call expect(stat == HALOX_ERROR .and. index(msg, 'has owner rank -1') > 0, &
                'owners of the wrong length: '//trim(msg))
  end subroutine test_local_order

  !> Bad input, each on some ranks only, rejected on every rank with stat and errmsg; the
  !> arrays are left as they were.
  subroutine test_bad_input()
    type(halox_pattern) :: pat, bad
    type(halox_entity_field) :: fu, fl
    type(halox_exchange) :: ex
    real(real64), allocatable, target :: u(:, :), long(:)
    integer, allocatable :: ids(:), ghosts(:), wrong(:)
    integer :: nown, nl, stat
    character(300) :: msg
    character(80) :: want
    allocate (ids, source=local_of(rank))
    allocate (ghosts, source=ghosts_of(rank))
    nl = size(ids)
    nown = nl - size(ghosts)
    ! a ghost id nobody owns, on the last rank
    allocate (wrong(size(ghosts) + merge(1, 0, rank == nranks - 1)))
    wrong(1:size(ghosts)) = ghosts
    if (rank == nranks - 1) wrong(size(wrong)) = n + 5
    msg = ''
    call halox_unstructured(bad, MPI_COMM_WORLD, ids(1:nown), wrong, stat=stat, errmsg=msg)
    write (want, '(a, i0, a, i0, a)') 'rank ', nranks - 1, ': ghost id ', n + 5, &
      ' is owned by no rank'
    call expect(stat == HALOX_ERROR, 'a ghost nobody owns: not HALOX_ERROR')
    call expect(index(msg, trim(want)) > 0, 'a ghost nobody owns: '//trim(msg))
    call halox_unstructured(pat, MPI_COMM_WORLD, ids(1:nown), ghosts)
    ! an array one entity too long on rank 0
    allocate (u(2, nl), long(nl + merge(1, 0, rank == 0)))
    call random_number(u)
    call random_number(long)
    call halox_wrap(fu, pat, u, name='u')
    call halox_wrap(fl, pat, long, name='long')
    call check_rejected(ex, pat, [fu, fl], u, long, 'rank 0: field #1 ''long'' has ')
    ! a staging that is no halox_staging, on the last rank only: every rank fails
    msg = ''
    call halox_make_exchange(ex, pat, [fu], staging=merge(17, HALOX_STAGING_AUTO, &
                             rank == nranks - 1), stat=stat, errmsg=msg)
    call expect(stat == HALOX_ERROR, 'staging 17 on the last rank: not HALOX_ERROR')
    if (rank == nranks - 1) call expect(index(msg, 'halox_options_set_staging: 17 is no ' &
                                              //'halox_staging') > 0, 'staging 17: '//trim(msg))
    call fl%destroy()
    ! ranks that disagree: u of one component on rank 0, of two elsewhere
    if (nranks > 1) then
      if (rank == 0) call halox_wrap(fl, pat, long(1:nl))
      if (rank /= 0) call halox_wrap(fl, pat, u)
      call check_rejected(ex, pat, [fl], u, long, &
                          'they build different exchanges (field #0: rank 0 has double (8 B) x 1 ')
      call fl%destroy()
    end if
    ! an array that is not contiguous along its entities: rejected by this rank's wrap
    call halox_wrap(fl, pat, u(:, nl:1:-1), stat=stat, errmsg=msg)
    call expect(stat == HALOX_ERROR .and. index(msg, 'must be contiguous') > 0, &
                'a strided array: '//trim(msg))
    call fu%destroy()
    call pat%destroy()
  end subroutine test_bad_input

  !> An exchange of `fields` every rank must reject with HALOX_ERROR and a message containing
  !> `text`, leaving u and long as they were.
  subroutine check_rejected(ex, pat, fields, u, long, text)
    type(halox_exchange), intent(inout) :: ex
    type(halox_pattern), intent(in) :: pat
    type(halox_entity_field), intent(in) :: fields(:)
    real(real64), intent(in) :: u(:, :), long(:)
    character(*), intent(in) :: text
    real(real64), allocatable :: u0(:, :), long0(:)
    integer :: stat
    character(300) :: msg
    allocate (u0, source=u)
    allocate (long0, source=long)
    msg = ''
    call halox_make_exchange(ex, pat, fields, stat=stat, errmsg=msg)
    call expect(stat == HALOX_ERROR, 'not HALOX_ERROR: '//trim(msg))
    call expect(index(msg, text) > 0, 'message lacks "'//text//'": '//trim(msg))
    call expect(all(u == u0) .and. all(long == long0), 'a rejected exchange wrote an array')
    call halox_make_exchange(ex, pat, fields, reverse=HALOX_SUM, stat=stat, errmsg=msg)
    call expect(stat == HALOX_ERROR, 'reverse: not HALOX_ERROR: '//trim(msg))
    call expect(index(msg, text) > 0, 'reverse: message lacks "'//text//'": '//trim(msg))
    call expect(all(u == u0) .and. all(long == long0), 'a rejected reverse wrote an array')
  end subroutine check_rejected

end program test_fortran_unstructured
