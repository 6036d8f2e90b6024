// Lowering of copy lists to the fused copy kernel's tables (see device_copy_lowering.hpp).
#include "pack/device_copy_lowering.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <utility>

namespace halox::detail {

namespace {

// The widest power of two (<= 16) that divides the element size, every stride and both bases.
int unit_of(const copy_op& op) {
  const std::uint64_t bits = alignment_bits(op) | 16;
  return int(bits & (~bits + 1));  // lowest set bit
}
int unit_of(const gather_op& op) {
  const std::uint64_t bits = op.elem | reinterpret_cast<std::uintptr_t>(op.field) |
                             reinterpret_cast<std::uintptr_t>(op.buf) |
                             std::uint64_t(op.entity_stride) | std::uint64_t(op.comp_stride) | 16;
  return int(bits & (~bits + 1));
}

// Every dimension's divisor (strided copies of fewer than 2^32 elements).
void set_divisors(copy_descriptor& d) {
  for (int k = 0; k < d.ndims; ++k)
    set_divisor(d, k, std::uint64_t(std::max<long long>(1, d.count[k])));
}

// A plain copy whose innermost dimension is contiguous on both sides moves that row as bytes,
// in the widest words (<= 16 B) that divide the row, both bases and every outer stride: rows of
// doubles at 16-byte-aligned offsets move as uint4, one word per element of the kernel.
void as_wide_words(const copy_op& op, copy_descriptor& d) {
  const int in = op.ndims - 1;
  const auto elem = index(op.elem);
  if (op.src_stride[in] != elem || op.dst_stride[in] != elem) return;
  const index row = op.count[in] * elem;
  std::uint64_t bits = std::uint64_t(row) | reinterpret_cast<std::uintptr_t>(op.src) |
                       reinterpret_cast<std::uintptr_t>(op.dst) | 16;
  for (int k = 0; k < in; ++k)
    bits |= std::uint64_t(op.src_stride[k]) | std::uint64_t(op.dst_stride[k]);
  const auto unit = index(bits & (~bits + 1));
  d.unit = int(unit);
  d.words = 1;
  d.count[in] = row / unit;
  d.src_stride[in] = d.dst_stride[in] = unit;
  d.total = d.total / op.count[in] * d.count[in];
}

// A strided copy as the kernel reads it.
copy_descriptor lower_copy(const copy_op& op) {
  copy_descriptor d{};
  d.src = reinterpret_cast<const unsigned char*>(op.src);
  d.dst = reinterpret_cast<unsigned char*>(op.dst);
  d.ndims = op.ndims;
  d.total = 1;
  for (int k = 0; k < op.ndims; ++k) {
    d.count[k] = op.count[k];
    d.src_stride[k] = op.src_stride[k];
    d.dst_stride[k] = op.dst_stride[k];
    d.total *= op.count[k];
  }
  d.unit = unit_of(op);
  d.words = int(op.elem / std::size_t(d.unit));
  d.flagged = op.flagged;
  if (op.dev_reduce.op == 0 && op.flagged == 0) as_wide_words(op, d);
  if (d.total <= 0xffffffffLL) set_divisors(d);
  d.red_op = op.dev_reduce.op;
  d.red_type = op.dev_reduce.type;
  return d;
}

// The gathers (or scatters) as the kernel reads them, appended to `t.copies`; their index lists
// go into `t.indices`, each once however many fields use it.
void lower_gathers(const std::vector<gather_op>& gathers, copy_kind gather_as, copy_table& t) {
  std::vector<std::pair<const index*, std::size_t>> seen;
  std::vector<std::size_t> idx_at;
  for (const auto& g : gathers) {
    auto it =
        std::find_if(seen.begin(), seen.end(), [&](const auto& p) { return p.first == g.idx; });
    if (it == seen.end()) {
      seen.push_back({g.idx, t.indices.size()});
      t.indices.insert(t.indices.end(), g.idx, g.idx + g.n);
      it = seen.end() - 1;
    }
    idx_at.push_back(it->second);
  }
  for (std::size_t k = 0; k < gathers.size(); ++k) {
    const auto& g = gathers[k];
    if (g.n == 0) continue;
    copy_descriptor d{};
    d.kind = gather_as;
    d.src = reinterpret_cast<const unsigned char*>(gather_as == gather_kind ? g.field : g.buf);
    d.dst = reinterpret_cast<unsigned char*>(gather_as == gather_kind ? g.buf : g.field);
    d.idx = t.indices.data() + idx_at[k];
    d.ncomp = g.ncomp;
    d.entity_stride = g.entity_stride;
    d.comp_stride = g.comp_stride;
    d.elem = (long long)g.elem;
    d.total = g.n * g.ncomp;
    d.red_op = g.dev_reduce.op;
    d.red_type = g.dev_reduce.type;
    d.unit = unit_of(g);
    d.words = int(g.elem / std::size_t(d.unit));
    t.copies.push_back(d);
  }
}

// Tiles in order of their relative position in their copy, so that every copy advances at the
// same rate: each wave of blocks mixes every kind of copy (writes to a peer's GPU over NVLink
// overlap the local copies instead of all coming last).
std::vector<tile_entry> order_tiles(const std::vector<copy_descriptor>& copies) {
  struct slot {
    double at;
    int copy, tile;
  };
  std::vector<slot> order;
  for (std::size_t k = 0; k < copies.size(); ++k) {
    const long long count = (copies[k].total + tile_elems - 1) / tile_elems;
    for (long long i = 0; i < count; ++i)
      order.push_back({(double(i) + 0.5) / double(count), int(k), int(i)});
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const slot& a, const slot& b) { return a.at < b.at; });
  std::vector<tile_entry> tiles;
  tiles.reserve(order.size());
  for (const auto& o : order) tiles.push_back(tile_entry{o.copy, o.tile});
  return tiles;
}

// Copies whose rows are narrower than a 32-byte sector (see pair_adjacent()).
bool narrow_rows(const copy_descriptor& d) {
  const int in = d.ndims - 1;
  const bool contiguous = d.src_stride[in] == d.unit && d.dst_stride[in] == d.unit;
  return (contiguous ? d.count[in] * d.unit : d.unit) < 32;
}

// Copies of one shape: rank, word, extents and strides (a stride counts only where its extent
// is above one).
using shape_key = std::array<long long, 2 + 3 * max_copy_dims>;
shape_key shape_of(const copy_descriptor& d) {
  shape_key k{};
  k[0] = d.ndims;
  k[1] = d.unit;
  for (int i = 0; i < d.ndims; ++i) {
    k[std::size_t(2 + 3 * i)] = d.count[i];
    k[std::size_t(3 + 3 * i)] = d.count[i] > 1 ? d.src_stride[i] : 0;
    k[std::size_t(4 + 3 * i)] = d.count[i] > 1 ? d.dst_stride[i] : 0;
  }
  return k;
}

// Addresses as integers: the two copies may lie in different allocations.
long long distance(const unsigned char* to, const unsigned char* from) {
  return static_cast<long long>(reinterpret_cast<std::uintptr_t>(to) -
                                reinterpret_cast<std::uintptr_t>(from));
}
bool near(const unsigned char* a, const unsigned char* b) {
  return std::abs(distance(a, b)) < 32;
}

// Makes `a` copy `b` too, in a dimension of two (its strides: the distance between the two).
// False where `a` has no dimension left for it.
bool merge_pair(copy_descriptor& a, const copy_descriptor& b) {
  int in = a.ndims - 1;  // the pair dimension: the innermost if it has one element
  if (a.count[in] != 1) {
    if (a.ndims == max_copy_dims) return false;
    in = a.ndims++;
  }
  a.count[in] = 2;
  a.src_stride[in] = distance(b.src, a.src);
  a.dst_stride[in] = distance(b.dst, a.dst);
  a.total *= 2;
  set_divisors(a);
  return true;
}

}  // namespace

bool plain_copy(const copy_descriptor& d) {
  return d.kind == strided_kind && d.red_op == 0 && d.flagged == 0 && d.words == 1 &&
         d.total <= 0xffffffffLL;
}

// Division of 32-bit unsigned numbers by a fixed divisor without a division instruction (the
// round-up method of Granlund and Montgomery, exact for every 32-bit numerator): for divisor d
// >= 1 and l = ceil(log2 d), magic = floor(2^32 (2^l - d) / d) + 1, then
// n / d = (t + ((n - t) >> min(l, 1))) >> max(l - 1, 0) with t = the high half of magic * n.
void set_divisor(copy_descriptor& d, int k, std::uint64_t divisor) {
  int l = 0;
  while ((std::uint64_t(1) << l) < divisor) ++l;
  d.magic[k] =
      unsigned(((std::uint64_t(1) << 32) * ((std::uint64_t(1) << l) - divisor)) / divisor + 1);
  d.shift1[k] = static_cast<unsigned char>(l < 1 ? l : 1);
  d.shift2[k] = static_cast<unsigned char>(l > 1 ? l - 1 : 0);
}

// Copies whose rows are narrower than a 32-byte sector (the faces across the contiguous
// dimension: one or two doubles per row, rows 2 KB apart at 256³) read and write a sector per
// row each. Where two such copies of one shape lie next to each other — one's destination
// within 32 bytes of the other's source, as in the periodic wrap of a dimension one rank holds
// entirely: the low halo and the cells that go to the high halo share sectors, and the other
// way round — they become one copy with an innermost dimension of two (its strides: the
// distance between the two). Adjacent threads of a warp then copy the same row of both, so
// each sector is read and written by one instruction pair rather than by two blocks at
// different times (measured in docs/performance.md).
int pair_adjacent(std::vector<copy_descriptor>& copies) {
  auto eligible = [](const copy_descriptor& d) {
    return plain_copy(d) && d.total <= 0x7fffffffLL && narrow_rows(d);  // (plain once doubled)
  };
  std::map<shape_key, std::vector<std::size_t>> shapes;
  for (std::size_t i = 0; i < copies.size(); ++i)
    if (eligible(copies[i])) shapes[shape_of(copies[i])].push_back(i);
  std::vector<char> merged(copies.size(), 0);
  int pairs = 0;
  for (const auto& [shape, members] : shapes)
    for (std::size_t x = 0; x < members.size(); ++x) {
      copy_descriptor& a = copies[members[x]];
      if (merged[members[x]]) continue;
      for (std::size_t y = x + 1; y < members.size(); ++y) {
        const copy_descriptor& b = copies[members[y]];
        if (merged[members[y]] || !(near(a.dst, b.src) || near(b.dst, a.src))) continue;
        if (!merge_pair(a, b)) break;
        merged[members[y]] = 1;
        ++pairs;
        break;
      }
    }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < copies.size(); ++i)
    if (!merged[i]) copies[kept++] = copies[i];
  copies.resize(kept);
  return pairs;
}

copy_table lower(const std::vector<copy_op>& list, const std::vector<gather_op>& gathers,
                 copy_kind gather_as) {
  copy_table t;
  lower_gathers(gathers, gather_as, t);
  for (const auto& op : list)
    if (op.ndims != 0) t.copies.push_back(lower_copy(op));  // ((no dimension: an empty copy))
  t.pairs = pair_adjacent(t.copies);
  for (const auto& d : t.copies) t.bytes += std::size_t(d.total) * std::size_t(d.unit * d.words);
  t.plain = std::all_of(t.copies.begin(), t.copies.end(), plain_copy);
  t.tiles = order_tiles(t.copies);
  return t;
}

}  // namespace halox::detail
