// The loops capi_overhead times, callable from C++ and Fortran: n exchanges through the C++
// object inside a C handle (no C layer in between), and n through the C call.

#include <chrono>

#include "capi/handles.hpp"

extern "C" double overhead_cxx_loop(halox_exchange* ex, int n) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) ex->ex.exchange();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

extern "C" double overhead_c_loop(halox_exchange* ex, int n) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i)
    if (halox_exchange_run(ex) != HALOX_SUCCESS) return -1;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

extern "C" double overhead_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
