/* halox's C interface (C11): halo exchange over MPI for codes that are not C++.
 *
 * Every function returns a halox_status: HALOX_SUCCESS (0) or the kind of failure. The message
 * of the last call that failed on the calling thread is halox_last_error() (like errno, a
 * successful call leaves it as it was). Nothing throws or aborts across this interface.
 *
 * Collective calls (domains, unstructured patterns, exchanges) fail on every rank of the
 * communicator together, with the same status, when any rank's input is wrong: the lowest failing
 * rank gets its own message, the others a message that quotes it. The one exception is a null
 * handle or output pointer, which the calling rank reports alone (it cannot reach the others
 * without a domain).
 *
 * A field describes your memory; it is checked against its domain when an exchange is built
 * from it (collectively), so a field with wrong extents makes halox_exchange_create fail on
 * every rank. Nothing is sent and no memory is written before those checks pass.
 *
 * C indices are global, 0-based and half-open: a rank's block is lo[i] <= x < hi[i].
 * See docs/fortran.md (C and Fortran).
 */
#ifndef HALOX_HALOX_H
#define HALOX_HALOX_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status and errors ------------------------------------------------------------------- */

typedef enum halox_status {
  HALOX_SUCCESS = 0,
  HALOX_ERROR = 1,               /* halox rejected the input or a call failed (the message) */
  HALOX_ERROR_NULL_ARGUMENT = 2, /* a null handle or output pointer (this rank only) */
  HALOX_ERROR_OUT_OF_MEMORY = 3, /* an allocation failed */
  HALOX_ERROR_INTERNAL = 4       /* anything else halox did not expect (please report it) */
} halox_status;

/* The message of the last call that failed on this thread ("" before any), valid until the
 * thread's next failing call. */
const char* halox_last_error(void);

/* ---- handles ----------------------------------------------------------------------------- */

typedef struct halox_domain halox_domain;     /* a decomposed global box (cartesian, box list) */
typedef struct halox_stencil halox_stencil;   /* halo widths per side and neighbour directions */
typedef struct halox_field halox_field;       /* your array, described */
typedef struct halox_options halox_options;   /* how an exchange's messages travel */
typedef struct halox_exchange halox_exchange; /* the communication object */
typedef struct halox_unstructured halox_unstructured; /* entities named by global ids */
typedef struct halox_entity_field halox_entity_field; /* your array over a pattern's entities */

/* ---- enumerations ------------------------------------------------------------------------ */

typedef enum halox_type {
  HALOX_INT8 = 1,
  HALOX_UINT8,
  HALOX_INT16,
  HALOX_UINT16,
  HALOX_INT32,
  HALOX_UINT32,
  HALOX_INT64,
  HALOX_UINT64,
  HALOX_FLOAT32,
  HALOX_FLOAT64,
  HALOX_COMPLEX64, /* two float32: C float _Complex, Fortran complex(real32) */
  HALOX_COMPLEX128 /* two float64 */
} halox_type;

typedef enum halox_order {
  HALOX_ROW_MAJOR = 0,   /* the last dimension varies fastest (C arrays) */
  HALOX_COLUMN_MAJOR = 1 /* the first dimension varies fastest (Fortran arrays) */
} halox_order;

typedef enum halox_components_layout {
  HALOX_INTERLEAVED = 0, /* a cell's components are adjacent */
  HALOX_PLANAR = 1       /* one array per component, one after the other */
} halox_components_layout;

typedef enum halox_centering {
  HALOX_CELL = 0, /* cell centres (dim ignored) */
  HALOX_FACE = 1, /* faces normal to dimension dim */
  HALOX_EDGE = 2, /* edges along dimension dim */
  HALOX_NODE = 3  /* cell corners (dim ignored) */
} halox_centering;

/* Who writes the points neighbouring blocks of a staggered field share (docs/staggered.md). */
typedef enum halox_shared_points {
  HALOX_SHARED_OWNER_OVERWRITES = 0, /* the owner's value overwrites every copy (default) */
  HALOX_SHARED_KEEP = 1 /* each block keeps its own copy; only the halo proper is filled */
} halox_shared_points;

typedef enum halox_memory { HALOX_HOST = 0, HALOX_DEVICE = 1 } halox_memory;

typedef enum halox_side { HALOX_LOW = 0, HALOX_HIGH = 1 } halox_side;

typedef enum halox_reduction {
  HALOX_REPLACE = 0,
  HALOX_SUM = 1,
  HALOX_MIN = 2,
  HALOX_MAX = 3
} halox_reduction;

typedef enum halox_staging {
  HALOX_STAGING_AUTO = 0,
  HALOX_STAGING_GPU_AWARE = 1,
  HALOX_STAGING_HOST_STAGED = 2,
  HALOX_STAGING_PEER_IPC = 3,
  HALOX_STAGING_NCCL = 4
} halox_staging;

/* ---- domains (collective over comm) ------------------------------------------------------ */

/* The global box [0, global[0]) x ... of `dim` (1..4) dimensions split into one block per rank
 * over a process grid: `grid` (dim entries) or NULL for the automatic one. periodic: dim flags
 * (non-zero: periodic), or NULL for none. halox duplicates nothing here: comm must stay valid
 * while exchanges are built on the domain. */
halox_status halox_cartesian_create(MPI_Comm comm, int dim, const int64_t* global,
                                    const int* periodic, const int* grid, halox_domain** out);

/* A global box covered by `count` boxes, any number per rank: box k is lo[k*dim + i] <= x <
 * hi[k*dim + i] and belongs to rank owners[k]. Every rank passes the same list. */
halox_status halox_box_list_create(MPI_Comm comm, int dim, const int64_t* global,
                                   const int* periodic, int count, const int64_t* lo,
                                   const int64_t* hi, const int* owners, halox_domain** out);

/* The same with the communicator as a Fortran handle (MPI_Comm_c2f), for language bindings. */
halox_status halox_cartesian_create_f(MPI_Fint comm, int dim, const int64_t* global,
                                      const int* periodic, const int* grid, halox_domain** out);
halox_status halox_box_list_create_f(MPI_Fint comm, int dim, const int64_t* global,
                                     const int* periodic, int count, const int64_t* lo,
                                     const int64_t* hi, const int* owners, halox_domain** out);

halox_status halox_domain_destroy(halox_domain* dom); /* NULL is fine */
halox_status halox_domain_dim(const halox_domain* dom, int* dim);
halox_status halox_domain_rank(const halox_domain* dom, int* rank);
/* How many boxes this rank owns (a cartesian domain: 1). */
halox_status halox_domain_block_count(const halox_domain* dom, int* count);
/* Owned box `block` of this rank: lo[i] <= x < hi[i] (dim entries each). */
halox_status halox_domain_local_box(const halox_domain* dom, int block, int64_t* lo, int64_t* hi);
/* A cartesian domain's process grid (dim entries) and this rank's coordinates in it. */
halox_status halox_domain_grid(const halox_domain* dom, int* dims, int* coords);

/* ---- stencils ---------------------------------------------------------------------------- */

/* Faces only (2*dim neighbours), halo widths below (lo) and above (hi) the owned box per
 * dimension (dim entries each; a width may be 0). */
halox_status halox_stencil_star(int dim, const int* lo, const int* hi, halox_stencil** out);
/* Faces, edges and corners (3^dim - 1 neighbours). */
halox_status halox_stencil_box(int dim, const int* lo, const int* hi, halox_stencil** out);
halox_status halox_stencil_destroy(halox_stencil* st);

/* ---- fields: your memory, described ------------------------------------------------------ */

/* Your array for this rank's single owned box, `data` pointing at its first element (halo
 * included). extents: the array's dim extents, halo padding included; pad_lo/pad_hi: the
 * padding below and above the owned box (dim entries each). Row-major unless set otherwise.
 * Checked when an exchange is built. The field does not own `data`. */
halox_status halox_field_wrap(const halox_domain* dom, halox_type type, void* data,
                              const int64_t* extents, const int* pad_lo, const int* pad_hi,
                              halox_field** out);
/* One dense array per owned box, in halox_domain_local_box order, each padded alike.
 * extents: count x dim entries, block after block: each array's extents, padding included
 * (checked per block when an exchange is built, as halox_field_wrap's). */
halox_status halox_field_wrap_blocks(const halox_domain* dom, halox_type type, int count,
                                     void* const* data, const int64_t* extents, const int* pad_lo,
                                     const int* pad_hi, halox_field** out);
halox_status halox_field_destroy(halox_field* f);

halox_status halox_field_set_order(halox_field* f, halox_order order);
/* `count` values per cell (default 1), interleaved or planar. */
halox_status halox_field_set_components(halox_field* f, int count, halox_components_layout l);
/* Explicit element strides per dimension (dim entries) and between components: the array need
 * not be dense (a slice of a larger array). Overrides the order. */
halox_status halox_field_set_strides(halox_field* f, const int64_t* strides,
                                     int64_t component_stride);
halox_status halox_field_set_centering(halox_field* f, halox_centering at, int dim);
/* Staggered fields: whether the owner overwrites shared points (default) or each block keeps
 * its own. Ranks must agree; no effect on cell-centred fields. */
halox_status halox_field_set_shared_points(halox_field* f, halox_shared_points rule);
/* HALOX_DEVICE: `data` is CUDA device memory (halox built with CUDA). */
halox_status halox_field_set_memory(halox_field* f, halox_memory space);
/* The field's name in error messages and describe(). */
halox_status halox_field_set_name(halox_field* f, const char* name);
/* This field's own halo in the exchange (default: the exchange's stencil). */
halox_status halox_field_set_stencil(halox_field* f, const halox_stencil* st);

/* Physical boundary rules of a forward exchange: what fills the halo beyond a non-periodic
 * face of the global box after each exchange (docs/staggered.md). `value` and `signs` point at
 * values of the field's type. */
halox_status halox_field_boundary_constant(halox_field* f, int dim, halox_side side,
                                           const void* value);
halox_status halox_field_boundary_zero_gradient(halox_field* f, int dim, halox_side side);
/* A mirror at the face, component c multiplied by signs[c] (signs NULL, count 0: all +1). */
halox_status halox_field_boundary_reflect(halox_field* f, int dim, halox_side side,
                                          const void* signs, int count);
/* A mirror about the boundary cell's centre: the halo cell k beyond the face holds the cell k
 * inside the boundary cell (at the high face of n cells, n-1+k holds n-1-k), component c
 * multiplied by signs[c]. Along a staggered dimension the same as reflect (about the boundary
 * point). */
halox_status halox_field_boundary_mirror(halox_field* f, int dim, halox_side side,
                                         const void* signs, int count);
/* fn(user, block, lo, hi, stream) fills the halo cells lo <= x < hi (global indices) itself;
 * stream is NULL for host fields, else the cudaStream_t to order its work on. */
typedef void (*halox_boundary_fn)(void* user, int block, const int64_t* lo, const int64_t* hi,
                                  void* stream);
halox_status halox_field_boundary_callback(halox_field* f, int dim, halox_side side,
                                           halox_boundary_fn fn, void* user);

/* Host memory the other ranks of the node can map (halox::allocate_node_shared): a field wrapped
 * over it exchanges between ranks of a node with one copy, as halox's own fields do, instead of
 * two. Zeroed, aligned to 64 bytes, whole pages each: for arrays allocated once. `*data` is
 * NULL after a failure. */
halox_status halox_allocate_node_shared(size_t bytes, void** data);
halox_status halox_free_node_shared(void* data); /* NULL is fine */

/* ---- options ----------------------------------------------------------------------------- */

halox_status halox_options_create(halox_options** out);
halox_status halox_options_destroy(halox_options* o);
halox_status halox_options_set_label(halox_options* o, const char* label);
halox_status halox_options_set_staging(halox_options* o, halox_staging s);
/* Give up a wait after this many seconds (0: never). */
halox_status halox_options_set_wait_timeout(halox_options* o, double seconds);
/* 0: host messages between ranks of a node go through MPI, not shared memory. */
halox_status halox_options_set_host_shared_memory(halox_options* o, int enabled);

/* ---- unstructured patterns (collective over comm) --------------------------------------- */

/* The pattern of a rank that owns the entities of global ids owned[0..owned_count) and needs
 * copies (ghosts) of ghosts[0..ghost_count), owned by other ranks. halox finds each ghost's
 * owner. Local entity indices: the owned ids first, in the order given, then the ghosts.
 * Fails on every rank when any rank's input is wrong: an id listed twice, a ghost id the rank
 * also owns, an id owned by two ranks, a ghost id no rank owns. comm must stay valid while
 * exchanges are built on the pattern. */
halox_status halox_unstructured_create(MPI_Comm comm, const int64_t* owned, int64_t owned_count,
                                       const int64_t* ghosts, int64_t ghost_count,
                                       halox_unstructured** out);
/* The same with the communicator as a Fortran handle (MPI_Comm_c2f). */
halox_status halox_unstructured_create_f(MPI_Fint comm, const int64_t* owned, int64_t owned_count,
                                         const int64_t* ghosts, int64_t ghost_count,
                                         halox_unstructured** out);
/* The same with your own local order and what you know (the C++ unstructured_options):
 * ghost_owners, the owner rank of each ghost (ghost_count entries; NULL: halox finds them);
 * owned_local and ghost_local, the 0-based local index of each owned entity and each ghost
 * (NULL: the owned first, then the ghosts); local_count, the entities in your local arrays
 * (-1: owned + ghosts). A wrong owner, an index out of range or used twice fails on every rank. */
halox_status halox_unstructured_create_local(MPI_Comm comm, const int64_t* owned,
                                             int64_t owned_count, const int64_t* ghosts,
                                             int64_t ghost_count, const int* ghost_owners,
                                             const int64_t* owned_local, const int64_t* ghost_local,
                                             int64_t local_count, halox_unstructured** out);
halox_status halox_unstructured_create_local_f(MPI_Fint comm, const int64_t* owned,
                                               int64_t owned_count, const int64_t* ghosts,
                                               int64_t ghost_count, const int* ghost_owners,
                                               const int64_t* owned_local,
                                               const int64_t* ghost_local, int64_t local_count,
                                               halox_unstructured** out);
halox_status halox_unstructured_destroy(halox_unstructured* pat); /* NULL is fine */
/* This rank's owned, ghost and local (owned + ghost) entity counts; any pointer may be NULL. */
halox_status halox_unstructured_counts(const halox_unstructured* pat, int64_t* owned,
                                       int64_t* ghosts, int64_t* local);
/* The owner rank of each ghost, in the order given (ghost_count entries). */
halox_status halox_unstructured_ghost_owners(const halox_unstructured* pat, int* owners);

/* Your array of `count` entities (the pattern's local count: checked when an exchange is built,
 * on every rank together), one value each unless set otherwise. The field does not own data. */
halox_status halox_entity_field_wrap(const halox_unstructured* pat, halox_type type, void* data,
                                     int64_t count, halox_entity_field** out);
halox_status halox_entity_field_destroy(halox_entity_field* f);
/* `count` values per entity: HALOX_INTERLEAVED, [entity][component]; HALOX_PLANAR, one array
 * per component, `component_stride` elements apart (0: the entity count). */
halox_status halox_entity_field_set_components(halox_entity_field* f, int count,
                                               halox_components_layout l, int64_t component_stride);
halox_status halox_entity_field_set_memory(halox_entity_field* f, halox_memory space);
halox_status halox_entity_field_set_name(halox_entity_field* f, const char* name);

/* The exchange of `fields` (owners to ghosts, one message per peer for all of them), driven by
 * the halox_exchange calls below. Collective over the pattern's communicator. */
halox_status halox_unstructured_exchange_create(const halox_unstructured* pat,
                                                halox_entity_field* const* fields, int count,
                                                const halox_options* options, halox_exchange** out);
/* The reverse exchange: each ghost's value is combined into its owner's with `op`, in a fixed
 * order (peers by increasing rank); ghosts are left as they are. */
halox_status halox_unstructured_reverse_exchange_create(const halox_unstructured* pat,
                                                        halox_reduction op,
                                                        halox_entity_field* const* fields,
                                                        int count, const halox_options* options,
                                                        halox_exchange** out);

/* ---- exchanges (collective over the domain's communicator) ------------------------------- */

/* The communication object that fills the halos of `fields` (one message per peer for all of
 * them) for stencil `st` (the halo of every field without its own). options: NULL for the
 * defaults. The fields' arrays must stay valid while the exchange lives. */
halox_status halox_exchange_create(const halox_domain* dom, const halox_stencil* st,
                                   halox_field* const* fields, int count,
                                   const halox_options* options, halox_exchange** out);
/* The reverse (halo-to-owner) exchange: halo values are sent back and combined into the owned
 * cells they mirror with `op`. */
halox_status halox_reverse_exchange_create(const halox_domain* dom, const halox_stencil* st,
                                           halox_reduction op, halox_field* const* fields,
                                           int count, const halox_options* options,
                                           halox_exchange** out);
halox_status halox_exchange_destroy(halox_exchange* ex);

/* One whole exchange: returns when every halo is filled. */
halox_status halox_exchange_run(halox_exchange* ex);
/* Starts an exchange; finish it with halox_exchange_wait or a halox_exchange_test that sets
 * *done. A second start before then fails. */
halox_status halox_exchange_start(halox_exchange* ex);
halox_status halox_exchange_wait(halox_exchange* ex);
halox_status halox_exchange_test(halox_exchange* ex, int* done);
/* Device fields: the exchange ordered on a CUDA stream (a cudaStream_t, passed as void*). */
halox_status halox_exchange_schedule(halox_exchange* ex, void* stream);
halox_status halox_exchange_schedule_wait(halox_exchange* ex, void* stream);
/* What the exchange does (peers, messages, routes), as text owned by `ex`, valid until the
 * next describe or stats call on it or its destruction. */
halox_status halox_exchange_describe(halox_exchange* ex, const char** text);
/* Its counters and timings as JSON, owned by `ex` as above. */
halox_status halox_exchange_stats(halox_exchange* ex, const char** json);

#ifdef __cplusplus
}
#endif

#endif /* HALOX_HALOX_H */
