#pragma once
// The text of the HALOX_* variables that detail::with_environment (halox/core/options.hpp)
// applies to exchange_options: its parsers, here for their unit tests.
#include <cstddef>

namespace halox::detail {

/// Bytes from a text such as "1048576", "512K", "4M" or "1G" (binary units), for
/// `HALOX_STAGING_CHUNK` and `HALOX_SHM_DIRECT_MIN`; throws halox::error naming `name` and the
/// text otherwise.
std::size_t parse_bytes(const char* name, const char* text);

/// Seconds from a text such as "60" or "0.5", for `HALOX_WAIT_TIMEOUT`; throws halox::error
/// naming `name` and the text otherwise (negative, not a number, trailing characters).
double parse_seconds(const char* name, const char* text);

}  // namespace halox::detail
