// Set-up agreement between peers (see exchange/peer_agreement.hpp).
#include "exchange/peer_agreement.hpp"

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/serialization/string.hpp>

#include "comm/sparse_exchange.hpp"
#include "halox/comm/agree.hpp"
#include "halox/comm/settings_agreement.hpp"
#include "halox/core/error.hpp"
#include "mpi/check.hpp"

namespace halox::detail {

namespace testing {
bool skip_peer_agreement = false;
}  // namespace testing

namespace {

constexpr int tag_agreement = 40;  // the exchange's own communicator: no other traffic yet

// What one rank says to one peer: bytes per exchange it sends there and expects from there
// (-1: no message), then its declaration.
struct pair_view {
  long long sends = -1, expects = -1;
  declaration declared;
};

void put(std::vector<std::byte>& out, const void* p, std::size_t n) {
  const auto* b = static_cast<const std::byte*>(p);
  out.insert(out.end(), b, b + n);
}
void put_string(std::vector<std::byte>& out, const std::string& s) {
  const std::uint64_t n = s.size();
  put(out, &n, sizeof n);
  put(out, s.data(), s.size());
}

std::vector<std::byte> encode(const pair_view& v) {
  std::vector<std::byte> out;
  put(out, &v.sends, sizeof v.sends);
  put(out, &v.expects, sizeof v.expects);
  for (const auto& [item, value] : v.declared) {
    put_string(out, item);
    put_string(out, value);
  }
  return out;
}

pair_view decode(const std::vector<std::byte>& in, int from) {
  std::size_t at = 0;
  auto get = [&](void* p, std::size_t n) {
    require(at + n <= in.size(), "set-up record from rank {} is cut short", from);
    std::memcpy(p, in.data() + at, n);
    at += n;
  };
  auto get_string = [&] {
    std::uint64_t n = 0;
    get(&n, sizeof n);
    require(n <= in.size() - at, "set-up record from rank {} is cut short", from);
    std::string s(reinterpret_cast<const char*>(in.data() + at), std::size_t(n));
    at += std::size_t(n);
    return s;
  };
  pair_view v;
  get(&v.sends, sizeof v.sends);
  get(&v.expects, sizeof v.expects);
  while (at < in.size()) {
    auto item = get_string();
    v.declared.emplace_back(std::move(item), get_string());
  }
  return v;
}

constexpr std::string_view part = "exchange set-up: peer agreement";  // for MPI errors

std::string bytes_phrase(long long b) {
  return b < 0 ? std::string("no message") : fmt::format("{} bytes per exchange", b);
}

// The first item in which two declarations differ, phrased with both ranks; empty if none.
std::string declaration_difference(const declaration& a, int ra, const declaration& b, int rb) {
  for (std::size_t k = 0; k < std::max(a.size(), b.size()); ++k) {
    const std::string none = "(nothing)";
    const auto& item = k < a.size() ? a[k].first : b[k].first;
    const auto& va = k < a.size() ? a[k].second : none;
    const auto& vb = k < b.size() ? b[k].second : none;
    if (k < a.size() && k < b.size() && a[k].first != b[k].first)
      return fmt::format("rank {} declares {} '{}', rank {} declares {} '{}'", ra, a[k].first, va,
                         rb, b[k].first, vb);
    if (va != vb) return fmt::format("{}: rank {} has {}, rank {} has {}", item, ra, va, rb, vb);
  }
  return {};
}

// This rank's complaint about its pair with `peer`, or empty when they agree.
std::string complaint(int me, const pair_view& mine, int peer, const pair_view& theirs) {
  std::string bytes;
  if (theirs.sends != mine.expects)
    bytes = fmt::format("rank {} expects {} from rank {}, which will send {}", me,
                        bytes_phrase(mine.expects), peer, bytes_phrase(theirs.sends));
  else if (theirs.expects != mine.sends)
    bytes = fmt::format("rank {} will send {} to rank {}, which expects {}", me,
                        bytes_phrase(mine.sends), peer, bytes_phrase(theirs.expects));
  // A peer that sent no record declared nothing to compare.
  const std::string diff = theirs.declared.empty()
                               ? std::string()
                               : declaration_difference(mine.declared, me, theirs.declared, peer);
  if (bytes.empty() && diff.empty()) return {};
  if (bytes.empty())
    return fmt::format("ranks {} and {} build different exchanges: {}", me, peer, diff);
  if (diff.empty())
    return bytes + ": do both declare the same domain, stencil and fields in the same order?";
  return fmt::format("{}: they build different exchanges ({})", bytes, diff);
}

}  // namespace

void check_peer_agreement(MPI_Comm comm, const exchange_program& prog) {
  if (testing::skip_peer_agreement) return;
  int me = 0;
  mpi::check(MPI_Comm_rank(comm, &me), "MPI_Comm_rank", -1, part);
  std::map<int, pair_view> mine;
  for (const auto& m : prog.sends) mine[m.peer].sends = (long long)m.bytes;
  for (const auto& m : prog.recvs) mine[m.peer].expects = (long long)m.bytes;
  std::vector<byte_list> out;
  for (auto& [peer, v] : mine) {
    v.declared = prog.declared;
    out.push_back({peer, encode(v)});
  }
  std::string problem;
  const boost::mpi::communicator bc(comm, boost::mpi::comm_attach);
  agree(bc, [&] {
    // Every rank that counts this one as a peer says so, whether or not this rank agrees.
    const auto in = sparse_exchange(comm, out, tag_agreement);
    std::map<int, pair_view> theirs;
    for (const auto& b : in) theirs[b.rank] = decode(b.data, b.rank);
    for (const auto& [peer, v] : theirs) {
      auto it = mine.find(peer);
      const pair_view none{-1, -1, prog.declared};
      problem = complaint(me, it == mine.end() ? none : it->second, peer, v);
      if (!problem.empty()) break;
    }
    for (const auto& [peer, v] : mine) {
      if (!problem.empty()) break;
      if (!theirs.count(peer)) problem = complaint(me, v, peer, pair_view{});
    }
    if (!problem.empty()) fail("{}", problem);
  });
  // Ranks that are nobody's peer compared nothing above: a reduction of a hash of every
  // rank's declaration finds any two ranks that still differ.
  const pair_view self{-1, -1, prog.declared};
  const auto bytes = encode(self);
  settings_hash hash;
  hash.add(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  const std::uint64_t h = hash.value();
  struct {
    long value;
    int rank;
  } mine_h{long(h >> 1), me}, lowest{}, highest{};
  mpi::check(MPI_Allreduce(&mine_h, &lowest, 1, MPI_LONG_INT, MPI_MINLOC, comm),
             "MPI_Allreduce(MINLOC)", me, part);
  mpi::check(MPI_Allreduce(&mine_h, &highest, 1, MPI_LONG_INT, MPI_MAXLOC, comm),
             "MPI_Allreduce(MAXLOC)", me, part);
  if (lowest.value == highest.value) return;
  std::string a, b;
  if (me == lowest.rank) a.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (me == highest.rank) b.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  boost::mpi::broadcast(bc, a, lowest.rank);
  boost::mpi::broadcast(bc, b, highest.rank);
  auto as_view = [](const std::string& s, int from) {
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    return decode(std::vector<std::byte>(p, p + s.size()), from);
  };
  const auto da = as_view(a, lowest.rank).declared, db = as_view(b, highest.rank).declared;
  fail("rank {}: ranks {} and {} build different exchanges: {}", me, lowest.rank, highest.rank,
       declaration_difference(da, lowest.rank, db, highest.rank));
}

}  // namespace halox::detail
