// The NCCL zero-copy cut (src/transport/nccl_pieces.hpp): which side of a message may hand NCCL
// its fields' memory, and the pieces both sides cut it into, checked against hand-made layouts.
#include <catch2/catch.hpp>

#include <cstddef>
#include <vector>

#include "transport/nccl_pieces.hpp"

namespace {

using halox::detail::copy_op;
using halox::detail::cut_message;
using halox::detail::describe_side;
using halox::detail::gather_op;
using halox::detail::message;
using halox::detail::nccl_direct_step;
using halox::detail::nccl_side;

// A 2-D copy of `rows` x `cols` doubles between a field with row pitch `pitch` (elements) and a
// packed buffer; `sending`: field -> buffer.
copy_op rows_op(std::byte* field, std::byte* buf, long rows, long cols, long pitch, bool sending) {
  copy_op op;
  op.ndims = 2;
  op.elem = sizeof(double);
  op.count = {rows, cols, 0, 0, 0};
  const std::array<halox::index, 5> packed{cols * 8, 8, 0, 0, 0}, strided{pitch * 8, 8, 0, 0, 0};
  op.src = sending ? field : buf;
  op.dst = sending ? buf : field;
  op.src_stride = sending ? strided : packed;
  op.dst_stride = sending ? packed : strided;
  return op;
}

alignas(64) std::byte field_mem[1 << 16];
alignas(64) std::byte buf_mem[1 << 16];

}  // namespace

TEST_CASE("a side is direct only where its regions are contiguous, plain and tile the message") {
  std::vector<nccl_direct_step> steps;
  // Two full-width row slabs (contiguous) packed one after the other: direct, two steps.
  std::vector<copy_op> ops{rows_op(field_mem, buf_mem, 2, 16, 16, true),
                           rows_op(field_mem + 1024, buf_mem + 256, 3, 16, 16, true)};
  const message m{1, 0, 256 + 384};
  nccl_side s = describe_side(ops, {}, true, buf_mem, m, steps);
  REQUIRE(s.direct);
  REQUIRE(s.edges == std::vector<std::uint64_t>{0, 256, 640});
  REQUIRE(steps.size() == 2);
  REQUIRE(steps[1].field == field_mem + 1024);
  REQUIRE(steps[1].bytes == 384);

  // Rows narrower than the pitch are not one range: packed.
  ops[1] = rows_op(field_mem + 1024, buf_mem + 256, 3, 16, 18, true);
  REQUIRE_FALSE(describe_side(ops, {}, true, buf_mem, m, steps).direct);
  // ... unless there is a single row.
  ops[1] = rows_op(field_mem + 1024, buf_mem + 256, 1, 48, 50, true);
  REQUIRE(describe_side(ops, {}, true, buf_mem, m, steps).direct);

  // A reduction, an index list, or a gap in the message: packed.
  std::vector<copy_op> red{rows_op(field_mem, buf_mem, 2, 16, 16, false)};
  red[0].reduce = [](std::byte*, const std::byte*, halox::index, halox::index, halox::index) {};
  REQUIRE_FALSE(describe_side(red, {}, false, buf_mem, {0, 0, 256}, steps).direct);
  gather_op g;
  g.buf = buf_mem + 8;
  REQUIRE_FALSE(describe_side({rows_op(field_mem, buf_mem, 2, 16, 16, true)}, {g}, true, buf_mem,
                              {0, 0, 256}, steps)
                    .direct);
  REQUIRE_FALSE(describe_side({rows_op(field_mem, buf_mem, 2, 16, 16, true)}, {}, true, buf_mem,
                              {0, 0, 512}, steps)
                    .direct);
  // Steps of other messages are ignored: the message at offset 256 holds one step.
  nccl_side t = describe_side(ops, {}, true, buf_mem, {1, 256, 384}, steps);
  REQUIRE(t.direct);
  REQUIRE(t.edges == std::vector<std::uint64_t>{0, 384});
}

TEST_CASE("misaligned direct steps are allowed only while small") {
  std::vector<nccl_direct_step> steps;
  // A row starting one element (8 bytes) into the field: misaligned for NCCL's 16-byte copies.
  const copy_op small = rows_op(field_mem + 8, buf_mem, 1, 100, 102, true);
  REQUIRE(describe_side({small}, {}, true, buf_mem, {0, 0, 800}, steps).direct);
  copy_op big = small;
  big.count = {1, long(halox::detail::nccl_unaligned_max / 8 + 2), 0, 0, 0};
  const std::uint64_t bytes = halox::detail::nccl_unaligned_max + 16;
  REQUIRE_FALSE(describe_side({big}, {}, true, buf_mem, {0, 0, bytes}, steps).direct);
}

TEST_CASE("both sides cut a message at the edges of the direct sides") {
  nccl_side packed, two{true, {0, 256, 640}}, three{true, {0, 128, 256, 640}};
  // Neither side direct: one piece.
  auto c = cut_message(packed, packed, 640);
  REQUIRE(c.pieces.size() == 1);
  REQUIRE_FALSE(c.sender_direct);
  REQUIRE_FALSE(c.receiver_direct);
  // One side direct: its edges, the other side reads its buffer at the same places.
  c = cut_message(two, packed, 640);
  REQUIRE(c.pieces.size() == 2);
  REQUIRE(c.pieces[1].offset == 256);
  REQUIRE(c.pieces[1].bytes == 384);
  REQUIRE(c.sender_direct);
  REQUIRE_FALSE(c.receiver_direct);
  // Both direct with different steps: the union of the edges, tiling the message.
  c = cut_message(two, three, 640);
  REQUIRE(c.pieces.size() == 3);
  REQUIRE(c.pieces[0].bytes == 128);
  REQUIRE(c.pieces[1].bytes == 128);
  REQUIRE(c.pieces[2].bytes == 384);
  std::uint64_t at = 0;
  for (const auto& p : c.pieces) {
    REQUIRE(p.offset == at);
    at += p.bytes;
  }
  REQUIRE(at == 640);
  REQUIRE((c.sender_direct && c.receiver_direct));
}

TEST_CASE("a cut into too many pieces moves the message whole") {
  nccl_side many{true, {}}, one{true, {0, 4096}};
  for (std::uint64_t e = 0; e < 4096; e += 256) many.edges.push_back(e);
  many.edges.push_back(4096);
  nccl_side other = many;
  for (auto& e : other.edges)
    if (e % 512 == 256) e += 16;  // 16 more edges: 31 pieces together
  auto c = cut_message(many, other, 4096);
  REQUIRE(c.pieces.size() == 1);
  REQUIRE_FALSE(c.sender_direct);
  REQUIRE_FALSE(c.receiver_direct);
  // A single-step side adds no edge: the other side's 16 pieces stay, both direct.
  c = cut_message(one, other, 4096);
  REQUIRE(c.pieces.size() == 16);
  REQUIRE((c.sender_direct && c.receiver_direct));
}
