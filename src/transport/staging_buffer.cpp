#include "transport/staging_buffer.hpp"

#include <algorithm>

#include "halox/field/memory.hpp"

namespace halox::detail {

bool staging_buffer::reserve(std::size_t bytes) {
  if (bytes <= cap_) return false;
  const std::size_t n = std::max(bytes, cap_ * 2);
  p_.reset();  // free first: the old contents are not needed
  switch (where_) {
    case place::pinned:
      p_ = allocate_pinned(n, what_, rank_);
      break;
    case place::device:
      p_ = allocate(memory_space::device, n);
      break;
    case place::host:
      p_ = allocate(memory_space::host, n);
      break;
  }
  cap_ = n;
  return true;
}

}  // namespace halox::detail
