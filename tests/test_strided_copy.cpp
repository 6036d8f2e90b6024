// Unit tests of the strided copy engine against a naive element-by-element loop.
#include <catch2/catch.hpp>
#include "pack/strided_copy.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

using idx = halox::index;
using halox::detail::copy_op;
using halox::detail::loop_order;
using halox::detail::max_copy_dims;

namespace {

// Strides (bytes) of a block of `count` elements stored with dimension order `perm`
// (perm[0] innermost) and `gap[k]` extra elements after each row of dimension perm[k].
struct layout {
  std::array<idx, max_copy_dims> stride{};
  idx span = 0;  // bytes needed
};

layout make_layout(int rank, std::size_t elem, const idx* count, std::mt19937& rng,
                   bool allow_gap) {
  std::array<int, max_copy_dims> perm{};
  std::iota(perm.begin(), perm.begin() + rank, 0);
  std::shuffle(perm.begin(), perm.begin() + rank, rng);
  layout l;
  idx step = 1;
  for (int k = 0; k < rank; ++k) {
    const int d = perm[k];
    l.stride[d] = step * idx(elem);
    const idx gap = allow_gap && rng() % 2 ? idx(rng() % 3) : 0;
    step = step * count[d] + gap;
  }
  l.span = step * idx(elem);
  return l;
}

void naive(const std::byte* src, std::byte* dst, int rank, std::size_t elem, const idx* count,
           const idx* ss, const idx* ds) {
  std::array<idx, max_copy_dims> i{};
  for (int k = 0; k < rank; ++k)
    if (count[k] == 0) return;
  for (;;) {
    idx so = 0, d = 0;
    for (int k = 0; k < rank; ++k) so += i[k] * ss[k], d += i[k] * ds[k];
    std::memcpy(dst + d, src + so, elem);
    int k = rank - 1;
    while (k >= 0 && ++i[k] == count[k]) i[k] = 0, --k;
    if (k < 0) return;
  }
}

void one_case(std::mt19937& rng, std::size_t elem, bool allow_zero) {
  const int rank = 1 + int(rng() % max_copy_dims);
  idx count[max_copy_dims];
  for (int k = 0; k < rank; ++k) {
    const auto r = rng() % 10;
    count[k] = r < 3 ? 1 : idx(1 + rng() % 5);
    if (allow_zero && rng() % 25 == 0) count[k] = 0;
  }
  const auto ls = make_layout(rank, elem, count, rng, true);
  const auto ld = make_layout(rank, elem, count, rng, true);
  const idx pad = 3 * idx(elem);  // guard bytes on both sides of the destination
  std::vector<std::byte> src(std::size_t(ls.span) + 1), dst(std::size_t(ld.span + 2 * pad) + 1),
      ref;
  for (auto& b : src) b = std::byte(rng() & 0xff);
  for (auto& b : dst) b = std::byte(rng() & 0xff);
  ref = dst;
  const auto order = rng() % 2 ? loop_order::by_src : loop_order::by_dst;
  naive(src.data(), ref.data() + pad, rank, elem, count, ls.stride.data(), ld.stride.data());
  const copy_op op = halox::detail::make_copy_op(src.data(), dst.data() + pad, rank, elem, count,
                                                 ls.stride.data(), ld.stride.data(), order);
  CHECK(op.ndims >= 0);
  CHECK(op.ndims <= rank);
  halox::detail::run(op);
  std::string shape;
  for (int k = 0; k < rank; ++k)
    shape += std::to_string(count[k]) + "(" + std::to_string(ls.stride[k]) + "/" +
             std::to_string(ld.stride[k]) + ") ";
  INFO("elem " << elem << " shape " << shape);
  REQUIRE(std::memcmp(dst.data(), ref.data(), dst.size()) == 0);
}

}  // namespace

TEST_CASE("strided copy matches a naive loop on random shapes and strides") {
  std::mt19937 rng(777);
  for (std::size_t elem : {1, 2, 4, 8, 12, 16, 3, 24})
    for (int t = 0; t < 400; ++t) one_case(rng, elem, true);
}

TEST_CASE("strided copy: contiguous blocks merge into one run") {
  // 3x4x5 doubles, dense on both sides: one memcpy of 60 elements.
  const idx count[3] = {3, 4, 5}, s[3] = {160, 40, 8};
  std::vector<double> a(60), b(60, -1);
  std::iota(a.begin(), a.end(), 0.0);
  const auto op = halox::detail::make_copy_op(reinterpret_cast<const std::byte*>(a.data()),
                                              reinterpret_cast<std::byte*>(b.data()), 3, 8, count,
                                              s, s, loop_order::by_src);
  CHECK(op.ndims == 1);
  CHECK(op.count[0] == 60);
  halox::detail::run(op);
  CHECK(a == b);
}

TEST_CASE("strided copy: unit dimensions are dropped and transposes work") {
  // 1 x 3 x 1 x 4 floats, source row-major (last fastest), destination transposed.
  const idx count[4] = {1, 3, 1, 4};
  const idx ss[4] = {48, 16, 16, 4}, ds[4] = {4, 4, 4, 12};
  std::vector<float> a(12), b(12, -1.0f);
  std::iota(a.begin(), a.end(), 1.0f);
  const auto op = halox::detail::make_copy_op(reinterpret_cast<const std::byte*>(a.data()),
                                              reinterpret_cast<std::byte*>(b.data()), 4, 4, count,
                                              ss, ds, loop_order::by_dst);
  CHECK(op.ndims == 2);
  halox::detail::run(op);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) CHECK(b[std::size_t(j * 3 + i)] == a[std::size_t(i * 4 + j)]);
}

TEST_CASE("strided copy: empty and single-element copies") {
  std::array<std::byte, 16> a{}, b{};
  a.fill(std::byte{5});
  b.fill(std::byte{9});
  const idx zero[2] = {3, 0}, s[2] = {8, 2};
  auto op = halox::detail::make_copy_op(a.data(), b.data(), 2, 2, zero, s, s, loop_order::by_src);
  halox::detail::run(op);
  CHECK(std::all_of(b.begin(), b.end(), [](std::byte x) { return x == std::byte{9}; }));
  const idx one[2] = {1, 1};
  op = halox::detail::make_copy_op(a.data(), b.data() + 4, 2, 12, one, s, s, loop_order::by_src);
  halox::detail::run(op);
  for (int k = 0; k < 16; ++k) CHECK(b[std::size_t(k)] == std::byte(k >= 4 && k < 16 ? 5 : 9));
}
