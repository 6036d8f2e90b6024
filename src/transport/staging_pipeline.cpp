#include "transport/staging_pipeline.hpp"

#include "halox/core/error.hpp"

namespace halox::detail {

namespace {
std::size_t total(const std::vector<piece>& pieces) {
  std::size_t n = 0;
  for (const auto& p : pieces) n += p.bytes;
  return n;
}
}  // namespace

staging_pipeline::staging_pipeline(mpi_channels& ch, const stream_source& on, std::size_t chunk,
                                   const std::byte* device_send, std::byte* send,
                                   std::byte* device_recv, const std::byte* recv, int rank)
    : carrier(nvtx_transport::staging),
      on_(on),
      ch_(ch),
      chunk_(chunk),
      stages_(group_stages(ch.send_pieces(), chunk)),
      in_pieces_(chunk > 0 && total(ch.recv_pieces()) > chunk),
      copies_(stages_, ch.recv_pieces(), in_pieces_, device_send, send, device_recv, recv, rank),
      done_(ch.recv_pieces().size() + 1) {}

void staging_pipeline::do_post_receives(std::uint64_t) {
  ch_.start_recvs();
  next_stage_ = 0;
  arrived_ = 0;
}

void staging_pipeline::do_post_sends(std::uint64_t) {
  copies_.copy_out(on_.stream());
  while (!sends_started()) advance(false);
}

progress_report staging_pipeline::do_progress() {
  const std::size_t before = arrived_;
  const bool arrived = advance(false);
  return {arrived_ != before, arrived && ch_.test_sends()};
}

void staging_pipeline::do_complete() {
  advance(true);
  ch_.wait_sends();
}

void staging_pipeline::waiting_for(std::vector<std::string>& out) const {
  ch_.waiting_for(out);
}

bool staging_pipeline::advance(bool block) {
  const std::size_t pieces = ch_.recv_pieces().size();
  for (;;) {
    while (next_stage_ < stages_.size() && copies_.copied_out(next_stage_)) {
      for (std::size_t p = stages_[next_stage_].first; p < stages_[next_stage_].last; ++p)
        ch_.start_send_piece(p);
      ++next_stage_;
    }
    if (arrived_ < pieces) {
      if (block && sends_started()) {  // nothing left to poll but MPI: let it block
        const int p = ch_.wait_recv_piece();
        require(p >= 0, "internal error: host staging waits for a piece no request will bring");
        copies_.arrived(std::size_t(p));
        ++arrived_;
      } else {
        const int n = ch_.test_recv_pieces(done_.data());
        for (int k = 0; k < n; ++k) copies_.arrived(std::size_t(done_[std::size_t(k)]));
        arrived_ += std::size_t(n);
      }
    }
    const bool done = sends_started() && arrived_ == pieces;
    if (done || !block) return done;
  }
}

std::string staging_pipeline::describe() const {
  return format(
      "host staging in pieces (chunk {} B): {} send piece(s) in {} copies out, {} receive "
      "piece(s) copied in {}",
      chunk_, ch_.send_pieces().size(), stages_.size(), ch_.recv_pieces().size(),
      in_pieces_ ? "as each arrives" : "together");
}

}  // namespace halox::detail
