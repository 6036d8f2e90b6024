// NVTX ranges (CUDA builds): with exchange_options::nvtx (or HALOX_NVTX=1) every phase of an
// exchange object shows as a range named "<label>: <phase>", nested as the calls are; without
// it, no NVTX call at all. The ranges are read back from tests/nvtx_inject.cpp, an NVTX tool
// that ctest attaches through NVTX_INJECTION64_PATH.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <halox/halox.hpp>

#include <boost/mpi/collectives/all_gather.hpp>
#include <boost/serialization/utility.hpp>
#include <boost/serialization/vector.hpp>

#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

// Every range event the tool saw, "push <name>" or "pop", in order.
std::vector<std::string> events() {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  REQUIRE(path != nullptr);
  void* lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(lib != nullptr);  // NVTX loaded it at the first range
  using fn = const char* (*)();
  auto get = reinterpret_cast<fn>(dlsym(lib, "halox_test_nvtx_events"));
  REQUIRE(get != nullptr);
  std::vector<std::string> out;
  std::istringstream in(get());
  for (std::string line; std::getline(in, line);) out.push_back(line);
  dlclose(lib);
  return out;
}

// Whether event `e` pushes one message's range ("pack for rank P", "unpack from rank P").
bool message_range(const std::string& e) {
  return e.find(": pack for rank ") != std::string::npos ||
         e.find(": unpack from rank ") != std::string::npos;
}

// Whether event `e` pushes a transport's step ("MPI post receives", "NCCL post sends", ...).
bool step_range(const std::string& e) {
  for (const char* t : {": MPI ", ": shared memory ", ": host staging ", ": CUDA IPC ", ": NCCL "})
    if (e.find(t) != std::string::npos) return true;
  return false;
}

// Each transport step's range of `label` with the range it is nested in: "start > MPI post
// receives" (names without the label).
std::set<std::string> steps_in(const std::vector<std::string>& all, const std::string& label) {
  std::set<std::string> out;
  std::vector<std::string> stack;
  const std::string prefix = "push " + label + ": ";
  for (const auto& e : all) {
    if (e == "pop") {
      if (!stack.empty()) stack.pop_back();
      continue;
    }
    const std::string name = e.rfind(prefix, 0) == 0 ? e.substr(prefix.size()) : std::string();
    if (!name.empty() && step_range(e))
      out.insert((stack.empty() ? "" : stack.back()) + " > " + name);
    stack.push_back(name);
  }
  return out;
}

// The events of ranges whose name starts with `label`, with the pops that close them; the
// ranges of single messages only with `messages` (transports' steps never).
std::vector<std::string> of(const std::vector<std::string>& all, const std::string& label,
                            bool messages = false) {
  std::vector<std::string> out;
  std::vector<bool> open;  // per pushed range still open: whether it is one of label's
  for (const auto& e : all) {
    if (e == "pop") {
      REQUIRE(!open.empty());
      if (open.back()) out.push_back(e);
      open.pop_back();
      continue;
    }
    const bool mine =
        e.rfind("push " + label + ":", 0) == 0 && !step_range(e) && (messages || !message_range(e));
    open.push_back(mine);
    if (mine) out.push_back(e);
  }
  CHECK(open.empty());  // every range closed
  return out;
}

}  // namespace

TEST_CASE("NVTX ranges: set-up, start and wait by the object's label, nothing when off") {
  boost::mpi::communicator world;
  const int P = world.size(), me = world.rank();
  constexpr auto st = halox::stencil<3>::box(1);
  const halox::cartesian<3> dom(world, {6, 4 * P, 5}, halox::periodic<3>::all(),
                                halox::process_grid<3>{{1, P, 1}});
  auto u = dom.make_field<double>(st);
  halox::exchange_options on, off;
  on.label = "nvtx-on";
  on.nvtx = true;
  off.label = "nvtx-off";
  {
    auto a = halox::make_exchange(dom, st, on, u);
    auto b = halox::make_exchange(dom, st, off, u);
    a.exchange();
    b.exchange();
    auto h = a.start();
    h.wait();
  }
  const auto all = events();
  const std::vector<std::string> want = {
      "push nvtx-on: set-up", "pop", "push nvtx-on: start", "pop", "push nvtx-on: wait", "pop",
      "push nvtx-on: start",  "pop", "push nvtx-on: wait",  "pop"};
  CHECK(of(all, "nvtx-on") == want);
  CHECK(of(all, "nvtx-off").empty());
  // Each message's host pack and unpack, by peer: the ranks before and after this one along
  // the split dimension (none alone: periodic images are local copies).
  std::set<std::string> packs, unpacks;
  for (const auto& e : of(all, "nvtx-on", true)) {
    if (e.find(": pack for rank ") != std::string::npos) packs.insert(e);
    if (e.find(": unpack from rank ") != std::string::npos) unpacks.insert(e);
  }
  std::set<std::string> want_packs, want_unpacks;
  if (P > 1)
    for (int peer : {(me + 1) % P, (me + P - 1) % P}) {
      want_packs.insert("push nvtx-on: pack for rank " + std::to_string(peer));
      want_unpacks.insert("push nvtx-on: unpack from rank " + std::to_string(peer));
    }
  CHECK(packs == want_packs);
  CHECK(unpacks == want_unpacks);
  // The transports' steps, nested in the calls that make them: MPI posts its receives in
  // start() (its sends go one message at a time, inside each message's pack range); shared
  // memory, between ranks of this node, posts both in start(). A wait ends in "MPI complete"
  // where it blocks in MPI; under a wait timeout (ctest sets one) it polls instead.
  std::set<std::string> want_start = {"start > MPI post receives"};
  if (P > 1) {
    want_start.insert("start > shared memory post receives");
    want_start.insert("start > shared memory post sends");
  }
  std::set<std::string> in_start;
  for (const auto& e : steps_in(all, "nvtx-on"))
    if (e.rfind("start > ", 0) == 0)
      in_start.insert(e);
    else
      CHECK(e == "wait > MPI complete");
  CHECK(in_start == want_start);
  CHECK(steps_in(all, "nvtx-off").empty());
}

TEST_CASE("NVTX ranges and GPU time of device fields: pack inside start, unpack inside wait") {
  if (halox::detail::device_count() == 0) {
    SUCCEED("no GPU here: the device part runs on GPU machines");
    return;
  }
  boost::mpi::communicator world;
  const int P = world.size();
  constexpr auto st = halox::stencil<3>::box(1);
  const halox::cartesian<3> dom(world, {6, 4 * P, 5}, halox::periodic<3>::all());
  auto u = dom.make_field<double>(st, halox::device);
  halox::exchange_options o;
  o.label = "nvtx-dev";
  o.nvtx = true;
  halox::exchange_stats s;
  {
    auto ex = halox::make_exchange(dom, st, o, u);
    for (int k = 0; k < 40; ++k) ex.exchange();
    s = ex.stats();
  }
  // Every 16th exchange is timed on the GPU and read at a later start: 1 to 3 samples of 40.
  CHECK(s.gpu.count >= 1);
  CHECK(s.gpu.count <= 3);
  CHECK(s.gpu.max > 0);
  const auto ev = of(events(), "nvtx-dev");
  REQUIRE(ev.size() >= 6);
  CHECK(ev[0] == "push nvtx-dev: set-up");
  CHECK(ev[2] == "push nvtx-dev: start");
  CHECK(ev[3] == "push nvtx-dev: pack");  // nested in start
  std::size_t starts = 0, packs = 0, unpacks = 0;
  for (const auto& e : ev)
    starts += e == "push nvtx-dev: start", packs += e == "push nvtx-dev: pack",
        unpacks += e == "push nvtx-dev: unpack";
  CHECK(starts == 40);
  CHECK(packs == 40);
  CHECK(unpacks == 40);
  // With peers, the transport's steps (CUDA IPC, MPI or NCCL, by the machine) inside start and
  // wait.
  const auto steps = steps_in(events(), "nvtx-dev");
  if (P > 1) CHECK(!steps.empty());
  for (const auto& e : steps) {
    INFO(e);
    CHECK((e.rfind("start > ", 0) == 0 || e.rfind("wait > ", 0) == 0));
  }
}

TEST_CASE("NVTX ranges: cross-memory copies of wrapped arrays are named by peer") {
  // Wrapped arrays a peer cannot map, with shm_cross_memory: each direct message is copied by
  // process_vm_readv/writev (where the system allows it), inside the message's range.
  boost::mpi::communicator world;
  const int P = world.size(), me = world.rank();
  constexpr auto st = halox::stencil<3>::box(1);
  const halox::cartesian<3> dom(world, {24, 4 * P, 24}, halox::periodic<3>::all(),
                                halox::process_grid<3>{{1, P, 1}});
  const auto n = dom.local_boxes()[0].size();
  const halox::extents<3> alloc{n[0] + 2, n[1] + 2, n[2] + 2};
  std::vector<double> mem(std::size_t(alloc[0] * alloc[1] * alloc[2]));
  auto u = dom.wrap<double>(mem.data(), alloc, {1, 1, 1}, {1, 1, 1});
  halox::exchange_options o;
  o.label = "nvtx-cross";
  o.nvtx = true;
  o.shm_cross_memory = true;
  o.shm_direct_min_bytes = 0;
  std::string how;
  {
    auto ex = halox::make_exchange(dom, st, o, u);
    how = ex.describe();
    ex.exchange();
  }
  if (P > 1 && how.find("by cross-memory attach") == std::string::npos)
    WARN("cross-memory attach refused here: the messages took two copies\n" << how);
  std::set<std::string> copies;
  for (const auto& e : of(events(), "nvtx-cross", true))
    if (message_range(e)) copies.insert(e);
  std::set<std::string> want;
  if (P > 1)
    for (int peer : {(me + 1) % P, (me + P - 1) % P}) {
      want.insert("push nvtx-cross: pack for rank " + std::to_string(peer));
      want.insert("push nvtx-cross: unpack from rank " + std::to_string(peer));
    }
  // A direct message is copied by one rank of its pair, whichever gets there first: every
  // range names a peer, and over all ranks every message (sender, receiver) shows up once.
  std::vector<std::pair<int, int>> mine;
  for (const auto& e : copies) {
    CHECK(want.count(e) == 1);
    const int peer = std::stoi(e.substr(e.rfind(' ') + 1));
    mine.push_back(e.find(": pack for rank ") != std::string::npos ? std::pair{me, peer}
                                                                   : std::pair{peer, me});
  }
  std::vector<std::vector<std::pair<int, int>>> all;
  boost::mpi::all_gather(world, mine, all);
  std::set<std::pair<int, int>> seen, expected;
  for (const auto& r : all) seen.insert(r.begin(), r.end());
  for (int s = 0; P > 1 && s < P; ++s) expected.insert({{s, (s + 1) % P}, {s, (s + P - 1) % P}});
  CHECK(seen == expected);
}
