#pragma once
// Shared reference checker for halo exchanges: fills every owned cell with a value encoding
// (field, global cell, component, salt), every other allocated cell with a sentinel, and after an
// exchange checks every allocated cell against what an independent model says it must hold.

#include <array>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <halox/halox.hpp>

#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

namespace test_support {

/// This rank's halox::error message from `f()`, empty when it does not throw.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const halox::error& e) {
    return e.what();
  }
  return {};
}

/// A user value type with three members (12 bytes: an element size that is no power of two).
struct triple {
  std::int32_t a;
  float b;
  std::int32_t c;
  friend bool operator==(const triple&, const triple&) = default;
};

template <class T>
struct value_traits {
  static_assert(std::is_arithmetic_v<T>);
  // Keys stay below 2^24 so that float represents them exactly.
  static T make(std::int64_t key) { return T(key + 1); }
  static T sentinel() { return T(-7); }
  static std::string str(const T& v) {
    std::ostringstream o;
    o << +v;
    return o.str();
  }
};
template <>
struct value_traits<triple> {
  static triple make(std::int64_t key) {
    return {std::int32_t(key + 1), -float(key) - 0.5f, std::int32_t(3 * key + 2)};
  }
  static triple sentinel() { return {-7, -7.0f, -7}; }
  static std::string str(const triple& v) {
    std::ostringstream o;
    o << "{" << v.a << "," << v.b << "," << v.c << "}";
    return o.str();
  }
};

template <int D>
std::string str(const std::array<halox::index, D>& g) {
  std::ostringstream o;
  o << "(";
  for (int i = 0; i < D; ++i) o << (i ? "," : "") << g[i];
  o << ")";
  return o.str();
}

/// Calls f(g) for every cell g of box b (last dimension fastest).
template <int D, class F>
void for_cells(const halox::box<D>& b, F&& f) {
  if (b.empty()) return;
  halox::extents<D> g = b.lo;
  for (;;) {
    f(std::as_const(g));
    int i = D - 1;
    while (i >= 0 && ++g[i] == b.hi[i]) g[i] = b.lo[i], --i;
    if (i < 0) return;
  }
}

/// Identifies what a field holds: its number in the test (`id`) and a salt changed between
/// repeated exchanges. Keys: ((salt * 8 + id) * volume + linear cell) * components + c.
struct tag {
  int id = 0;
  int salt = 0;
};

template <int D>
std::int64_t key(const halox::extents<D>& n, const halox::extents<D>& g, int c, int ncomp, tag t) {
  std::int64_t lin = 0, vol = 1;
  for (int i = 0; i < D; ++i) lin = lin * n[i] + g[i], vol *= n[i];
  return ((std::int64_t(t.salt) * 8 + t.id) * vol + lin) * ncomp + c;
}

/// Sets every allocated element of every block to the sentinel, then every owned cell to its
/// encoded value.
template <class T, int D>
void fill(const halox::field<T, D>& f, const std::type_identity_t<halox::extents<D>>& n, tag t) {
  using VT = value_traits<T>;
  for (int b = 0; b < f.block_count(); ++b) {
    for_cells<D>(f.allocated_box(b), [&](const auto& g) {
      for (int c = 0; c < f.components(); ++c) f.at(g, c, b) = VT::sentinel();
    });
    for_cells<D>(f.owned_box(b), [&](const auto& g) {
      for (int c = 0; c < f.components(); ++c)
        f.at(g, c, b) = VT::make(key<D>(n, g, c, f.components(), t));
    });
  }
}

/// Sets only the owned cells (halo left as is), e.g. to change data between exchanges.
template <class T, int D>
void fill_owned(const halox::field<T, D>& f, const std::type_identity_t<halox::extents<D>>& n,
                tag t) {
  for (int b = 0; b < f.block_count(); ++b)
    for_cells<D>(f.owned_box(b), [&](const auto& g) {
      for (int c = 0; c < f.components(); ++c)
        f.at(g, c, b) = value_traits<T>::make(key<D>(n, g, c, f.components(), t));
    });
}

/// Result of a check: mismatching elements, the first few described, and how many halo
/// elements were expected to be filled (so a test can insist some were).
struct result {
  std::int64_t bad = 0;
  std::int64_t filled = 0;     // halo elements that had to receive a value
  std::int64_t untouched = 0;  // halo elements that had to keep the sentinel
  std::string report;
};

/// The model: which global cell (periodic-wrapped) halo cell g of owned box `o` must hold, or
/// false when it must keep its sentinel (outside every used direction's region, or outside a
/// non-periodic boundary).
template <int D>
bool source_of(const halox::extents<D>& g, const halox::box<D>& o, const halox::stencil<D>& st,
               const halox::extents<D>& n, const std::array<bool, D>& per, halox::extents<D>& src) {
  halox::direction<D> d{};
  for (int i = 0; i < D; ++i) {
    if (g[i] < o.lo[i]) {
      if (g[i] < o.lo[i] - st.lo[i]) return false;
      d[i] = -1;
    } else if (g[i] >= o.hi[i]) {
      if (g[i] >= o.hi[i] + st.hi[i]) return false;
      d[i] = 1;
    } else {
      d[i] = 0;
    }
  }
  bool zero = true;
  for (int i = 0; i < D; ++i) zero = zero && d[i] == 0;
  if (zero || !st.has(d)) return false;
  for (int i = 0; i < D; ++i) {
    if (per[i]) {
      src[i] = ((g[i] % n[i]) + n[i]) % n[i];
    } else {
      if (g[i] < 0 || g[i] >= n[i]) return false;
      src[i] = g[i];
    }
  }
  return true;
}

/// Checks every allocated element of every block of `f`: owned cells hold their own value,
/// halo cells of used directions hold their (wrapped) source's value, everything else holds the
/// sentinel.
template <class T, int D>
result check(const halox::field<T, D>& f, const halox::stencil<D>& st,
             const std::type_identity_t<halox::extents<D>>& n,
             const std::type_identity_t<std::array<bool, D>>& per, tag t) {
  using VT = value_traits<T>;
  result r;
  for (int b = 0; b < f.block_count(); ++b) {
    const auto o = f.owned_box(b);
    for_cells<D>(f.allocated_box(b), [&](const auto& g) {
      halox::extents<D> src{};
      const bool owned = o.contains(g);
      const bool halo = !owned && source_of<D>(g, o, st, n, per, src);
      if (owned) src = g;
      for (int c = 0; c < f.components(); ++c) {
        const T want =
            owned || halo ? VT::make(key<D>(n, src, c, f.components(), t)) : VT::sentinel();
        if (halo) ++r.filled;
        if (!owned && !halo) ++r.untouched;
        const T got = f.at(g, c, b);
        if (!(got == want)) {
          if (++r.bad <= 8) {
            std::ostringstream os;
            os << "field " << t.id << " block " << b << " cell " << str<D>(g) << " comp " << c;
            if (owned)
              os << " (owned)";
            else if (halo)
              os << " (halo of " << str<D>(src) << ")";
            else
              os << " (must stay untouched)";
            os << ": got " << VT::str(got) << ", want " << VT::str(want) << "\n";
            r.report += os.str();
          }
        }
      }
    });
  }
  return r;
}

/// Domain convenience overloads.
template <class Dom, class T, int D>
void fill(const Dom& dom, const halox::field<T, D>& f, tag t) {
  fill<T, D>(f, dom.global_box().hi, t);
}
template <class Dom, class T, int D>
result check(const Dom& dom, const halox::field<T, D>& f, const halox::stencil<D>& st, tag t) {
  return check<T, D>(f, st, dom.global_box().hi, dom.periodicity().flags, t);
}

/// Every element of every block, in a flat vector (to compare before/after).
template <class T, int D>
std::vector<T> snapshot(const halox::field<T, D>& f) {
  std::vector<T> v;
  for (int b = 0; b < f.block_count(); ++b)
    for_cells<D>(f.allocated_box(b), [&](const auto& g) {
      for (int c = 0; c < f.components(); ++c) v.push_back(f.at(g, c, b));
    });
  return v;
}

}  // namespace test_support

namespace test_support {
/// Number of mismatches over all ranks of the world (every rank must call it at the same point,
/// so that a failure on one rank stops every rank at once instead of deadlocking the others).
inline long long bad_everywhere(const result& r) {
  return boost::mpi::all_reduce(boost::mpi::communicator(), static_cast<long long>(r.bad),
                                std::plus<long long>());
}
}  // namespace test_support

/// Collective check of a result: the failing rank reports its first mismatches, every rank
/// fails together.
#define HXT_REQUIRE_OK(expr)                                           \
  do {                                                                 \
    const ::test_support::result hxt_r_ = (expr);                      \
    const long long hxt_all_ = ::test_support::bad_everywhere(hxt_r_); \
    INFO(hxt_r_.report);                                               \
    CHECK(hxt_r_.bad == 0);                                            \
    REQUIRE(hxt_all_ == 0);                                            \
  } while (0)
