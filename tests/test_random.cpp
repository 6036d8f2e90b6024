// Randomized property test: hundreds of random configurations (dimension, extents, stencil,
// periodicity, decomposition, value types, components, layouts, padding), each exchanged and
// checked cell by cell against the model in check.hpp.
//
// The seed comes from HALOX_TEST_SEED or the clock, on rank 0, and is broadcast; it is printed so
// that a failure can be replayed: HALOX_TEST_SEED=<seed> mpiexec -n <ranks> test_random
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <boost/mpi/collectives.hpp>

#include <random>
#include <sstream>

#include "check.hpp"
#include "support.hpp"

namespace mpi = boost::mpi;
using halox::box;
using idx = halox::index;

namespace {

using rng_t = std::mt19937_64;

int pick(rng_t& rng, int n) {
  return int(rng() % std::uint64_t(n));
}

template <int D>
void bisect(const box<D>& b, int want, rng_t& rng, std::vector<box<D>>& out) {
  std::vector<int> cut_dims;
  for (int i = 0; i < D; ++i)
    if (b.hi[i] - b.lo[i] > 1) cut_dims.push_back(i);
  if (want <= 1 || cut_dims.empty()) {
    out.push_back(b);
    return;
  }
  const int i = cut_dims[std::size_t(pick(rng, int(cut_dims.size())))];
  const idx at = b.lo[i] + 1 + pick(rng, int(b.hi[i] - b.lo[i] - 1));
  box<D> l = b, r = b;
  l.hi[i] = at, r.lo[i] = at;
  const int wl = 1 + pick(rng, want - 1);
  bisect<D>(l, wl, rng, out);
  bisect<D>(r, want - wl, rng, out);
}

template <class T>
struct type_tag {
  using type = T;
};
template <class F>
void with_type(int k, F&& f) {
  switch (k) {
    case 0:
      return f(type_tag<double>{});
    case 1:
      return f(type_tag<int>{});
    case 2:
      return f(type_tag<float>{});
    default:
      return f(type_tag<test_support::triple>{});
  }
}
const char* type_name(int k) {
  static const char* names[] = {"double", "int", "float", "triple"};
  return names[k];
}

struct field_spec {
  int type = 0;
  halox::field_options opt;
  int extra_lo = 0, extra_hi = 0;  // padding beyond the stencil
};

template <int D, class Dom, class... T>
void exchange_fields(const Dom& dom, const halox::stencil<D>& st,
                     const std::vector<field_spec>& specs, bool split_phase,
                     const halox::field<T, D>&... fields) {
  auto ex = halox::make_exchange(dom, st, fields...);
  const auto n = dom.global_box().hi;
  for (int salt = 0; salt < 2; ++salt) {
    int id = 0;
    if (salt == 0)
      (test_support::fill<T, D>(fields, n, {id++, salt}), ...);
    else
      (test_support::fill_owned<T, D>(fields, n, {id++, salt}), ...);
    if (split_phase) {
      auto h = ex.start();
      if (salt == 0)
        h.wait();
      else
        while (!h.test()) {
        }
    } else {
      ex.exchange();
    }
    id = 0;
    test_support::result all;
    (
        [&](const auto& f) {
          const auto r = test_support::check(dom, f, st, {id++, salt});
          all.bad += r.bad;
          all.report += r.report;
        }(fields),
        ...);
    INFO("exchange #" << salt);
    HXT_REQUIRE_OK(all);
  }
  (void)specs;
}

template <int D, class Dom>
auto make(const Dom& dom, const halox::stencil<D>& st, const field_spec& s, auto tag) {
  using T = typename decltype(tag)::type;
  halox::widths<D> lo = st.lo, hi = st.hi;
  for (int i = 0; i < D; ++i) lo[i] += s.extra_lo, hi[i] += s.extra_hi;
  return dom.template make_field<T>(lo, hi, halox::host, s.opt);
}

template <int D, class Dom>
void run_fields(const Dom& dom, const halox::stencil<D>& st, const std::vector<field_spec>& specs,
                bool split_phase) {
  if (specs.size() == 1) {
    with_type(specs[0].type, [&](auto t0) {
      exchange_fields<D>(dom, st, specs, split_phase, make<D>(dom, st, specs[0], t0));
    });
  } else if (specs.size() == 2) {
    with_type(specs[0].type, [&](auto t0) {
      with_type(specs[1].type, [&](auto t1) {
        exchange_fields<D>(dom, st, specs, split_phase, make<D>(dom, st, specs[0], t0),
                           make<D>(dom, st, specs[1], t1));
      });
    });
  } else {
    with_type(specs[0].type, [&](auto t0) {
      exchange_fields<D>(dom, st, specs, split_phase, make<D>(dom, st, specs[0], t0),
                         make<D>(dom, st, specs[1], type_tag<float>{}),
                         make<D>(dom, st, specs[2], type_tag<test_support::triple>{}));
    });
  }
}

template <int D>
void run_config(const mpi::communicator& world, rng_t& rng, std::ostringstream& desc) {
  const int size = world.size();
  halox::extents<D> n{};
  std::vector<halox::process_grid<D>> gs;
  do {  // only extents some process grid fits (all ranks own a cell)
    for (auto& x : n) x = 1 + pick(rng, 12);
    gs = test_support::all_grids<D>(size, n);
  } while (gs.empty());
  halox::periodic<D> per;
  for (auto& f : per.flags) f = pick(rng, 2) == 1;
  desc << "D=" << D << " extents " << test_support::str<D>(n) << " periodic";
  for (bool f : per.flags) desc << ' ' << f;

  // stencil
  halox::stencil<D> st;
  halox::widths<D> lo{}, hi{};
  for (int i = 0; i < D; ++i) lo[i] = pick(rng, 4), hi[i] = pick(rng, 4);
  switch (pick(rng, 3)) {
    case 0:
      st = halox::stencil<D>::star(lo, hi);
      desc << " star";
      break;
    case 1:
      st = halox::stencil<D>::box(lo, hi);
      desc << " box";
      break;
    default: {
      std::array<std::array<int, D>, 3> o{};
      for (auto& v : o)
        for (auto& x : v) x = pick(rng, 7) - 3;
      st = halox::stencil<D>::from_offsets({o[0], o[1], o[2]});
      desc << " offsets";
      for (const auto& v : o) {
        desc << " (";
        for (int x : v) desc << x << ' ';
        desc << ')';
      }
      break;
    }
  }
  desc << " widths lo";
  for (int x : st.lo) desc << ' ' << x;
  desc << " hi";
  for (int x : st.hi) desc << ' ' << x;
  desc << " neighbours " << st.neighbor_count();

  // fields
  std::vector<field_spec> specs(std::size_t(1 + pick(rng, 3)));
  for (auto& s : specs) {
    s.type = pick(rng, 4);
    s.opt.components = 1 + pick(rng, 3);
    s.opt.component_layout =
        pick(rng, 2) ? halox::components_layout::planar : halox::components_layout::interleaved;
    s.opt.order = pick(rng, 2) ? halox::layout::column_major : halox::layout::row_major;
    s.extra_lo = pick(rng, 3) == 0 ? 1 : 0;
    s.extra_hi = pick(rng, 3) == 0 ? 1 : 0;
  }
  if (specs.size() == 3) specs[1].type = 2, specs[2].type = 3;
  for (const auto& s : specs)
    desc << " | " << type_name(s.type) << " x" << s.opt.components
         << (s.opt.component_layout == halox::components_layout::planar ? " planar"
                                                                        : " interleaved")
         << (s.opt.order == halox::layout::column_major ? " col-major" : " row-major")
         << " extra pad " << s.extra_lo << "/" << s.extra_hi;
  const bool split_phase = pick(rng, 2) == 1;
  desc << (split_phase ? " split-phase" : " blocking");

  // decomposition
  const int kind = pick(rng, 3);
  if (kind == 2) {
    std::vector<box<D>> cells;
    bisect<D>(box<D>{{}, n}, 1 + pick(rng, 2 * size + 2), rng, cells);
    std::vector<halox::owned_box<D>> boxes;
    for (const auto& c : cells) boxes.push_back({c, pick(rng, size)});
    desc << " box_list:";
    for (const auto& b : boxes) desc << ' ' << halox::to_string(b.cells) << "@" << b.owner;
    INFO(desc.str());
    halox::box_list<D> dom(world, n, per, boxes);
    run_fields<D>(dom, st, specs, split_phase);
  } else if (kind == 1) {
    const auto g = gs[std::size_t(pick(rng, int(gs.size())))];
    desc << " grid";
    for (int x : g.dims) desc << ' ' << x;
    INFO(desc.str());
    halox::cartesian<D> dom(world, n, per, g);
    REQUIRE(dom.grid() == g);
    run_fields<D>(dom, st, specs, split_phase);
  } else {
    desc << " automatic grid";
    INFO(desc.str());
    halox::cartesian<D> dom(world, n, per);
    run_fields<D>(dom, st, specs, split_phase);
  }
}

}  // namespace

TEST_CASE("random configurations") {
  mpi::communicator world;
  const unsigned long long seed = test_support::shared_seed(world, "test_random");
  INFO("seed " << seed << " (HALOX_TEST_SEED=" << seed << " replays)");
  rng_t rng(seed);
  const int configurations = 250;
  for (int t = 0; t < configurations; ++t) {
    std::ostringstream desc;
    desc << "configuration #" << t << ": ";
    switch (1 + pick(rng, 3)) {
      case 1:
        run_config<1>(world, rng, desc);
        break;
      case 2:
        run_config<2>(world, rng, desc);
        break;
      default:
        run_config<3>(world, rng, desc);
        break;
    }
  }
}
