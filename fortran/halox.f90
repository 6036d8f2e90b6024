! halox's Fortran interface (Fortran 2008 with iso_c_binding) over its C interface (halox.h).
!
!   use halox
!   call halox_cartesian(dom, MPI_COMM_WORLD, [nx, ny], periodic=[.true., .true.])
!   call dom%local_box(lo, hi)                ! 1-based global indices, lo..hi owned
!   allocate (u(lo(1)-1:hi(1)+1, lo(2)-1:hi(2)+1))
!   call halox_star(st, [1, 1])
!   call halox_wrap(fu, dom, u, pad=[1, 1])
!   call halox_make_exchange(ex, dom, st, [fu])
!   call ex%exchange()
!
! Arrays are used in place, column-major as Fortran stores them, with any lower bounds; they
! must keep their place in memory (declare them `target`, allocate them once) while an exchange
! built on them lives. Every procedure takes optional `stat` and `errmsg`: without `stat`, a
! failure stops the program (error stop) with halox's message. Collective procedures fail on
! every rank together when any rank's input is wrong. Dimensions are numbered from 1 here.
module halox
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int8, int16, int32, int64, real32, real64, error_unit
  use mpi_f08, only: MPI_Comm
  implicit none
  private

  integer, parameter, public :: HALOX_SUCCESS = 0, HALOX_ERROR = 1, &
                                HALOX_ERROR_NULL_ARGUMENT = 2, HALOX_ERROR_OUT_OF_MEMORY = 3, &
                                HALOX_ERROR_INTERNAL = 4
  integer, parameter, public :: HALOX_INT8 = 1, HALOX_UINT8 = 2, HALOX_INT16 = 3, &
                                HALOX_UINT16 = 4, HALOX_INT32 = 5, HALOX_UINT32 = 6, &
                                HALOX_INT64 = 7, HALOX_UINT64 = 8, HALOX_FLOAT32 = 9, &
                                HALOX_FLOAT64 = 10, HALOX_COMPLEX64 = 11, HALOX_COMPLEX128 = 12
  integer, parameter, public :: HALOX_CELL = 0, HALOX_FACE = 1, HALOX_EDGE = 2, HALOX_NODE = 3
  integer, parameter, public :: HALOX_REPLACE = 0, HALOX_SUM = 1, HALOX_MIN = 2, HALOX_MAX = 3
  integer, parameter, public :: HALOX_LOW = 0, HALOX_HIGH = 1
  integer, parameter, public :: HALOX_STAGING_AUTO = 0, HALOX_STAGING_GPU_AWARE = 1, &
                                HALOX_STAGING_HOST_STAGED = 2, HALOX_STAGING_PEER_IPC = 3, &
                                HALOX_STAGING_NCCL = 4
  integer, parameter :: row_major = 0, column_major = 1, host = 0, device = 1

  !> A decomposed global box: halox_cartesian, halox_box_list.
  type, public :: halox_domain
    type(c_ptr) :: ptr = c_null_ptr
  contains
    procedure :: local_box => domain_local_box
    procedure :: block_count => domain_block_count
    procedure :: grid => domain_grid
    procedure :: dim => domain_dim
    procedure :: destroy => domain_destroy
  end type halox_domain

  !> Halo widths per side and neighbour directions: halox_star, halox_box.
  type, public :: halox_stencil
    type(c_ptr) :: ptr = c_null_ptr
  contains
    procedure :: destroy => stencil_destroy
  end type halox_stencil

  !> Your array, described: halox_wrap, halox_wrap_device.
  type, public :: halox_field
    type(c_ptr) :: ptr = c_null_ptr
    integer :: dim = 0  ! the domain's, for the bounds a boundary callback gets
  contains
    procedure :: set_stencil => field_set_stencil
    procedure :: destroy => field_destroy
  end type halox_field

  !> The communication object: halox_make_exchange.
  type, public :: halox_exchange
    type(c_ptr) :: ptr = c_null_ptr
  contains
    procedure :: exchange => exchange_run
    procedure :: start => exchange_start
    procedure :: wait => exchange_wait
    procedure :: test => exchange_test
    procedure :: schedule => exchange_schedule
    procedure :: schedule_wait => exchange_schedule_wait
    procedure :: describe => exchange_describe
    procedure :: destroy => exchange_destroy
  end type halox_exchange

  !> Entities named by global ids, owned by this rank or copies (ghosts) of other ranks':
  !> halox_unstructured. Local entity k (1-based): the owned ids in the order given, then the
  !> ghosts.
  type, public :: halox_pattern
    type(c_ptr) :: ptr = c_null_ptr
  contains
    procedure :: owned_count => pattern_owned_count
    procedure :: ghost_count => pattern_ghost_count
    procedure :: local_count => pattern_local_count
    procedure :: ghost_owners => pattern_ghost_owners
    procedure :: destroy => pattern_destroy
  end type halox_pattern

  !> Your array over a pattern's local entities, described: halox_wrap(f, pat, array, ...).
  type, public :: halox_entity_field
    type(c_ptr) :: ptr = c_null_ptr
  contains
    procedure :: destroy => entity_field_destroy
  end type halox_entity_field

  public :: halox_cartesian, halox_box_list, halox_star, halox_box, halox_wrap, &
            halox_wrap_device, halox_wrap_blocks, halox_make_exchange, halox_unstructured
  !> halox_allocate_node_shared(p, bytes, stat, errmsg): host memory the node's other ranks can
  !> map (type(c_ptr); c_f_pointer gives it a shape, pointer remapping its lower bounds): an
  !> array wrapped over it exchanges between ranks of a node with one copy instead of two.
  !> halox_free_node_shared(p, stat, errmsg) frees it.
  public :: halox_allocate_node_shared, halox_free_node_shared

  !> halox_cartesian(dom, comm, global, periodic, grid, stat, errmsg): comm a type(MPI_Comm)
  !> (mpi_f08) or an integer communicator (mpi, mpif.h).
  interface halox_cartesian
    module procedure cartesian_f08, cartesian_int
  end interface halox_cartesian

  interface halox_box_list
    module procedure box_list_f08, box_list_int
  end interface halox_box_list

  !> halox_unstructured(pat, comm, owned, ghosts, ghost_owners, owned_local, ghost_local,
  !> local_count, stat, errmsg): the pattern of a rank that owns the entities of global ids
  !> `owned` and needs ghosts of `ghosts` (integer(int64) or default integer arrays), collective
  !> over comm (type(MPI_Comm) or an integer communicator). Optional: the owner rank of each
  !> ghost (0-based, as MPI numbers them; absent: halox finds them), the local index (1-based)
  !> of each owned entity and each ghost (absent: the owned first, then the ghosts) and the
  !> entities in your local arrays (absent: owned + ghosts). Fails on every rank when any
  !> rank's input is wrong (an id listed twice or owned twice, a ghost id no rank owns, a wrong
  !> owner, a local index out of range or used twice). comm must stay valid while exchanges
  !> are built on the pattern.
  interface halox_unstructured
    module procedure unstructured_f08_i8, unstructured_f08_int, unstructured_int_i8, &
      unstructured_int_int
  end interface halox_unstructured

  !> halox_wrap(f, dom, array, pad | pad_lo + pad_hi, components, name, centering,
  !> centering_dim, stat, errmsg): `array` of rank dim (or dim + 1 with components=.true., the
  !> last axis holding the components), of any integer, real or complex kind halox knows.
  !> halox_wrap(f, pat, array, entities_first, name, device, stat, errmsg): an entity field,
  !> `array(entities)` or `array(components, entities)` (`array(entities, components)` with
  !> entities_first=.true.), of the pattern's local entity count (checked on every rank when an
  !> exchange is built).
  interface halox_wrap
    include 'halox_wrap_names.inc'
  end interface halox_wrap

  !> Physical boundary rules of a forward exchange (docs/staggered.md): after each exchange the
  !> halo beyond the global box's face `side` (HALOX_LOW, HALOX_HIGH) of dimension `dim`
  !> (1-based) is filled. halox_boundary_constant(f, dim, side, value, stat, errmsg): `value`
  !> of the field's own type. halox_boundary_zero_gradient(f, dim, side, stat, errmsg): copies
  !> of the boundary cell. halox_boundary_reflect / halox_boundary_mirror(f, dim, side [, signs],
  !> stat, errmsg): the owned cells mirrored at the face / about the boundary cell's centre,
  !> component c times signs(c) (of the field's type; absent: all +1).
  include 'halox_boundary_interfaces.inc'
  public :: halox_boundary_constant, halox_boundary_zero_gradient, halox_boundary_reflect, &
            halox_boundary_mirror, halox_boundary_callback, halox_boundary_fn

  !> A boundary callback, called after each exchange once per owned box (`block`, 1-based) with
  !> halo cells beyond the face: it fills the global cells lo(1:d) .. hi(1:d) (1-based,
  !> inclusive; entries beyond the domain's d dimensions are 1). `user` is the pointer given to
  !> halox_boundary_callback (c_null_ptr without one); `stream` is c_null_ptr for host fields,
  !> else the cudaStream_t to order the work on.
  abstract interface
    subroutine halox_boundary_fn(user, block, lo, hi, stream) bind(C)
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: user, stream
      integer(c_int), value :: block
      integer(c_int64_t), intent(in) :: lo(4), hi(4)
    end subroutine halox_boundary_fn
  end interface

  ! What the C layer calls a boundary callback with, as `user`: the user's procedure and
  ! pointer, and the dimension count its bounds have.
  type :: boundary_closure
    procedure(halox_boundary_fn), pointer, nopass :: fn => null()
    type(c_ptr) :: user = c_null_ptr
    integer :: dim = 0
  end type boundary_closure

  !> halox_make_exchange(ex, dom, st, fields, reverse, label, staging, wait_timeout,
  !> host_shared_memory, stat, errmsg) over a domain, or halox_make_exchange(ex, pat, fields,
  !> reverse, label, staging, wait_timeout, host_shared_memory, stat, errmsg) over an
  !> unstructured pattern (entity fields): collective; reverse, a reduction (HALOX_SUM, ...)
  !> for the reverse, halo-to-owner (ghost-to-owner) exchange; label, its name in messages;
  !> staging (HALOX_STAGING_AUTO, ...), wait_timeout (real64 seconds, 0 never) and
  !> host_shared_memory (.false.: MPI between ranks of a node), the C options of those names.
  interface halox_make_exchange
    module procedure make_exchange_structured, make_exchange_entities
  end interface halox_make_exchange

  interface
    function c_last_error() bind(C, name='halox_last_error') result(p)
      import :: c_ptr
      type(c_ptr) :: p
    end function
    integer(c_size_t) function c_strlen(s) bind(C, name='strlen')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
    end function
    integer(c_int) function c_cartesian(comm, dim, global, periodic, grid, out) &
        bind(C, name='halox_cartesian_create_f')
      import :: c_int, c_int64_t, c_ptr
      integer(c_int), value :: comm, dim
      integer(c_int64_t), intent(in) :: global(*)
      integer(c_int), intent(in) :: periodic(*)
      type(c_ptr), value :: grid
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_box_list(comm, dim, global, periodic, count, lo, hi, owners, out) &
        bind(C, name='halox_box_list_create_f')
      import :: c_int, c_int64_t, c_ptr
      integer(c_int), value :: comm, dim, count
      integer(c_int64_t), intent(in) :: global(*), lo(*), hi(*)
      integer(c_int), intent(in) :: periodic(*), owners(*)
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_domain_dim(dom, dim) bind(C, name='halox_domain_dim')
      import :: c_int, c_ptr
      type(c_ptr), value :: dom
      integer(c_int), intent(out) :: dim
    end function
    integer(c_int) function c_domain_local_box(dom, block, lo, hi) &
        bind(C, name='halox_domain_local_box')
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: dom
      integer(c_int), value :: block
      integer(c_int64_t), intent(out) :: lo(*), hi(*)
    end function
    integer(c_int) function c_domain_block_count(dom, count) &
        bind(C, name='halox_domain_block_count')
      import :: c_int, c_ptr
      type(c_ptr), value :: dom
      integer(c_int), intent(out) :: count
    end function
    integer(c_int) function c_field_wrap_blocks(dom, type, count, data, extents, pad_lo, pad_hi, &
                                                out) bind(C, name='halox_field_wrap_blocks')
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: dom
      integer(c_int), value :: type, count
      type(c_ptr), intent(in) :: data(*)
      integer(c_int64_t), intent(in) :: extents(*)
      integer(c_int), intent(in) :: pad_lo(*), pad_hi(*)
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_domain_grid(dom, dims, coords) bind(C, name='halox_domain_grid')
      import :: c_int, c_ptr
      type(c_ptr), value :: dom
      integer(c_int), intent(out) :: dims(*), coords(*)
    end function
    integer(c_int) function c_stencil(dim, lo, hi, out) bind(C, name='halox_stencil_star')
      import :: c_int, c_ptr
      integer(c_int), value :: dim
      integer(c_int), intent(in) :: lo(*), hi(*)
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_stencil_box(dim, lo, hi, out) bind(C, name='halox_stencil_box')
      import :: c_int, c_ptr
      integer(c_int), value :: dim
      integer(c_int), intent(in) :: lo(*), hi(*)
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_field_wrap(dom, type, data, extents, pad_lo, pad_hi, out) &
        bind(C, name='halox_field_wrap')
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: dom, data
      integer(c_int), value :: type
      integer(c_int64_t), intent(in) :: extents(*)
      integer(c_int), intent(in) :: pad_lo(*), pad_hi(*)
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_field_set_order(f, order) bind(C, name='halox_field_set_order')
      import :: c_int, c_ptr
      type(c_ptr), value :: f
      integer(c_int), value :: order
    end function
    integer(c_int) function c_field_set_components(f, count, layout) &
        bind(C, name='halox_field_set_components')
      import :: c_int, c_ptr
      type(c_ptr), value :: f
      integer(c_int), value :: count, layout
    end function
    integer(c_int) function c_field_set_strides(f, strides, comp) &
        bind(C, name='halox_field_set_strides')
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: f
      integer(c_int64_t), intent(in) :: strides(*)
      integer(c_int64_t), value :: comp
    end function
    integer(c_int) function c_field_set_centering(f, at, dim) &
        bind(C, name='halox_field_set_centering')
      import :: c_int, c_ptr
      type(c_ptr), value :: f
      integer(c_int), value :: at, dim
    end function
    integer(c_int) function c_field_set_memory(f, space) bind(C, name='halox_field_set_memory')
      import :: c_int, c_ptr
      type(c_ptr), value :: f
      integer(c_int), value :: space
    end function
    integer(c_int) function c_field_set_name(f, name) bind(C, name='halox_field_set_name')
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: f
      character(kind=c_char), intent(in) :: name(*)
    end function
    integer(c_int) function c_field_set_stencil(f, st) bind(C, name='halox_field_set_stencil')
      import :: c_int, c_ptr
      type(c_ptr), value :: f, st
    end function
    integer(c_int) function c_boundary_constant(f, dim, side, value) &
        bind(C, name='halox_field_boundary_constant')
      import :: c_int, c_ptr
      type(c_ptr), value :: f, value
      integer(c_int), value :: dim, side
    end function
    integer(c_int) function c_boundary_zero_gradient(f, dim, side) &
        bind(C, name='halox_field_boundary_zero_gradient')
      import :: c_int, c_ptr
      type(c_ptr), value :: f
      integer(c_int), value :: dim, side
    end function
    integer(c_int) function c_boundary_reflect(f, dim, side, signs, count) &
        bind(C, name='halox_field_boundary_reflect')
      import :: c_int, c_ptr
      type(c_ptr), value :: f, signs
      integer(c_int), value :: dim, side, count
    end function
    integer(c_int) function c_boundary_mirror(f, dim, side, signs, count) &
        bind(C, name='halox_field_boundary_mirror')
      import :: c_int, c_ptr
      type(c_ptr), value :: f, signs
      integer(c_int), value :: dim, side, count
    end function
    integer(c_int) function c_boundary_callback(f, dim, side, fn, user) &
        bind(C, name='halox_field_boundary_callback')
      import :: c_int, c_ptr, c_funptr
      type(c_ptr), value :: f, user
      integer(c_int), value :: dim, side
      type(c_funptr), value :: fn
    end function
    integer(c_int) function c_exchange_create(dom, st, fields, count, options, out) &
        bind(C, name='halox_exchange_create')
      import :: c_int, c_ptr
      type(c_ptr), value :: dom, st, options
      type(c_ptr), intent(in) :: fields(*)
      integer(c_int), value :: count
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_reverse_create(dom, st, op, fields, count, options, out) &
        bind(C, name='halox_reverse_exchange_create')
      import :: c_int, c_ptr
      type(c_ptr), value :: dom, st, options
      integer(c_int), value :: op, count
      type(c_ptr), intent(in) :: fields(*)
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_unstructured_local(comm, owned, n_owned, ghosts, n_ghosts, &
                                                 ghost_owners, owned_local, ghost_local, &
                                                 local_count, out) &
        bind(C, name='halox_unstructured_create_local_f')
      import :: c_int, c_int64_t, c_ptr
      integer(c_int), value :: comm
      integer(c_int64_t), intent(in) :: owned(*), ghosts(*)
      integer(c_int64_t), value :: n_owned, n_ghosts, local_count
      type(c_ptr), value :: ghost_owners, owned_local, ghost_local
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_unstructured_counts(pat, owned, ghosts, local) &
        bind(C, name='halox_unstructured_counts')
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: pat
      integer(c_int64_t), intent(out) :: owned, ghosts, local
    end function
    integer(c_int) function c_unstructured_ghost_owners(pat, owners) &
        bind(C, name='halox_unstructured_ghost_owners')
      import :: c_int, c_ptr
      type(c_ptr), value :: pat
      integer(c_int), intent(out) :: owners(*)
    end function
    integer(c_int) function c_entity_wrap(pat, type, data, count, out) &
        bind(C, name='halox_entity_field_wrap')
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: pat, data
      integer(c_int), value :: type
      integer(c_int64_t), value :: count
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_entity_set_components(f, count, layout, stride) &
        bind(C, name='halox_entity_field_set_components')
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: f
      integer(c_int), value :: count, layout
      integer(c_int64_t), value :: stride
    end function
    integer(c_int) function c_entity_set_memory(f, space) &
        bind(C, name='halox_entity_field_set_memory')
      import :: c_int, c_ptr
      type(c_ptr), value :: f
      integer(c_int), value :: space
    end function
    integer(c_int) function c_entity_set_name(f, name) bind(C, name='halox_entity_field_set_name')
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: f
      character(kind=c_char), intent(in) :: name(*)
    end function
    integer(c_int) function c_entity_exchange_create(pat, fields, count, options, out) &
        bind(C, name='halox_unstructured_exchange_create')
      import :: c_int, c_ptr
      type(c_ptr), value :: pat, options
      type(c_ptr), intent(in) :: fields(*)
      integer(c_int), value :: count
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_entity_reverse_create(pat, op, fields, count, options, out) &
        bind(C, name='halox_unstructured_reverse_exchange_create')
      import :: c_int, c_ptr
      type(c_ptr), value :: pat, options
      integer(c_int), value :: op, count
      type(c_ptr), intent(in) :: fields(*)
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_options_create(out) bind(C, name='halox_options_create')
      import :: c_int, c_ptr
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_options_set_label(o, label) bind(C, name='halox_options_set_label')
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: o
      character(kind=c_char), intent(in) :: label(*)
    end function
    integer(c_int) function c_options_set_staging(o, s) bind(C, name='halox_options_set_staging')
      import :: c_int, c_ptr
      type(c_ptr), value :: o
      integer(c_int), value :: s
    end function
    integer(c_int) function c_options_set_wait_timeout(o, seconds) &
        bind(C, name='halox_options_set_wait_timeout')
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: o
      real(c_double), value :: seconds
    end function
    integer(c_int) function c_options_set_host_shared_memory(o, enabled) &
        bind(C, name='halox_options_set_host_shared_memory')
      import :: c_int, c_ptr
      type(c_ptr), value :: o
      integer(c_int), value :: enabled
    end function
    integer(c_int) function c_exchange_op(ex) bind(C, name='halox_exchange_run')
      import :: c_int, c_ptr
      type(c_ptr), value :: ex
    end function
    integer(c_int) function c_exchange_start(ex) bind(C, name='halox_exchange_start')
      import :: c_int, c_ptr
      type(c_ptr), value :: ex
    end function
    integer(c_int) function c_exchange_wait(ex) bind(C, name='halox_exchange_wait')
      import :: c_int, c_ptr
      type(c_ptr), value :: ex
    end function
    integer(c_int) function c_exchange_test(ex, done) bind(C, name='halox_exchange_test')
      import :: c_int, c_ptr
      type(c_ptr), value :: ex
      integer(c_int), intent(out) :: done
    end function
    integer(c_int) function c_exchange_schedule(ex, stream) bind(C, name='halox_exchange_schedule')
      import :: c_int, c_ptr, c_intptr_t
      type(c_ptr), value :: ex
      integer(c_intptr_t), value :: stream
    end function
    integer(c_int) function c_exchange_schedule_wait(ex, stream) &
        bind(C, name='halox_exchange_schedule_wait')
      import :: c_int, c_ptr, c_intptr_t
      type(c_ptr), value :: ex
      integer(c_intptr_t), value :: stream
    end function
    integer(c_int) function c_exchange_describe(ex, text) bind(C, name='halox_exchange_describe')
      import :: c_int, c_ptr
      type(c_ptr), value :: ex
      type(c_ptr), intent(out) :: text
    end function
    integer(c_int) function c_allocate_node_shared(bytes, p) &
        bind(C, name='halox_allocate_node_shared')
      import :: c_int, c_ptr, c_size_t
      integer(c_size_t), value :: bytes
      type(c_ptr), intent(out) :: p
    end function
    integer(c_int) function c_free_node_shared(p) bind(C, name='halox_free_node_shared')
      import :: c_int, c_ptr
      type(c_ptr), value :: p
    end function
  end interface

  interface
    integer(c_int) function c_domain_destroy(h) bind(C, name='halox_domain_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: h
    end function
    integer(c_int) function c_stencil_destroy(h) bind(C, name='halox_stencil_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: h
    end function
    integer(c_int) function c_field_destroy(h) bind(C, name='halox_field_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: h
    end function
    integer(c_int) function c_pattern_destroy(h) bind(C, name='halox_unstructured_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: h
    end function
    integer(c_int) function c_entity_field_destroy(h) bind(C, name='halox_entity_field_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: h
    end function
    integer(c_int) function c_options_destroy(h) bind(C, name='halox_options_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: h
    end function
    integer(c_int) function c_exchange_destroy(h) bind(C, name='halox_exchange_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: h
    end function
  end interface

contains

  ! ---- errors ---------------------------------------------------------------------------

  !> The message of the last failed call on this thread.
  function last_error() result(msg)
    character(:), allocatable :: msg
    character(kind=c_char), pointer :: chars(:)
    type(c_ptr) :: p
    integer :: n, i
    p = c_last_error()
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate (character(n) :: msg)
    do i = 1, n
      msg(i:i) = chars(i)
    end do
  end function last_error

  !> Reports `status` as Fortran expects: into stat and errmsg when given, else error stop.
  subroutine check(status, stat, errmsg)
    integer(c_int), intent(in) :: status
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (present(stat)) stat = int(status)
    if (status == HALOX_SUCCESS) return
    call fail(int(status), last_error(), stat, errmsg)
  end subroutine check

  !> A failure with `msg`: into stat and errmsg when given, else the message on standard error
  !> and error stop (Fortran 2008 stops only with a constant code).
  subroutine fail(status, msg, stat, errmsg)
    integer, intent(in) :: status
    character(*), intent(in) :: msg
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (present(stat)) stat = status
    if (present(errmsg)) errmsg = msg
    if (present(stat)) return
    write (error_unit, '(a)') msg
    error stop 1
  end subroutine fail

  !> `n` in decimal.
  function decimal(n) result(s)
    integer, intent(in) :: n
    character(:), allocatable :: s
    character(12) :: buf
    write (buf, '(i0)') n
    s = trim(buf)
  end function decimal

  !> A Fortran string as a NUL-terminated C string.
  pure function c_string(s) result(c)
    character(*), intent(in) :: s
    character(kind=c_char, len=len(s) + 1) :: c
    c = s//c_null_char
  end function c_string

  ! ---- domains --------------------------------------------------------------------------

  subroutine cartesian_f08(dom, comm, global, periodic, grid, stat, errmsg)
    type(halox_domain), intent(inout) :: dom
    type(MPI_Comm), intent(in) :: comm
    integer, intent(in) :: global(:)
    logical, intent(in), optional :: periodic(:)
    integer, intent(in), optional :: grid(:)
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call cartesian_int(dom, comm%MPI_VAL, global, periodic, grid, stat, errmsg)
  end subroutine cartesian_f08

  subroutine cartesian_int(dom, comm, global, periodic, grid, stat, errmsg)
    type(halox_domain), intent(inout) :: dom
    integer, intent(in) :: comm
    integer, intent(in) :: global(:)
    logical, intent(in), optional :: periodic(:)
    integer, intent(in), optional, target :: grid(:)
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    integer(c_int), target :: g(size(global))
    type(c_ptr) :: gp
    gp = c_null_ptr
    if (present(grid)) then
      g = 0
      g(1:min(size(grid), size(g))) = int(grid(1:min(size(grid), size(g))), c_int)
      gp = c_loc(g)
    end if
    call check(c_cartesian(int(comm, c_int), int(size(global), c_int), &
                           int(global, c_int64_t), flags(periodic, size(global)), gp, dom%ptr), &
               stat, errmsg)
  end subroutine cartesian_int

  !> The periodicity flags as C takes them (absent: none periodic).
  function flags(periodic, n) result(f)
    logical, intent(in), optional :: periodic(:)
    integer, intent(in) :: n
    integer(c_int) :: f(n)
    f = 0
    if (present(periodic)) f(1:min(n, size(periodic))) = merge(1, 0, periodic(1:min(n, size(periodic))))
  end function flags

  !> A box list: box k holds the global cells lo(:, k) .. hi(:, k) (1-based, inclusive) and
  !> belongs to rank owners(k). Every rank passes the same list.
  subroutine box_list_f08(dom, comm, global, periodic, lo, hi, owners, stat, errmsg)
    type(halox_domain), intent(inout) :: dom
    type(MPI_Comm), intent(in) :: comm
    integer, intent(in) :: global(:), lo(:, :), hi(:, :), owners(:)
    logical, intent(in), optional :: periodic(:)
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call box_list_int(dom, comm%MPI_VAL, global, periodic, lo, hi, owners, stat, errmsg)
  end subroutine box_list_f08

  subroutine box_list_int(dom, comm, global, periodic, lo, hi, owners, stat, errmsg)
    type(halox_domain), intent(inout) :: dom
    integer, intent(in) :: comm
    integer, intent(in) :: global(:), lo(:, :), hi(:, :), owners(:)
    logical, intent(in), optional :: periodic(:)
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call check(c_box_list(int(comm, c_int), int(size(global), c_int), int(global, c_int64_t), &
                          flags(periodic, size(global)), int(size(owners), c_int), &
                          int(reshape(lo, [size(lo)]) - 1, c_int64_t), &
                          int(reshape(hi, [size(hi)]), c_int64_t), int(owners, c_int), dom%ptr), &
               stat, errmsg)
  end subroutine box_list_int

  !> This rank's owned box `block` (default 1): global cells lo .. hi, 1-based and inclusive.
  subroutine domain_local_box(dom, lo, hi, block, stat, errmsg)
    class(halox_domain), intent(in) :: dom
    integer, intent(out) :: lo(:), hi(:)
    integer, intent(in), optional :: block
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    integer(c_int64_t) :: l(4), h(4)
    integer :: b, n
    b = 1
    if (present(block)) b = block
    l = 0
    h = 0
    call check(c_domain_local_box(dom%ptr, int(b - 1, c_int), l, h), stat, errmsg)
    n = min(size(lo), 4)
    lo(1:n) = int(l(1:n)) + 1
    hi(1:n) = int(h(1:n))
  end subroutine domain_local_box

  subroutine halox_allocate_node_shared(p, bytes, stat, errmsg)
    type(c_ptr), intent(out) :: p
    integer(int64), intent(in) :: bytes
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    p = c_null_ptr
    if (bytes < 0) then
      call fail(HALOX_ERROR, 'halox_allocate_node_shared: a negative number of bytes', stat, &
                errmsg)
      return
    end if
    call check(c_allocate_node_shared(int(bytes, c_size_t), p), stat, errmsg)
  end subroutine halox_allocate_node_shared

  subroutine halox_free_node_shared(p, stat, errmsg)
    type(c_ptr), intent(inout) :: p
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call check(c_free_node_shared(p), stat, errmsg)
    p = c_null_ptr
  end subroutine halox_free_node_shared

  !> How many boxes this rank owns (box lists may give a rank several; cartesian: 1).
  integer function domain_block_count(dom) result(n)
    class(halox_domain), intent(in) :: dom
    integer(c_int) :: c
    c = 0
    call check(c_domain_block_count(dom%ptr, c))
    n = int(c)
  end function domain_block_count

  !> A cartesian domain's process grid and this rank's coordinates in it (0-based, as
  !> MPI_Cart_coords gives them).
  subroutine domain_grid(dom, dims, coords, stat, errmsg)
    class(halox_domain), intent(in) :: dom
    integer, intent(out) :: dims(:), coords(:)
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    integer(c_int) :: d(4), c(4)
    d = 0
    c = 0
    call check(c_domain_grid(dom%ptr, d, c), stat, errmsg)
    dims = int(d(1:size(dims)))
    coords = int(c(1:size(coords)))
  end subroutine domain_grid

  integer function domain_dim(dom)
    class(halox_domain), intent(in) :: dom
    integer(c_int) :: d
    d = 0
    call check(c_domain_dim(dom%ptr, d))
    domain_dim = int(d)
  end function domain_dim

  subroutine domain_destroy(dom)
    class(halox_domain), intent(inout) :: dom
    call check(c_domain_destroy(dom%ptr))
    dom%ptr = c_null_ptr
  end subroutine domain_destroy

  ! ---- unstructured patterns ------------------------------------------------------------

  subroutine unstructured_f08_i8(pat, comm, owned, ghosts, ghost_owners, owned_local, &
                                 ghost_local, local_count, stat, errmsg)
    type(halox_pattern), intent(inout) :: pat
    type(MPI_Comm), intent(in) :: comm
    integer(int64), intent(in) :: owned(:), ghosts(:)
    integer, intent(in), optional :: ghost_owners(:), owned_local(:), ghost_local(:), local_count
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call unstructured_int_i8(pat, comm%MPI_VAL, owned, ghosts, ghost_owners, owned_local, &
                             ghost_local, local_count, stat, errmsg)
  end subroutine unstructured_f08_i8

  subroutine unstructured_f08_int(pat, comm, owned, ghosts, ghost_owners, owned_local, &
                                  ghost_local, local_count, stat, errmsg)
    type(halox_pattern), intent(inout) :: pat
    type(MPI_Comm), intent(in) :: comm
    integer, intent(in) :: owned(:), ghosts(:)
    integer, intent(in), optional :: ghost_owners(:), owned_local(:), ghost_local(:), local_count
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call unstructured_int_i8(pat, comm%MPI_VAL, int(owned, int64), int(ghosts, int64), &
                             ghost_owners, owned_local, ghost_local, local_count, stat, errmsg)
  end subroutine unstructured_f08_int

  subroutine unstructured_int_int(pat, comm, owned, ghosts, ghost_owners, owned_local, &
                                  ghost_local, local_count, stat, errmsg)
    type(halox_pattern), intent(inout) :: pat
    integer, intent(in) :: comm
    integer, intent(in) :: owned(:), ghosts(:)
    integer, intent(in), optional :: ghost_owners(:), owned_local(:), ghost_local(:), local_count
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call unstructured_int_i8(pat, comm, int(owned, int64), int(ghosts, int64), ghost_owners, &
                             owned_local, ghost_local, local_count, stat, errmsg)
  end subroutine unstructured_int_int

  subroutine unstructured_int_i8(pat, comm, owned, ghosts, ghost_owners, owned_local, &
                                 ghost_local, local_count, stat, errmsg)
    type(halox_pattern), intent(inout) :: pat
    integer, intent(in) :: comm
    integer(int64), intent(in) :: owned(:), ghosts(:)
    integer, intent(in), optional :: ghost_owners(:), owned_local(:), ghost_local(:), local_count
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    ! Contiguous copies with at least one element: C reads no element of an empty list.
    integer(c_int64_t) :: own(max(size(owned), 1)), ghost(max(size(ghosts), 1))
    integer(c_int64_t), target :: own_at(size(own)), ghost_at(size(ghost))
    integer(c_int), target :: owner(size(ghost))
    type(c_ptr) :: po, pol, pgl
    integer(c_int64_t) :: n
    own = 0
    ghost = 0
    own(1:size(owned)) = owned
    ghost(1:size(ghosts)) = ghosts
    po = c_null_ptr
    pol = c_null_ptr
    pgl = c_null_ptr
    n = -1
    if (present(ghost_owners)) call fit(ghost_owners, owner, po)
    if (present(owned_local)) call fit64(owned_local, size(owned), own_at, pol)
    if (present(ghost_local)) call fit64(ghost_local, size(ghosts), ghost_at, pgl)
    if (present(local_count)) n = local_count
    call check(c_unstructured_local(int(comm, c_int), own, int(size(owned), c_int64_t), ghost, &
                                    int(size(ghosts), c_int64_t), po, pol, pgl, n, pat%ptr), &
               stat, errmsg)
  contains
    !> `v` as C takes it; a list of the wrong length as one of entries halox rejects (-1: no
    !> rank, no local index), so that every rank fails together.
    subroutine fit(v, to, p)
      integer, intent(in) :: v(:)
      integer(c_int), intent(out), target :: to(:)
      type(c_ptr), intent(out) :: p
      to = -1
      if (size(v) == size(ghosts)) to(1:size(v)) = int(v, c_int)
      p = c_loc(to)
    end subroutine fit
    !> 1-based local indices `v` as C takes them (0-based), or -1 entries as above.
    subroutine fit64(v, n, to, p)
      integer, intent(in) :: v(:), n
      integer(c_int64_t), intent(out), target :: to(:)
      type(c_ptr), intent(out) :: p
      to = -1
      if (size(v) == n) to(1:n) = int(v - 1, c_int64_t)
      p = c_loc(to)
    end subroutine fit64
  end subroutine unstructured_int_i8

  !> This rank's owned, ghost and local (owned + ghost) entity counts.
  integer(int64) function pattern_owned_count(pat) result(n)
    class(halox_pattern), intent(in) :: pat
    integer(c_int64_t) :: o, g, l
    call check(c_unstructured_counts(pat%ptr, o, g, l))
    n = o
  end function pattern_owned_count

  integer(int64) function pattern_ghost_count(pat) result(n)
    class(halox_pattern), intent(in) :: pat
    integer(c_int64_t) :: o, g, l
    call check(c_unstructured_counts(pat%ptr, o, g, l))
    n = g
  end function pattern_ghost_count

  integer(int64) function pattern_local_count(pat) result(n)
    class(halox_pattern), intent(in) :: pat
    integer(c_int64_t) :: o, g, l
    call check(c_unstructured_counts(pat%ptr, o, g, l))
    n = l
  end function pattern_local_count

  !> The rank (0-based, as MPI numbers them) that owns each ghost, in the order given.
  subroutine pattern_ghost_owners(pat, owners, stat, errmsg)
    class(halox_pattern), intent(in) :: pat
    integer, intent(out) :: owners(:)
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    integer(c_int), allocatable :: o(:)
    integer :: n
    n = int(pat%ghost_count())
    allocate (o(max(n, 1)))
    o = -1
    n = min(size(owners), n)
    call check(c_unstructured_ghost_owners(pat%ptr, o), stat, errmsg)
    owners = -1
    owners(1:n) = int(o(1:n))
  end subroutine pattern_ghost_owners

  subroutine pattern_destroy(pat)
    class(halox_pattern), intent(inout) :: pat
    call check(c_pattern_destroy(pat%ptr))
    pat%ptr = c_null_ptr
  end subroutine pattern_destroy

  !> What every entity halox_wrap specific does with its array: one value per entity (rank 1),
  !> or components along the first axis and entities along the second (entities_first: the
  !> other way round). Along the entity axis the array must be contiguous.
  subroutine entity_wrap_any(f, pat, type, elem_bytes, p, ext, step, entities_first, name, &
                             device, stat, errmsg)
    type(halox_entity_field), intent(inout) :: f
    type(halox_pattern), intent(in) :: pat
    integer, intent(in) :: type, elem_bytes
    type(c_ptr), intent(in) :: p
    integer(c_int64_t), intent(in) :: ext(:)
    integer(c_intptr_t), intent(in) :: step(:)
    logical, intent(in), optional :: entities_first, device
    character(*), intent(in), optional :: name
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    integer(c_int64_t) :: n, comps, stride
    integer(c_int) :: status, layout
    integer :: e
    logical :: dense
    e = size(ext)  ! the entity axis
    layout = 0     ! HALOX_INTERLEAVED
    stride = 0
    if (present(entities_first)) then
      if (entities_first) e = 1
    end if
    n = ext(e)
    comps = product(ext) / max(n, 1_c_int64_t)
    if (size(ext) == 1) comps = 1
    dense = ext(e) <= 1 .or. step(e) == elem_bytes * merge(comps, 1_c_int64_t, e == 2)
    if (size(ext) == 2 .and. e == 2) dense = dense .and. (ext(1) <= 1 .or. step(1) == elem_bytes)
    if (size(ext) == 2 .and. e == 1) then
      layout = 1  ! HALOX_PLANAR
      if (ext(2) > 1) stride = step(2) / elem_bytes
    end if
    if (.not. dense) then
      call fail(HALOX_ERROR, 'halox: halox_wrap: an entity field''s array must be contiguous '// &
                'along its entities (and its components, entities last)', stat, errmsg)
      return
    end if
    status = c_entity_wrap(pat%ptr, int(type, c_int), p, n, f%ptr)
    if (status == HALOX_SUCCESS .and. size(ext) == 2) &
      status = c_entity_set_components(f%ptr, int(ext(3 - e), c_int), layout, stride)
    if (status == HALOX_SUCCESS .and. present(name)) &
      status = c_entity_set_name(f%ptr, c_string(name))
    if (status == HALOX_SUCCESS .and. present(device)) then
      if (device) status = c_entity_set_memory(f%ptr, 1_c_int)
    end if
    call check(status, stat, errmsg)
  end subroutine entity_wrap_any

  subroutine entity_field_destroy(f)
    class(halox_entity_field), intent(inout) :: f
    call check(c_entity_field_destroy(f%ptr))
    f%ptr = c_null_ptr
  end subroutine entity_field_destroy

  ! ---- stencils -------------------------------------------------------------------------

  !> Faces only: halo widths below (lo) and above (hi, default lo) the owned box.
  subroutine halox_star(st, lo, hi, stat, errmsg)
    type(halox_stencil), intent(inout) :: st
    integer, intent(in) :: lo(:)
    integer, intent(in), optional :: hi(:)
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    integer(c_int) :: h(size(lo))
    h = int(lo, c_int)
    if (present(hi)) h = int(hi, c_int)
    call check(c_stencil(int(size(lo), c_int), int(lo, c_int), h, st%ptr), stat, errmsg)
  end subroutine halox_star

  !> Faces, edges and corners.
  subroutine halox_box(st, lo, hi, stat, errmsg)
    type(halox_stencil), intent(inout) :: st
    integer, intent(in) :: lo(:)
    integer, intent(in), optional :: hi(:)
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    integer(c_int) :: h(size(lo))
    h = int(lo, c_int)
    if (present(hi)) h = int(hi, c_int)
    call check(c_stencil_box(int(size(lo), c_int), int(lo, c_int), h, st%ptr), stat, errmsg)
  end subroutine halox_box

  subroutine stencil_destroy(st)
    class(halox_stencil), intent(inout) :: st
    call check(c_stencil_destroy(st%ptr))
    st%ptr = c_null_ptr
  end subroutine stencil_destroy

  ! ---- fields ---------------------------------------------------------------------------

  include 'halox_wrap_procs.inc'
  include 'halox_boundary_procs.inc'

  subroutine halox_boundary_zero_gradient(f, dim, side, stat, errmsg)
    type(halox_field), intent(inout) :: f
    integer, intent(in) :: dim, side
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call check(c_boundary_zero_gradient(f%ptr, int(dim - 1, c_int), int(side, c_int)), stat, &
               errmsg)
  end subroutine halox_boundary_zero_gradient

  subroutine bc_reflect_plain(f, dim, side, stat, errmsg)
    type(halox_field), intent(inout) :: f
    integer, intent(in) :: dim, side
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call check(c_boundary_reflect(f%ptr, int(dim - 1, c_int), int(side, c_int), c_null_ptr, &
                                  0_c_int), stat, errmsg)
  end subroutine bc_reflect_plain

  subroutine bc_mirror_plain(f, dim, side, stat, errmsg)
    type(halox_field), intent(inout) :: f
    integer, intent(in) :: dim, side
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call check(c_boundary_mirror(f%ptr, int(dim - 1, c_int), int(side, c_int), c_null_ptr, &
                                 0_c_int), stat, errmsg)
  end subroutine bc_mirror_plain

  !> halox_boundary_callback(f, dim, side, fn, user, stat, errmsg): after each exchange, fn
  !> (a halox_boundary_fn) fills the halo beyond face `side` of dimension `dim` (1-based)
  !> itself, given 1-based inclusive bounds and a 1-based block (see halox_boundary_fn).
  !>
  !> C calls a boundary function with 0-based, half-open bounds; rather than hand Fortran code
  !> those, halox registers boundary_trampoline, which converts them, with a small closure (the
  !> procedure, `user`, the dimension count) as C's `user`. An exchange keeps calling the
  !> closure after the field that registered it is destroyed (the rules are copied into it), and
  !> several exchanges may share it, so it is never freed: one small allocation per call,
  !> kept until the program ends.
  subroutine halox_boundary_callback(f, dim, side, fn, user, stat, errmsg)
    type(halox_field), intent(inout) :: f
    integer, intent(in) :: dim, side
    procedure(halox_boundary_fn) :: fn
    type(c_ptr), intent(in), optional :: user
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(boundary_closure), pointer :: cl
    integer(c_int) :: status
    allocate (cl)
    cl%fn => fn
    if (present(user)) cl%user = user
    cl%dim = f%dim
    status = c_boundary_callback(f%ptr, int(dim - 1, c_int), int(side, c_int), &
                                 c_funloc(boundary_trampoline), c_loc(cl))
    if (status /= HALOX_SUCCESS) deallocate (cl)  ! not registered: nothing will call it
    call check(status, stat, errmsg)
  end subroutine halox_boundary_callback

  !> What C calls for a Fortran boundary callback: the closure's procedure, with the bounds
  !> 1-based and inclusive (lo + 1 .. hi) and the block 1-based.
  subroutine boundary_trampoline(user, block, lo, hi, stream) &
      bind(C, name='halox_fortran_boundary_trampoline')
    type(c_ptr), value :: user, stream
    integer(c_int), value :: block
    integer(c_int64_t), intent(in) :: lo(*), hi(*)
    type(boundary_closure), pointer :: cl
    integer(c_int64_t) :: l(4), h(4)
    call c_f_pointer(user, cl)
    l = 1
    h = 1
    l(1:cl%dim) = lo(1:cl%dim) + 1
    h(1:cl%dim) = hi(1:cl%dim)
    call cl%fn(cl%user, block + 1_c_int, l, h, stream)
  end subroutine boundary_trampoline

  !> What every halox_wrap specific does with its array: its first element's address, its
  !> extents and the byte distance to the next element along each axis (0 where the extent is 1).
  subroutine wrap_any(f, dom, type, elem_bytes, p, ext, step, pad, pad_lo, pad_hi, components, &
                      name, centering, centering_dim, stat, errmsg)
    type(halox_field), intent(inout) :: f
    type(halox_domain), intent(in) :: dom
    integer, intent(in) :: type, elem_bytes
    type(c_ptr), intent(in) :: p
    integer(c_int64_t), intent(in) :: ext(:)
    integer(c_intptr_t), intent(in) :: step(:)
    integer, intent(in), optional :: pad(:), pad_lo(:), pad_hi(:), centering, centering_dim
    logical, intent(in), optional :: components
    character(*), intent(in), optional :: name
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    integer(c_int64_t) :: strides(size(ext))
    integer(c_int) :: lo(4), hi(4), status
    integer(c_int64_t) :: comp
    integer :: d, r, i
    logical :: comps
    r = size(ext)
    d = dom%dim()
    comps = .false.
    if (present(components)) comps = components
    if (r /= d .and. .not. (r == d + 1 .and. comps)) then
      call fail(HALOX_ERROR, 'halox: halox_wrap: an array of rank '//decimal(r)//' on a ' &
                //decimal(d)//'-D domain (rank '//decimal(d + 1)//' needs components=.true.)', &
                stat, errmsg)
      return
    end if
    strides = step / elem_bytes
    ! An axis of extent 1: any stride will do, the dense one is the clearest.
    if (ext(1) <= 1) strides(1) = 1
    do i = 2, r
      if (ext(i) <= 1) strides(i) = strides(i - 1) * max(ext(i - 1), 1_c_int64_t)
    end do
    call pads(d, pad, pad_lo, pad_hi, lo, hi)
    status = c_field_wrap(dom%ptr, int(type, c_int), p, ext, lo, hi, f%ptr)
    comp = 1
    if (r == d + 1) then
      comp = strides(r)
      if (status == HALOX_SUCCESS) &
        status = c_field_set_components(f%ptr, int(ext(r), c_int), 1_c_int)
    end if
    if (status == HALOX_SUCCESS) status = c_field_set_strides(f%ptr, strides, comp)
    if (status == HALOX_SUCCESS .and. present(name)) status = c_field_set_name(f%ptr, c_string(name))
    if (status == HALOX_SUCCESS .and. present(centering)) then
      i = 0
      if (present(centering_dim)) i = centering_dim - 1
      status = c_field_set_centering(f%ptr, int(centering, c_int), int(i, c_int))
    end if
    if (status == HALOX_SUCCESS) f%dim = d
    call check(status, stat, errmsg)
  end subroutine wrap_any

  !> The padding below and above the owned box: pad (both sides) or pad_lo and pad_hi.
  subroutine pads(d, pad, pad_lo, pad_hi, lo, hi)
    integer, intent(in) :: d
    integer, intent(in), optional :: pad(:), pad_lo(:), pad_hi(:)
    integer(c_int), intent(out) :: lo(4), hi(4)
    lo = -1  ! none given: a negative padding the build reports
    hi = -1
    if (present(pad)) lo(1:min(d, size(pad))) = int(pad(1:min(d, size(pad))), c_int)
    if (present(pad)) hi = lo
    if (present(pad_lo)) lo(1:min(d, size(pad_lo))) = int(pad_lo(1:min(d, size(pad_lo))), c_int)
    if (present(pad_hi)) hi(1:min(d, size(pad_hi))) = int(pad_hi(1:min(d, size(pad_hi))), c_int)
  end subroutine pads

  !> A device array (for example `host_data use_device` under OpenACC), column-major: its
  !> address, element type (HALOX_FLOAT64, ...) and extents, halo padding included.
  subroutine halox_wrap_device(f, dom, ptr, type, extents, pad, pad_lo, pad_hi, name, stat, errmsg)
    type(halox_field), intent(inout) :: f
    type(halox_domain), intent(in) :: dom
    type(c_ptr), intent(in) :: ptr
    integer, intent(in) :: type, extents(:)
    integer, intent(in), optional :: pad(:), pad_lo(:), pad_hi(:)
    character(*), intent(in), optional :: name
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    integer(c_int) :: lo(4), hi(4), status
    call pads(dom%dim(), pad, pad_lo, pad_hi, lo, hi)
    status = c_field_wrap(dom%ptr, int(type, c_int), ptr, int(extents, c_int64_t), lo, hi, f%ptr)
    if (status == HALOX_SUCCESS) status = c_field_set_order(f%ptr, column_major)
    if (status == HALOX_SUCCESS) status = c_field_set_memory(f%ptr, device)
    if (status == HALOX_SUCCESS .and. present(name)) status = c_field_set_name(f%ptr, c_string(name))
    if (status == HALOX_SUCCESS) f%dim = dom%dim()
    call check(status, stat, errmsg)
  end subroutine halox_wrap_device

  !> Several arrays as one field: one per box this rank owns, in local_box order (block 1, 2,
  !> ...), each the address of its first element (c_loc(u1), ...), of one element type (a
  !> HALOX_* constant), padded alike. extents(:, b): block b's array shape, padding included
  !> (checked per block when an exchange is built). device: the arrays are device memory.
  subroutine halox_wrap_blocks(f, dom, ptrs, type, extents, pad, pad_lo, pad_hi, name, device, &
                               stat, errmsg)
    type(halox_field), intent(inout) :: f
    type(halox_domain), intent(in) :: dom
    type(c_ptr), intent(in) :: ptrs(:)
    integer, intent(in) :: type, extents(:, :)
    integer, intent(in), optional :: pad(:), pad_lo(:), pad_hi(:)
    character(*), intent(in), optional :: name
    logical, intent(in), optional :: device
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    integer(c_int) :: lo(4), hi(4), status
    call pads(dom%dim(), pad, pad_lo, pad_hi, lo, hi)
    status = c_field_wrap_blocks(dom%ptr, int(type, c_int), int(size(ptrs), c_int), ptrs, &
                                 int(reshape(extents, [size(extents)]), c_int64_t), lo, hi, f%ptr)
    if (status == HALOX_SUCCESS) status = c_field_set_order(f%ptr, column_major)
    if (status == HALOX_SUCCESS .and. present(device)) then
      if (device) status = c_field_set_memory(f%ptr, 1_c_int)
    end if
    if (status == HALOX_SUCCESS .and. present(name)) status = c_field_set_name(f%ptr, c_string(name))
    if (status == HALOX_SUCCESS) f%dim = dom%dim()
    call check(status, stat, errmsg)
  end subroutine halox_wrap_blocks

  !> This field's own halo in the exchanges built from it (default: the exchange's stencil).
  subroutine field_set_stencil(f, st, stat, errmsg)
    class(halox_field), intent(inout) :: f
    type(halox_stencil), intent(in) :: st
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call check(c_field_set_stencil(f%ptr, st%ptr), stat, errmsg)
  end subroutine field_set_stencil

  subroutine field_destroy(f)
    class(halox_field), intent(inout) :: f
    call check(c_field_destroy(f%ptr))
    f%ptr = c_null_ptr
    f%dim = 0
  end subroutine field_destroy

  ! ---- exchanges ------------------------------------------------------------------------

  !> The exchange of `fields`' halos for stencil `st` (collective). reverse: a reduction
  !> (HALOX_SUM, ...) for the reverse, halo-to-owner exchange. label: its name in messages.
  !> staging, wait_timeout, host_shared_memory: see options_with.
  subroutine make_exchange_structured(ex, dom, st, fields, reverse, label, staging, &
                                      wait_timeout, host_shared_memory, stat, errmsg)
    type(halox_exchange), intent(inout) :: ex
    type(halox_domain), intent(in) :: dom
    type(halox_stencil), intent(in) :: st
    type(halox_field), intent(in) :: fields(:)
    integer, intent(in), optional :: reverse
    character(*), intent(in), optional :: label
    integer, intent(in), optional :: staging
    real(real64), intent(in), optional :: wait_timeout
    logical, intent(in), optional :: host_shared_memory
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(c_ptr) :: ptrs(max(size(fields), 1)), opts
    integer(c_int) :: status, refused, n
    character(:), allocatable :: why
    integer :: k
    ptrs = c_null_ptr
    do k = 1, size(fields)
      ptrs(k) = fields(k)%ptr
    end do
    call options_with(label, staging, wait_timeout, host_shared_memory, opts, status, refused, why)
    n = merge(int(size(fields), c_int), 0_c_int, refused == HALOX_SUCCESS)
    if (status == HALOX_SUCCESS) then
      if (present(reverse)) then
        status = c_reverse_create(dom%ptr, st%ptr, int(reverse, c_int), ptrs, n, opts, ex%ptr)
      else
        status = c_exchange_create(dom%ptr, st%ptr, ptrs, n, opts, ex%ptr)
      end if
    end if
    if (c_options_destroy(opts) /= HALOX_SUCCESS) continue
    if (refused /= HALOX_SUCCESS) then
      call fail(int(refused), why, stat, errmsg)
      return
    end if
    call check(status, stat, errmsg)
  end subroutine make_exchange_structured

  !> The exchange of entity fields over an unstructured pattern (collective): owners' values
  !> to their ghosts, or with reverse (HALOX_SUM, ...) each ghost's value combined into its
  !> owner's (in a fixed order; ghosts are left as they are). label: its name in messages.
  !> staging, wait_timeout, host_shared_memory: see options_with.
  subroutine make_exchange_entities(ex, pat, fields, reverse, label, staging, wait_timeout, &
                                    host_shared_memory, stat, errmsg)
    type(halox_exchange), intent(inout) :: ex
    type(halox_pattern), intent(in) :: pat
    type(halox_entity_field), intent(in) :: fields(:)
    integer, intent(in), optional :: reverse
    character(*), intent(in), optional :: label
    integer, intent(in), optional :: staging
    real(real64), intent(in), optional :: wait_timeout
    logical, intent(in), optional :: host_shared_memory
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(c_ptr) :: ptrs(max(size(fields), 1)), opts
    integer(c_int) :: status, refused, n
    character(:), allocatable :: why
    integer :: k
    ptrs = c_null_ptr
    do k = 1, size(fields)
      ptrs(k) = fields(k)%ptr
    end do
    call options_with(label, staging, wait_timeout, host_shared_memory, opts, status, refused, why)
    n = merge(int(size(fields), c_int), 0_c_int, refused == HALOX_SUCCESS)
    if (status == HALOX_SUCCESS) then
      if (present(reverse)) then
        status = c_entity_reverse_create(pat%ptr, int(reverse, c_int), ptrs, n, opts, ex%ptr)
      else
        status = c_entity_exchange_create(pat%ptr, ptrs, n, opts, ex%ptr)
      end if
    end if
    if (c_options_destroy(opts) /= HALOX_SUCCESS) continue
    if (refused /= HALOX_SUCCESS) then
      call fail(int(refused), why, stat, errmsg)
      return
    end if
    call check(status, stat, errmsg)
  end subroutine make_exchange_entities

  !> Exchange options carrying what is given, or none (c_null_ptr) without any: label (its
  !> name in messages), staging (HALOX_STAGING_AUTO, ...: how device fields' messages travel),
  !> wait_timeout (seconds before a wait gives up, 0 never), host_shared_memory (.false.: host
  !> messages between ranks of a node go through MPI, not shared memory).
  !> A negative or NaN wait_timeout is refused when the exchange is built (on every rank),
  !> unless HALOX_WAIT_TIMEOUT is set: the variable overrides the option, as in C and C++.
  !> status: whether the options could be made (else no exchange can be built). refused and
  !> why: a value a setter rejected (staging 17) and its message. The caller then still takes
  !> part in the collective build, with no fields, which the build refuses on every rank
  !> together: a rank whose value was refused leaves no other rank waiting, and reports the
  !> setter's message itself.
  subroutine options_with(label, staging, wait_timeout, host_shared_memory, opts, status, &
                          refused, why)
    character(*), intent(in), optional :: label
    integer, intent(in), optional :: staging
    real(real64), intent(in), optional :: wait_timeout
    logical, intent(in), optional :: host_shared_memory
    type(c_ptr), intent(out) :: opts
    integer(c_int), intent(out) :: status, refused
    character(:), allocatable, intent(out) :: why
    opts = c_null_ptr
    status = HALOX_SUCCESS
    refused = HALOX_SUCCESS
    why = ''
    if (.not. (present(label) .or. present(staging) .or. present(wait_timeout) .or. &
               present(host_shared_memory))) return
    status = c_options_create(opts)
    if (status /= HALOX_SUCCESS) return
    if (present(label)) call set(c_options_set_label(opts, c_string(label)))
    if (present(staging)) call set(c_options_set_staging(opts, int(staging, c_int)))
    if (present(wait_timeout)) &
      call set(c_options_set_wait_timeout(opts, real(wait_timeout, c_double)))
    if (present(host_shared_memory)) &
      call set(c_options_set_host_shared_memory(opts, merge(1_c_int, 0_c_int, host_shared_memory)))
  contains
    subroutine set(s)
      integer(c_int), intent(in) :: s
      if (s == HALOX_SUCCESS .or. refused /= HALOX_SUCCESS) return
      refused = s
      why = last_error()
    end subroutine set
  end subroutine options_with

  !> One whole exchange: returns when every halo is filled.
  subroutine exchange_run(ex, stat, errmsg)
    class(halox_exchange), intent(inout) :: ex
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call check(c_exchange_op(ex%ptr), stat, errmsg)
  end subroutine exchange_run

  subroutine exchange_start(ex, stat, errmsg)
    class(halox_exchange), intent(inout) :: ex
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call check(c_exchange_start(ex%ptr), stat, errmsg)
  end subroutine exchange_start

  subroutine exchange_wait(ex, stat, errmsg)
    class(halox_exchange), intent(inout) :: ex
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call check(c_exchange_wait(ex%ptr), stat, errmsg)
  end subroutine exchange_wait

  !> Whether the started exchange has completed (then it is finished, as by wait).
  logical function exchange_test(ex, stat, errmsg)
    class(halox_exchange), intent(inout) :: ex
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    integer(c_int) :: done
    done = 0
    call check(c_exchange_test(ex%ptr, done), stat, errmsg)
    exchange_test = done /= 0
  end function exchange_test

  !> Device fields: the exchange ordered on a CUDA stream (its handle as an integer).
  subroutine exchange_schedule(ex, stream, stat, errmsg)
    class(halox_exchange), intent(inout) :: ex
    integer(c_intptr_t), intent(in) :: stream
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call check(c_exchange_schedule(ex%ptr, stream), stat, errmsg)
  end subroutine exchange_schedule

  subroutine exchange_schedule_wait(ex, stream, stat, errmsg)
    class(halox_exchange), intent(inout) :: ex
    integer(c_intptr_t), intent(in) :: stream
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call check(c_exchange_schedule_wait(ex%ptr, stream), stat, errmsg)
  end subroutine exchange_schedule_wait

  !> What the exchange does: peers, messages, routes.
  function exchange_describe(ex) result(text)
    class(halox_exchange), intent(inout) :: ex
    character(:), allocatable :: text
    character(kind=c_char), pointer :: chars(:)
    type(c_ptr) :: p
    integer :: n, i
    call check(c_exchange_describe(ex%ptr, p))
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate (character(n) :: text)
    do i = 1, n
      text(i:i) = chars(i)
    end do
  end function exchange_describe

  subroutine exchange_destroy(ex)
    class(halox_exchange), intent(inout) :: ex
    call check(c_exchange_destroy(ex%ptr))
    ex%ptr = c_null_ptr
  end subroutine exchange_destroy

end module halox
