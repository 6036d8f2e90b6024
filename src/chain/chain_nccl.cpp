// A chain's rounds over NCCL (staging nccl): the sizes as one group between device buffers on
// the chain's stream, read back through pinned memory, then the data as a second group
// straight between the payloads and the device receive buffers. Both groups go through the
// exchanges' NCCL carrier (transport/nccl_carrier.hpp), made variable: its calls are set per
// group, over the shared communicator.
#include <cstring>
#include <memory>
#include <vector>

#include "chain/chain_device.hpp"
#include "chain/chain_round.hpp"
#include "halox/comm/agree.hpp"
#include "transport/nccl_carrier.hpp"
#include "transport/nccl_comm.hpp"
#include "transport/staging_buffer.hpp"

namespace halox::detail {

namespace {

constexpr const char* staging_name = "chain staging";

class nccl_rounds final : public round_mode {
 public:
  nccl_rounds(chain_round& r, const boost::mpi::communicator& comm, chain_stream& gpu)
      : r_(r),
        gpu_(gpu),
        sizes_host_(staging_buffer::place::pinned, staging_name, comm.rank()),
        sizes_dev_(staging_buffer::place::device, staging_name, comm.rank()),
        recv_dev_{{staging_buffer::place::device, staging_name, comm.rank()},
                  {staging_buffer::place::device, staging_name, comm.rank()}} {
    std::vector<int> peers;  // connected now, not in the first round
    for (const auto& d : r_.side)
      if (d.peer >= 0) peers.push_back(d.peer);
    agree(comm, [&] {
      sizes_host_.reserve(4 * chain_head_bytes);
      sizes_dev_.reserve(4 * chain_head_bytes);
    });
    // Collective: fails on every rank together. Two calls each way at most per group.
    nccl_ = std::make_unique<nccl_carrier>(nccl_comm::shared(MPI_Comm(comm)), peers, 2);
    nccl_->connect();
  }

  void start(stream_t after) override;

  // Sizes read, then the data group, then completion: on the host, or by making `before` wait
  // for the chain's stream.
  bool progress(bool block, stream_t before) override {
    if (sizes_pending_) {
      if (!settle(block)) return false;
      sizes_pending_ = false;
      post_data();
    }
    if (before)
      gpu_.signal(before);  // the user's stream waits; the host does not
    else if (!settle(block))
      return false;
    nccl_->check_async();
    return true;
  }

  std::byte* received(int s) const override { return recv_dev_[s].get(); }
  const nccl_comm* nccl() const override { return &nccl_->comm(); }

 private:
  // The heads in pinned memory: [send left, send right, recv left, recv right].
  std::uint64_t* head_at(std::size_t k) const {
    return reinterpret_cast<std::uint64_t*>(sizes_host_.get()) + k * chain_head_words;
  }
  // True once the work recorded last has run; with `block`, waits for it. Polls NCCL's
  // asynchronous errors meanwhile, so that a failed peer is an error, not a hang.
  bool settle(bool block) {
    while (!gpu_.done()) {
      nccl_->check_async();
      if (!block) return false;
    }
    return true;
  }
  void post_data();

  chain_round& r_;
  chain_stream& gpu_;
  std::unique_ptr<nccl_carrier> nccl_;     // both groups of a round, calls set per group
  staging_buffer sizes_host_, sizes_dev_;  // pinned and device heads
  staging_buffer recv_dev_[2];             // the delivered data
  bool sizes_pending_ = false;             // this round's size group is enqueued, not yet read
};

// The sizes go device to device as a group, after the work on `after`; their copy back to
// pinned memory is read once the stream has passed it (progress).
void nccl_rounds::start(stream_t after) {
  nccl_call sends[2], recvs[2];
  std::size_t ns = 0, nr = 0;
  std::byte* dev = sizes_dev_.get();
  for (int s = 0; s < 2; ++s) {
    const auto& d = r_.side[s];
    std::memcpy(head_at(std::size_t(s)), d.send_head, chain_head_bytes);
    if (d.active) sends[ns++] = {d.peer, dev + s * chain_head_bytes, chain_head_bytes};
  }
  for (int s : chain_recv_order)
    if (r_.side[s].active)
      recvs[nr++] = {r_.side[s].peer, dev + (2 + s) * chain_head_bytes, chain_head_bytes};
  if (after) gpu_.wait_for(after);
  if (ns + nr == 0) return;
  gpu_.copy(dev, head_at(0), 2 * chain_head_bytes);
  nccl_->assign(sends, ns, recvs, nr);
  nccl_->enqueue(gpu_.get());
  gpu_.copy(head_at(2), dev + 2 * chain_head_bytes, 2 * chain_head_bytes);
  gpu_.record();
  sizes_pending_ = true;
}

// Once the sizes are in: the data group, receiving straight into the device buffers. Pairs
// whose calls differ send nothing either way (both sides know).
void nccl_rounds::post_data() {
  for (int s = 0; s < 2; ++s) {
    auto& d = r_.side[s];
    if (!d.active) continue;
    std::memcpy(d.recv_head, head_at(2 + std::size_t(s)), chain_head_bytes);
    r_.on_size(s);
    if (d.mismatch) d.recv_count = 0;  // over NCCL such a pair sends no data
    if (d.recv_count > 0) recv_dev_[s].reserve(d.recv_count * r_.elem);
  }
  nccl_call sends[2], recvs[2];
  std::size_t ns = 0, nr = 0;
  for (const auto& d : r_.side)
    if (d.sends_data() && !d.mismatch)
      sends[ns++] = {d.peer, const_cast<std::byte*>(d.send_from), d.send_count * r_.elem};
  for (int s : chain_recv_order) {
    const auto& d = r_.side[s];
    if (d.active && d.recv_count > 0)
      recvs[nr++] = {d.peer, recv_dev_[s].get(), d.recv_count * r_.elem};
  }
  nccl_->assign(sends, ns, recvs, nr);
  nccl_->enqueue(gpu_.get());
  gpu_.record();  // for the polls of test()
}

}  // namespace

std::unique_ptr<round_mode> make_nccl_rounds(chain_round& r, const boost::mpi::communicator& comm,
                                             chain_stream& gpu) {
  return std::make_unique<nccl_rounds>(r, comm, gpu);
}

}  // namespace halox::detail
