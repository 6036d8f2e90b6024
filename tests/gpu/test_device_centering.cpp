// GPU: staggered device fields (faces, edges, nodes) in one fused exchange, each point checked
// against its owner's global point (centering_check.hpp), with shared points overwritten by
// their owners or kept by each rank, and a reverse sum of the shared copies into their owners
// against a serial count. Skips (exit 77) where no GPU is usable.
#include <cuda_runtime.h>
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <boost/mpi/collectives.hpp>

#include <vector>

#include "../centering_check.hpp"
#include "gpu_setup.hpp"

namespace {

const bool skipped_without_gpu = gpu_test::skip_without_gpu();
using gpu_test::cuda;
using halox::centering;

template <class T, int D>
std::size_t bytes_of(const halox::field<T, D>& f) {
  return std::size_t(f.allocated_box().volume()) * std::size_t(f.components()) * sizeof(T);
}

template <class T, int D>
void copy(const halox::field<T, D>& to, const halox::field<T, D>& from, cudaMemcpyKind kind) {
  cuda(cudaMemcpy(to.data(), from.data(), bytes_of(from), kind));
}

template <int D>
halox::periodic<D> periodic_mask(int m) {
  halox::periodic<D> p;
  for (int i = 0; i < D; ++i) p.flags[i] = (m >> i) & 1;
  return p;
}

}  // namespace

TEST_CASE("device: every centering of a 3-D field in one exchange") {
  boost::mpi::communicator world;
  const std::vector<centering> all{centering::cell(),  centering::face(0), centering::face(1),
                                   centering::face(2), centering::edge(0), centering::edge(1),
                                   centering::edge(2), centering::node()};
  for (int m : {0, 3, 7}) {
    INFO("periodic mask " << m);
    const halox::cartesian<3> dom(world, {9, 7, 6}, periodic_mask<3>(m));
    const auto st = halox::stencil<3>::box({1, 2, 1}, {2, 1, 1});
    std::vector<halox::field<double, 3>> dev, host;
    for (const auto at : all) {
      dev.push_back(dom.make_field<double>(st, halox::device, at, 2));
      host.push_back(dom.make_field<double>(st, halox::host, at, 2));
    }
    auto ex = halox::make_exchange(dom, st, dev[0], dev[1], dev[2], dev[3], dev[4], dev[5], dev[6],
                                   dev[7]);
    for (int it = 0; it < 2; ++it) {
      for (std::size_t k = 0; k < all.size(); ++k) {
        test_support::fill_points(host[k], {int(k), it});
        copy(dev[k], host[k], cudaMemcpyHostToDevice);
      }
      ex.exchange();
      for (std::size_t k = 0; k < all.size(); ++k) {
        INFO("centering " << halox::to_string(all[k]));
        copy(host[k], dev[k], cudaMemcpyDeviceToHost);
        HXT_REQUIRE_OK(test_support::check_points(host[k], st, {int(k), it}));
      }
    }
  }
}

TEST_CASE("device: shared points kept or overwritten, per field, in one exchange") {
  boost::mpi::communicator world;
  const std::vector<centering> all{centering::face(0), centering::edge(1), centering::node()};
  for (int m : {0, 5, 7}) {
    INFO("periodic mask " << m);
    const halox::cartesian<3> dom(world, {8, 7, 6}, periodic_mask<3>(m));
    const auto st = halox::stencil<3>::box(1);
    std::vector<halox::field<double, 3>> dev, host;
    for (std::size_t k = 0; k < 2 * all.size(); ++k) {
      halox::field_options o;
      o.at = all[k / 2];
      o.shared = k % 2 ? halox::shared_points::keep : halox::shared_points::owner_overwrites;
      dev.push_back(dom.make_field<double>(st, halox::device, o));
      host.push_back(dom.make_field<double>(st, halox::host, o));
    }
    auto ex = halox::make_exchange(dom, st, dev[0], dev[1], dev[2], dev[3], dev[4], dev[5]);
    for (int it = 0; it < 2; ++it) {
      for (std::size_t k = 0; k < dev.size(); ++k) {
        test_support::fill_points(host[k], {int(k), it});  // kept copies: this rank's own values
        copy(dev[k], host[k], cudaMemcpyHostToDevice);
      }
      ex.exchange();
      for (std::size_t k = 0; k < dev.size(); ++k) {
        INFO("centering " << halox::to_string(all[k / 2]) << (k % 2 ? ", kept" : ""));
        copy(host[k], dev[k], cudaMemcpyDeviceToHost);
        HXT_REQUIRE_OK(test_support::check_points(host[k], st, {int(k), it}));
      }
    }
  }
}

TEST_CASE("device: reverse sum of a node field's shared copies") {
  boost::mpi::communicator world;
  for (int m = 0; m < 4; ++m) {
    INFO("periodic mask " << m);
    const halox::cartesian<2> dom(world, {11, 9}, periodic_mask<2>(m));
    const auto st = halox::stencil<2>::box(1);
    auto d = dom.make_field<double>(st, halox::device, centering::node());
    auto h = dom.make_field<double>(st, halox::host, centering::node());
    const auto n = test_support::point_extents(h);
    test_support::for_cells<2>(h.allocated_box(), [&](const auto& g) {
      const auto src = test_support::point_source(h, 0, st, g);
      h.at(g) = src ? double(test_support::key<2>(n, *src, 0, 1, {}) + 1) : -7.0;
    });
    std::vector<long long> mine(std::size_t(n[0] * n[1]), 0), all(mine.size(), 0);
    for (const auto& [k, c] : test_support::copy_counts(h, st)) mine[std::size_t(k)] += c;
    boost::mpi::all_reduce(world, mine.data(), int(mine.size()), all.data(),
                           std::plus<long long>());
    copy(d, h, cudaMemcpyHostToDevice);
    auto ex = halox::make_reverse_exchange(dom, st, halox::reduction::sum, d);
    ex.exchange();
    copy(h, d, cudaMemcpyDeviceToHost);
    test_support::result r;
    test_support::for_cells<2>(h.allocated_box(), [&](const auto& g) {
      const auto src = test_support::point_source(h, 0, st, g);
      const auto k = src ? test_support::key<2>(n, *src, 0, 1, {}) : 0;
      const double want = h.owned_points().contains(g)
                              ? double(k + 1) * double(1 + all[std::size_t(k)])
                          : src ? double(k + 1)
                                : -7.0;
      if (h.at(g) != want && ++r.bad <= 5)
        r.report += test_support::str<2>(g) + ": got " + std::to_string(h.at(g)) + ", want " +
                    std::to_string(want) + "\n";
    });
    HXT_REQUIRE_OK(r);
  }
}
