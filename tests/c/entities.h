/* What the C tests of unstructured patterns share: the entities each rank owns, their global
 * ids, and the values two fields hold for an id (u: double, interleaved; v: int64, planar), so
 * that every ghost can be checked against a value computed from its id. Include after check.h. */
#ifndef HALOX_TESTS_C_ENTITIES_H
#define HALOX_TESTS_C_ENTITIES_H

#include <stdint.h>

enum { max_entities = 64 };

/* Entities rank r owns, and the global id of its k-th: unique, scattered, beyond 32 bits. */
static int owned_count(int r) {
  return 4 + r % 3;
}
static int64_t id_of(int r, int k) {
  return ((int64_t)k * size + r) * 7919 + ((int64_t)1 << 36);
}

/* The values an entity of id g holds: component c of the double and of the int64 field. */
static double u_value(int64_t g, int c) {
  return (double)g * 4 + c;
}
static int64_t v_value(int64_t g, int c) {
  return g * 3 - c;
}

/* Owned entities (ids owned[0..n_owned)) hold their values, the others up to n_local -1.
 * u: [entity][2]; v: 2 planes `stride` apart. */
static void fill_values(const int64_t* owned, int n_owned, int n_local, double* u, int64_t* v,
                        int stride) {
  for (int e = 0; e < n_local; ++e)
    for (int c = 0; c < 2; ++c) {
      const int own = e < n_owned;
      u[2 * e + c] = own ? u_value(owned[e], c) : -1;
      v[c * stride + e] = own ? v_value(owned[e], c) : -1;
    }
}

/* Every entity holds the values of its id: owned[e] for e < n_owned, then ghosts[e - n_owned].
 * Returns the number of wrong values (the first three reported). */
static int check_values(const int64_t* owned, int n_owned, const int64_t* ghosts, int n_local,
                        const double* u, const int64_t* v, int stride, const char* what) {
  int bad = 0;
  for (int e = 0; e < n_local; ++e) {
    const int64_t g = e < n_owned ? owned[e] : ghosts[e - n_owned];
    for (int c = 0; c < 2; ++c) {
      if (u[2 * e + c] != u_value(g, c) && bad++ < 3)
        CHECK(0, "%s: u of id %ld [%d] is %.0f, expected %.0f", what, (long)g, c, u[2 * e + c],
              u_value(g, c));
      if (v[c * stride + e] != v_value(g, c) && bad++ < 3)
        CHECK(0, "%s: v of id %ld [%d] is %ld, expected %ld", what, (long)g, c,
              (long)v[c * stride + e], (long)v_value(g, c));
    }
  }
  return bad;
}

#endif
