// NCCL loaded at run time (see transport/nccl_api.hpp).
#include "transport/nccl_api.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

#include "halox/core/error.hpp"
#include "transport/nccl_comm.hpp"

// The directory the build found libnccl in (CMakeLists.txt), searched after the loader's own
// search: a program built on this machine finds NCCL without LD_LIBRARY_PATH.
#ifndef HALOX_NCCL_LIBDIR
#define HALOX_NCCL_LIBDIR ""
#endif

namespace halox::detail {

namespace {

// "2.28.9" from a version code (NCCL numbered 2.8 and older as 2804, later ones as 22809).
std::string version_text(int v) {
  if (v < 10000) return format("{}.{}.{}", v / 1000, v / 100 % 10, v % 100);
  return format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

template <class F>
void resolve(void* lib, const char* name, F& out, std::string& missing) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  if (out == nullptr && missing.empty()) missing = name;
}

// Every function of the table; the name of the first one missing, or "".
std::string resolve_all(void* lib, nccl_api& a) {
  std::string missing;
  resolve(lib, "ncclGetVersion", a.GetVersion, missing);
  resolve(lib, "ncclGetErrorString", a.GetErrorString, missing);
  resolve(lib, "ncclGetLastError", a.GetLastError, missing);
  resolve(lib, "ncclGetUniqueId", a.GetUniqueId, missing);
  resolve(lib, "ncclCommInitRankConfig", a.CommInitRankConfig, missing);
  resolve(lib, "ncclCommGetAsyncError", a.CommGetAsyncError, missing);
  resolve(lib, "ncclCommAbort", a.CommAbort, missing);
  resolve(lib, "ncclCommDestroy", a.CommDestroy, missing);
  resolve(lib, "ncclCommRegister", a.CommRegister, missing);
  resolve(lib, "ncclCommDeregister", a.CommDeregister, missing);
  resolve(lib, "ncclGroupStart", a.GroupStart, missing);
  resolve(lib, "ncclGroupEnd", a.GroupEnd, missing);
  resolve(lib, "ncclSend", a.Send, missing);
  resolve(lib, "ncclRecv", a.Recv, missing);
  return missing;
}

// The file the loader opened for `lib`, else the name it was asked for.
std::string file_of(void* lib, const std::string& asked) {
  link_map* map = nullptr;
  if (dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0')
    return map->l_name;
  return asked;
}

// An opened library: its functions and its version. "" where halox can use it, else why not.
std::string check_opened(void* lib, nccl_library& out) {
  const std::string missing = resolve_all(lib, out.api);
  if (!missing.empty())
    return format("{} has no {} (halox needs NCCL {} or newer)", out.path, missing,
                  version_text(nccl_min_version));
  int v = 0;
  const ncclResult_t rc = out.api.GetVersion(&v);
  if (rc != ncclSuccess)
    return format("ncclGetVersion of {} failed: {}", out.path, out.api.GetErrorString(rc));
  out.version = v;
  if (v < nccl_min_version)
    return format("{} is NCCL {}; halox needs {} or newer", out.path, version_text(v),
                  version_text(nccl_min_version));
  const int major = v < 10000 ? v / 1000 : v / 10000;
  if (major != NCCL_MAJOR)
    return format("{} is NCCL {}, but halox was built with NCCL {} (another major version)",
                  out.path, version_text(v), version_text(NCCL_VERSION_CODE));
  return {};
}

// The names to try, in order (see load_nccl).
std::vector<std::string> candidates(const char* path, const char* fallback_dir) {
  if (path != nullptr && path[0] != '\0') return {path};
  std::vector<std::string> names;
  for (const char* n : {"libnccl.so.2", "libnccl.so"}) {
    names.emplace_back(n);
    if (fallback_dir != nullptr && fallback_dir[0] != '\0')
      names.push_back(std::string(fallback_dir) + "/" + n);
  }
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

nccl_library load_nccl(const char* path, const char* fallback_dir) {
  nccl_library out;
  const std::vector<std::string> names = candidates(path, fallback_dir);
  const bool given = path != nullptr && path[0] != '\0';
  std::string first_error;
  void* lib = nullptr;
  for (std::size_t k = 0; k < names.size() && lib == nullptr; ++k) {
    lib = dlopen(names[k].c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      out.path = file_of(lib, names[k]);
    } else if (first_error.empty()) {
      const char* e = dlerror();
      first_error = e != nullptr ? e : "dlopen failed";
    }
  }
  if (lib == nullptr) {
    out.error = given ? format("HALOX_NCCL_LIBRARY={} could not be loaded: {}", path, first_error)
                      : format(
                            "libnccl.so.2 could not be loaded: {} (tried {}; put its directory "
                            "in LD_LIBRARY_PATH or set HALOX_NCCL_LIBRARY to its path)",
                            first_error, joined(names));
    return out;
  }
  out.error = check_opened(lib, out);
  if (!out.usable()) {
    out.api = nccl_api{};
    (void)dlclose(lib);
  }
  return out;
}

const nccl_library& loaded_nccl() {
  static const nccl_library lib = load_nccl(std::getenv("HALOX_NCCL_LIBRARY"), HALOX_NCCL_LIBDIR);
  return lib;
}

const nccl_api& nccl() {
  const nccl_library& lib = loaded_nccl();
  if (!lib.usable()) fail("NCCL is built but {}", lib.error);
  return lib.api;
}

bool nccl_available() {
  return loaded_nccl().usable();
}

std::string nccl_unavailable_reason() {
  const nccl_library& lib = loaded_nccl();
  return lib.usable() ? std::string() : "NCCL is built but " + lib.error;
}

}  // namespace halox::detail
