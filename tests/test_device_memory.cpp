// GPU: halox-owned device fields. Skips (exit 77) where no GPU is usable.
#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <cstdio>
#include <cstdlib>

namespace {
// Runs before Catch's session: a machine without a GPU skips the whole program.
const bool skip_without_gpu = [] {
  if (halox::detail::device_count() == 0) {
    std::printf("SKIP: %s\n", halox::detail::cuda_enabled() ? "no CUDA device" : "built without CUDA");
    std::exit(77);
  }
  return true;
}();
}  // namespace

TEST_CASE("device fields are allocated, padded and zeroed, and rejected by the host exchange") {
  boost::mpi::communicator world;
  constexpr auto st = halox::stencil<3>::box(2);
  const halox::cartesian<3> dom(world, {16, 12, 10}, halox::periodic{true, false, true});
  auto u = dom.make_field<double>(st, halox::device, 2);
  REQUIRE(u.space() == halox::memory_space::device);
  REQUIRE(u.data() != nullptr);
  REQUIRE(u.allocated_box() == halox::grow(u.owned_box(), st.lo, st.hi));
  REQUIRE_THROWS_WITH(halox::make_exchange(dom, st, u), Catch::Contains("device memory"));
}
