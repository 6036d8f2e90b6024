// A chain's rounds over plain MPI on the chain's duplicated communicator: each side's size
// first (two words, their own tags), the data through the shared variable-size carrier
// (transport/mpi_transfers.hpp) once the size is known; device payloads and received data
// staged through pinned memory (transport/staging_buffer.hpp) on the chain's stream.
#include <string_view>

#include <mpi.h>

#include "chain/chain_device.hpp"
#include "chain/chain_round.hpp"
#include "mpi/check.hpp"
#include "transport/mpi_transfers.hpp"
#include "transport/staging_buffer.hpp"

namespace halox::detail {

namespace {

// Sizes and data in each direction have their own tag, so that with two ranks (periodic) the
// message to my left and the one to my right, both going to the same peer, never mix.
constexpr int tag_size_rightward = 21, tag_size_leftward = 22;
constexpr int tag_data_rightward = 23, tag_data_leftward = 24;
constexpr std::string_view part = "chain";  // for MPI errors
constexpr const char* staging_name = "chain staging";

// One side's MPI state: its tags (what goes to my left moves leftwards; what comes from my
// left moves rightwards), its requests and its buffers.
struct mpi_side {
  int send_size_tag, send_data_tag, recv_size_tag, recv_data_tag;
  MPI_Request size_send = MPI_REQUEST_NULL;
  bool size_arrived = false;
  const std::byte* send_from = nullptr;  // host memory MPI sends from
  mpi_transfers data;
  staging_buffer recv_host;   // host chain: the delivered data; device chain: its staging
  staging_buffer recv_dev;    // device chain: the delivered data
  staging_buffer send_stage;  // device chain: pinned copy of the payload

  mpi_side(int s, MPI_Comm comm, int rank, bool device)
      : send_size_tag(s == 0 ? tag_size_leftward : tag_size_rightward),
        send_data_tag(s == 0 ? tag_data_leftward : tag_data_rightward),
        recv_size_tag(s == 0 ? tag_size_rightward : tag_size_leftward),
        recv_data_tag(s == 0 ? tag_data_rightward : tag_data_leftward),
        data(comm, rank, part, "data"),
        recv_host(device ? staging_buffer::place::pinned : staging_buffer::place::host,
                  staging_name, rank),
        recv_dev(staging_buffer::place::device, staging_name, rank),
        send_stage(staging_buffer::place::pinned, staging_name, rank) {}
};

class mpi_carrier final : public chain_carrier {
 public:
  mpi_carrier(chain_round& r, MPI_Comm comm, int rank, chain_stream* gpu)
      : r_(r),
        comm_(comm),
        rank_(rank),
        gpu_(gpu),
        side_{mpi_side(0, comm, rank, gpu != nullptr), mpi_side(1, comm, rank, gpu != nullptr)} {}

  void start(stream_t after) override {
    // The last delivery read the pinned staging.
    if (gpu_ && delivery_pending_) gpu_->synchronize();
    delivery_pending_ = delivery_enqueued_ = false;
    for (int s = 0; s < 2; ++s) {
      side_[s].size_arrived = !r_.side[s].active;
      side_[s].send_from = r_.side[s].send_from;
      side_[s].data.clear();
    }
    post_sizes();
    stage_sends(after);
    for (int s = 0; s < 2; ++s) {
      const auto& d = r_.side[s];
      if (d.sends_data())
        side_[s].data.send(side_[s].send_from, d.send_count * r_.elem, d.peer,
                           side_[s].send_data_tag);
    }
  }

  bool progress(bool block, stream_t before) override {
    if (!sizes_in(block)) return false;
    for (int s = 0; s < 2; ++s) {
      auto& m = side_[s];
      if (!m.data.receives_done(block)) return false;
      if (!size_sent(s, block)) return false;
      if (!m.data.sends_done(block)) return false;
    }
    // A neighbour's data from another call was only received to be dropped.
    for (auto& d : r_.side)
      if (d.mismatch) d.recv_count = 0;
    return !gpu_ || deliver(block, before);
  }

  std::byte* received(int s) const override {
    return gpu_ ? side_[s].recv_dev.get() : side_[s].recv_host.get();
  }

 private:
  void post_sizes();
  void stage_sends(stream_t after);
  bool sizes_in(bool block);
  void size_arrived(int s);
  bool size_sent(int s, bool block);
  bool deliver(bool block, stream_t before);

  chain_round& r_;
  MPI_Comm comm_;
  int rank_;
  chain_stream* gpu_;  // device chains: the staging copies' stream; null for host chains
  mpi_side side_[2];
  MPI_Request size_recv_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  bool delivery_enqueued_ = false;  // this round's host-to-device copies are enqueued
  bool delivery_pending_ = false;   // ... and may still be reading the pinned staging
};

void mpi_carrier::post_sizes() {
  for (int s = 0; s < 2; ++s) {
    auto& d = r_.side[s];
    if (!d.active) continue;
    mpi::check(MPI_Irecv(d.recv_head, chain_head_words, MPI_UINT64_T, d.peer,
                         side_[s].recv_size_tag, comm_, &size_recv_[s]),
               "MPI_Irecv(size)", rank_, part, d.peer);
    mpi::check(MPI_Isend(d.send_head, chain_head_words, MPI_UINT64_T, d.peer,
                         side_[s].send_size_tag, comm_, &side_[s].size_send),
               "MPI_Isend(size)", rank_, part, d.peer);
  }
}

// Points each side's send at host memory: the user's span, or (device) its pinned copy.
void mpi_carrier::stage_sends(stream_t after) {
  // Also orders this round's deliveries after the stream's reads of the last round's data.
  if (gpu_ && after) gpu_->wait_for(after);
  bool copied = false;
  for (int s = 0; s < 2; ++s) {
    const auto& d = r_.side[s];
    if (!gpu_ || !d.sends_data()) continue;
    auto& m = side_[s];
    const std::size_t bytes = d.send_count * r_.elem;
    m.send_stage.reserve(bytes);
    gpu_->copy(m.send_stage.get(), m.send_from, bytes);
    m.send_from = m.send_stage.get();
    copied = true;
  }
  if (copied) gpu_->synchronize();
}

// Takes the sizes as they arrive, each followed by the receive of its data.
bool mpi_carrier::sizes_in(bool block) {
  while (!side_[0].size_arrived || !side_[1].size_arrived) {
    int idx = MPI_UNDEFINED, flag = 1;
    if (block)
      mpi::check(MPI_Waitany(2, size_recv_, &idx, MPI_STATUS_IGNORE), "MPI_Waitany(size)", rank_,
                 part);
    else
      mpi::check(MPI_Testany(2, size_recv_, &idx, &flag, MPI_STATUS_IGNORE), "MPI_Testany(size)",
                 rank_, part);
    if (!flag) return false;
    if (idx == MPI_UNDEFINED) break;  // cannot happen: a side still waits for its size
    size_arrived(idx);
  }
  return true;
}

// The protocol reads the size; the data receive is of exactly that size. Data from a
// neighbour that made another call is received all the same (it is on its way) and never
// handed out, so that no message is left behind to meet a later call.
void mpi_carrier::size_arrived(int s) {
  auto& m = side_[s];
  const auto& d = r_.side[s];
  m.size_arrived = true;
  r_.on_size(s);
  if (d.recv_count == 0) return;
  const std::size_t bytes = d.recv_count * r_.elem;
  if (gpu_) m.recv_dev.reserve(bytes);
  m.recv_host.reserve(bytes);
  m.data.receive(m.recv_host.get(), bytes, d.peer, m.recv_data_tag);
}

bool mpi_carrier::size_sent(int s, bool block) {
  auto& m = side_[s];
  if (m.size_send == MPI_REQUEST_NULL) return true;
  const int peer = r_.side[s].peer;
  int flag = 1;
  if (block)
    mpi::check(MPI_Wait(&m.size_send, MPI_STATUS_IGNORE), "MPI_Wait(size send)", rank_, part, peer);
  else
    mpi::check(MPI_Test(&m.size_send, &flag, MPI_STATUS_IGNORE), "MPI_Test(size send)", rank_, part,
               peer);
  return flag != 0;
}

// Device chains: copies the received data from pinned staging into the device buffers.
bool mpi_carrier::deliver(bool block, stream_t before) {
  if (!delivery_enqueued_) {
    for (int s = 0; s < 2; ++s) {
      const std::size_t bytes = r_.side[s].recv_count * r_.elem;
      if (bytes > 0) gpu_->copy(side_[s].recv_dev.get(), side_[s].recv_host.get(), bytes);
    }
    gpu_->record();  // for the polls of test()
    delivery_enqueued_ = delivery_pending_ = true;
  }
  if (before) {
    gpu_->signal(before);  // the user's stream waits; the host does not
    return true;
  }
  if (block)
    gpu_->synchronize();
  else if (!gpu_->done())
    return false;
  delivery_pending_ = false;
  return true;
}

}  // namespace

std::unique_ptr<chain_carrier> make_mpi_carrier(chain_round& r, MPI_Comm comm, int rank,
                                                chain_stream* gpu) {
  return std::make_unique<mpi_carrier>(r, comm, rank, gpu);
}

}  // namespace halox::detail
