/* The C interface at any rank count: every halo cell of two fields of different types (row- and
 * column-major, per-field stencils) checked against the global coordinates encoded in the
 * data, on 2-D and 3-D domains, periodic and not, with exchange and with start/test/wait; a
 * reverse exchange's sum; boundary rules (mirror about the boundary cell's centre, reflect about
 * the face) against a model of them; node fields whose shared points the owner overwrites or
 * each rank keeps; bad input on every rank rejected with its status and message,
 * and the user's arrays left as they were. */
#include "check.h"

/* A global cell as a number: exact in int32 and double for the extents used here. */
static double code(const int64_t* g, int dim) {
  double v = 1;
  for (int i = dim - 1; i >= 0; --i) v = v * 100 + (double)g[i];
  return v;
}

/* One array: its box, padding, layout; cells addressed by global coordinates. */
typedef struct {
  int dim;
  int64_t lo[3], hi[3], ext[3];
  int pad_lo[3], pad_hi[3];
  int column_major;
} array_shape;

static int64_t offset(const array_shape* s, const int64_t* g) {
  int64_t off = 0;
  for (int k = 0; k < s->dim; ++k) {
    const int i = s->column_major ? s->dim - 1 - k : k;
    off = off * s->ext[i] + (g[i] - s->lo[i] + s->pad_lo[i]);
  }
  return off;
}

static int64_t volume(const array_shape* s) {
  int64_t n = 1;
  for (int i = 0; i < s->dim; ++i) n *= s->ext[i];
  return n;
}

/* The global coordinates of allocated cell number `n` (dimension 0 fastest). */
static void cell(const array_shape* s, int64_t n, int64_t* g) {
  for (int i = 0; i < s->dim; ++i) {
    g[i] = s->lo[i] - s->pad_lo[i] + n % s->ext[i];
    n /= s->ext[i];
  }
}

/* The value halo cell g must hold after an exchange for a stencil of widths wlo/whi (box:
 * corners too), or -1 where it stays unfilled. */
static double expected(const array_shape* s, const int64_t* g, const int64_t* global,
                       const int* periodic, const int* wlo, const int* whi, int box) {
  int64_t src[3];
  int outside = 0;
  for (int i = 0; i < s->dim; ++i) {
    src[i] = g[i];
    if (g[i] < s->lo[i] - wlo[i] || g[i] >= s->hi[i] + whi[i]) return -1;
    if (g[i] < s->lo[i] || g[i] >= s->hi[i]) ++outside;
    if (src[i] < 0 || src[i] >= global[i]) {
      if (!periodic[i]) return -1;
      src[i] = (src[i] + global[i]) % global[i];
    }
  }
  if (outside == 0) return code(g, s->dim);
  if (!box && outside > 1) return -1;
  return code(src, s->dim);
}

static void shape_of(halox_domain* dom, int dim, const int* pad, int column_major, array_shape* s) {
  s->dim = dim;
  s->column_major = column_major;
  OK(halox_domain_local_box(dom, 0, s->lo, s->hi));
  for (int i = 0; i < dim; ++i) {
    s->pad_lo[i] = s->pad_hi[i] = pad[i];
    s->ext[i] = s->hi[i] - s->lo[i] + 2 * pad[i];
  }
}

static int owned(const array_shape* s, const int64_t* g) {
  for (int i = 0; i < s->dim; ++i)
    if (g[i] < s->lo[i] || g[i] >= s->hi[i]) return 0;
  return 1;
}

static void fill(const array_shape* s, double* a, int32_t* b) {
  int64_t g[3];
  for (int64_t n = 0; n < volume(s); ++n) {
    cell(s, n, g);
    const double v = owned(s, g) ? code(g, s->dim) : -1;
    if (a) a[offset(s, g)] = v;
    if (b) b[offset(s, g)] = (int32_t)v;
  }
}

/* Every cell of a (double) or b (int32) against `expected`; returns the mismatches. */
static int verify(const array_shape* s, const double* a, const int32_t* b, const int64_t* global,
                  const int* periodic, const int* wlo, const int* whi, int box, const char* what) {
  int64_t g[3];
  int bad = 0;
  for (int64_t n = 0; n < volume(s); ++n) {
    cell(s, n, g);
    const double want = expected(s, g, global, periodic, wlo, whi, box);
    const double got = a ? a[offset(s, g)] : (double)b[offset(s, g)];
    if (got != want && bad++ < 3)
      CHECK(0, "%s: cell (%ld,%ld,%ld) holds %.0f, expected %.0f", what, (long)g[0], (long)g[1],
            (long)(s->dim > 2 ? g[2] : 0), got, want);
  }
  return bad;
}

/* Two fields in one exchange: u (double, row-major, box stencil wlo/whi, padding 2) and
 * v (int32, column-major, its own star stencil of width 1, padding 1). */
static void test_forward(int dim, int periodic_all, int overlap) {
  const int64_t global[3] = {9, 7, 5};
  int periodic[3], wlo[3], whi[3], pad2[3], pad1[3], one[3];
  for (int i = 0; i < 3; ++i) {
    periodic[i] = periodic_all;
    wlo[i] = i == 0 ? 1 : 2, whi[i] = 2, pad2[i] = 2, pad1[i] = 1, one[i] = 1;
  }
  halox_domain* dom = NULL;
  OK(halox_cartesian_create(MPI_COMM_WORLD, dim, global, periodic, NULL, &dom));
  array_shape su, sv;
  shape_of(dom, dim, pad2, 0, &su);
  shape_of(dom, dim, pad1, 1, &sv);
  double* u = malloc(sizeof(double) * (size_t)volume(&su));
  int32_t* v = malloc(sizeof(int32_t) * (size_t)volume(&sv));
  fill(&su, u, NULL);
  fill(&sv, NULL, v);
  halox_stencil *st = NULL, *star = NULL;
  OK(halox_stencil_box(dim, wlo, whi, &st));
  OK(halox_stencil_star(dim, one, one, &star));
  halox_field *fu = NULL, *fv = NULL;
  OK(halox_field_wrap(dom, HALOX_FLOAT64, u, su.ext, pad2, pad2, &fu));
  OK(halox_field_wrap(dom, HALOX_INT32, v, sv.ext, pad1, pad1, &fv));
  OK(halox_field_set_name(fu, "u"));
  OK(halox_field_set_order(fv, HALOX_COLUMN_MAJOR));
  OK(halox_field_set_stencil(fv, star));
  halox_field* fields[2] = {fu, fv};
  halox_exchange* ex = NULL;
  OK(halox_exchange_create(dom, st, fields, 2, NULL, &ex));
  for (int round = 0; round < 2; ++round) {
    if (overlap) {
      int done = 0;
      OK(halox_exchange_start(ex));
      OK(halox_exchange_test(ex, &done));
      if (!done) OK(halox_exchange_wait(ex));
    } else {
      OK(halox_exchange_run(ex));
    }
  }
  char what[64];
  snprintf(what, sizeof what, "%d-D %s u", dim, periodic_all ? "periodic" : "bounded");
  verify(&su, u, NULL, global, periodic, wlo, whi, 1, what);
  what[strlen(what) - 1] = 'v';
  verify(&sv, NULL, v, global, periodic, one, one, 0, what);
  const char* text = NULL;
  OK(halox_exchange_describe(ex, &text));
  CHECK(text && strstr(text, "2 field(s)") != NULL, "describe(): %s", text ? text : "");
  OK(halox_exchange_destroy(ex));
  OK(halox_field_destroy(fu));
  OK(halox_field_destroy(fv));
  OK(halox_stencil_destroy(st));
  OK(halox_stencil_destroy(star));
  OK(halox_domain_destroy(dom));
  free(u);
  free(v);
}

/* Reverse exchange, sum: owned cells 0, halo cells 1 on a periodic 2-D domain, box stencil of
 * width 1. Every halo cell mirrors one owned cell, so afterwards the owned cells add up to the
 * number of halo cells of all ranks. */
static void test_reverse(void) {
  const int64_t global[2] = {8, 6};
  const int periodic[2] = {1, 1}, w[2] = {1, 1};
  halox_domain* dom = NULL;
  OK(halox_cartesian_create(MPI_COMM_WORLD, 2, global, periodic, NULL, &dom));
  array_shape s;
  shape_of(dom, 2, w, 0, &s);
  int64_t* a = malloc(sizeof(int64_t) * (size_t)volume(&s));
  int64_t g[3], halo = 0, sum = 0;
  for (int64_t n = 0; n < volume(&s); ++n) {
    cell(&s, n, g);
    a[offset(&s, g)] = owned(&s, g) ? 0 : 1;
    halo += owned(&s, g) ? 0 : 1;
  }
  halox_stencil* st = NULL;
  halox_field* f = NULL;
  halox_exchange* ex = NULL;
  OK(halox_stencil_box(2, w, w, &st));
  OK(halox_field_wrap(dom, HALOX_INT64, a, s.ext, w, w, &f));
  OK(halox_reverse_exchange_create(dom, st, HALOX_SUM, &f, 1, NULL, &ex));
  OK(halox_exchange_run(ex));
  for (int64_t n = 0; n < volume(&s); ++n) {
    cell(&s, n, g);
    if (owned(&s, g)) sum += a[offset(&s, g)];
  }
  int64_t totals[2] = {halo, sum}, all[2];
  MPI_OK(MPI_Allreduce(totals, all, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
  CHECK(all[0] == all[1], "reverse sum: owned cells add up to %ld, %ld halo cells were sent",
        (long)all[1], (long)all[0]);
  OK(halox_exchange_destroy(ex));
  OK(halox_field_destroy(f));
  OK(halox_stencil_destroy(st));
  OK(halox_domain_destroy(dom));
  free(a);
}

/* What halo cell g of a bounded 2-D field holds after the boundary rules of test_mirror:
 * x low: mirror, negated; x high: reflect; y low and high: mirror. The rule of the highest
 * dimension beyond its face has the last word and reads what the lower ones wrote. */
static double mirrored(const int64_t* g, const int64_t* n) {
  int64_t from[2] = {g[0], g[1]};
  if (g[1] < 0 || g[1] >= n[1]) {
    from[1] = g[1] < 0 ? -g[1] : 2 * (n[1] - 1) - g[1];
    return mirrored(from, n);
  }
  if (g[0] < 0) {
    from[0] = -g[0];
    return -mirrored(from, n);
  }
  if (g[0] >= n[0]) {
    from[0] = 2 * n[0] - 1 - g[0];
    return mirrored(from, n);
  }
  return code(g, 2);
}

static void test_mirror(void) {
  const int64_t global[2] = {9, 7};
  const int periodic[2] = {0, 0}, two[2] = {2, 2};
  const double minus = -1;
  halox_domain* dom = NULL;
  OK(halox_cartesian_create(MPI_COMM_WORLD, 2, global, periodic, NULL, &dom));
  array_shape s;
  shape_of(dom, 2, two, 0, &s);
  double* u = malloc(sizeof(double) * (size_t)volume(&s));
  fill(&s, u, NULL);
  halox_stencil* st = NULL;
  halox_field* f = NULL;
  halox_exchange* ex = NULL;
  OK(halox_stencil_box(2, two, two, &st));
  OK(halox_field_wrap(dom, HALOX_FLOAT64, u, s.ext, two, two, &f));
  OK(halox_field_boundary_mirror(f, 0, HALOX_LOW, &minus, 1));
  OK(halox_field_boundary_reflect(f, 0, HALOX_HIGH, NULL, 0));
  OK(halox_field_boundary_mirror(f, 1, HALOX_LOW, NULL, 0));
  OK(halox_field_boundary_mirror(f, 1, HALOX_HIGH, NULL, 0));
  OK(halox_exchange_create(dom, st, &f, 1, NULL, &ex));
  OK(halox_exchange_run(ex));
  int64_t g[3] = {0, 0, 0};
  int bad = 0;
  for (int64_t k = 0; k < volume(&s); ++k) {
    cell(&s, k, g);
    const double want = mirrored(g, global), got = u[offset(&s, g)];
    if (got != want && bad++ < 3)
      CHECK(0, "mirror: cell (%ld,%ld) holds %.0f, expected %.0f", (long)g[0], (long)g[1], got,
            want);
  }
  /* A mirror with two signs on a one-component field: refused on every rank. */
  halox_field* f2 = NULL;
  const double signs[2] = {1, -1};
  OK(halox_field_wrap(dom, HALOX_FLOAT64, u, s.ext, two, two, &f2));
  OK(halox_field_boundary_mirror(f2, 1, HALOX_HIGH, signs, 2));
  halox_exchange* ex2 = NULL;
  CHECK(halox_exchange_create(dom, st, &f2, 1, NULL, &ex2) == HALOX_ERROR,
        "mirror with 2 signs: not HALOX_ERROR");
  CHECK(strstr(halox_last_error(), "mirror on the high face of dimension 1 has 2 sign(s)"), "%s",
        halox_last_error());
  OK(halox_field_destroy(f2));
  OK(halox_exchange_destroy(ex));
  OK(halox_field_destroy(f));
  OK(halox_stencil_destroy(st));
  OK(halox_domain_destroy(dom));
  free(u);
}

/* Node field point g of a block of cells lo..hi (stored points lo..hi inclusive) of a 2-D
 * domain: 2 where the block owns it, 1 for a copy of a point a higher block owns, 0 in the
 * halo. */
static int node_point(const array_shape* s, const int64_t* g, const int64_t* global,
                      const int* periodic) {
  int kind = 2;
  for (int i = 0; i < 2; ++i) {
    if (g[i] < s->lo[i] || g[i] > s->hi[i]) return 0;
    if (g[i] == s->hi[i] && (periodic[i] || s->hi[i] < global[i])) kind = 1;
  }
  return kind;
}

/* This rank's own value for its copy of shared point g: negative, rank-encoded. */
static double own_copy(const int64_t* g) {
  return -1e6 * (rank + 1) - code(g, 2);
}

/* Two node fields in one exchange, one overwritten by the owner and one keeping its shared
 * points: every copy holds the owner's value or this rank's own, every halo point the owner's
 * (global point coordinates, wrapped where periodic), nothing outside the global points. */
static void test_shared_points(int periodic_x) {
  const int64_t global[2] = {8, 5};
  const int periodic[2] = {periodic_x, 0}, one[2] = {1, 1};
  halox_domain* dom = NULL;
  OK(halox_cartesian_create(MPI_COMM_WORLD, 2, global, periodic, NULL, &dom));
  array_shape s;
  shape_of(dom, 2, one, 0, &s);
  for (int i = 0; i < 2; ++i) s.ext[i] += 1; /* one more point than cells */
  double* a[2];
  halox_field* f[2];
  for (int k = 0; k < 2; ++k) {
    a[k] = malloc(sizeof(double) * (size_t)volume(&s));
    int64_t g[3] = {0, 0, 0};
    for (int64_t n = 0; n < volume(&s); ++n) {
      cell(&s, n, g);
      const int kind = node_point(&s, g, global, periodic);
      a[k][offset(&s, g)] = kind == 2 ? code(g, 2) : kind == 1 ? own_copy(g) : -1;
    }
    OK(halox_field_wrap(dom, HALOX_FLOAT64, a[k], s.ext, one, one, &f[k]));
    OK(halox_field_set_centering(f[k], HALOX_NODE, 0));
  }
  OK(halox_field_set_shared_points(f[1], HALOX_SHARED_KEEP));
  halox_stencil* st = NULL;
  halox_exchange* ex = NULL;
  OK(halox_stencil_box(2, one, one, &st));
  OK(halox_exchange_create(dom, st, f, 2, NULL, &ex));
  OK(halox_exchange_run(ex));
  int64_t g[3] = {0, 0, 0}, w[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    int bad = 0;
    for (int64_t n = 0; n < volume(&s); ++n) {
      cell(&s, n, g);
      int inside = 1;
      for (int i = 0; i < 2; ++i) {
        w[i] = periodic[i] ? (g[i] + global[i]) % global[i] : g[i];
        inside = inside && w[i] >= 0 && w[i] <= global[i];
      }
      const int kind = node_point(&s, g, global, periodic);
      const double want = k == 1 && kind == 1 ? own_copy(g) : inside ? code(w, 2) : -1;
      const double got = a[k][offset(&s, g)];
      if (got != want && bad++ < 3)
        CHECK(0, "shared points %s (periodic x %d): point (%ld,%ld) holds %.0f, expected %.0f",
              k ? "kept" : "overwritten", periodic_x, (long)g[0], (long)g[1], got, want);
    }
  }
  OK(halox_exchange_destroy(ex));
  for (int k = 0; k < 2; ++k) {
    OK(halox_field_destroy(f[k]));
    free(a[k]);
  }
  CHECK(halox_field_set_shared_points(NULL, HALOX_SHARED_KEEP) == HALOX_ERROR_NULL_ARGUMENT,
        "a NULL field");
  OK(halox_stencil_destroy(st));
  OK(halox_domain_destroy(dom));
}

/* Builds an exchange of one double field that must fail on every rank with HALOX_ERROR and a
 * message containing `needle`, leaving the array as it was. */
static void expect_rejected(halox_domain* dom, const halox_stencil* st, const int64_t* ext,
                            const int* pad, const array_shape* s, const char* needle,
                            const char* what) {
  double* a = malloc(sizeof(double) * (size_t)volume(s));
  fill(s, a, NULL);
  halox_field* f = NULL;
  halox_exchange* ex = (halox_exchange*)&ex; /* must come back NULL */
  OK(halox_field_wrap(dom, HALOX_FLOAT64, a, ext, pad, pad, &f));
  const halox_status status = halox_exchange_create(dom, st, &f, 1, NULL, &ex);
  CHECK(status == HALOX_ERROR, "%s: status %d, expected HALOX_ERROR", what, (int)status);
  CHECK(ex == NULL, "%s: the exchange handle is not NULL after a failure", what);
  CHECK(strstr(halox_last_error(), needle) != NULL, "%s: the message '%s' does not say '%s'", what,
        halox_last_error(), needle);
  int64_t g[3];
  int changed = 0;
  for (int64_t n = 0; n < volume(s); ++n) {
    cell(s, n, g);
    changed += a[offset(s, g)] != (owned(s, g) ? code(g, s->dim) : -1);
  }
  CHECK(changed == 0, "%s: %d cells of the array changed", what, changed);
  OK(halox_field_destroy(f));
  free(a);
}

static void test_bad_input(void) {
  const int64_t global[2] = {8, 6};
  const int periodic[2] = {1, 0}, one[2] = {1, 1}, two[2] = {2, 2};
  halox_domain* dom = NULL;
  OK(halox_cartesian_create(MPI_COMM_WORLD, 2, global, periodic, NULL, &dom));
  array_shape s;
  shape_of(dom, 2, one, 0, &s);
  halox_stencil *st1 = NULL, *st2 = NULL;
  OK(halox_stencil_star(2, one, one, &st1));
  OK(halox_stencil_star(2, two, two, &st2));
  expect_rejected(dom, st2, s.ext, one, &s, "padding", "halo wider than the padding");
  const int64_t wrong[2] = {s.ext[0] + 1, s.ext[1]};
  expect_rejected(dom, st1, wrong, one, &s, "extents", "wrong extents");
  if (size > 1) /* ranks that declare different stencils: caught by the peers' handshake */
    expect_rejected(dom, rank == 0 ? st1 : st2, s.ext, one, &s, "rank", "mismatched ranks");
  /* Bad input on one rank only still fails on every rank. */
  const int64_t one_wrong[2] = {s.ext[0] + (rank == size - 1), s.ext[1]};
  expect_rejected(dom, st1, one_wrong, one, &s, "extents", "wrong extents on the last rank");
  halox_field* none = NULL;
  halox_exchange* ex = NULL;
  CHECK(halox_exchange_create(dom, st1, &none, 1, NULL, &ex) == HALOX_ERROR,
        "a NULL field: not HALOX_ERROR");
  CHECK(strstr(halox_last_error(), "field #0 is NULL"), "NULL field: %s", halox_last_error());
  CHECK(halox_exchange_run(NULL) == HALOX_ERROR_NULL_ARGUMENT, "a NULL exchange");
  CHECK(strstr(halox_last_error(), "halox_exchange_run: ex is NULL"), "%s", halox_last_error());
  halox_domain* bad = NULL;
  const int dim = rank == 0 ? 5 : 2; /* rank 0 alone asks for 5 dimensions */
  CHECK(halox_cartesian_create(MPI_COMM_WORLD, dim, global, periodic, NULL, &bad) == HALOX_ERROR,
        "a 5-D domain on rank 0: not HALOX_ERROR");
  CHECK(bad == NULL && strstr(halox_last_error(), "dimension 5 is not 1 to 4"), "%s",
        halox_last_error());
  /* Options out of range, refused at the call (a HALOX_WAIT_TIMEOUT would not hide them). */
  halox_options* o = NULL;
  OK(halox_options_create(&o));
  CHECK(halox_options_set_wait_timeout(o, -2) == HALOX_ERROR, "wait_timeout -2 accepted");
  CHECK(strstr(halox_last_error(), "halox_options_set_wait_timeout: -2 s"), "%s",
        halox_last_error());
  CHECK(halox_options_set_staging(o, (halox_staging)17) == HALOX_ERROR, "staging 17 accepted");
  CHECK(strstr(halox_last_error(), "17 is no halox_staging"), "%s", halox_last_error());
  OK(halox_options_set_wait_timeout(o, 0.5));
  OK(halox_options_destroy(o));
  OK(halox_stencil_destroy(st1));
  OK(halox_stencil_destroy(st2));
  OK(halox_domain_destroy(dom));
}

/* Two boxes per rank (a box list, round robin): one array per box with its own extents, every
 * cell checked; then block 1's extents one too large are refused, naming the block. */
static void test_blocks(void) {
  enum { max_boxes = 16 };
  const int nbox = 2 * size, one[2] = {1, 1}, periodic[2] = {1, 1};
  const int64_t global[2] = {3 * nbox, 5};
  int64_t lo[2 * max_boxes], hi[2 * max_boxes];
  int owners[max_boxes];
  for (int k = 0; k < nbox; ++k)
    lo[2 * k] = 3 * k, lo[2 * k + 1] = 0, hi[2 * k] = 3 * k + 3, hi[2 * k + 1] = 5,
           owners[k] = k % size;
  halox_domain* dom = NULL;
  OK(halox_box_list_create(MPI_COMM_WORLD, 2, global, periodic, nbox, lo, hi, owners, &dom));
  halox_stencil* st = NULL;
  OK(halox_stencil_box(2, one, one, &st));
  array_shape s[2];
  double* a[2];
  int64_t ext[4];
  for (int b = 0; b < 2; ++b) {
    s[b].dim = 2, s[b].column_major = 0;
    OK(halox_domain_local_box(dom, b, s[b].lo, s[b].hi));
    for (int i = 0; i < 2; ++i)
      s[b].pad_lo[i] = s[b].pad_hi[i] = 1,
      ext[2 * b + i] = s[b].ext[i] = s[b].hi[i] - s[b].lo[i] + 2;
    a[b] = malloc(sizeof(double) * (size_t)volume(&s[b]));
    fill(&s[b], a[b], NULL);
  }
  halox_field* f = NULL;
  halox_exchange* ex = NULL;
  OK(halox_field_wrap_blocks(dom, HALOX_FLOAT64, 2, (void* const*)a, ext, one, one, &f));
  OK(halox_exchange_create(dom, st, &f, 1, NULL, &ex));
  OK(halox_exchange_run(ex));
  for (int b = 0; b < 2; ++b)
    verify(&s[b], a[b], NULL, global, periodic, one, one, 1, "two boxes per rank");
  OK(halox_exchange_destroy(ex));
  OK(halox_field_destroy(f));
  ext[2] += 1; /* block 1 one cell too wide */
  OK(halox_field_wrap_blocks(dom, HALOX_FLOAT64, 2, (void* const*)a, ext, one, one, &f));
  CHECK(halox_exchange_create(dom, st, &f, 1, NULL, &ex) == HALOX_ERROR,
        "block 1 too wide: not HALOX_ERROR");
  CHECK(strstr(halox_last_error(), "block 1 has extents") != NULL, "%s", halox_last_error());
  OK(halox_field_destroy(f));
  OK(halox_stencil_destroy(st));
  OK(halox_domain_destroy(dom));
  free(a[0]);
  free(a[1]);
}

/* A field over halox_allocate_node_shared memory: exchanged, checked, and (between ranks, whose
 * messages are above the 32 KiB one-copy threshold here) copied once, as describe() says. */
static void test_node_shared(void) {
  const int64_t global[3] = {96, 88, 80};
  const int periodic[3] = {1, 1, 0}, w[3] = {2, 2, 2};
  halox_domain* dom = NULL;
  OK(halox_cartesian_create(MPI_COMM_WORLD, 3, global, periodic, NULL, &dom));
  array_shape s;
  shape_of(dom, 3, w, 0, &s);
  void* mem = NULL;
  CHECK(halox_allocate_node_shared(8, NULL) == HALOX_ERROR_NULL_ARGUMENT,
        "halox_allocate_node_shared without an output pointer: %s", halox_last_error());
  OK(halox_allocate_node_shared(sizeof(double) * (size_t)volume(&s), &mem));
  double* a = mem;
  fill(&s, a, NULL);
  halox_stencil* st = NULL;
  OK(halox_stencil_box(3, w, w, &st));
  halox_field* f = NULL;
  OK(halox_field_wrap(dom, HALOX_FLOAT64, a, s.ext, w, w, &f));
  halox_exchange* ex = NULL;
  OK(halox_exchange_create(dom, st, &f, 1, NULL, &ex));
  OK(halox_exchange_run(ex));
  verify(&s, a, NULL, global, periodic, w, w, 1, "node-shared memory");
  const char* text = NULL;
  OK(halox_exchange_describe(ex, &text));
  if (size > 1)
    CHECK(text && strstr(text, "one copy") != NULL, "describe(), node-shared memory: %s",
          text ? text : "");
  OK(halox_exchange_destroy(ex));
  OK(halox_field_destroy(f));
  OK(halox_stencil_destroy(st));
  OK(halox_domain_destroy(dom));
  OK(halox_free_node_shared(mem));
  OK(halox_free_node_shared(NULL));
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  for (int dim = 2; dim <= 3; ++dim)
    for (int periodic = 0; periodic <= 1; ++periodic) test_forward(dim, periodic, dim == 3);
  test_reverse();
  test_mirror();
  test_shared_points(0);
  test_shared_points(1);
  test_bad_input();
  test_blocks();
  test_node_shared();
  int total = 0;
  MPI_OK(MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  if (rank == 0) printf("test_c_api: %d rank(s), %d failure(s)\n", size, total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
