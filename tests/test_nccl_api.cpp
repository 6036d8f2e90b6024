// NCCL loaded at run time (src/transport/nccl_api.hpp): plain C++, so it is tested without a
// GPU. The loader finds the libnccl the build found and resolves every function halox calls;
// a file it cannot load, or one that is not NCCL, is reported with its path and the loader's
// words. Run again with HALOX_NCCL_LIBRARY naming a missing file (the _unloadable entries):
// then NCCL counts as not available, exactly as in a build without it, and the ranks agree.
#include <catch2/catch.hpp>
#include <halox/core/error.hpp>
#include <halox/halox.hpp>

#include <boost/mpi/communicator.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "check.hpp"
#include "program/program.hpp"
#include "transport/nccl_api.hpp"
#include "transport/nccl_comm.hpp"
#include "transport/routes.hpp"
#include "transport/staging.hpp"

namespace hx = halox::detail;

namespace {

// HALOX_NCCL_LIBRARY where set, else null.
const char* library_override() {
  const char* p = std::getenv("HALOX_NCCL_LIBRARY");
  return p != nullptr && p[0] != '\0' ? p : nullptr;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

bool starts_with(const std::string& s, const std::string& head) {
  return s.rfind(head, 0) == 0;
}

// Every function of the table, by name, with whether it was resolved.
std::vector<std::pair<const char*, bool>> resolved(const hx::nccl_api& a) {
  return {{"ncclGetVersion", a.GetVersion != nullptr},
          {"ncclGetErrorString", a.GetErrorString != nullptr},
          {"ncclGetLastError", a.GetLastError != nullptr},
          {"ncclGetUniqueId", a.GetUniqueId != nullptr},
          {"ncclCommInitRankConfig", a.CommInitRankConfig != nullptr},
          {"ncclCommGetAsyncError", a.CommGetAsyncError != nullptr},
          {"ncclCommAbort", a.CommAbort != nullptr},
          {"ncclCommDestroy", a.CommDestroy != nullptr},
          {"ncclCommRegister", a.CommRegister != nullptr},
          {"ncclCommDeregister", a.CommDeregister != nullptr},
          {"ncclGroupStart", a.GroupStart != nullptr},
          {"ncclGroupEnd", a.GroupEnd != nullptr},
          {"ncclSend", a.Send != nullptr},
          {"ncclRecv", a.Recv != nullptr}};
}

}  // namespace

TEST_CASE("nccl loader: the library the build found, every function resolved", "[nccl]") {
  const hx::nccl_library lib = hx::load_nccl(nullptr, HALOX_TEST_NCCL_LIBDIR);
  INFO(lib.error);
  REQUIRE(lib.usable());
  CHECK(contains(lib.path, "libnccl.so"));
  for (const auto& [name, ok] : resolved(lib.api)) {
    INFO(name);
    CHECK(ok);
  }
  // Calls that need no GPU; the version from the library itself, and its own words for an error.
  int v = 0;
  REQUIRE(lib.api.GetVersion(&v) == ncclSuccess);
  CHECK(v == lib.version);
  CHECK(v >= NCCL_VERSION(2, 19, 0));
  CHECK(v / 10000 == NCCL_MAJOR);
  CHECK(starts_with(lib.api.GetErrorString(ncclInvalidArgument), "invalid argument"));
}

TEST_CASE("nccl loader: a path that does not exist is reported with the loader's words", "[nccl]") {
  const std::string path = "/nonexistent/libnccl.so.2";
  const hx::nccl_library lib = hx::load_nccl(path.c_str(), HALOX_TEST_NCCL_LIBDIR);
  CHECK_FALSE(lib.usable());
  CHECK(starts_with(lib.error, "HALOX_NCCL_LIBRARY=" + path + " could not be loaded: " + path +
                                   ": cannot open shared object file"));
  CHECK(lib.version == 0);
  for (const auto& [name, ok] : resolved(lib.api)) {
    INFO(name);
    CHECK_FALSE(ok);
  }
}

TEST_CASE("nccl loader: a library that is not NCCL is refused, naming what it lacks", "[nccl]") {
  const hx::nccl_library lib = hx::load_nccl("libm.so.6", "");
  CHECK_FALSE(lib.usable());
  CHECK(contains(lib.error, "libm.so.6 has no ncclGetVersion (halox needs NCCL 2.19.0 or newer)"));
  CHECK_FALSE(resolved(lib.api).front().second);
}

TEST_CASE("nccl availability: the process's library, as HALOX_NCCL_LIBRARY says", "[nccl]") {
  const char* path = library_override();
  if (path == nullptr) {  // the toolkit's libnccl, found as the build found it
    INFO(hx::nccl_unavailable_reason());
    CHECK(hx::nccl_available());
    CHECK(hx::nccl_unavailable_reason().empty());
    CHECK(hx::nccl().GetVersion == hx::loaded_nccl().api.GetVersion);
    return;
  }
  const std::string p = path;
  const std::string why = hx::nccl_unavailable_reason();
  CHECK_FALSE(hx::nccl_available());
  CHECK(starts_with(why, "NCCL is built but HALOX_NCCL_LIBRARY=" + p +
                             " could not be loaded: " + p + ": cannot open shared object file"));
  CHECK(test_support::error_of([] { (void)hx::nccl(); }) == "halox: " + why);
  // Automatic staging where MPI is not CUDA-aware: host staging, and describe() says why.
  if (!hx::mpi_cuda_aware()) {
    const hx::staging_choice c = hx::choose_staging(halox::staging::automatic, false);
    CHECK(c.policy == halox::staging::host_staged);
    CHECK(c.nccl_note == why);
    const hx::staging_choice d = hx::decide_staging(hx::exchange_program{}, c, false);
    CHECK(d.why ==
          "automatic: MPI is not CUDA-aware; pack kernel writes mapped pinned memory; " + why);
  }
}

TEST_CASE("nccl availability: forced NCCL on a chain fails on every rank, saying why",
          "[nccl][mpi]") {
  boost::mpi::communicator world;
  const int me = world.rank();
  if (library_override() == nullptr) return;  // NCCL is usable: the GPU tests run it
  const std::vector<int> peers = {(me + 1) % world.size()};
  const std::string e = test_support::error_of(
      [&] { (void)hx::route_table::agree_chain(MPI_Comm(world), true, true, peers); });
  // Every rank refuses; rank 0's words reach every rank.
  const std::string first = "rank 0: chain staging 'nccl': " + hx::nccl_unavailable_reason();
  CHECK(e == (me == 0 ? "halox: " + first
                      : "halox: rank " + std::to_string(me) +
                            ": stopped because another rank rejected its input: " + first));
}

TEST_CASE("nccl availability: an exchange of device fields with NCCL not loaded", "[nccl][gpu]") {
  boost::mpi::communicator world;
  if (library_override() == nullptr || halox::detail::device_count() == 0) return;
  const halox::extents<3> n{12, 10, 8};
  constexpr auto st = halox::stencil<3>::box(1);
  const halox::cartesian<3> dom(world, n, halox::periodic<3>::all());
  auto u = dom.make_field<double>(st, halox::device);
  halox::exchange_options o;
  o.node_size = 1;  // every rank a node of its own: no CUDA IPC
  o.device_staging = halox::staging::nccl;
  const std::string why = "staging 'nccl': " + hx::nccl_unavailable_reason();
  // Forced: refused at set-up on every rank, before any message.
  CHECK(contains(test_support::error_of([&] { (void)halox::make_exchange(dom, st, o, u); }), why));
  // Automatic: host staging, and describe() says why NCCL was not taken.
  o.device_staging = halox::staging::automatic;
  auto ex = halox::make_exchange(dom, st, o, u);
  INFO(ex.describe());
  if (!hx::mpi_cuda_aware() && world.size() > 1)
    CHECK(contains(ex.describe(), hx::nccl_unavailable_reason()));
}
