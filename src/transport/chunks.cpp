#include "transport/chunks.hpp"

#include <algorithm>

namespace halox::detail {

namespace {
constexpr std::size_t page = 4096;
std::size_t ceil_div(std::size_t a, std::size_t b) {
  return (a + b - 1) / b;
}
}  // namespace

std::size_t piece_size(std::size_t bytes, std::size_t chunk) {
  if (chunk == 0 || bytes <= chunk) return max_piece_bytes;
  const std::size_t n = ceil_div(bytes, chunk);
  return std::min(max_piece_bytes, ceil_div(ceil_div(bytes, n), page) * page);
}

std::vector<piece> split_messages(const std::vector<message>& msgs, std::size_t chunk) {
  std::vector<piece> out;
  for (std::size_t m = 0; m < msgs.size(); ++m) {
    const std::size_t bytes = msgs[m].bytes;
    const std::size_t size = piece_size(bytes, chunk);
    std::size_t at = 0;
    do {
      const std::size_t b = std::min(size, bytes - at);
      out.push_back({m, msgs[m].offset + at, b});
      at += b;
    } while (at < bytes);
  }
  return out;
}

std::vector<stage> group_stages(const std::vector<piece>& pieces, std::size_t chunk) {
  std::vector<stage> out;
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    const auto& p = pieces[k];
    if (!out.empty()) {
      auto& s = out.back();
      const bool adjacent = s.offset + s.bytes == p.offset;
      if (adjacent && (chunk == 0 || s.bytes + p.bytes <= chunk)) {
        s.bytes += p.bytes;
        s.last = k + 1;
        continue;
      }
    }
    out.push_back({p.offset, p.bytes, k, k + 1});
  }
  return out;
}

}  // namespace halox::detail
