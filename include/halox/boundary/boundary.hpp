#pragma once
/// @file
/// Physical boundary rules: what fills the halo cells beyond a non-periodic face of the global
/// box after each exchange (a constant, zero gradient, a reflection with a sign per component,
/// a mirror about the boundary cell's centre, or your callback), and their compilation into fills
/// run by the exchange object.

#include <cstddef>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "halox/core/box.hpp"
#include "halox/core/error.hpp"
#include "halox/core/stream.hpp"
#include "halox/field/field.hpp"

namespace halox {

/// The low or the high side of a dimension.
enum class side { low, high };

/// One face of the global box: the `low` or `high` side of dimension `dim`.
struct face {
  int dim = 0;
  side at = side::low;
};

/// What a boundary callback is given: the field, the block, the face, and the halo cells to
/// fill (global indices, beyond the face, across the owned box grown by the stencil's widths).
///
/// `stream` is null for host fields: the callback runs on the host and writes the cells itself.
/// For device fields it is the CUDA stream the callback must order its work on (enqueue a
/// kernel or a cudaMemcpyAsync there, do not synchronise): everything halox did for this
/// exchange, the built-in rules of lower dimensions included, is ordered before it. In
/// `schedule_wait(s)` it is `s` and halox adds no host wait; in `exchange()`, a handle's
/// `wait()` and the `test()` that returns true it is halox's own stream, and halox waits for that
/// stream (the callbacks' work included) before returning.
template <class T, int D>
struct boundary_face {
  field<T, D> f;
  int block = 0;
  halox::face face;
  box<D> cells;
  stream_t stream = nullptr;
};

/// The kinds of rule a face can have.
/// (`mirror` comes last so that the values of the others, which the C interface passes as ints,
/// stay as they were.)
enum class boundary_kind { none, constant, zero_gradient, reflect, callback, mirror };

/// The physical boundary rules of one field, one per face (faces without one are left alone):
/// ```
/// halox::boundary<double, 2> bc;
/// bc.constant({0, halox::side::low}, 1.0)            // inflow: every halo cell beyond x = 0 is 1
///     .zero_gradient({0, halox::side::high})          // outflow: copies of the last owned cell
///     .reflect({1, halox::side::low}, {+1.0, -1.0})   // wall: mirrored, v component negated
///     .callback({1, halox::side::high}, my_fill);     // anything else
/// halox::boundary<double, 2> flux_bc;
/// flux_bc.mirror({0, halox::side::high});             // f(n-1+k) = f(n-1-k): about cell n-1
/// ```
/// reflect and mirror differ in where the mirror lies (docs/staggered.md): along a cell-centred
/// dimension reflect mirrors about the face (at the low face halo cell −k holds cell k − 1;
/// cells `a b c` at the high face continue `| c b a`), mirror about the centre of the boundary
/// cell (halo cell −k holds cell k; `a b c` continue `| b a`, the boundary cell not repeated).
/// Along a staggered dimension both mirror about the boundary point on the face (point −k
/// holds point k).
///
/// Pass it with the field's stencil to make_exchange: `halox::halo(st, u, bc)`. After every
/// exchange (at `wait()`, or the `test()` that completes it) the rules run in dimension order,
/// low face before high, so where two boundaries meet the higher dimension's rule has the last
/// word and reads what the lower ones wrote (see docs/staggered.md). On device fields the
/// built-in rules run in halox's kernels on its stream after the unpack (bit-identical to the
/// host's), and callbacks get the stream to enqueue their work on (boundary_face::stream).
template <class T, int D>
class boundary {
 public:
  using callback_type = std::function<void(const boundary_face<T, D>&)>;
  struct rule {
    boundary_kind kind = boundary_kind::none;
    T value{};
    std::vector<T> signs;  ///< reflect, mirror: one factor per component (empty: all +1)
    callback_type fn;
  };

  /// Every halo cell beyond `fc` holds `v` (all components).
  boundary& constant(face fc, T v) { return set(fc, rule{boundary_kind::constant, v, {}, {}}); }
  /// Every halo cell beyond `fc` holds the owned cell at the face in the same line (first-order
  /// extrapolation; zero normal gradient).
  boundary& zero_gradient(face fc) {
    return set(fc, rule{boundary_kind::zero_gradient, {}, {}, {}});
  }
  /// The halo cell k cells beyond `fc` holds the cell k − 1 cells inside it (a mirror at the
  /// face), component c multiplied by `signs[c]` (e.g. −1 for the normal velocity at a wall).
  /// No signs: every component mirrored as it is.
  boundary& reflect(face fc, std::vector<T> signs = {}) {
    return set(fc, rule{boundary_kind::reflect, {}, std::move(signs), {}});
  }
  /// The halo cell k cells beyond `fc` holds the cell k cells inside the boundary cell (a
  /// mirror about the boundary cell's centre, which is not repeated: at the high face of n
  /// cells, cell n − 1 + k holds cell n − 1 − k), component c multiplied by `signs[c]`. Along a
  /// dimension the field is staggered along, the same as reflect (about the boundary point).
  /// As numpy.pad's "reflect" and scipy.ndimage's "mirror" modes; reflect is their "symmetric".
  boundary& mirror(face fc, std::vector<T> signs = {}) {
    return set(fc, rule{boundary_kind::mirror, {}, std::move(signs), {}});
  }
  /// `fn(face)` fills the cells itself, once per block that has cells beyond `fc`.
  boundary& callback(face fc, callback_type fn) {
    return set(fc, rule{boundary_kind::callback, {}, {}, std::move(fn)});
  }

  /// Whether any face has a rule.
  bool empty() const {
    for (const auto& r : rules_)
      if (r.second.kind != boundary_kind::none) return false;
    return true;
  }
  /// The rules set, in the order given (checked by make_exchange).
  const std::vector<std::pair<face, rule>>& rules() const { return rules_; }

 private:
  boundary& set(face fc, rule r) {
    rules_.emplace_back(fc, std::move(r));
    return *this;
  }
  std::vector<std::pair<face, rule>> rules_;
};

inline std::string to_string(side s) {
  return s == side::low ? "low" : "high";
}

/// A boundary rule of one face, whatever the field's value type: what `boundary<T, D>` becomes
/// for the builder compiled in the library (erase_rules), and what the C and Fortran interfaces
/// build directly.
template <int D>
struct face_rule {
  halox::face face;
  boundary_kind kind = boundary_kind::none;
  std::vector<std::byte> value;  ///< constant: the value's bytes
  std::vector<std::byte> signs;  ///< reflect, mirror: one value per component, as bytes (empty:
                                 ///< all +1)
  std::size_t sign_count = 0;    ///< reflect, mirror: how many values `signs` holds
  /// callback: called with the block, the halo cells to fill and the stream (see boundary_face).
  std::function<void(int block, const box<D>& cells, stream_t stream)> fn;
};

/// The rules of `bc` for field `f`, in the order they were set.
template <class T, int D>
std::vector<face_rule<D>> erase_rules(const boundary<T, D>& bc, const field<T, D>& f) {
  std::vector<face_rule<D>> out;
  auto bytes = [](const T& v, std::vector<std::byte>& to) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    to.insert(to.end(), p, p + sizeof(T));
  };
  for (const auto& [fc, r] : bc.rules()) {
    face_rule<D> e{fc, r.kind, {}, {}, r.signs.size(), {}};
    if (r.kind == boundary_kind::constant) bytes(r.value, e.value);
    for (const T s : r.signs) bytes(s, e.signs);
    if (r.kind == boundary_kind::callback && r.fn)
      e.fn = [fn = r.fn, f, fc](int b, const box<D>& cells, stream_t on) {
        fn(boundary_face<T, D>{f, b, fc, cells, on});
      };
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace halox
