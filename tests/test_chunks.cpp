// Host staging in pieces: how messages are cut and grouped into copies (pure functions), and
// persistent MPI requests per piece moving every byte to its place between ranks.
#include <catch2/catch.hpp>
#include <halox/core/error.hpp>

#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <vector>

#include "core/environment.hpp"
#include "transport/chunks.hpp"
#include "transport/mpi_channels.hpp"

using halox::detail::group_stages;
using halox::detail::message;
using halox::detail::piece;
using halox::detail::split_messages;

namespace {

// The pieces of every message cover it exactly, in order, none over the limit.
void check_cover(const std::vector<message>& msgs, const std::vector<piece>& ps,
                 std::size_t limit) {
  std::size_t k = 0;
  for (std::size_t m = 0; m < msgs.size(); ++m) {
    std::size_t at = msgs[m].offset;
    do {
      REQUIRE(k < ps.size());
      CHECK(ps[k].message == m);
      CHECK(ps[k].offset == at);
      CHECK(ps[k].bytes <= limit);
      at += ps[k].bytes;
      ++k;
    } while (at < msgs[m].offset + msgs[m].bytes);
    CHECK(at == msgs[m].offset + msgs[m].bytes);
  }
  CHECK(k == ps.size());
}

}  // namespace

TEST_CASE("messages up to one chunk stay one piece; larger ones are cut into equal pieces") {
  const std::size_t MiB = std::size_t(1) << 20;
  const std::vector<message> msgs = {{1, 0, 1000},
                                     {2, 1000, MiB},
                                     {3, 1000 + MiB, 8 * MiB},
                                     {4, 1000 + 9 * MiB, 3 * MiB + 5},
                                     {5, 1005 + 12 * MiB, 0}};
  const auto ps = split_messages(msgs, MiB);
  check_cover(msgs, ps, MiB + 4096);
  // 1000 B and exactly 1 MiB: one piece; 8 MiB: 8 of 1 MiB; 3 MiB + 5: 4 pieces of 768 KiB + 4 KiB
  // rounded (the last shorter); the empty message: one empty piece.
  std::vector<std::size_t> per(msgs.size(), 0);
  for (const auto& p : ps) ++per[p.message];
  CHECK(per == std::vector<std::size_t>{1, 1, 8, 4, 1});
  for (const auto& p : ps)
    if (p.message == 2) CHECK(p.bytes == MiB);
  CHECK(ps[10].bytes == 3 * MiB / 4 + 4096);  // ceil((3 MiB + 5) / 4) rounded up to 4 KiB
  CHECK(ps.back().bytes == 0);

  // chunk 0: never cut below 1 GiB.
  const auto whole = split_messages(msgs, 0);
  CHECK(whole.size() == msgs.size());
  check_cover(msgs, whole, MiB * 1024);
  // A message over 1 GiB (MPI counts are int) is cut even with chunk 0.
  const std::vector<message> huge = {{0, 64, (std::size_t(5) << 30) / 2}};
  const auto hp = split_messages(huge, 0);
  CHECK(hp.size() == 3);
  check_cover(huge, hp, std::size_t(1) << 30);
}

TEST_CASE("random messages: pieces cover them; stages cover the pieces in order") {
  std::srand(17);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<message> msgs;
    std::size_t at = std::size_t(std::rand() % 3) * 64;
    const int n = std::rand() % 6;
    for (int m = 0; m < n; ++m) {
      const std::size_t bytes = std::size_t(std::rand() % 5 == 0 ? 0 : std::rand() % 300000);
      msgs.push_back({m, at, bytes});
      at += bytes + (std::rand() % 4 == 0 ? 128 : 0);  // gaps now and then
    }
    const std::size_t chunk = std::size_t(std::rand() % 3 == 0 ? 0 : 1 + std::rand() % 100000);
    CAPTURE(trial, chunk);
    const auto ps = split_messages(msgs, chunk);
    check_cover(msgs, ps, chunk == 0 ? std::size_t(1) << 30 : chunk + 4096);
    const auto st = group_stages(ps, chunk);
    std::size_t next = 0;
    for (const auto& s : st) {
      CHECK(s.first == next);
      REQUIRE(s.last > s.first);
      CHECK(s.offset == ps[s.first].offset);
      std::size_t bytes = 0;
      for (std::size_t k = s.first; k < s.last; ++k) {
        if (k > s.first) CHECK(ps[k].offset == ps[k - 1].offset + ps[k - 1].bytes);  // adjacent
        bytes += ps[k].bytes;
      }
      CHECK(s.bytes == bytes);
      if (chunk > 0 && s.last - s.first > 1) CHECK(s.bytes <= chunk);  // grouped up to a chunk
      next = s.last;
    }
    CHECK(next == ps.size());
    // Adjacent stages could not have been merged.
    for (std::size_t k = 1; k < st.size(); ++k) {
      const bool adjacent = st[k - 1].offset + st[k - 1].bytes == st[k].offset;
      CHECK((!adjacent || (chunk > 0 && st[k - 1].bytes + st[k].bytes > chunk)));
    }
  }
}

TEST_CASE("HALOX_STAGING_CHUNK sizes: bytes and binary units; anything else is an input error") {
  using halox::detail::parse_bytes;
  CHECK(parse_bytes("X", "0") == 0);
  CHECK(parse_bytes("X", "1048576") == 1048576);
  CHECK(parse_bytes("X", "512K") == 512 * 1024);
  CHECK(parse_bytes("X", "4M") == 4 << 20);
  CHECK(parse_bytes("X", "2MiB") == 2 << 20);
  CHECK(parse_bytes("X", "1G") == std::size_t(1) << 30);
  for (const char* bad : {"", "M", "1.5M", "-1", "12Q", "1 M"})
    CHECK_THROWS_WITH(
        parse_bytes("HALOX_STAGING_CHUNK", bad),
        Catch::Contains("HALOX_STAGING_CHUNK='") && Catch::Contains("is not a number of bytes"));
}

TEST_CASE("MPI pieces: every byte of every message arrives in its place, piece by piece") {
  // Each rank sends a message to every rank (itself included) whose size depends on both ranks,
  // cut into pieces of ~3 KiB; the bytes encode (sender, receiver, position).
  boost::mpi::communicator world;
  const int P = world.size(), me = world.rank();
  auto size_of = [](int from, int to) {
    return std::size_t(1000 + 7919 * from + 104729 * to) % 40000;
  };
  auto byte_of = [](int from, int to, std::size_t k) {
    return std::uint8_t((k * 131 + std::size_t(from) * 17 + std::size_t(to) * 5) % 251);
  };
  std::vector<message> sends, recvs;
  std::size_t s_at = 0, r_at = 0;
  for (int q = 0; q < P; ++q) {
    sends.push_back({q, s_at, size_of(me, q)});
    s_at += size_of(me, q);
    recvs.push_back({q, r_at, size_of(q, me)});
    r_at += size_of(q, me);
  }
  std::vector<std::byte> sbuf(s_at + 1), rbuf(r_at + 1, std::byte{0xee});
  for (const auto& m : sends)
    for (std::size_t k = 0; k < m.bytes; ++k)
      sbuf[m.offset + k] = std::byte(byte_of(me, m.peer, k));
  const auto chunk = GENERATE(std::size_t(0), std::size_t(3000), std::size_t(10000));
  CAPTURE(chunk);
  halox::detail::mpi_channels ch(MPI_Comm(world), sends, sbuf.data(), recvs, rbuf.data(), chunk);
  REQUIRE(ch.send_pieces().size() == split_messages(sends, chunk).size());
  for (int round = 0; round < 2; ++round) {
    std::fill(rbuf.begin(), rbuf.end(), std::byte{0xee});
    ch.start_recvs();
    // Pieces started one by one; round 0 waits for each, round 1 polls.
    const auto& sp = ch.send_pieces();
    for (std::size_t p = 0; p < sp.size(); ++p) ch.start_send_piece(p);
    std::vector<int> done(ch.recv_pieces().size() + 1);
    std::size_t arrived = 0;
    while (arrived < ch.recv_pieces().size()) {
      if (round == 0) {
        REQUIRE(ch.wait_recv_piece() >= 0);
        ++arrived;
      } else {
        arrived += std::size_t(ch.test_recv_pieces(done.data()));
      }
    }
    if (round == 0) CHECK(ch.wait_recv_piece() == -1);
    ch.wait_sends();
    long bad = 0;
    for (const auto& m : recvs)
      for (std::size_t k = 0; k < m.bytes; ++k)
        bad += rbuf[m.offset + k] != std::byte(byte_of(m.peer, me, k));
    bad += rbuf[r_at] != std::byte{0xee};  // nothing past the last message
    REQUIRE(boost::mpi::all_reduce(world, bad, std::plus<long>()) == 0);
  }
}
