/* The C interface with arrays in GPU memory (CUDA builds; label gpu), at any rank count:
 * - a 2-D periodic Cartesian domain's double field, cudaMalloc'ed, exchanged with run,
 *   start/wait and schedule/schedule_wait on the program's own stream; every cell of the
 *   array (owned and halo, corners included) copied back and checked against the value its
 *   global coordinates give;
 * - an unstructured pattern's two entity fields (double interleaved, int64 planar) in device
 *   memory, forward with run and scheduled, every ghost checked against a value computed from
 *   its global id; a reverse sum on the device against a serial count of who ghosts what.
 * Ranks spread over the node's GPUs. No GPU: exit 77 (ctest: skipped). */
#include <cuda_runtime.h>

#include "check.h"
#include "entities.h"

#define CUDA_OK(call)                                                                      \
  do {                                                                                     \
    const cudaError_t rc_ = (call);                                                        \
    CHECK(rc_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(rc_));                   \
    if (rc_ != cudaSuccess) MPI_Abort(MPI_COMM_WORLD, 1); /* no GPU state to go on with */ \
  } while (0)

/* ---- a Cartesian domain ------------------------------------------------------------------ */

enum { nx = 24, ny = 20, w = 1 };

/* The value of global cell (x, y), periodic images folded back into the box. */
static double cell_value(int64_t x, int64_t y) {
  x = (x + nx) % nx, y = (y + ny) % ny;
  return (double)(x * 1000 + y);
}

typedef struct {
  int64_t lo[2], hi[2], ext[2]; /* owned box; array extents (halo included) */
  size_t cells;
} box2;

/* Owned cells hold their values, halo cells -1 (row-major: x slowest). */
static void fill_cells(const box2* b, double* h) {
  for (int64_t i = 0; i < b->ext[0]; ++i)
    for (int64_t j = 0; j < b->ext[1]; ++j) {
      const int own = i >= w && i < b->ext[0] - w && j >= w && j < b->ext[1] - w;
      h[i * b->ext[1] + j] = own ? cell_value(b->lo[0] + i - w, b->lo[1] + j - w) : -1;
    }
}

static void verify_cells(const box2* b, const double* h, const char* what) {
  int bad = 0;
  for (int64_t i = 0; i < b->ext[0]; ++i)
    for (int64_t j = 0; j < b->ext[1]; ++j) {
      const double want = cell_value(b->lo[0] + i - w, b->lo[1] + j - w);
      if (h[i * b->ext[1] + j] != want && bad++ < 3)
        CHECK(0, "%s: cell (%ld, %ld) holds %.0f, expected %.0f", what, (long)(b->lo[0] + i - w),
              (long)(b->lo[1] + j - w), h[i * b->ext[1] + j], want);
    }
}

/* One round: fill on the host, copy in, exchange as `how` says, copy out, check. */
static void round_trip(const box2* b, halox_exchange* ex, double* d, double* h, cudaStream_t stream,
                       int how, const char* what) {
  fill_cells(b, h);
  CUDA_OK(cudaMemcpy(d, h, b->cells * sizeof(double), cudaMemcpyHostToDevice));
  if (how == 0) {
    OK(halox_exchange_run(ex));
  } else if (how == 1) {
    OK(halox_exchange_start(ex));
    OK(halox_exchange_wait(ex));
  } else {
    OK(halox_exchange_schedule(ex, stream));
    OK(halox_exchange_schedule_wait(ex, stream));
  }
  CUDA_OK(cudaMemcpyAsync(h, d, b->cells * sizeof(double), cudaMemcpyDeviceToHost, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  verify_cells(b, h, what);
}

static void test_cartesian(cudaStream_t stream) {
  const int64_t global[2] = {nx, ny};
  const int periodic[2] = {1, 1}, pad[2] = {w, w};
  halox_domain* dom = NULL;
  OK(halox_cartesian_create(MPI_COMM_WORLD, 2, global, periodic, NULL, &dom));
  box2 b;
  OK(halox_domain_local_box(dom, 0, b.lo, b.hi));
  for (int k = 0; k < 2; ++k) b.ext[k] = b.hi[k] - b.lo[k] + 2 * w;
  b.cells = (size_t)(b.ext[0] * b.ext[1]);
  double* h = malloc(b.cells * sizeof(double));
  double* d = NULL;
  CUDA_OK(cudaMalloc((void**)&d, b.cells * sizeof(double)));
  halox_field* f = NULL;
  OK(halox_field_wrap(dom, HALOX_FLOAT64, d, b.ext, pad, pad, &f));
  OK(halox_field_set_memory(f, HALOX_DEVICE));
  OK(halox_field_set_name(f, "t"));
  halox_stencil* st = NULL;
  OK(halox_stencil_box(2, pad, pad, &st));
  halox_exchange* ex = NULL;
  OK(halox_exchange_create(dom, st, &f, 1, NULL, &ex));
  round_trip(&b, ex, d, h, stream, 0, "cartesian run");
  round_trip(&b, ex, d, h, stream, 1, "cartesian start/wait");
  round_trip(&b, ex, d, h, stream, 2, "cartesian scheduled");
  round_trip(&b, ex, d, h, stream, 2, "cartesian scheduled again");
  OK(halox_exchange_destroy(ex));
  OK(halox_stencil_destroy(st));
  OK(halox_field_destroy(f));
  OK(halox_domain_destroy(dom));
  CUDA_OK(cudaFree(d));
  free(h);
}

/* ---- an unstructured pattern ------------------------------------------------------------- */

/* Rank q's ghosts: the entities k of every other rank r with k + q odd, lower ranks first.
 * Returns the count. */
static int ghosts_of(int q, int64_t* ids) {
  int n = 0;
  for (int r = 0; r < size; ++r)
    for (int k = 0; r != q && k < owned_count(r); ++k)
      if ((k + q) % 2 == 1) ids[n++] = id_of(r, k);
  return n;
}

typedef struct {
  halox_unstructured* pat;
  int64_t ids[max_entities]; /* owned first, then ghosts */
  int n_owned, n_local;
} entities;

static void make_pattern(entities* e) {
  e->n_owned = owned_count(rank);
  for (int k = 0; k < e->n_owned; ++k) e->ids[k] = id_of(rank, k);
  const int n_ghosts = ghosts_of(rank, e->ids + e->n_owned);
  e->n_local = e->n_owned + n_ghosts;
  e->pat = NULL;
  OK(halox_unstructured_create(MPI_COMM_WORLD, e->ids, e->n_owned, e->ids + e->n_owned, n_ghosts,
                               &e->pat));
}

typedef struct {
  double u[2 * max_entities];
  int64_t v[2 * max_entities + 3];
  double* du;
  int64_t* dv;
  int stride;
} entity_arrays;

/* One forward round in device memory: fill, copy in, exchange (run or scheduled), copy out. */
static void entity_round(const entities* e, entity_arrays* a, halox_exchange* ex,
                         cudaStream_t stream, int scheduled, const char* what) {
  fill_values(e->ids, e->n_owned, e->n_local, a->u, a->v, a->stride);
  CUDA_OK(cudaMemcpy(a->du, a->u, sizeof a->u, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(a->dv, a->v, sizeof a->v, cudaMemcpyHostToDevice));
  if (scheduled) {
    OK(halox_exchange_schedule(ex, stream));
    OK(halox_exchange_schedule_wait(ex, stream));
  } else {
    OK(halox_exchange_run(ex));
  }
  CUDA_OK(cudaMemcpyAsync(a->u, a->du, sizeof a->u, cudaMemcpyDeviceToHost, stream));
  CUDA_OK(cudaMemcpyAsync(a->v, a->dv, sizeof a->v, cudaMemcpyDeviceToHost, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  check_values(e->ids, e->n_owned, e->ids + e->n_owned, e->n_local, a->u, a->v, a->stride, what);
}

static void test_entities_forward(cudaStream_t stream) {
  entities e;
  make_pattern(&e);
  entity_arrays a;
  a.stride = e.n_local + 3;
  CUDA_OK(cudaMalloc((void**)&a.du, sizeof a.u));
  CUDA_OK(cudaMalloc((void**)&a.dv, sizeof a.v));
  halox_entity_field* f[2] = {NULL, NULL};
  OK(halox_entity_field_wrap(e.pat, HALOX_FLOAT64, a.du, e.n_local, &f[0]));
  OK(halox_entity_field_set_components(f[0], 2, HALOX_INTERLEAVED, 0));
  OK(halox_entity_field_set_memory(f[0], HALOX_DEVICE));
  OK(halox_entity_field_wrap(e.pat, HALOX_INT64, a.dv, e.n_local, &f[1]));
  OK(halox_entity_field_set_components(f[1], 2, HALOX_PLANAR, a.stride));
  OK(halox_entity_field_set_memory(f[1], HALOX_DEVICE));
  halox_exchange* ex = NULL;
  OK(halox_unstructured_exchange_create(e.pat, f, 2, NULL, &ex));
  entity_round(&e, &a, ex, stream, 0, "entities run");
  entity_round(&e, &a, ex, stream, 1, "entities scheduled");
  entity_round(&e, &a, ex, stream, 1, "entities scheduled again");
  OK(halox_exchange_destroy(ex));
  OK(halox_entity_field_destroy(f[0]));
  OK(halox_entity_field_destroy(f[1]));
  OK(halox_unstructured_destroy(e.pat));
  CUDA_OK(cudaFree(a.du));
  CUDA_OK(cudaFree(a.dv));
}

/* Reverse sum in device memory: ghosts on rank q hold q + 1, owned entities 0; afterwards owned
 * entity g holds the sum of q + 1 over the ranks q that ghost it, counted serially. */
static void test_entities_reverse(void) {
  entities e;
  make_pattern(&e);
  double w_host[max_entities], *w_dev = NULL;
  for (int i = 0; i < e.n_local; ++i) w_host[i] = i < e.n_owned ? 0 : rank + 1;
  CUDA_OK(cudaMalloc((void**)&w_dev, sizeof w_host));
  CUDA_OK(cudaMemcpy(w_dev, w_host, sizeof w_host, cudaMemcpyHostToDevice));
  halox_entity_field* f = NULL;
  OK(halox_entity_field_wrap(e.pat, HALOX_FLOAT64, w_dev, e.n_local, &f));
  OK(halox_entity_field_set_memory(f, HALOX_DEVICE));
  halox_exchange* ex = NULL;
  OK(halox_unstructured_reverse_exchange_create(e.pat, HALOX_SUM, &f, 1, NULL, &ex));
  OK(halox_exchange_run(ex));
  CUDA_OK(cudaMemcpy(w_host, w_dev, sizeof w_host, cudaMemcpyDeviceToHost));
  for (int k = 0; k < e.n_owned; ++k) {
    double want = 0;
    for (int q = 0; q < size; ++q) {
      int64_t ids[max_entities];
      const int n = ghosts_of(q, ids);
      for (int i = 0; i < n; ++i)
        if (ids[i] == e.ids[k]) want += q + 1;
    }
    CHECK(w_host[k] == want, "reverse sum: id %ld holds %.0f, expected %.0f", (long)e.ids[k],
          w_host[k], want);
  }
  for (int i = e.n_owned; i < e.n_local; ++i)
    CHECK(w_host[i] == rank + 1, "reverse sum: ghost %d changed to %.0f", i, w_host[i]);
  OK(halox_exchange_destroy(ex));
  OK(halox_entity_field_destroy(f));
  OK(halox_unstructured_destroy(e.pat));
  CUDA_OK(cudaFree(w_dev));
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
  int fewest = gpus;
  MPI_OK(MPI_Allreduce(&gpus, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (fewest == 0) {
    if (rank == 0) printf("SKIP: no CUDA device\n");
    MPI_Finalize();
    return 77;
  }
  const char* local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  CUDA_OK(cudaSetDevice(local ? atoi(local) % gpus : 0));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  test_cartesian(stream);
  test_entities_forward(stream);
  test_entities_reverse();
  CUDA_OK(cudaStreamDestroy(stream));
  int total = 0;
  MPI_OK(MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  if (rank == 0) printf("test_c_device: %d rank(s), %d failure(s)\n", size, total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
