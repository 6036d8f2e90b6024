/* The C interface's unstructured patterns at any rank count: ranks own entities of scattered
 * global ids and need ghosts of every other rank's; every ghost value of two fields (double,
 * interleaved; int64, planar with a gap) checked against a value computed from its global id,
 * with run and with start/test/wait; the owners halox found against the ranks that own the ids;
 * a reverse sum against a serial count of who ghosts what; bad input (a ghost id nobody owns,
 * a field of the wrong length, ranks that disagree, bad counts and reductions) rejected on
 * every rank with its status and message, and the user's arrays left as they were. */
#include "check.h"
#include "entities.h"

/* A call every rank must reject with HALOX_ERROR and a message containing `text`. */
#define REJECTED(call, text)                                                                \
  do {                                                                                      \
    const halox_status s_ = (call);                                                         \
    CHECK(s_ == HALOX_ERROR, "%s: status %d, not HALOX_ERROR", #call, (int)s_);             \
    CHECK(strstr(halox_last_error(), (text)) != NULL, "%s: message '%s' lacks '%s'", #call, \
          halox_last_error(), (text));                                                      \
  } while (0)

/* Rank q's ghosts: the entities k of every other rank r with k + q even, higher ranks first
 * (not sorted). owner[i] is the rank that owns ghost i. Returns the count. */
static int ghosts_of(int q, int64_t* ids, int* owner) {
  int n = 0;
  for (int r = size - 1; r >= 0; --r)
    for (int k = 0; r != q && k < owned_count(r); ++k)
      if ((k + q) % 2 == 0) ids[n] = id_of(r, k), owner[n++] = r;
  return n;
}

typedef struct {
  halox_unstructured* pat;
  int64_t owned[max_entities], ghosts[max_entities];
  int ghost_owner[max_entities];
  int n_owned, n_ghosts, n_local;
} layout;

static void make_pattern(layout* l) {
  l->n_owned = owned_count(rank);
  for (int k = 0; k < l->n_owned; ++k) l->owned[k] = id_of(rank, k);
  l->n_ghosts = ghosts_of(rank, l->ghosts, l->ghost_owner);
  l->n_local = l->n_owned + l->n_ghosts;
  l->pat = NULL;
  OK(halox_unstructured_create(MPI_COMM_WORLD, l->owned, l->n_owned, l->ghosts, l->n_ghosts,
                               &l->pat));
  int64_t no = -1, ng = -1, nl = -1;
  OK(halox_unstructured_counts(l->pat, &no, &ng, &nl));
  CHECK(no == l->n_owned && ng == l->n_ghosts && nl == l->n_local, "counts %ld %ld %ld", (long)no,
        (long)ng, (long)nl);
  int found[max_entities];
  OK(halox_unstructured_ghost_owners(l->pat, found));
  for (int i = 0; i < l->n_ghosts; ++i)
    CHECK(found[i] == l->ghost_owner[i], "ghost %ld: owner %d, expected %d", (long)l->ghosts[i],
          found[i], l->ghost_owner[i]);
}

static void fill(const layout* l, double* u, int64_t* v, int stride) {
  fill_values(l->owned, l->n_owned, l->n_local, u, v, stride);
}

static int verify(const layout* l, const double* u, const int64_t* v, int stride,
                  const char* what) {
  return check_values(l->owned, l->n_owned, l->ghosts, l->n_local, u, v, stride, what);
}

/* The two fields over `l`'s pattern: u interleaved, v planar with planes `stride` apart. */
static void wrap_both(const layout* l, double* u, int64_t* v, int stride, halox_entity_field** f) {
  OK(halox_entity_field_wrap(l->pat, HALOX_FLOAT64, u, l->n_local, &f[0]));
  OK(halox_entity_field_set_components(f[0], 2, HALOX_INTERLEAVED, 0));
  OK(halox_entity_field_set_name(f[0], "u"));
  OK(halox_entity_field_wrap(l->pat, HALOX_INT64, v, l->n_local, &f[1]));
  OK(halox_entity_field_set_components(f[1], 2, HALOX_PLANAR, stride));
  OK(halox_entity_field_set_name(f[1], "v"));
}

static void test_forward(void) {
  layout l;
  make_pattern(&l);
  const int stride = l.n_local + 3;
  double u[2 * max_entities];
  int64_t v[2 * max_entities + 3];
  halox_entity_field* f[2] = {NULL, NULL};
  wrap_both(&l, u, v, stride, f);
  halox_options* o = NULL;
  OK(halox_options_create(&o));
  OK(halox_options_set_label(o, "entities"));
  halox_exchange* ex = NULL;
  OK(halox_unstructured_exchange_create(l.pat, f, 2, o, &ex));
  fill(&l, u, v, stride);
  OK(halox_exchange_run(ex));
  verify(&l, u, v, stride, "run");
  fill(&l, u, v, stride);
  OK(halox_exchange_start(ex));
  int done = 0;
  while (!done) OK(halox_exchange_test(ex, &done));
  verify(&l, u, v, stride, "start/test");
  fill(&l, u, v, stride);
  OK(halox_exchange_start(ex));
  OK(halox_exchange_wait(ex));
  verify(&l, u, v, stride, "start/wait");
  const char* text = NULL;
  OK(halox_exchange_describe(ex, &text));
  CHECK(text && strstr(text, "2 field(s)") != NULL, "describe: %s", text);
  OK(halox_exchange_stats(ex, &text));
  CHECK(text && text[0] == '{', "stats are no JSON object: %s", text);
  OK(halox_exchange_destroy(ex));
  OK(halox_options_destroy(o));
  OK(halox_entity_field_destroy(f[0]));
  OK(halox_entity_field_destroy(f[1]));
  OK(halox_unstructured_destroy(l.pat));
}

/* Reverse sum: ghosts on rank q hold q + 1, owned entities 0; afterwards owned entity g holds
 * the sum of q + 1 over the ranks q that ghost it, counted serially from every rank's list. */
static void test_reverse(void) {
  layout l;
  make_pattern(&l);
  double w[max_entities];
  for (int e = 0; e < l.n_local; ++e) w[e] = e < l.n_owned ? 0 : rank + 1;
  halox_entity_field* f = NULL;
  OK(halox_entity_field_wrap(l.pat, HALOX_FLOAT64, w, l.n_local, &f));
  halox_exchange* ex = NULL;
  OK(halox_unstructured_reverse_exchange_create(l.pat, HALOX_SUM, &f, 1, NULL, &ex));
  OK(halox_exchange_run(ex));
  double want[max_entities] = {0};
  for (int q = 0; q < size; ++q) {
    int64_t ids[max_entities];
    int owner[max_entities];
    const int n = ghosts_of(q, ids, owner);
    for (int i = 0; i < n; ++i)
      for (int k = 0; owner[i] == rank && k < l.n_owned; ++k)
        if (ids[i] == l.owned[k]) want[k] += q + 1;
  }
  for (int e = 0; e < l.n_local; ++e) {
    const double expect = e < l.n_owned ? want[e] : rank + 1;
    CHECK(w[e] == expect, "reverse sum: entity %d holds %.0f, expected %.0f", e, w[e], expect);
  }
  OK(halox_exchange_destroy(ex));
  OK(halox_entity_field_destroy(f));
  OK(halox_unstructured_destroy(l.pat));
}

/* Your own local order, owners given: ghosts first (reversed), two spare entries, then the
 * owned entities; every ghost filled, the spare entries untouched. Then a wrong owner (rank 0)
 * and a local index out of range (the last rank), rejected on every rank. */
static void test_local_order(void) {
  layout l;
  l.n_owned = owned_count(rank);
  for (int k = 0; k < l.n_owned; ++k) l.owned[k] = id_of(rank, k);
  l.n_ghosts = ghosts_of(rank, l.ghosts, l.ghost_owner);
  const int64_t n = l.n_owned + l.n_ghosts + 2;
  int64_t owned_local[max_entities], ghost_local[max_entities];
  double x[max_entities + 2], want[max_entities + 2];
  for (int i = 0; i < l.n_ghosts; ++i) {
    ghost_local[i] = l.n_ghosts - 1 - i;
    x[ghost_local[i]] = -1, want[ghost_local[i]] = u_value(l.ghosts[i], 0);
  }
  x[l.n_ghosts] = x[l.n_ghosts + 1] = want[l.n_ghosts] = want[l.n_ghosts + 1] = -7;
  for (int k = 0; k < l.n_owned; ++k) {
    owned_local[k] = l.n_ghosts + 2 + k;
    x[owned_local[k]] = want[owned_local[k]] = u_value(l.owned[k], 0);
  }
  halox_unstructured* pat = NULL;
  OK(halox_unstructured_create_local(MPI_COMM_WORLD, l.owned, l.n_owned, l.ghosts, l.n_ghosts,
                                     l.ghost_owner, owned_local, ghost_local, n, &pat));
  halox_entity_field* f = NULL;
  halox_exchange* ex = NULL;
  OK(halox_entity_field_wrap(pat, HALOX_FLOAT64, x, n, &f));
  OK(halox_unstructured_exchange_create(pat, &f, 1, NULL, &ex));
  OK(halox_exchange_run(ex));
  for (int e = 0; e < n; ++e)
    CHECK(x[e] == want[e], "local order: entity %d holds %.0f, expected %.0f", e, x[e], want[e]);
  OK(halox_exchange_destroy(ex));
  OK(halox_entity_field_destroy(f));
  OK(halox_unstructured_destroy(pat));
  char text[160];
  if (size > 1) {
    int64_t first0[max_entities];
    int owners0[max_entities];
    ghosts_of(0, first0, owners0);
    if (rank == 0) l.ghost_owner[0] = 0;
    snprintf(text, sizeof text,
             "rank 0: ghost id %ld has owner rank 0, not another rank in [0, %d)", (long)first0[0],
             size);
    REJECTED(halox_unstructured_create_local(MPI_COMM_WORLD, l.owned, l.n_owned, l.ghosts,
                                             l.n_ghosts, l.ghost_owner, NULL, NULL, -1, &pat),
             text);
  }
  int64_t last_ids[max_entities];
  int last_owners[max_entities];
  const int64_t n_last = owned_count(size - 1) + ghosts_of(size - 1, last_ids, last_owners) + 2;
  if (rank == size - 1) owned_local[0] = n;
  snprintf(text, sizeof text, "rank %d: owned_local[0] = %ld is outside [0, ", size - 1,
           (long)n_last);
  REJECTED(halox_unstructured_create_local(MPI_COMM_WORLD, l.owned, l.n_owned, l.ghosts, l.n_ghosts,
                                           NULL, owned_local, ghost_local, n, &pat),
           text);
  CHECK(pat == NULL, "a rejected pattern is not NULL");
}

/* Patterns every rank must reject: an id nobody owns (on the last rank only), a negative
 * count (on rank 0 only); and a NULL output pointer, reported by each rank alone. */
static void test_bad_patterns(void) {
  layout l;
  l.n_owned = owned_count(rank);
  for (int k = 0; k < l.n_owned; ++k) l.owned[k] = id_of(rank, k);
  l.n_ghosts = ghosts_of(rank, l.ghosts, l.ghost_owner);
  int64_t ghosts[max_entities + 1];
  memcpy(ghosts, l.ghosts, sizeof(int64_t) * (size_t)l.n_ghosts);
  const int64_t nobody = 5;
  ghosts[l.n_ghosts] = nobody;
  const int n = l.n_ghosts + (rank == size - 1 ? 1 : 0);
  halox_unstructured* pat = (halox_unstructured*)&l; /* must come back NULL */
  char text[128];
  snprintf(text, sizeof text, "rank %d: ghost id 5 is owned by no rank", size - 1);
  REJECTED(halox_unstructured_create(MPI_COMM_WORLD, l.owned, l.n_owned, ghosts, n, &pat), text);
  CHECK(pat == NULL, "a rejected pattern is not NULL");
  REJECTED(halox_unstructured_create(MPI_COMM_WORLD, l.owned, l.n_owned, l.ghosts,
                                     rank == 0 ? -2 : l.n_ghosts, &pat),
           "rank 0: halox_unstructured_create: -2 ghost ids");
  CHECK(halox_unstructured_create(MPI_COMM_WORLD, l.owned, l.n_owned, l.ghosts, l.n_ghosts, NULL) ==
            HALOX_ERROR_NULL_ARGUMENT,
        "a NULL out: not HALOX_ERROR_NULL_ARGUMENT");
  CHECK(strstr(halox_last_error(), "halox_unstructured_create: out is NULL") != NULL, "%s",
        halox_last_error());
  /* still usable with good input */
  OK(halox_unstructured_create(MPI_COMM_WORLD, l.owned, l.n_owned, l.ghosts, l.n_ghosts, &pat));
  OK(halox_unstructured_destroy(pat));
}

/* The arrays of `l` as they were before a rejected call, and the check that they still are. */
typedef struct {
  double u[2 * max_entities];
  int64_t v[2 * max_entities + 3];
} snapshot;

static void expect_untouched(const snapshot* before, const double* u, const int64_t* v,
                             const char* what) {
  CHECK(memcmp(before->u, u, sizeof before->u) == 0, "%s: u was written", what);
  CHECK(memcmp(before->v, v, sizeof before->v) == 0, "%s: v was written", what);
}

/* Ranks that disagree (u of one component on rank 0, of two elsewhere): every rank rejects
 * the exchange before anything is sent. */
static void test_disagreement(const layout* l, halox_entity_field** f, const snapshot* before,
                              const double* u, const int64_t* v) {
  if (size == 1) return;
  halox_exchange* ex = NULL;
  OK(halox_entity_field_set_components(f[0], rank == 0 ? 1 : 2, HALOX_INTERLEAVED, 0));
  const halox_status s = halox_unstructured_exchange_create(l->pat, f, 2, NULL, &ex);
  CHECK(s == HALOX_ERROR, "ranks that disagree: status %d, not HALOX_ERROR", (int)s);
  CHECK(strstr(halox_last_error(),
               "they build different exchanges (field #0: rank 0 has double (8 B) x 1 "
               "component(s)") != NULL,
        "disagreement: %s", halox_last_error());
  CHECK(ex == NULL, "a rejected exchange is not NULL");
  expect_untouched(before, u, v, "ranks that disagree");
}

/* A field declared as device memory, on the last rank, in a build without CUDA: rejected on
 * every rank, the array untouched. */
static void test_device_memory(const layout* l, double* u, const snapshot* before,
                               const int64_t* v) {
#ifdef HALOX_TEST_WITHOUT_CUDA
  halox_entity_field* f = NULL;
  halox_exchange* ex = NULL;
  OK(halox_entity_field_wrap(l->pat, HALOX_FLOAT64, u, l->n_local, &f));
  OK(halox_entity_field_set_components(f, 2, HALOX_INTERLEAVED, 0));
  OK(halox_entity_field_set_memory(f, rank == size - 1 ? HALOX_DEVICE : HALOX_HOST));
  OK(halox_entity_field_set_name(f, "d"));
  char text[120];
  snprintf(text, sizeof text,
           "rank %d: field #0 'd' lives in device memory; this halox was built without CUDA",
           size - 1);
  REJECTED(halox_unstructured_exchange_create(l->pat, &f, 1, NULL, &ex), text);
  CHECK(ex == NULL, "a rejected exchange is not NULL");
  expect_untouched(before, u, v, "device memory");
  OK(halox_entity_field_destroy(f));
#else
  (void)l, (void)u, (void)before, (void)v;
#endif
}

/* Exchanges every rank must reject, each failing on some ranks only; nothing is written. */
static void test_bad_fields(void) {
  layout l, other;
  make_pattern(&l);
  make_pattern(&other);
  const int stride = l.n_local + 3;
  snapshot before;
  halox_entity_field* f[2] = {NULL, NULL};
  halox_exchange* ex = NULL;
  char text[160];
  fill(&l, before.u, before.v, stride);
  double u[2 * max_entities];
  int64_t v[2 * max_entities + 3];
  memcpy(u, before.u, sizeof u);
  memcpy(v, before.v, sizeof v);
  /* v one entity too long on rank 0 */
  OK(halox_entity_field_wrap(l.pat, HALOX_FLOAT64, u, l.n_local, &f[0]));
  OK(halox_entity_field_wrap(l.pat, HALOX_INT64, v, l.n_local + (rank == 0), &f[1]));
  OK(halox_entity_field_set_name(f[1], "v"));
  int64_t ids0[max_entities];
  int owners0[max_entities];
  const int local0 = owned_count(0) + ghosts_of(0, ids0, owners0);
  snprintf(text, sizeof text,
           "rank 0: field #1 'v' has %d entities, the pattern has %d local entities", local0 + 1,
           local0);
  REJECTED(halox_unstructured_exchange_create(l.pat, f, 2, NULL, &ex), text);
  CHECK(ex == NULL, "a rejected exchange is not NULL");
  expect_untouched(&before, u, v, "wrong length");
  OK(halox_entity_field_destroy(f[1]));
  /* a field of another pattern, on the last rank */
  OK(halox_entity_field_wrap(rank == size - 1 ? other.pat : l.pat, HALOX_INT64, v, l.n_local,
                             &f[1]));
  snprintf(text, sizeof text, "rank %d: field #1 '(unnamed)' belongs to another pattern", size - 1);
  REJECTED(halox_unstructured_exchange_create(l.pat, f, 2, NULL, &ex), text);
  OK(halox_entity_field_destroy(f[1]));
  /* planes closer than the entity count, a reduction that is none, a NULL field */
  OK(halox_entity_field_wrap(l.pat, HALOX_INT64, v, l.n_local, &f[1]));
  OK(halox_entity_field_set_components(f[1], 2, HALOX_PLANAR, l.n_local > 1 ? 1 : 0));
  if (l.n_local > 1)
    REJECTED(halox_unstructured_exchange_create(l.pat, f, 2, NULL, &ex),
             "has component stride 1, less than its");
  OK(halox_entity_field_set_components(f[1], 2, HALOX_PLANAR, stride));
  REJECTED(halox_unstructured_reverse_exchange_create(l.pat, (halox_reduction)7, f, 2, NULL, &ex),
           "rank 0: reduction 7 is no halox_reduction");
  halox_entity_field* with_null[2] = {f[0], rank == 0 ? NULL : f[1]};
  REJECTED(halox_unstructured_exchange_create(l.pat, with_null, 2, NULL, &ex),
           "rank 0: field #1 is NULL");
  expect_untouched(&before, u, v, "bad fields");
  test_disagreement(&l, f, &before, u, v);
  test_device_memory(&l, u, &before, v);
  OK(halox_entity_field_destroy(f[0]));
  OK(halox_entity_field_destroy(f[1]));
  OK(halox_unstructured_destroy(l.pat));
  OK(halox_unstructured_destroy(other.pat));
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  test_forward();
  test_reverse();
  test_local_order();
  test_bad_patterns();
  test_bad_fields();
  int total = 0;
  MPI_OK(MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  if (rank == 0) printf("test_c_unstructured: %d rank(s), %d failure(s)\n", size, total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
