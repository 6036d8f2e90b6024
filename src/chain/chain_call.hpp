#pragma once
// What a chain call is, as a neighbour sees it. Every size message of a round carries the call
// that sent it, so that neighbours making different calls (a round against a gather, gathers
// with different sides or w) find out from the first message of the call, the one that is sent
// anyway, instead of waiting for messages that never come. Private to src/chain.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace halox::detail {

enum class chain_op : std::uint64_t { round = 1, gather_left = 2, gather_right = 3 };

// A gather's w in the call word: larger values read as this (no context holds 2^62 elements,
// so such gathers deliver the same).
inline constexpr std::uint64_t chain_call_max_w = (std::uint64_t(1) << 62) - 1;

/// The call as one word: the operation in the low two bits, a gather's w above them.
inline std::uint64_t encode_call(chain_op op, std::size_t w = 0) {
  const std::uint64_t capped = std::min<std::uint64_t>(w, chain_call_max_w);
  return (op == chain_op::round ? 0 : capped << 2) | std::uint64_t(op);
}

/// The call in words, as the user spelled it: "gather_left(w = 3)".
inline std::string describe_call(std::uint64_t call) {
  const std::uint64_t op = call & 3, w = call >> 2;
  if (op == std::uint64_t(chain_op::round) && w == 0)
    return "a round (exchange, start or schedule_exchange)";
  const char* name = op == std::uint64_t(chain_op::gather_left)    ? "gather_left"
                     : op == std::uint64_t(chain_op::gather_right) ? "gather_right"
                                                                   : nullptr;
  if (name == nullptr) return fmt::format("an unknown call (0x{:x})", call);
  if (w == chain_call_max_w) return fmt::format("{}(w >= {})", name, w);
  return fmt::format("{}(w = {})", name, w);
}

}  // namespace halox::detail
