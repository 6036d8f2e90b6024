// GPU: per-field halos in one exchange with device fields (one fused pack and unpack for fields
// with different stencils) and a host field with boundary rules in the same exchange (device
// fields with rules: test_device_boundary.cpp). Skips (exit 77) where no GPU is usable.
#include <cuda_runtime.h>
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <boost/mpi/collectives.hpp>

#include <algorithm>
#include <string>

#include "../check.hpp"
#include "gpu_setup.hpp"

namespace {

const bool skipped_without_gpu = gpu_test::skip_without_gpu();
using gpu_test::cuda;

template <class T, int D>
std::size_t bytes_of(const halox::field<T, D>& f) {
  return std::size_t(f.allocated_box().volume()) * std::size_t(f.components()) * sizeof(T);
}

template <class T, int D>
void copy(const halox::field<T, D>& to, const halox::field<T, D>& from, cudaMemcpyKind kind) {
  cuda(cudaMemcpy(to.data(), from.data(), bytes_of(from), kind));
}

}  // namespace

TEST_CASE("device fields with their own stencils in one exchange, a host field with walls") {
  boost::mpi::communicator world;
  for (int m = 0; m < 4; ++m) {
    const halox::periodic<2> per{(m & 1) != 0, (m & 2) != 0};
    INFO("periodic mask " << m);
    const halox::cartesian<2> dom(world, {13, 10}, per);
    const auto sa = halox::stencil<2>::box({2, 1}, {1, 2}), sb = halox::stencil<2>::star(1);
    auto a = dom.make_field<double>(sa, halox::device, 2),
         ha = dom.make_field<double>(sa, halox::host, 2);
    auto b = dom.make_field<float>(sb, halox::device), hb = dom.make_field<float>(sb);
    auto c = dom.make_field<double>(sb);  // host, zero gradient on every non-periodic face
    halox::boundary<double, 2> bc;
    for (int d = 0; d < 2; ++d)
      if (!per[d]) bc.zero_gradient({d, halox::side::low}).zero_gradient({d, halox::side::high});
    auto ex =
        halox::make_exchange(dom, halox::halo(sa, a), halox::halo(sb, b), halox::halo(sb, c, bc));
    for (int it = 0; it < 2; ++it) {
      test_support::fill(dom, ha, {0, it});
      test_support::fill(dom, hb, {1, it});
      test_support::fill(dom, c, {2, it});
      copy(a, ha, cudaMemcpyHostToDevice);
      copy(b, hb, cudaMemcpyHostToDevice);
      ex.exchange();
      copy(ha, a, cudaMemcpyDeviceToHost);
      copy(hb, b, cudaMemcpyDeviceToHost);
      HXT_REQUIRE_OK(test_support::check(dom, ha, sa, {0, it}));
      HXT_REQUIRE_OK(test_support::check(dom, hb, sb, {1, it}));
      // c: every cell as check.hpp's model says for the cell it mirrors, where beyond
      // non-periodic faces the zero gradients (dimension 0, then 1) mirror the nearest cell
      // inside them: the clamped cell.
      test_support::result r;
      const auto n = dom.global_box().hi;
      const auto o = c.owned_box();
      test_support::for_cells<2>(halox::grow(o, sb.lo, sb.hi), [&](const auto& g) {
        auto src = g;
        for (int d = 0; d < 2; ++d)
          if (!per[d]) src[d] = std::clamp<halox::index>(src[d], 0, n[d] - 1);
        halox::extents<2> s2{};
        double want = test_support::value_traits<double>::sentinel();
        if (o.contains(src))
          want =
              test_support::value_traits<double>::make(test_support::key<2>(n, src, 0, 1, {2, it}));
        else if (test_support::source_of<2>(src, o, sb, n, per.flags, s2))
          want =
              test_support::value_traits<double>::make(test_support::key<2>(n, s2, 0, 1, {2, it}));
        if (c.at(g) != want && ++r.bad <= 8)
          r.report += test_support::str<2>(g) + ": got " + std::to_string(c.at(g)) + ", want " +
                      std::to_string(want) + "\n";
      });
      HXT_REQUIRE_OK(r);
    }
  }
}
