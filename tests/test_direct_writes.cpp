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

#include "exchange/program_builder.hpp"
#include "pack/strided_copy.hpp"

#include "halox/field/memory.hpp"
#include "program/direct_writes.hpp"
#include "program/message_buffers.hpp"
#include "program/placement.hpp"

namespace {

namespace hd = halox::detail;
using hd::copy_op;
using hd::direct_region;
using hd::export_handle;
using hd::step_kind;

constexpr long nx = 5, ny = 4, h = 2, w = 2;    // owned extents, padding, halo width
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
// its west halo; a step with no dimension between the two, as the compiler may emit. Its steps
// point into host buffers allocated here (`bufs`), as an exchange's set-up does.
hd::exchange_program program(rank_fields& f, bool sender, hd::message_buffers& bufs,
                             bool combine = false) {
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
  hd::exchange_program layout =
      b.finish({halox::memory_space::host, halox::memory_space::host}, false);
  bufs.send = halox::detail::allocate(halox::memory_space::host, layout.send_bytes);
  bufs.recv = halox::detail::allocate(halox::memory_space::host, layout.recv_bytes);
  return hd::bind_steps(std::move(layout), bufs);
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
  hd::message_buffers sent, received;
  hd::exchange_program sender = program(f0, true, sent), receiver = program(f1, false, received);
  exports ex;
  pair_setup() {
    fill_owned(f0, 0);
    fill_owned(f1, nx);
    ex.fields[0] = &f0;
    ex.fields[1] = &f1;
  }
  hd::message_steps pack() const {
    return hd::host_message_steps(sender, step_kind::pack, 0, sent.send.get());
  }
  hd::message_steps unpack() const {
    return hd::host_message_steps(receiver, step_kind::unpack, 0, received.recv.get());
  }
};

}  // namespace

TEST_CASE("direct writes: the reference pack, message and unpack fill exactly the halo") {
  pair_setup s;
  for (const auto& op : s.sender.pack.copies) hd::run(op);
  std::memcpy(s.received.recv.get(), s.sent.send.get(), s.sender.sends[0].bytes);
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
    const auto packed = hd::place_pack(s.sender, s.sent.send.get(), where);
    REQUIRE(packed.copies.size() == 3);
    CHECK(packed.copies[1].ndims == 0);  // the step with no dimension stays, copying nothing
    for (const auto& op : packed.copies) hd::run(op);
  }
  SECTION("the receiver's unpack") {
    const auto unpacked = hd::place_unpack(s.receiver, s.received.recv.get(), where);
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
  hd::message_buffers bufs;
  const auto combining = program(f, false, bufs, true);
  CHECK(hd::host_message_steps(combining, step_kind::unpack, 0, bufs.recv.get()).ops.empty());
}

namespace {

// Runs `f(src, dst)` for every element of `op`, the innermost dimension fastest.
template <class F>
void each_element(const copy_op& op, F f) {
  halox::index total = 1;
  for (int k = 0; k < op.ndims; ++k) total *= op.count[std::size_t(k)];
  for (halox::index e = 0; e < total; ++e) {
    const std::byte* s = op.src;
    std::byte* d = op.dst;
    halox::index rest = e;
    for (int k = op.ndims - 1; k >= 0; --k) {
      const auto i = rest % op.count[std::size_t(k)];
      rest /= op.count[std::size_t(k)];
      s += i * op.src_stride[std::size_t(k)];
      d += i * op.dst_stride[std::size_t(k)];
    }
    f(s, d);
  }
}

// What the GPU kernel does with a copy of flagged words (device_copy_kernels.cu), on the host:
// each 4-byte word stored beside `seq` in an 8-byte slot, or read back from one that holds it.
void run_flagged(const copy_op& op, std::uint32_t seq) {
  REQUIRE(op.flagged != 0);
  each_element(op, [&](const std::byte* s, std::byte* d) {
    for (std::size_t j = 0; j < op.elem / 4; ++j) {
      std::uint32_t word = 0;
      std::uint64_t slot = 0;
      if (op.flagged == hd::flagged_write) {
        std::memcpy(&word, s + 4 * j, 4);
        slot = std::uint64_t(seq) << 32 | word;
        std::memcpy(d + 8 * j, &slot, 8);
      } else {
        std::memcpy(&slot, s + 8 * j, 8);
        REQUIRE(std::uint32_t(slot >> 32) == seq);  // every slot written for this exchange
        word = std::uint32_t(slot);
        std::memcpy(d + 4 * j, &word, 4);
      }
    }
  });
}

// One side's device program of the pair by hand (device steps into a buffer of its own): the
// steps of program(), buffer pointers at 64-byte-aligned offsets as the builder places them.
hd::exchange_program device_program(rank_fields& f, bool sender, std::byte* buf) {
  hd::exchange_program p;
  const long x = sender ? nx - w : -w;
  copy_op a = step(reinterpret_cast<std::byte*>(f.a.data()), sizeof(double), 1, x, sender);
  copy_op b = step(reinterpret_cast<std::byte*>(f.b.data()), 4, ncomp, x, sender);
  const std::size_t a_bytes = std::size_t(ny * w) * sizeof(double), b_at = (a_bytes + 63) / 64 * 64;
  if (sender) {
    a.dst = buf;
    b.dst = buf + b_at;
  } else {
    a.src = buf;
    b.src = buf + b_at;
  }
  const hd::message m{sender ? 1 : 0, 0, b_at + std::size_t(ny * w * ncomp) * 4};
  (sender ? p.sends : p.recvs).push_back(m);
  (sender ? p.device_pack : p.device_unpack) = {a, copy_op{}, b};
  return p;
}

}  // namespace

TEST_CASE("placement: a message of flagged words fills exactly the halo, every word checked") {
  rank_fields f0, f1;
  fill_owned(f0, 0);
  fill_owned(f1, nx);
  std::vector<std::byte> send_buf(512), recv_buf(512);
  const auto sender = device_program(f0, true, send_buf.data());
  const auto receiver = device_program(f1, false, recv_buf.data());
  CHECK(hd::flaggable(sender, true, send_buf.data(), sender.sends[0]));
  CHECK(hd::flaggable(receiver, false, recv_buf.data(), receiver.recvs[0]));

  // The receiver's buffer of flagged words: twice the message, zeroed (no slot holds a number).
  std::vector<std::uint64_t> words(receiver.recvs[0].bytes / 4, 0);
  auto* at = reinterpret_cast<std::byte*>(words.data());
  hd::placement out, in;
  out.send_at = {at};
  out.send_flagged = {1};
  in.recv_at = {at};
  in.recv_flagged = {1};
  const auto pack = hd::place_device(sender, out, send_buf.data(), nullptr).pack;
  const auto unpack = hd::place_device(receiver, in, nullptr, recv_buf.data()).unpack;
  REQUIRE(pack.size() == 3);
  REQUIRE(unpack.size() == 3);
  // Offsets and strides on the buffer side doubled; the field side as it was.
  CHECK(pack[2].dst == at + 2 * (sender.device_pack[2].dst - send_buf.data()));
  CHECK(pack[2].dst_stride[0] == 2 * sender.device_pack[2].dst_stride[0]);
  CHECK(pack[2].src_stride == sender.device_pack[2].src_stride);
  CHECK(unpack[2].src == at + 2 * (receiver.device_unpack[2].src - recv_buf.data()));
  CHECK(pack[1].ndims == 0);  // the step with no dimension stays, copying nothing
  for (const auto& op : pack)
    if (op.ndims != 0) run_flagged(op, 7);
  for (const auto& op : unpack)
    if (op.ndims != 0) run_flagged(op, 7);
  check_receiver(f1);
  // Every slot of the message's bytes was written (the read above required each one's number).
  std::size_t written = 0;
  for (auto v : words) written += (v >> 32) == 7;
  CHECK(written == std::size_t(ny * w) * 2 + std::size_t(ny * w * ncomp));
}

TEST_CASE("placement: messages whose copies are not whole 4-byte words stay plain") {
  rank_fields f;
  std::vector<std::byte> buf(512);
  auto p = device_program(f, true, buf.data());
  const auto& m = p.sends[0];
  CHECK(hd::flaggable(p, true, buf.data(), m));
  auto narrow = p;
  narrow.device_pack[0].elem = 2;
  CHECK_FALSE(hd::flaggable(narrow, true, buf.data(), m));
  auto odd_stride = p;
  odd_stride.device_pack[2].src_stride[0] += 2;
  CHECK_FALSE(hd::flaggable(odd_stride, true, buf.data(), m));
  auto combining = p;
  combining.device_pack[0].dev_reduce.op = 1;
  CHECK_FALSE(hd::flaggable(combining, true, buf.data(), m));
  auto gathered = p;
  gathered.device_gather.push_back(hd::gather_op{});
  gathered.device_gather.back().buf = buf.data() + 8;
  CHECK_FALSE(hd::flaggable(gathered, true, buf.data(), m));
  auto empty = p;
  empty.device_pack.clear();
  CHECK_FALSE(hd::flaggable(empty, true, buf.data(), m));
  CHECK_FALSE(hd::flaggable(p, false, buf.data(), m));  // no unpack step in the message
}
