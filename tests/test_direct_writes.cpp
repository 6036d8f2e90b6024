// Direct writes (src/program/direct_writes.hpp): the matcher that shared memory and CUDA IPC
// share. Two programs, built by the program builder as two ranks would (rank 0 sends the east
// columns of two fields to rank 1, whose west halo receives them): the receiver's halo regions
// fused with the sender's owned regions must copy exactly what a pack, the message and an
// unpack would, and exactly into the halo; the other way round (shared memory's receiver copy)
// too; and any disagreement (shape, offset, a region too many or too few, memory that is not
// exported or cannot be mapped, steps that combine) must leave the message to its buffers.
// Values encode global coordinates; every cell outside the halo must keep its sentinel.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include <halox/exchange/program_builder.hpp>
#include <halox/pack/strided_copy.hpp>

#include "program/direct_writes.hpp"
#include "program/placement.hpp"

namespace {

namespace hd = halox::detail;
using hd::copy_op;
using hd::direct_region;
using hd::export_handle;
using hd::step_kind;

constexpr long nx = 5, ny = 4, h = 2, w = 2;  // owned extents, padding, halo width
constexpr long W = nx + 2 * h, H = ny + 2 * h;  // allocated extents
constexpr int ncomp = 2;                        // components of the second field
constexpr double sentinel = -1;

// What each rank holds: a scalar double field and a two-component int field, [y][x][c].
struct rank_fields {
  std::vector<double> a = std::vector<double>(std::size_t(W * H), sentinel);
  std::vector<std::int32_t> b = std::vector<std::int32_t>(std::size_t(W * H * ncomp), -1);
};

double value_a(long gx, long gy) {
  return 1000.0 * double(gx) + double(gy);
}
std::int32_t value_b(long gx, long gy, int c) {
  return std::int32_t(100000 * c + 100 * gx + gy);
}

// Rank 0 owns global x in [0, nx), rank 1 [nx, 2 nx); both own y in [0, ny).
void fill_owned(rank_fields& f, long x0) {
  for (long y = 0; y < ny; ++y)
    for (long x = 0; x < nx; ++x) {
      const std::size_t at = std::size_t((y + h) * W + x + h);
      f.a[at] = value_a(x0 + x, y);
      for (int c = 0; c < ncomp; ++c) f.b[at * ncomp + std::size_t(c)] = value_b(x0 + x, y, c);
    }
}

// A 2-D step of field `a` (3-D with the components of `b`) between the columns [x, x + w) of a
// field and a packed buffer (set by the builder); `pack`: field to buffer.
copy_op step(std::byte* field, std::size_t elem, int comps, long x, bool pack) {
  copy_op op;
  const auto e = long(elem);
  op.elem = elem;
  op.ndims = comps > 1 ? 3 : 2;
  op.count = {ny, w, comps, 0, 0};
  const std::array<halox::index, 5> strided{W * comps * e, comps * e, e, 0, 0},
      packed{w * comps * e, comps * e, e, 0, 0};
  std::byte* at = field + std::size_t((h * W + x + h) * comps * e);
  if (pack) {
    op.src = at;
    op.src_stride = strided;
    op.dst_stride = packed;
  } else {
    op.dst = at;
    op.src_stride = packed;
    op.dst_stride = strided;
  }
  return op;
}

// The program of one rank of the pair: rank 0 packs its owned east columns, rank 1 unpacks into
// its west halo; a step with no dimension between the two, as the compiler may emit.
hd::exchange_program program(rank_fields& f, bool sender, bool combine = false) {
  hd::program_builder b{halox::exchange_options{}};
  const auto side = sender ? hd::program_builder::send : hd::program_builder::recv;
  const long x = sender ? nx - w : -w;
  b.begin(side, sender ? 1 : 0);
  copy_op first = step(reinterpret_cast<std::byte*>(f.a.data()), sizeof(double), 1, x, sender);
  if (combine) first.dev_reduce.op = 1;
  b.add(side, first, std::size_t(ny * w) * sizeof(double));
  b.add(side, copy_op{}, 0);
  b.add(side, step(reinterpret_cast<std::byte*>(f.b.data()), 4, ncomp, x, sender),
        std::size_t(ny * w * ncomp) * 4);
  return b.finish({halox::memory_space::host, halox::memory_space::host}, false);
}

// Exported memory, as a transport sees it: the handle names the rank and the field.
struct exports {
  rank_fields* fields[2] = {nullptr, nullptr};
  bool exported = true, mappable = true;

  hd::find_export find(int rank) const {
    return [this, rank](const std::byte* p, export_handle& block, const std::byte*& base) {
      const auto* a = reinterpret_cast<const std::byte*>(fields[rank]->a.data());
      const auto* b = reinterpret_cast<const std::byte*>(fields[rank]->b.data());
      const bool in_a = p >= a && p < a + fields[rank]->a.size() * sizeof(double);
      const bool in_b = p >= b && p < b + fields[rank]->b.size() * 4;
      if (!exported || !(in_a || in_b)) return false;
      std::memset(block.bytes, 0, sizeof block.bytes);
      block.bytes[0] = static_cast<unsigned char>(rank);
      block.bytes[1] = in_a ? 0 : 1;
      base = in_a ? a : b;
      return true;
    };
  }
  hd::map_export map() const {
    return [this](const export_handle& block) -> std::byte* {
      if (!mappable) return nullptr;
      rank_fields* f = fields[block.bytes[0]];
      return block.bytes[1] == 0 ? reinterpret_cast<std::byte*>(f->a.data())
                                 : reinterpret_cast<std::byte*>(f->b.data());
    };
  }
};

// Rank 1's fields hold its own values, rank 0's in the west halo, the sentinel elsewhere.
void check_receiver(const rank_fields& f) {
  for (long y = -h; y < ny + h; ++y)
    for (long x = -h; x < nx + h; ++x) {
      const std::size_t at = std::size_t((y + h) * W + x + h);
      const bool owned = x >= 0 && x < nx && y >= 0 && y < ny;
      const bool halo = x >= -w && x < 0 && y >= 0 && y < ny;
      INFO("x " << x << " y " << y);
      REQUIRE(f.a[at] == (owned || halo ? value_a(nx + x, y) : sentinel));
      for (int c = 0; c < ncomp; ++c)
        REQUIRE(f.b[at * ncomp + std::size_t(c)] ==
                (owned || halo ? value_b(nx + x, y, c) : std::int32_t(-1)));
    }
}

void run_all(const std::vector<copy_op>& ops) {
  for (const auto& op : ops) hd::run(op);
}

struct pair_setup {
  rank_fields f0, f1;
  hd::exchange_program sender = program(f0, true), receiver = program(f1, false);
  exports ex;
  pair_setup() {
    fill_owned(f0, 0);
    fill_owned(f1, nx);
    ex.fields[0] = &f0;
    ex.fields[1] = &f1;
  }
  hd::message_steps pack() const { return hd::host_message_steps(sender, step_kind::pack, 0); }
  hd::message_steps unpack() const {
    return hd::host_message_steps(receiver, step_kind::unpack, 0);
  }
};

}  // namespace

TEST_CASE("direct writes: the reference pack, message and unpack fill exactly the halo") {
  pair_setup s;
  for (const auto& op : s.sender.pack.copies) hd::run(op);
  std::memcpy(s.receiver.recv_buf.get(), s.sender.send_buf.get(), s.sender.sends[0].bytes);
  for (const auto& op : s.receiver.unpack.copies) hd::run(op);
  check_receiver(s.f1);
}

TEST_CASE("direct writes: the sender's fused copies write exactly the receiver's halo") {
  pair_setup s;
  REQUIRE(s.pack().ops.size() == 2);  // the step with no dimension is left out
  const auto halo = hd::describe_regions(s.unpack(), s.ex.find(1));
  REQUIRE(halo.size() == 2);
  const auto fused = hd::fuse_regions(s.pack(), halo, s.ex.map());
  REQUIRE(fused.size() == 2);
  for (const auto& op : fused) {
    CHECK(op.src != nullptr);
    CHECK(op.dst != nullptr);
  }
  run_all(fused);
  check_receiver(s.f1);
}

TEST_CASE("direct writes: the other way round, the receiver copies from the sender's field") {
  pair_setup s;
  const auto owned = hd::describe_regions(s.pack(), s.ex.find(0));
  REQUIRE(owned.size() == 2);
  const auto pulled = hd::fuse_regions(s.unpack(), owned, s.ex.map());
  REQUIRE(pulled.size() == 2);
  run_all(pulled);
  check_receiver(s.f1);
}

TEST_CASE("direct writes: placement runs the fused copies in place of the message's steps") {
  pair_setup s;
  const auto halo = hd::describe_regions(s.unpack(), s.ex.find(1));
  const auto owned = hd::describe_regions(s.pack(), s.ex.find(0));
  hd::placement where;
  where.fused_send = {hd::fuse_regions(s.pack(), halo, s.ex.map())};
  where.fused_recv = {hd::fuse_regions(s.unpack(), owned, s.ex.map())};
  REQUIRE(where.fused_send[0].size() == 2);
  REQUIRE(where.fused_recv[0].size() == 2);
  SECTION("the sender's pack") {
    const auto packed = hd::place_pack(s.sender, where);
    REQUIRE(packed.copies.size() == 3);
    CHECK(packed.copies[1].ndims == 0);  // the step with no dimension stays, copying nothing
    for (const auto& op : packed.copies) hd::run(op);
  }
  SECTION("the receiver's unpack") {
    const auto unpacked = hd::place_unpack(s.receiver, where);
    REQUIRE(unpacked.copies.size() == 3);
    for (const auto& op : unpacked.copies) hd::run(op);
  }
  check_receiver(s.f1);
}

TEST_CASE("direct writes: any disagreement leaves the message to its buffers") {
  pair_setup s;
  const auto halo = hd::describe_regions(s.unpack(), s.ex.find(1));
  REQUIRE(halo.size() == 2);
  auto refused = [&](std::vector<direct_region> regions) {
    return hd::fuse_regions(s.pack(), regions, s.ex.map()).empty();
  };
  CHECK_FALSE(refused(halo));
  auto changed = halo;
  changed[1].count[0] -= 1;
  CHECK(refused(changed));
  changed = halo;
  changed[0].buf_offset += 8;
  CHECK(refused(changed));
  changed = halo;
  changed[1].buf_stride[2] += 4;
  CHECK(refused(changed));
  changed = halo;
  changed[0].elem = 4;
  CHECK(refused(changed));
  CHECK(refused({halo[0]}));
  CHECK(refused({halo[0], halo[1], halo[1]}));
  CHECK(refused({}));
  CHECK(refused({halo[1], halo[0]}) == false);  // matched by message bytes, not by position

  s.ex.mappable = false;
  CHECK(refused(halo));
  s.ex.mappable = true;
  s.ex.exported = false;
  CHECK(hd::describe_regions(s.unpack(), s.ex.find(1)).empty());

  rank_fields f;
  const auto combining = program(f, false, true);
  CHECK(hd::host_message_steps(combining, step_kind::unpack, 0).ops.empty());
}
