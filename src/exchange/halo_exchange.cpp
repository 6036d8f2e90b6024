#include "halox/exchange/halo_exchange.hpp"

#include <fmt/format.h>

#include "halox/error.hpp"

namespace halox {

namespace detail {

struct exchange_state {
  boost::mpi::communicator comm;
  exchange_program prog;
  mpi_channels channels;
  std::vector<int> done;  // scratch for test()
  std::size_t unpacked = 0;
  bool in_flight = false;

  exchange_state(const boost::mpi::communicator& c, exchange_program p)
      : comm(c),
        prog(std::move(p)),
        channels(MPI_Comm(comm), prog.sends, prog.send_buf.get(), prog.recvs, prog.recv_buf.get()),
        done(prog.recvs.size() + 1) {}

  static void run_range(const std::vector<copy_op>& ops, exchange_program::op_range r) {
    for (std::size_t k = r.first; k < r.first + r.count; ++k) run(ops[k]);
  }
  void unpack(int m) {
    run_range(prog.unpack_ops, prog.unpack_range[m]);
    ++unpacked;
  }
  void start() {
    require(!in_flight,
            "rank {}: start() called while this object's previous exchange is still in flight; "
            "wait() on its handle first",
            comm.rank());
    channels.start_recvs();
    for (std::size_t m = 0; m < prog.sends.size(); ++m) {
      run_range(prog.pack_ops, prog.pack_range[m]);
      channels.start_send(m);
    }
    for (const auto& op : prog.local_ops) run(op);
    unpacked = 0;
    in_flight = true;
  }
  void wait() {
    if (!in_flight) return;
    for (int m; (m = channels.wait_recv()) >= 0;) unpack(m);
    channels.wait_sends();
    in_flight = false;
  }
  bool test() {
    if (!in_flight) return true;
    const int n = channels.test_recvs(done.data());
    for (int k = 0; k < n; ++k) unpack(done[k]);
    if (unpacked == prog.recvs.size() && channels.test_sends()) in_flight = false;
    return !in_flight;
  }
};

}  // namespace detail

halo_exchange::halo_exchange(const boost::mpi::communicator& comm, detail::exchange_program p)
    : s_(std::make_unique<detail::exchange_state>(comm, std::move(p))) {}

halo_exchange::~halo_exchange() {
  if (!s_) return;
  try {
    s_->wait();
  } catch (...) {
    // A destructor must not throw; the MPI error was already reported to MPI's handler.
  }
}

halo_exchange::halo_exchange(halo_exchange&&) noexcept = default;
halo_exchange& halo_exchange::operator=(halo_exchange&& o) noexcept {
  if (this != &o) {
    if (s_) try { s_->wait(); } catch (...) {}
    s_ = std::move(o.s_);
  }
  return *this;
}

void halo_exchange::exchange() {
  s_->start();
  s_->wait();
}

exchange_handle halo_exchange::start() {
  s_->start();
  return exchange_handle(s_.get());
}

bool halo_exchange::in_flight() const { return s_->in_flight; }

std::string halo_exchange::describe() const {
  return fmt::format("rank {}: {}", s_->comm.rank(), s_->prog.summary);
}

void exchange_handle::wait() { s_->wait(); }
bool exchange_handle::test() { return s_->test(); }

}  // namespace halox
