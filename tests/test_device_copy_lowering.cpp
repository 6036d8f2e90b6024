// Unit tests of the GPU copy engine's lowering (src/pack/device_copy_lowering.hpp), on the CPU:
// the tables it makes are checked against independent counts, and run on the host by a plain
// interpreter of the kernel's rules, against the host copy engine (detail::run, gather,
// scatter) on the same memory.
#include <catch2/catch.hpp>
#include "pack/strided_copy.hpp"

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "pack/device_copy_lowering.hpp"

using idx = halox::index;
using halox::detail::copy_descriptor;
using halox::detail::copy_op;
using halox::detail::copy_table;
using halox::detail::gather_op;
using halox::detail::lower;
using halox::detail::max_copy_dims;
using halox::detail::tile_elems;

namespace {

// Where element `e` of `d` is read and written, as the kernel finds it (with plain division).
void locate(const copy_descriptor& d, long long e, const unsigned char*& s, unsigned char*& t) {
  if (d.kind == halox::detail::strided_kind) {
    s = d.src;
    t = d.dst;
    for (int k = d.ndims - 1; k >= 0; --k) {
      const long long i = k > 0 ? e % d.count[k] : e;
      e = k > 0 ? e / d.count[k] : 0;
      s += i * d.src_stride[k];
      t += i * d.dst_stride[k];
    }
    return;
  }
  const long long in_field = d.idx[e / d.ncomp] * d.entity_stride + e % d.ncomp * d.comp_stride;
  const bool gather = d.kind == halox::detail::gather_kind;
  s = d.src + (gather ? in_field : e * d.elem);
  t = d.dst + (gather ? e * d.elem : in_field);
}

// Runs a lowered table on the host: every tile, as a block of the kernel would.
void interpret(const copy_table& t) {
  for (const auto& tile : t.tiles) {
    const copy_descriptor& d = t.copies[std::size_t(tile.copy)];
    const long long begin = tile.tile * tile_elems;
    for (long long e = begin; e < std::min(begin + tile_elems, d.total); ++e) {
      const unsigned char* s;
      unsigned char* w;
      locate(d, e, s, w);
      std::memcpy(w, s, std::size_t(d.unit) * std::size_t(d.words));
    }
  }
}

// The table's own consistency, against counts made from the descriptors independently.
void check_tiles(const copy_table& t) {
  std::size_t expected = 0;
  for (const auto& d : t.copies) expected += std::size_t((d.total + tile_elems - 1) / tile_elems);
  REQUIRE(t.tiles.size() == expected);
  std::set<std::pair<int, int>> seen;  // every (copy, tile) exactly once
  double last = 0;                     // in order of relative position in the copy
  for (const auto& tile : t.tiles) {
    REQUIRE(tile.copy >= 0);
    REQUIRE(std::size_t(tile.copy) < t.copies.size());
    const auto& d = t.copies[std::size_t(tile.copy)];
    const long long n = (d.total + tile_elems - 1) / tile_elems;
    REQUIRE(tile.tile < n);
    CHECK(seen.insert({tile.copy, tile.tile}).second);
    const double at = (tile.tile + 0.5) / double(n);
    CHECK(at >= last);
    last = at;
  }
}

// The multiply-and-shift divisions equal plain division for every dimension.
void check_divisors(const copy_table& t, std::mt19937& rng) {
  for (const auto& d : t.copies) {
    if (d.kind != halox::detail::strided_kind || d.total > 0xffffffffLL) continue;
    for (int k = 0; k < d.ndims; ++k) {
      const auto div = std::uint64_t(std::max<long long>(1, d.count[k]));
      for (int r = 0; r < 50; ++r) {
        const std::uint32_t n = r < 3 ? std::uint32_t(r) : std::uint32_t(rng());
        const auto t32 = std::uint32_t((std::uint64_t(d.magic[k]) * n) >> 32);
        const std::uint32_t q = (t32 + ((n - t32) >> d.shift1[k])) >> d.shift2[k];
        REQUIRE(q == n / div);
      }
    }
  }
}

// A random box of a 3-D array of `elem`-byte elements, the array at `base` (row-major).
struct block {
  std::size_t offset = 0;  // bytes from the array's start to the box's first element
  idx stride[3] = {};      // bytes
  idx count[3] = {};       // elements
};
block random_block(std::mt19937& rng, const idx (&dims)[3], const idx (&count)[3],
                   std::size_t elem) {
  block b;
  b.stride[2] = idx(elem);
  b.stride[1] = dims[2] * idx(elem);
  b.stride[0] = dims[1] * b.stride[1];
  for (int k = 0; k < 3; ++k) {
    b.count[k] = count[k];
    b.offset += std::size_t(idx(rng() % std::uint32_t(dims[k] - count[k] + 1)) * b.stride[k]);
  }
  return b;
}

struct case_data {
  std::vector<unsigned char> src, dst;
  std::vector<copy_op> copies;
};

// Copies of random boxes between two arrays; element sizes that take every word width and
// several words per element; unaligned bases where the element allows.
case_data random_copies(std::mt19937& rng, int n) {
  const idx dims[3] = {9, 7, 11};
  const std::size_t elems[] = {1, 2, 4, 8, 12, 16, 24};
  const std::size_t bytes = std::size_t(dims[0] * dims[1] * dims[2]) * 24 + 64;
  case_data c{std::vector<unsigned char>(bytes), std::vector<unsigned char>(bytes), {}};
  for (auto& b : c.src) b = static_cast<unsigned char>(rng());
  for (auto& b : c.dst) b = static_cast<unsigned char>(rng());
  for (int i = 0; i < n; ++i) {
    const std::size_t elem = elems[rng() % std::size(elems)];
    const idx count[3] = {idx(1 + rng() % 9), idx(1 + rng() % 7), idx(1 + rng() % 11)};
    const block s = random_block(rng, dims, count, elem), d = random_block(rng, dims, count, elem);
    const std::size_t shift = rng() % 2 ? 0 : elem;  // a base not 16-byte aligned, sometimes
    c.copies.push_back(halox::detail::make_copy_op(
        reinterpret_cast<const std::byte*>(c.src.data() + shift + s.offset),
        reinterpret_cast<std::byte*>(c.dst.data() + shift + d.offset), 3, elem, count, s.stride,
        d.stride, halox::detail::loop_order::by_src));
  }
  return c;
}

}  // namespace

TEST_CASE("lowering: random strided copies move the bytes the host engine moves") {
  std::mt19937 rng(1616);
  for (int round = 0; round < 60; ++round) {
    // One copy at a time (a later copy may overwrite an earlier one's destination: the kernel
    // gives no order between copies of one list), then a whole list of disjoint-or-not copies
    // checked only for its counts.
    case_data c = random_copies(rng, 1);
    const auto before = c.dst;
    for (const auto& op : c.copies) halox::detail::run(op);
    const auto reference = c.dst;
    c.dst = before;
    const copy_table t = lower(c.copies, {}, halox::detail::gather_kind);
    interpret(t);
    REQUIRE(c.dst == reference);
    check_tiles(t);
    check_divisors(t, rng);
    std::size_t moved = 0;  // bytes: elements of every input copy times their size
    for (const auto& op : c.copies) {
      std::size_t n = op.ndims > 0 ? 1 : 0;
      for (int k = 0; k < op.ndims; ++k) n *= std::size_t(op.count[std::size_t(k)]);
      moved += n * op.elem;
    }
    CHECK(t.bytes == moved);

    const case_data many = random_copies(rng, 12);
    const copy_table all = lower(many.copies, {}, halox::detail::gather_kind);
    check_tiles(all);
    check_divisors(all, rng);
    CHECK(all.copies.size() + std::size_t(all.pairs) == many.copies.size());
  }
}

TEST_CASE("lowering: contiguous rows move as wide words") {
  // Rows of 4 doubles at 16-byte-aligned offsets: 2 uint4 words per row instead of 4 doubles.
  alignas(16) double a[6 * 8] = {}, b[6 * 8] = {};
  for (int i = 0; i < 48; ++i) a[i] = i;
  const idx count[2] = {6, 4}, stride[2] = {64, 8};
  const auto op = halox::detail::make_copy_op(reinterpret_cast<const std::byte*>(a),
                                              reinterpret_cast<std::byte*>(b), 2, 8, count, stride,
                                              stride, halox::detail::loop_order::by_src);
  const copy_table t = lower({op}, {}, halox::detail::gather_kind);
  REQUIRE(t.copies.size() == 1);
  CHECK(t.copies[0].unit == 16);
  CHECK(t.copies[0].total == 12);
  CHECK(t.plain);
  CHECK(t.bytes == 6 * 4 * 8);
  interpret(t);
  for (int r = 0; r < 6; ++r)
    for (int i = 0; i < 8; ++i) CHECK(b[r * 8 + i] == (i < 4 ? a[r * 8 + i] : 0.0));
}

TEST_CASE("lowering: the two copies of a periodic wrap pair into one") {
  // One rank holds the whole innermost dimension: 5 cells and a halo of one on each side, per
  // row. The low halo (cell 0) takes cell 5; the high halo (cell 6) takes cell 1. Cell 0 and
  // cell 1 share a sector: one copy of two, its pair strides the distance between the two.
  constexpr int rows = 40, row = 7;
  std::vector<double> f(rows * row);
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = double(i);
  auto column = [&](int from, int to) {
    const idx count[2] = {rows, 1}, stride[2] = {row * 8, 8};
    return halox::detail::make_copy_op(reinterpret_cast<const std::byte*>(&f[std::size_t(from)]),
                                       reinterpret_cast<std::byte*>(&f[std::size_t(to)]), 2, 8,
                                       count, stride, stride, halox::detail::loop_order::by_src);
  };
  const std::vector<copy_op> wrap = {column(5, 0), column(1, 6)};
  const copy_table t = lower(wrap, {}, halox::detail::gather_kind);
  CHECK(t.pairs == 1);
  REQUIRE(t.copies.size() == 1);
  CHECK(t.copies[0].total == 2 * rows);
  CHECK(t.bytes == 2 * rows * 8);
  CHECK(t.tiles.size() == 1);  // 80 elements: one tile
  std::mt19937 rng(5);
  check_divisors(t, rng);
  interpret(t);
  for (int r = 0; r < rows; ++r) {
    CHECK(f[std::size_t(r * row)] == double(r * row + 5));
    CHECK(f[std::size_t(r * row + 6)] == double(r * row + 1));
  }
}

TEST_CASE("lowering: gathers and scatters share index lists and match the host engine") {
  // 30 entities of 3 components (float), entity-major; two fields gathered by one index list.
  std::vector<float> f1(90), f2(90);
  for (std::size_t i = 0; i < 90; ++i) f1[i] = float(i), f2[i] = float(1000 + i);
  const std::vector<idx> ids = {4, 17, 0, 29, 3, 3, 12};
  std::vector<float> b1(ids.size() * 3, -1), b2(ids.size() * 3, -1), r1 = b1, r2 = b2;
  auto op = [&](std::vector<float>& f, std::vector<float>& buf) {
    gather_op g;
    g.field = reinterpret_cast<std::byte*>(f.data());
    g.idx = ids.data();
    g.n = idx(ids.size());
    g.elem = sizeof(float);
    g.ncomp = 3;
    g.entity_stride = 12;
    g.comp_stride = 4;
    g.buf = reinterpret_cast<std::byte*>(buf.data());
    return g;
  };
  halox::detail::gather(op(f1, r1));
  halox::detail::gather(op(f2, r2));
  const copy_table t = lower({}, {op(f1, b1), op(f2, b2)}, halox::detail::gather_kind);
  CHECK(t.indices.size() == ids.size());  // the one list, once
  CHECK(t.copies.size() == 2);
  CHECK(!t.plain);
  CHECK(t.bytes == 2 * ids.size() * 3 * sizeof(float));
  check_tiles(t);
  interpret(t);
  CHECK(b1 == r1);
  CHECK(b2 == r2);

  // Back again: scatter the buffers into zeroed fields, by the host engine and the table.
  std::vector<float> s1(90, 0), s2(90, 0);
  halox::detail::scatter(op(s1, r1));
  const copy_table back = lower({}, {op(f1, b1)}, halox::detail::scatter_kind);
  std::fill(f1.begin(), f1.end(), 0.0f);
  interpret(back);
  CHECK(f1 == s1);
}
