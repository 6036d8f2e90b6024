// GPU: physical boundary rules on device fields (docs/staggered.md). Every allocated cell of a
// device field after its exchange must hold the same bits as a host field with the same data
// and rules after its own exchange (the host rules are checked against hand-computed values
// and a model in tests/test_boundary.cpp): the three built-ins on every face, corners
// included, 2-D and 3-D, several value types, every way to run an exchange; mirror on cell and
// face fields; callbacks on the stream they are given; the errors. Skips (exit 77) where no GPU is
// usable.
#include <cuda_runtime.h>
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <boost/mpi/collectives.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../check.hpp"
#include "gpu_setup.hpp"
#include "kernels.hpp"

namespace {

const bool skipped_without_gpu = gpu_test::skip_without_gpu();
using gpu_test::cuda;
using halox::side;

// How the device field's exchange runs.
enum class mode { blocking, split_wait, split_test, scheduled };
const mode all_modes[] = {mode::blocking, mode::split_wait, mode::split_test, mode::scheduled};
const char* to_string(mode m) {
  switch (m) {
    case mode::blocking:
      return "exchange()";
    case mode::split_wait:
      return "start()/wait()";
    case mode::split_test:
      return "start()/test()";
    case mode::scheduled:
      return "schedule_exchange/schedule_wait";
  }
  return "?";
}

// A user-owned stream, destroyed at the end of the test case.
struct stream {
  cudaStream_t s = nullptr;
  stream() { cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~stream() { (void)cudaStreamDestroy(s); }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
};

template <class T, int D>
std::size_t bytes_of(const halox::field<T, D>& f, int b) {
  return std::size_t(f.allocated_box(b).volume()) * std::size_t(f.components()) * sizeof(T);
}

// Every allocated element of `got` has the bits of the same element of `want`.
template <class T, int D>
test_support::result same_bits(const halox::field<T, D>& got, const halox::field<T, D>& want) {
  test_support::result r;
  for (int b = 0; b < want.block_count(); ++b)
    test_support::for_cells<D>(want.allocated_box(b), [&](const auto& g) {
      for (int c = 0; c < want.components(); ++c) {
        const T& x = got.at(g, c, b);
        const T& y = want.at(g, c, b);
        if (!(x == test_support::value_traits<T>::sentinel())) ++r.filled;
        if (std::memcmp(&x, &y, sizeof(T)) != 0 && ++r.bad <= 8)
          r.report += "block " + std::to_string(b) + " cell " + test_support::str<D>(g) + " comp " +
                      std::to_string(c) + ": device " + test_support::value_traits<T>::str(x) +
                      ", host " + test_support::value_traits<T>::str(y) + "\n";
      }
    });
  return r;
}

// Runs the device exchange as `m` says; the device field's data goes to `back` in stream order
// after it (on the user's stream for a scheduled exchange, after the data came in on it).
template <class T, int D>
void run_device(halox::halo_exchange& ex, mode m, cudaStream_t s, const halox::field<T, D>& h,
                const halox::field<T, D>& d, const halox::field<T, D>& back) {
  const int nb = d.block_count();
  if (m == mode::scheduled) {
    for (int b = 0; b < nb; ++b)
      cuda(cudaMemcpyAsync(d.data(b), h.data(b), bytes_of(h, b), cudaMemcpyHostToDevice, s));
    ex.schedule_exchange(s);
    ex.schedule_wait(s);
    for (int b = 0; b < nb; ++b)
      cuda(cudaMemcpyAsync(back.data(b), d.data(b), bytes_of(d, b), cudaMemcpyDeviceToHost, s));
    cuda(cudaStreamSynchronize(s));
    return;
  }
  for (int b = 0; b < nb; ++b)
    cuda(cudaMemcpy(d.data(b), h.data(b), bytes_of(h, b), cudaMemcpyHostToDevice));
  if (m == mode::blocking) {
    ex.exchange();
  } else {
    auto handle = ex.start();
    if (m == mode::split_wait)
      handle.wait();
    else
      while (!handle.test()) {
      }
  }
  // Plain cudaMemcpy: the halo (boundary cells included) must be complete on return.
  for (int b = 0; b < nb; ++b)
    cuda(cudaMemcpy(back.data(b), d.data(b), bytes_of(d, b), cudaMemcpyDeviceToHost));
}

// Fills a host and a device field with the same data (owned cells keyed by global coordinates,
// the rest a sentinel), exchanges both with rules `bc` (the device one as `m` says), and
// compares every allocated element bit for bit; twice, the second time with the halos holding
// the first exchange's results. Returns how many boundary elements the host rules changed.
template <class T, int D, class Dom>
void compare(const Dom& dom, const halox::stencil<D>& st, int ncomp,
             const halox::boundary<T, D>& bc, mode m,
             halox::centering at = halox::centering::cell()) {
  INFO(to_string(m) << ", " << ncomp << " component(s), " << to_string(at));
  const auto n = dom.global_box().hi;
  auto h = dom.template make_field<T>(st, halox::host, at, ncomp);
  auto d = dom.template make_field<T>(st, halox::device, at, ncomp);
  auto back = dom.template make_field<T>(st, halox::host, at, ncomp);
  auto exh = halox::make_exchange(dom, halox::halo(st, h, bc));
  auto exd = halox::make_exchange(dom, halox::halo(st, d, bc));
  stream s;
  for (int it = 0; it < 2; ++it) {
    if (it == 0)
      test_support::fill(h, n, {4, it});
    else
      test_support::fill_owned(h, n, {4, it});
    run_device(exd, m, s.s, h, d, back);
    exh.exchange();
    HXT_REQUIRE_OK(same_bits(back, h));
  }
}

// One of the three built-ins on every non-periodic face, rotated by `variant` so that each
// kind meets each other kind at a corner; reflections with signs (alternating -1, +1 per
// component) where `signs` and the type allows.
template <class T, int D>
halox::boundary<T, D> builtins(const halox::periodic<D>& per, int variant, int ncomp, bool signs) {
  halox::boundary<T, D> bc;
  for (int dim = 0; dim < D; ++dim) {
    if (per[dim]) continue;
    for (int s = 0; s < 2; ++s) {
      const halox::face fc{dim, s == 0 ? side::low : side::high};
      switch ((2 * dim + s + variant) % 3) {
        case 0:
          bc.constant(fc, test_support::value_traits<T>::make(700000 + 10 * dim + s));
          break;
        case 1:
          bc.zero_gradient(fc);
          break;
        default: {
          std::vector<T> sg;
          if constexpr (std::is_arithmetic_v<T>)
            if (signs)
              for (int c = 0; c < ncomp; ++c) sg.push_back(T(c % 2 == 0 ? -1 : 1));
          bc.reflect(fc, sg);
        }
      }
    }
  }
  return bc;
}

template <int D>
halox::periodic<D> periodic_mask(int m) {
  halox::periodic<D> p;
  for (int i = 0; i < D; ++i) p.flags[i] = (m >> i) & 1;
  return p;
}

// The callback the tests use: v = 5000 + c, then v = v * 7 + g[i] per dimension. On the host
// it writes the cells itself (face.stream is null); on the device it enqueues a kernel on
// face.stream, and records the stream it was given.
template <int D>
halox::boundary<double, D>::callback_type test_callback(std::vector<cudaStream_t>* seen) {
  return [seen](const halox::boundary_face<double, D>& bf) {
    if (bf.f.space() == halox::memory_space::host) {
      REQUIRE(bf.stream == nullptr);
      test_support::for_cells<D>(bf.cells, [&](const auto& g) {
        for (int c = 0; c < bf.f.components(); ++c) {
          double v = 5000 + c;
          for (int i = 0; i < D; ++i) v = v * 7 + double(g[i]);
          bf.f.at(g, c, bf.block) = v;
        }
      });
      return;
    }
    seen->push_back(bf.stream);
    halox_test::box_cells b{};
    b.base = bf.f.data(bf.block);
    b.dims = D;
    b.ncomp = bf.f.components();
    b.comp_stride = bf.f.component_stride(bf.block);
    const auto a = bf.f.allocated_box(bf.block);
    for (int i = 0; i < D; ++i) {
      b.origin[i] = a.lo[i];
      b.stride[i] = bf.f.strides(bf.block)[i];
      b.lo[i] = bf.cells.lo[i];
      b.hi[i] = bf.cells.hi[i];
    }
    halox_test::fill_callback_value(b, bf.stream);
  };
}

}  // namespace

TEST_CASE("device boundary rules: the three built-ins, 2-D, as the host's, every mode") {
  boost::mpi::communicator world;
  const auto st = halox::stencil<2>::box({2, 1}, {1, 2});
  for (int pm = 0; pm < 4; ++pm) {
    const auto per = periodic_mask<2>(pm);
    const halox::cartesian<2> dom(world, {13, 10}, per);
    for (int variant = 0; variant < 3; ++variant) {
      INFO("periodic mask " << pm << ", variant " << variant);
      const auto bc = builtins<double, 2>(per, variant, 2, true);
      for (const mode m : all_modes) compare<double, 2>(dom, st, 2, bc, m);
    }
  }
}

TEST_CASE("device boundary rules: 3-D, value types, planar components, as the host's") {
  boost::mpi::communicator world;
  const auto st = halox::stencil<3>::box(1);
  const auto star = halox::stencil<3>::star({2, 1, 1}, {1, 2, 1});
  for (const int pm : {0, 5}) {
    const auto per = periodic_mask<3>(pm);
    const halox::cartesian<3> dom(world, {9, 8, 7}, per);
    for (int variant = 0; variant < 3; ++variant) {
      INFO("periodic mask " << pm << ", variant " << variant);
      for (const mode m : {mode::blocking, mode::scheduled}) {
        compare<double, 3>(dom, st, 3, builtins<double, 3>(per, variant, 3, true), m);
        compare<float, 3>(dom, st, 1, builtins<float, 3>(per, variant, 1, true), m);
        compare<std::int32_t, 3>(dom, st, 2, builtins<std::int32_t, 3>(per, variant, 2, true), m);
        compare<std::int64_t, 3>(dom, star, 1, builtins<std::int64_t, 3>(per, variant, 1, true), m);
        compare<test_support::triple, 3>(
            dom, st, 1, builtins<test_support::triple, 3>(per, variant, 1, false), m);
      }
    }
  }
}

TEST_CASE("device boundary rules: mirror about the boundary cell's centre, cells and faces") {
  // The kernels take the mirror's fills as they take reflect's (a source walking backwards):
  // mirror on every non-periodic face, with reflect and zero gradient meeting it at corners,
  // on cell fields and on face fields along and across their stagger.
  boost::mpi::communicator world;
  const auto st = halox::stencil<2>::box(2);
  for (int pm = 0; pm < 3; ++pm) {
    const auto per = periodic_mask<2>(pm);
    const halox::cartesian<2> dom(world, {13, 10}, per);
    halox::boundary<double, 2> bc;
    if (!per[0]) bc.mirror({0, side::low}, {-1.0, 1.0}).reflect({0, side::high}, {1.0, -1.0});
    if (!per[1]) bc.zero_gradient({1, side::low}).mirror({1, side::high}, {2.0, -1.0});
    halox::boundary<float, 2> bf;
    if (!per[0]) bf.mirror({0, side::low}).mirror({0, side::high}, {-1.0f});
    if (!per[1]) bf.mirror({1, side::low}, {-1.0f}).reflect({1, side::high});
    INFO("periodic mask " << pm);
    for (const mode m : {mode::blocking, mode::scheduled})
      for (const auto at :
           {halox::centering::cell(), halox::centering::face(0), halox::centering::face(1)}) {
        compare<double, 2>(dom, st, 2, bc, m, at);
        compare<float, 2>(dom, st, 1, bf, m, at);
      }
  }
}

TEST_CASE("device boundary rules: callbacks on the stream they are given, corners as the host's") {
  boost::mpi::communicator world;
  const auto st = halox::stencil<2>::box(2);
  const halox::cartesian<2> dom(world, {12, 11}, halox::periodic<2>{});
  // Callbacks of dimension 0 and 1 between built-ins of both dimensions: the device must run
  // the built-ins of dimension 1 after the callback of dimension 0, as the host does.
  for (int variant = 0; variant < 2; ++variant) {
    INFO("variant " << variant);
    std::vector<cudaStream_t> seen;
    halox::boundary<double, 2> bc;
    if (variant == 0)
      bc.callback({0, side::low}, test_callback<2>(&seen))
          .constant({0, side::high}, 3.5)
          .reflect({1, side::low}, {-1.0, 1.0})
          .zero_gradient({1, side::high});
    else
      bc.reflect({0, side::low}, {1.0, -1.0})
          .zero_gradient({0, side::high})
          .constant({1, side::low}, -2.25)
          .callback({1, side::high}, test_callback<2>(&seen));
    for (const mode m : all_modes) {
      seen.clear();
      compare<double, 2>(dom, st, 2, bc, m);
      // Each block with cells beyond the callback's face got one call per exchange (two
      // exchanges), on the user's stream when scheduled, on halox's stream otherwise.
      const auto o = dom.local_boxes()[0];
      const bool at_face = variant == 0 ? o.lo[0] == 0 : o.hi[1] == 11;
      CHECK(seen.size() == (at_face ? 2u : 0u));
      for (const auto s : seen) {
        CHECK(s != nullptr);
        if (m != mode::scheduled) CHECK(s == seen.front());
      }
    }
  }
}

TEST_CASE("device boundary rules: a callback gets the scheduled wait's stream") {
  boost::mpi::communicator world;
  const auto st = halox::stencil<2>::star(1);
  const halox::cartesian<2> dom(world, {8, 6}, halox::periodic{true, false});
  std::vector<cudaStream_t> seen;
  halox::boundary<double, 2> bc;
  bc.callback({1, side::low}, test_callback<2>(&seen)).reflect({1, side::high});
  auto d = dom.make_field<double>(st, halox::device);
  auto ex = halox::make_exchange(dom, halox::halo(st, d, bc));
  stream s;
  ex.schedule_exchange(s.s);
  ex.schedule_wait(s.s);
  cuda(cudaStreamSynchronize(s.s));
  const bool at_face = dom.local_boxes()[0].lo[1] == 0;
  REQUIRE(seen.size() == (at_face ? 1u : 0u));
  if (at_face) CHECK(seen[0] == s.s);
}

TEST_CASE("device boundary rules with other fields in one exchange") {
  boost::mpi::communicator world;
  const halox::cartesian<2> dom(world, {13, 10}, halox::periodic{false, true});
  const auto sa = halox::stencil<2>::box(2), sb = halox::stencil<2>::star(1);
  halox::boundary<double, 2> bca;
  bca.reflect({0, side::low}, {-1.0}).constant({0, side::high}, 9.0);
  halox::boundary<float, 2> bcb;
  bcb.zero_gradient({0, side::low}).reflect({0, side::high}, {-1.0f});
  const auto n = dom.global_box().hi;
  auto ha = dom.make_field<double>(sa), da = dom.make_field<double>(sa, halox::device),
       ba = dom.make_field<double>(sa);
  auto hb = dom.make_field<float>(sb), db = dom.make_field<float>(sb, halox::device),
       bb = dom.make_field<float>(sb);
  auto hc = dom.make_field<double>(sb);  // a host field without rules, beside them
  auto exh = halox::make_exchange(dom, halox::halo(sa, ha, bca), halox::halo(sb, hb, bcb));
  auto exd = halox::make_exchange(dom, halox::halo(sa, da, bca), halox::halo(sb, hc),
                                  halox::halo(sb, db, bcb));
  test_support::fill(ha, n, {0, 0});
  test_support::fill(hb, n, {1, 0});
  test_support::fill(hc, n, {2, 0});
  cuda(cudaMemcpy(da.data(), ha.data(), bytes_of(ha, 0), cudaMemcpyHostToDevice));
  cuda(cudaMemcpy(db.data(), hb.data(), bytes_of(hb, 0), cudaMemcpyHostToDevice));
  exd.exchange();
  exh.exchange();
  cuda(cudaMemcpy(ba.data(), da.data(), bytes_of(da, 0), cudaMemcpyDeviceToHost));
  cuda(cudaMemcpy(bb.data(), db.data(), bytes_of(db, 0), cudaMemcpyDeviceToHost));
  HXT_REQUIRE_OK(same_bits(ba, ha));
  HXT_REQUIRE_OK(same_bits(bb, hb));
  HXT_REQUIRE_OK(test_support::check(dom, hc, sb, {2, 0}));
}

TEST_CASE("device boundary rules: errors on every rank before anything is written") {
  boost::mpi::communicator world;
  const halox::cartesian<2> dom(world, {8, 8}, halox::periodic{true, false});
  constexpr auto st = halox::stencil<2>::star(1);
  auto expect = [&](auto&& build, const std::string& want) {
    std::string msg;
    try {
      build();
    } catch (const halox::error& e) {
      msg = e.what();
    }
    INFO(msg);
    CHECK(msg.find(want) != std::string::npos);
  };
  auto s16 = dom.make_field<std::int16_t>(st, halox::device);
  halox::boundary<std::int16_t, 2> b16;
  b16.reflect({1, side::low}, {std::int16_t(-1)});
  expect([&] { halox::make_exchange(dom, halox::halo(st, s16, b16)); },
         "reflect with signs on a device field supports double, float and 32/64-bit integers");
  auto d = dom.make_field<double>(st, halox::device);
  halox::boundary<double, 2> per;
  per.constant({0, side::high}, 1.0);
  expect([&] { halox::make_exchange(dom, halox::halo(st, d, per)); }, "which is periodic");
  // Without signs any type works: a plain copy.
  b16 = {};
  b16.reflect({1, side::low});
  CHECK_NOTHROW(halox::make_exchange(dom, halox::halo(st, s16, b16)));
}
