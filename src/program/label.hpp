#pragma once
// An exchange object's name in errors, stats() and NVTX ranges: exchange_options::label, or
// "exchange of N field(s)" from the program's summary. C++17 (the CUDA library includes it).
#include <string>

#include "program/program.hpp"

namespace halox::detail {

inline std::string object_label(const exchange_program& p) {
  if (!p.options.label.empty()) return p.options.label;
  return "exchange of " + p.summary.substr(0, p.summary.find(';'));
}

}  // namespace halox::detail
