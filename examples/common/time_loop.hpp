// The host time-step loop the stencil mini-apps share (heat3d, life2d): two fields taking turns
// as the current state, each step's exchange overlapped with the interior update or not, timed.
#pragma once

#include <chrono>

#include <boost/mpi/communicator.hpp>
#include <halox/halox.hpp>

namespace example_app {

using clock_type = std::chrono::steady_clock;

/// Seconds from `t` until now.
inline double since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

/// Where a time-step loop's time went.
struct timing {
  double seconds = 0;     // the whole time-step loop
  double exchange_s = 0;  // of which in halox's exchange calls (host time)
};

/// Runs `o.steps` time steps. Step s reads `u` (s even) or `v` (s odd), exchanging its halos with
/// `ex_u` or `ex_v`, and writes the other field. With `o.overlap` a step starts the exchange,
/// updates the interior for stencil `st` (halox::split_interior: it reads no halo, so it
/// overlaps the messages), waits, then updates the shell; without, it exchanges, then updates
/// the whole owned box. `update(in, out, part)` updates the cells of box `part` of `out` from
/// `in`; `after_step(s, seconds)` runs after step s, given the seconds since the loop began.
/// The loop runs between two barriers of `comm`; `t` gets its seconds and those spent in the
/// exchange calls. Returns the field holding the final state.
template <class Options, class Field, int D, class Update, class AfterStep>
const Field& run_steps(const boost::mpi::communicator& comm, const Options& o,
                       const halox::stencil<D>& st, Field& u, Field& v, halox::halo_exchange& ex_u,
                       halox::halo_exchange& ex_v, Update&& update, AfterStep&& after_step,
                       timing& t) {
  const auto owned = u.owned_box();
  const auto [inner, shell] = halox::split_interior(owned, st);
  comm.barrier();
  const auto t0 = clock_type::now();
  for (int s = 0; s < o.steps; ++s) {
    const bool even = s % 2 == 0;
    auto& in = even ? u : v;
    auto& out = even ? v : u;
    auto& ex = even ? ex_u : ex_v;
    auto e0 = clock_type::now();
    if (o.overlap) {
      auto h = ex.start();
      t.exchange_s += since(e0);
      update(in, out, inner);  // reads no halo: overlaps the messages
      e0 = clock_type::now();
      h.wait();
      t.exchange_s += since(e0);
      for (const auto& slab : shell) update(in, out, slab);
    } else {
      ex.exchange();
      t.exchange_s += since(e0);
      update(in, out, owned);
    }
    after_step(s, since(t0));
  }
  comm.barrier();
  t.seconds = since(t0);
  return o.steps % 2 == 0 ? u : v;
}

}  // namespace example_app
