// Host fields only: messages through MPI (mpi_carrier) and, between ranks of one node, shared
// memory (shm_carrier, which says what start() and wait() do there).
//
// start() tells the node's peers that this rank has started, posts the MPI receives, packs and
// sends each MPI message, runs the local copies, then packs the shared-memory messages whose
// receivers are ready. wait()/test() move both carriers on, unpacking messages as they arrive
// (in peer order once all have, for reverse exchanges).
#include "exchange/exchange_core.hpp"

namespace halox::detail {

namespace {

class host_mode final : public exchange_mode {
 public:
  explicit host_mode(exchange_core& c) : exchange_mode(c), mpi_(c.mpi()), shm_(c.shm()) {
    carriers_.push_back(&mpi_);
    if (shm_) carriers_.push_back(shm_);
  }
  const char* name() const override { return "host"; }
  const char* capture_blocker() const override {
    return "it exchanges host fields: the host packs and unpacks them and calls MPI or shared "
           "memory every exchange";
  }

  void start(stream_t) override {
    const std::uint64_t g = core_.generation();
    if (shm_) shm_->post_receives(g);  // first, so that peers go on at once
    mpi_.post_receives(g);
    for (std::size_t m = 0; m < core_.program().sends.size(); ++m)
      if (mpi_.sends(m)) mpi_.pack_and_send(m);  // each message goes as soon as it is packed
    core_.run_local();
    if (shm_) shm_->post_sends(g);
  }

  void wait(stream_t) override {
    receive(true);
    unpack_ordered();
  }

  bool test() override {
    if (!receive(false)) return false;
    unpack_ordered();
    return true;
  }

 private:
  // Moves both carriers on; with `block`, until both are done. True when both are. Without
  // `block`, yields the processor when nothing moved (ranks may outnumber cores; a polling
  // loop must let its peers run).
  bool receive(bool block) {
    for (int spins = 0;;) {
      const progress_report shm = shm_ ? shm_->progress() : progress_report{false, true};
      if (block && shm.done) {  // block in MPI only when nothing else is left to poll
        mpi_.complete();
        return true;
      }
      const progress_report mpi = mpi_.progress();
      if (mpi.done && shm.done) return true;
      const bool moved = shm.moved || mpi.moved;
      if (!block) {
        if (!moved && shm_) yield_processor();
        return false;
      }
      if (!moved) spin_pause(spins);
    }
  }

  void unpack_ordered() {
    if (core_.unpack_ordered() && shm_) shm_->consumed_all();
  }

  mpi_carrier& mpi_;
  shm_carrier* const shm_;  // null unless some message goes through shared memory
};

}  // namespace

std::unique_ptr<exchange_mode> make_host_mode(exchange_core& c) {
  return std::make_unique<host_mode>(c);
}

}  // namespace halox::detail
