// A chain's rounds over plain MPI on the chain's duplicated communicator: each side's size
// (two words) through the exchanges' persistent MPI channels (transport/mpi_channels.hpp), set
// up once over the heads; the data, whose size is known only once the size has come, through
// the variable-size transfers beside them (transport/mpi_transfers.hpp); device payloads and
// received data staged through pinned memory (transport/staging_buffer.hpp) on the chain's
// stream.
#include <cstring>
#include <string_view>
#include <vector>

#include <mpi.h>

#include "chain/chain_device.hpp"
#include "chain/chain_round.hpp"
#include "transport/mpi_channels.hpp"
#include "transport/mpi_transfers.hpp"
#include "transport/staging_buffer.hpp"

namespace halox::detail {

namespace {

// The data in each direction has its own tag, so that with two ranks (periodic) the message to
// my left and the one to my right, both going to the same peer, never mix. (The sizes keep
// them apart by their order, chain_recv_order.)
constexpr int tag_data_rightward = 23, tag_data_leftward = 24;
constexpr std::string_view part = "chain";  // for MPI errors
constexpr const char* staging_name = "chain staging";

// One side's MPI state: its data tags (what goes to my left moves leftwards; what comes from my
// left moves rightwards), its data requests and its buffers.
struct mpi_side {
  int send_data_tag, recv_data_tag;
  bool size_arrived = false;
  const std::byte* send_from = nullptr;  // host memory MPI sends from
  mpi_transfers data;
  staging_buffer recv_host;   // host chain: the delivered data; device chain: its staging
  staging_buffer recv_dev;    // device chain: the delivered data
  staging_buffer send_stage;  // device chain: pinned copy of the payload

  mpi_side(int s, MPI_Comm comm, int rank, bool device)
      : send_data_tag(s == 0 ? tag_data_leftward : tag_data_rightward),
        recv_data_tag(s == 0 ? tag_data_rightward : tag_data_leftward),
        data(comm, rank, part, "data"),
        recv_host(device ? staging_buffer::place::pinned : staging_buffer::place::host,
                  staging_name, rank),
        recv_dev(staging_buffer::place::device, staging_name, rank),
        send_stage(staging_buffer::place::pinned, staging_name, rank) {}
};

// The size messages as an exchange's MPI messages: one head each way per neighbour, at the
// side's slot of the head buffers, receives in chain_recv_order.
struct head_messages {
  std::vector<message> sends, recvs;
  int send_of[2] = {-1, -1}, recv_of[2] = {-1, -1};  // channel message of each side
  int side_of_recv[2] = {-1, -1};

  explicit head_messages(const chain_round& r) {
    for (int s = 0; s < 2; ++s)
      if (r.side[s].peer >= 0) {
        send_of[s] = int(sends.size());
        sends.push_back({r.side[s].peer, std::size_t(s) * chain_head_bytes, chain_head_bytes});
      }
    for (int s : chain_recv_order)
      if (r.side[s].peer >= 0) {
        recv_of[s] = int(recvs.size());
        side_of_recv[recvs.size()] = s;
        recvs.push_back({r.side[s].peer, std::size_t(s) * chain_head_bytes, chain_head_bytes});
      }
  }
};

class mpi_rounds final : public round_mode {
 public:
  mpi_rounds(chain_round& r, MPI_Comm comm, int rank, chain_stream* gpu)
      : r_(r),
        gpu_(gpu),
        side_{mpi_side(0, comm, rank, gpu != nullptr), mpi_side(1, comm, rank, gpu != nullptr)},
        heads_(r),
        sizes_(comm, heads_.sends, reinterpret_cast<const std::byte*>(head_out_), heads_.recvs,
               reinterpret_cast<std::byte*>(head_in_), 0, part) {}

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
    for (auto& m : side_)
      if (!m.data.receives_done(block)) return false;
    if (!sizes_sent(block)) return false;
    for (auto& m : side_)
      if (!m.data.sends_done(block)) return false;
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
  bool sizes_sent(bool block) {
    if (!block) return sizes_.test_sends();
    sizes_.wait_sends();
    return true;
  }
  bool deliver(bool block, stream_t before);

  chain_round& r_;
  chain_stream* gpu_;  // device chains: the staging copies' stream; null for host chains
  mpi_side side_[2];
  // The heads by side (left, right), sent and received; read by MPI until the round ends.
  std::uint64_t head_out_[2 * chain_head_words] = {};
  std::uint64_t head_in_[2 * chain_head_words] = {};
  head_messages heads_;
  mpi_channels sizes_;              // persistent requests of the heads, prepared once
  bool delivery_enqueued_ = false;  // this round's host-to-device copies are enqueued
  bool delivery_pending_ = false;   // ... and may still be reading the pinned staging
};

// Receives first, in chain_recv_order (their matching order), then the sends.
void mpi_rounds::post_sizes() {
  for (int s : chain_recv_order)
    if (r_.side[s].active) sizes_.start_recv(std::size_t(heads_.recv_of[s]));
  for (int s = 0; s < 2; ++s) {
    const auto& d = r_.side[s];
    if (!d.active) continue;
    std::memcpy(head_out_ + s * chain_head_words, d.send_head, chain_head_bytes);
    sizes_.start_send(std::size_t(heads_.send_of[s]));
  }
}

// Points each side's send at host memory: the user's span, or (device) its pinned copy.
void mpi_rounds::stage_sends(stream_t after) {
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
bool mpi_rounds::sizes_in(bool block) {
  while (!side_[0].size_arrived || !side_[1].size_arrived) {
    int done[2] = {-1, -1}, n = 1;
    if (block)
      done[0] = sizes_.wait_recv();
    else
      n = sizes_.test_recvs(done);
    if (n == 0) return false;
    for (int k = 0; k < n; ++k) {
      if (done[k] < 0) return true;  // cannot happen: a side still waits for its size
      size_arrived(heads_.side_of_recv[done[k]]);
    }
  }
  return true;
}

// The protocol reads the size; the data receive is of exactly that size. Data from a
// neighbour that made another call is received all the same (it is on its way) and never
// handed out, so that no message is left behind to meet a later call.
void mpi_rounds::size_arrived(int s) {
  auto& m = side_[s];
  auto& d = r_.side[s];
  m.size_arrived = true;
  std::memcpy(d.recv_head, head_in_ + s * chain_head_words, chain_head_bytes);
  r_.on_size(s);
  if (d.recv_count == 0) return;
  const std::size_t bytes = d.recv_count * r_.elem;
  if (gpu_) m.recv_dev.reserve(bytes);
  m.recv_host.reserve(bytes);
  m.data.receive(m.recv_host.get(), bytes, d.peer, m.recv_data_tag);
}

// Device chains: copies the received data from pinned staging into the device buffers.
bool mpi_rounds::deliver(bool block, stream_t before) {
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

std::unique_ptr<round_mode> make_mpi_rounds(chain_round& r, MPI_Comm comm, int rank,
                                            chain_stream* gpu) {
  return std::make_unique<mpi_rounds>(r, comm, rank, gpu);
}

}  // namespace halox::detail
