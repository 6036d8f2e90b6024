/* c_heat2d: explicit 2-D heat equation on a periodic n x n grid, two fields (temperature in
 * double, a tracer in float) diffused side by side, their halos filled by one halox exchange
 * per step through the C interface. Every rank then runs the same problem serially on the
 * whole grid (periodic copies by hand) and compares its owned cells bit for bit.
 *
 *   mpirun -np 4 c_heat2d [n] [steps]     (prints "verified" when every cell matches)
 */
#include <halox/halox.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stops every rank with halox's message when a call fails (it fails on every rank alike). */
#define HALOX_CHECK(call)                                            \
  do {                                                               \
    if ((call) != HALOX_SUCCESS) {                                   \
      fprintf(stderr, "%s failed: %s\n", #call, halox_last_error()); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                  \
    }                                                                \
  } while (0)

static const double alpha = 0.2;

/* A block of cells [lo, hi) with a halo of one: (nx + 2) x (ny + 2), row-major. */
typedef struct {
  int64_t lo[2], hi[2], ext[2];
} block;

static size_t at(const block* b, int64_t i, int64_t j) {
  return (size_t)((i - b->lo[0] + 1) * b->ext[1] + (j - b->lo[1] + 1));
}

static void initial(const block* b, int64_t n, double* t, float* c) {
  memset(t, 0, sizeof(double) * (size_t)(b->ext[0] * b->ext[1]));
  memset(c, 0, sizeof(float) * (size_t)(b->ext[0] * b->ext[1]));
  for (int64_t i = b->lo[0]; i < b->hi[0]; ++i)
    for (int64_t j = b->lo[1]; j < b->hi[1]; ++j) {
      if (llabs(i - n / 3) < n / 6 && llabs(j - n / 2) < n / 5) t[at(b, i, j)] = 1;
      c[at(b, i, j)] = (float)((i + 2 * j) % 7) / 7;
    }
}

static void diffuse(const block* b, double* t, double* tn, float* c, float* cn) {
  const float af = (float)alpha;
  for (int64_t i = b->lo[0]; i < b->hi[0]; ++i)
    for (int64_t j = b->lo[1]; j < b->hi[1]; ++j) {
      const size_t k = at(b, i, j), w = at(b, i - 1, j), e = at(b, i + 1, j), s = at(b, i, j - 1),
                   nn = at(b, i, j + 1);
      tn[k] = t[k] + alpha * (t[w] + t[e] + t[s] + t[nn] - 4 * t[k]);
      cn[k] = c[k] + af * (c[w] + c[e] + c[s] + c[nn] - 4 * c[k]);
    }
  for (int64_t i = b->lo[0]; i < b->hi[0]; ++i)
    for (int64_t j = b->lo[1]; j < b->hi[1]; ++j)
      t[at(b, i, j)] = tn[at(b, i, j)], c[at(b, i, j)] = cn[at(b, i, j)];
}

/* The serial run's halo: periodic copies by hand. */
static void periodic_copies(const block* b, int64_t n, double* t, float* c) {
  for (int64_t j = 0; j < n; ++j) {
    t[at(b, -1, j)] = t[at(b, n - 1, j)], t[at(b, n, j)] = t[at(b, 0, j)];
    c[at(b, -1, j)] = c[at(b, n - 1, j)], c[at(b, n, j)] = c[at(b, 0, j)];
  }
  for (int64_t i = -1; i <= n; ++i) {
    t[at(b, i, -1)] = t[at(b, i, n - 1)], t[at(b, i, n)] = t[at(b, i, 0)];
    c[at(b, i, -1)] = c[at(b, i, n - 1)], c[at(b, i, n)] = c[at(b, i, 0)];
  }
}

static void run_serial(int64_t n, int steps, double** t_out, float** c_out, block* whole) {
  *whole = (block){{0, 0}, {n, n}, {n + 2, n + 2}};
  const size_t cells = (size_t)((n + 2) * (n + 2));
  double *t = malloc(sizeof(double) * cells), *tn = malloc(sizeof(double) * cells);
  float *c = malloc(sizeof(float) * cells), *cn = malloc(sizeof(float) * cells);
  initial(whole, n, t, c);
  for (int s = 0; s < steps; ++s) {
    periodic_copies(whole, n, t, c);
    diffuse(whole, t, tn, c, cn);
  }
  free(tn), free(cn);
  *t_out = t, *c_out = c;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  if (MPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
  const int64_t n = argc > 1 ? atoll(argv[1]) : 48;
  const int steps = argc > 2 ? atoi(argv[2]) : 50;

  /* The halox part: a periodic domain, a 5-point stencil, the two arrays as they are. */
  const int64_t global[2] = {n, n};
  const int periodic[2] = {1, 1}, one[2] = {1, 1};
  halox_domain* dom = NULL;
  HALOX_CHECK(halox_cartesian_create(MPI_COMM_WORLD, 2, global, periodic, NULL, &dom));
  block b;
  HALOX_CHECK(halox_domain_local_box(dom, 0, b.lo, b.hi));
  b.ext[0] = b.hi[0] - b.lo[0] + 2, b.ext[1] = b.hi[1] - b.lo[1] + 2;
  const size_t cells = (size_t)(b.ext[0] * b.ext[1]);
  double *t = malloc(sizeof(double) * cells), *tn = malloc(sizeof(double) * cells);
  float *c = malloc(sizeof(float) * cells), *cn = malloc(sizeof(float) * cells);
  initial(&b, n, t, c);
  halox_stencil* st = NULL;
  halox_field *ft = NULL, *fc = NULL;
  halox_exchange* ex = NULL;
  HALOX_CHECK(halox_stencil_star(2, one, one, &st));
  HALOX_CHECK(halox_field_wrap(dom, HALOX_FLOAT64, t, b.ext, one, one, &ft));
  HALOX_CHECK(halox_field_wrap(dom, HALOX_FLOAT32, c, b.ext, one, one, &fc));
  halox_field* fields[2] = {ft, fc};
  HALOX_CHECK(halox_exchange_create(dom, st, fields, 2, NULL, &ex));
  for (int s = 0; s < steps; ++s) {
    HALOX_CHECK(halox_exchange_run(ex));
    diffuse(&b, t, tn, c, cn);
  }

  /* The serial reference, compared bit for bit on this rank's cells. */
  block whole;
  double* ts = NULL;
  float* cs = NULL;
  run_serial(n, steps, &ts, &cs, &whole);
  int wrong = 0, total = 0;
  for (int64_t i = b.lo[0]; i < b.hi[0]; ++i)
    for (int64_t j = b.lo[1]; j < b.hi[1]; ++j)
      wrong +=
          (t[at(&b, i, j)] != ts[at(&whole, i, j)]) + (c[at(&b, i, j)] != cs[at(&whole, i, j)]);
  if (MPI_Allreduce(&wrong, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
    MPI_Abort(MPI_COMM_WORLD, 1);
  if (rank == 0 && total == 0)
    printf("c_heat2d: %ld^2, %d steps: verified bit for bit against the serial run\n", (long)n,
           steps);
  if (rank == 0 && total != 0) printf("c_heat2d: %d cells differ\n", total);
  HALOX_CHECK(halox_exchange_destroy(ex));
  HALOX_CHECK(halox_field_destroy(ft));
  HALOX_CHECK(halox_field_destroy(fc));
  HALOX_CHECK(halox_stencil_destroy(st));
  HALOX_CHECK(halox_domain_destroy(dom));
  free(t), free(tn), free(c), free(cn), free(ts), free(cs);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
