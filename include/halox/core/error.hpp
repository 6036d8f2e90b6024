#pragma once
/// @file
/// The one exception type halox throws, and the helpers that build its messages.

#include <stdexcept>
#include <string>
#include <string_view>

#include "halox/core/format.hpp"

namespace halox {

/// Thrown for every error halox detects: bad input (with the offending value, the rank and the
/// field), a second exchange started while one is in flight, a message of the wrong size, or a
/// failed MPI/CUDA call. Input errors are raised before any message of the affected exchange is
/// sent and before any user data is written, so the caller's fields are left as they were.
class error : public std::runtime_error {
 public:
  explicit error(const std::string& what) : std::runtime_error("halox: " + what) {}
};

namespace detail {

/// Throws halox::error with a formatted message (see format.hpp: each `{}` takes the next
/// argument).
template <class... Args>
[[noreturn]] void fail(std::string_view f, const Args&... args) {
  throw error(format(f, args...));
}

/// Throws halox::error if `condition` is false.
template <class... Args>
void require(bool condition, std::string_view f, const Args&... args) {
  if (!condition) fail(f, args...);
}

}  // namespace detail
}  // namespace halox
