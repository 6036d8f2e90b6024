// The substitution behind halox::detail::format (see halox/core/format.hpp).
#include "halox/core/format.hpp"

namespace halox::detail {

std::string vformat(std::string_view f, const std::string* args, std::size_t n) {
  std::string out;
  out.reserve(f.size() + 16 * n);
  std::size_t next = 0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    const char c = f[i];
    if ((c == '{' || c == '}') && i + 1 < f.size() && f[i + 1] == c) {  // {{ or }}
      out += c;
      ++i;
    } else if (c == '{' && i + 1 < f.size() && f[i + 1] == '}') {
      out += next < n ? args[next] : std::string("{}");
      ++next;
      ++i;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace halox::detail
