// After construction and one warm-up, exchanges allocate nothing: every form of global
// operator new is replaced by a counting version, armed around the steady-state loop.
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <atomic>
#include <cstdlib>
#include <new>
#include <span>
#include <vector>

#include "check.hpp"

namespace {
std::atomic<bool> armed{false};
std::atomic<long> news{0};

void* counted(std::size_t n, std::size_t align, bool nothrow) {
  if (armed.load(std::memory_order_relaxed)) news.fetch_add(1, std::memory_order_relaxed);
  if (n == 0) n = 1;
  void* p = nullptr;
  if (align <= alignof(std::max_align_t)) {
    p = std::malloc(n);
  } else if (posix_memalign(&p, align, n) != 0) {
    p = nullptr;
  }
  if (!p && !nothrow) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t n) {
  return counted(n, 0, false);
}
void* operator new[](std::size_t n) {
  return counted(n, 0, false);
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return counted(n, 0, true);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return counted(n, 0, true);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return counted(n, std::size_t(a), false);
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return counted(n, std::size_t(a), false);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted(n, std::size_t(a), true);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted(n, std::size_t(a), true);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}

namespace mpi = boost::mpi;

TEST_CASE("the counting operator new counts (the test can fail)") {
  news = 0;
  armed = true;
  auto* p = new int(3);
  auto* q = new (std::align_val_t{64}) double[5];
  auto* r = ::operator new(8, std::nothrow);
  armed = false;
  delete p;
  ::operator delete[](q, std::align_val_t{64});
  ::operator delete(r, std::nothrow);
  REQUIRE(news == 3);
}

template <class Dom, int D>
void steady_state(const Dom& dom, const halox::stencil<D>& st) {
  auto u = dom.template make_field<double>(st, halox::host, 2);
  auto v = dom.template make_field<test_support::triple>(
      st, halox::host,
      halox::field_options{1, halox::components_layout::planar, halox::layout::column_major, "v"});
  test_support::fill(dom, u, {0, 0});
  test_support::fill(dom, v, {1, 0});
  auto ex = halox::make_exchange(dom, st, u, v);
  ex.exchange();  // warm-up
  {
    auto h = ex.start();
    while (!h.test()) {
    }
  }
  news = 0;
  armed = true;
  for (int k = 0; k < 50; ++k) ex.exchange();
  for (int k = 0; k < 50; ++k) {
    auto h = ex.start();
    h.wait();
  }
  for (int k = 0; k < 20; ++k) {
    auto h = ex.start();
    while (!h.test()) {
    }
  }
  armed = false;
  const long mine = news;
  CHECK(mine == 0);
  REQUIRE(mpi::all_reduce(mpi::communicator(), mine, std::plus<long>()) == 0);
  HXT_REQUIRE_OK(test_support::check(dom, u, st, {0, 0}));
  HXT_REQUIRE_OK(test_support::check(dom, v, st, {1, 0}));
}

TEST_CASE("no allocation per exchange: cartesian 3-D") {
  mpi::communicator world;
  halox::cartesian<3> dom(world, {8, 7, 6}, halox::periodic{true, true, false});
  steady_state(dom, halox::stencil<3>::box(1));
}

TEST_CASE("no allocation per exchange: box_list 2-D, several boxes per rank") {
  mpi::communicator world;
  std::vector<halox::owned_box<2>> boxes;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j)
      boxes.push_back(
          {halox::box<2>{{3 * i, 4 * j}, {3 * i + 3, 4 * j + 4}}, (i + 3 * j) % world.size()});
  halox::box_list<2> dom(world, {9, 8}, halox::periodic{true, true}, boxes);
  steady_state(dom, halox::stencil<2>::star(2));
}

TEST_CASE("no allocation per exchange: per-field halos with boundary rules") {
  mpi::communicator world;
  halox::cartesian<2> dom(world, {9, 8}, halox::periodic{true, false});
  const auto su = halox::stencil<2>::box(2), sp = halox::stencil<2>::star(1);
  auto u = dom.make_field<double>(su, halox::host, 2);
  auto p = dom.make_field<double>(sp);
  halox::boundary<double, 2> bu, bp;
  bu.reflect({1, halox::side::low}, {1.0, -1.0}).zero_gradient({1, halox::side::high});
  long calls = 0;
  bp.constant({1, halox::side::low}, 4.0)
      .callback({1, halox::side::high},
                [&calls](const halox::boundary_face<double, 2>&) { ++calls; });
  auto ex = halox::make_exchange(dom, halox::halo(su, u, bu), halox::halo(sp, p, bp));
  ex.exchange();  // warm-up
  news = 0;
  calls = 0;
  armed = true;
  for (int k = 0; k < 50; ++k) ex.exchange();
  for (int k = 0; k < 20; ++k) {
    auto h = ex.start();
    while (!h.test()) {
    }
  }
  armed = false;
  const long mine = news;
  CHECK(mine == 0);
  REQUIRE(mpi::all_reduce(mpi::communicator(), mine, std::plus<long>()) == 0);
  // The callback ran once per exchange on the rank holding the high face (one block each).
  const bool top = p.owned_box().hi[1] == 8;
  CHECK(calls == (top ? 70 : 0));
}

TEST_CASE("no allocation per round: chain rounds of varying sizes, split phase, gather_left") {
  mpi::communicator world;
  halox::chain<double> ch(world, {.periodic = true});
  const int me = world.rank();
  // Sizes vary per round and rank; the warm-up rounds send the largest of them.
  std::vector<double> big(64 + std::size_t(me), 1.0), mine(5 + std::size_t(me) % 3, 2.0);
  (void)ch.exchange(big, big);
  (void)ch.gather_left(mine, 40);
  news = 0;
  armed = true;
  double seen = 0;
  for (int k = 0; k < 50; ++k) {
    const std::span<const double> l(big.data(), std::size_t(k % 7)),
        r(big.data(), std::size_t(k % 60));
    const auto res = ch.exchange(l, r);
    seen += double(res.from_left()->size() + res.from_right()->size());
    auto h = ch.start(r, l);
    while (!h.test()) {
    }
    seen += double(h.wait().from_left()->size());
    seen += double(ch.gather_left(mine, std::size_t(k % 41)).size());
  }
  armed = false;
  const long count = news;
  CHECK(count == 0);
  REQUIRE(mpi::all_reduce(world, count, std::plus<long>()) == 0);
  REQUIRE(seen > 0);
}
