#include "transport/mpi_channels.hpp"

#include <algorithm>
#include <string_view>

#include "halox/core/error.hpp"
#include "halox/core/format.hpp"
#include "mpi/check.hpp"

namespace halox::detail {

namespace {
constexpr int tag = 7;  // each object has its own communicator, so one tag suffices
}  // namespace

mpi_channels::mpi_channels(MPI_Comm comm, const std::vector<message>& sends,
                           const std::byte* send_buf, const std::vector<message>& recvs,
                           std::byte* recv_buf, std::size_t chunk, std::string_view part)
    : comm_(comm),
      part_(part),
      send_piece_(split_messages(sends, chunk)),
      recv_piece_(split_messages(recvs, chunk)) {
  mpi::check(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank", -1, part_);
  mpi::check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", rank_,
             part_);
  send_first_.assign(sends.size() + 1, 0);
  for (const auto& p : send_piece_) {
    const int peer = sends[p.message].peer;
    MPI_Request r;
    mpi::check(MPI_Send_init(send_buf + p.offset, int(p.bytes), MPI_BYTE, peer, tag, comm, &r),
               "MPI_Send_init", rank_, part_, peer);
    send_req_.push_back(r);
    send_first_[p.message + 1] = int(send_req_.size());
  }
  for (const auto& m : sends) send_peer_.push_back(m.peer);
  recv_pieces_.assign(recvs.size(), 0);
  recv_first_.assign(recvs.size() + 1, 0);
  for (const auto& p : recv_piece_) {
    const int peer = recvs[p.message].peer;
    MPI_Request r;
    mpi::check(MPI_Recv_init(recv_buf + p.offset, int(p.bytes), MPI_BYTE, peer, tag, comm, &r),
               "MPI_Recv_init", rank_, part_, peer);
    recv_req_.push_back(r);
    ++recv_pieces_[p.message];
    recv_first_[p.message + 1] = int(recv_req_.size());
  }
  for (const auto& m : recvs) recv_peer_.push_back(m.peer);
  recv_left_.assign(recvs.size(), 0);
  scratch_.assign(recv_req_.size() + 1, 0);
  statuses_.resize(recv_req_.size() + 1);
}

mpi_channels::~mpi_channels() {
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // (A destructor cannot report a failure; an active request is freed once it completes.) A
  // receive still pending (an exchange that gave up waiting for its peer) is cancelled first.
  for (auto& r : recv_req_) mpi::cancel_pending(r);
  for (auto& r : send_req_) (void)MPI_Request_free(&r);
  for (auto& r : recv_req_) (void)MPI_Request_free(&r);
}

void mpi_channels::start_recvs() {
  std::copy(recv_pieces_.begin(), recv_pieces_.end(), recv_left_.begin());
  if (!recv_req_.empty())
    mpi::check(MPI_Startall(int(recv_req_.size()), recv_req_.data()), "MPI_Startall(receives)",
               rank_, part_);
}

void mpi_channels::start_recv(std::size_t m) {
  const int first = recv_first_[m], n = recv_first_[m + 1] - first;
  recv_left_[m] = recv_pieces_[m];
  mpi::check(MPI_Startall(n, recv_req_.data() + first), "MPI_Startall(receive)", rank_, part_,
             recv_peer_[m]);
}

void mpi_channels::start_send(std::size_t m) {
  const int first = send_first_[m], n = send_first_[m + 1] - first;
  mpi::check(MPI_Startall(n, send_req_.data() + first), "MPI_Startall(send)", rank_, part_,
             send_peer_[m]);
}

int mpi_channels::finish_recv_request(int req, const MPI_Status& st) {
  int got = 0;
  mpi::check(MPI_Get_count(&st, MPI_BYTE, &got), "MPI_Get_count", rank_, part_, st.MPI_SOURCE);
  const std::size_t want = recv_piece_[std::size_t(req)].bytes;
  if (std::size_t(got) != want)
    fail(
        "rank {}: received {} bytes from rank {} where the plan expects {}; do all ranks build "
        "the exchange with the same domain, stencil and field types?",
        rank_, got, st.MPI_SOURCE, want);
  const int m = int(recv_piece_[std::size_t(req)].message);
  return --recv_left_[m] == 0 ? m : -1;
}

int mpi_channels::wait_recv() {
  for (;;) {
    int idx = MPI_UNDEFINED;
    MPI_Status st;
    mpi::check(MPI_Waitany(int(recv_req_.size()), recv_req_.data(), &idx, &st),
               "MPI_Waitany(receives)", rank_, part_);
    if (idx == MPI_UNDEFINED) return -1;
    if (const int m = finish_recv_request(idx, st); m >= 0) return m;
  }
}

int mpi_channels::test_recvs(int* done) {
  if (recv_req_.empty()) return 0;
  int count = 0;
  const int rc = MPI_Testsome(int(recv_req_.size()), recv_req_.data(), &count, scratch_.data(),
                              statuses_.data());
  // A message larger than its receive (ranks that planned differently) fails its status: said
  // as the blocking wait says it.
  if (rc == MPI_ERR_IN_STATUS)
    for (int k = 0; k < count; ++k)
      if (statuses_[k].MPI_ERROR == MPI_ERR_TRUNCATE)
        fail(
            "rank {}: received more bytes from rank {} than the plan expects ({}); do all ranks "
            "build the exchange with the same domain, stencil and field types?",
            rank_, statuses_[k].MPI_SOURCE, recv_piece_[std::size_t(scratch_[k])].bytes);
  mpi::check(rc, "MPI_Testsome(receives)", rank_, part_);
  int n = 0;
  if (count == MPI_UNDEFINED) return 0;
  for (int k = 0; k < count; ++k)
    if (const int m = finish_recv_request(scratch_[k], statuses_[k]); m >= 0) done[n++] = m;
  return n;
}

void mpi_channels::start_send_piece(std::size_t p) {
  mpi::check(MPI_Start(&send_req_[p]), "MPI_Start(send)", rank_, part_,
             send_peer_[send_piece_[p].message]);
}

int mpi_channels::wait_recv_piece() {
  int idx = MPI_UNDEFINED;
  MPI_Status st;
  mpi::check(MPI_Waitany(int(recv_req_.size()), recv_req_.data(), &idx, &st),
             "MPI_Waitany(receives)", rank_, part_);
  if (idx == MPI_UNDEFINED) return -1;
  finish_recv_request(idx, st);
  return idx;
}

int mpi_channels::test_recv_pieces(int* done) {
  if (recv_req_.empty()) return 0;
  int count = 0;
  mpi::check(MPI_Testsome(int(recv_req_.size()), recv_req_.data(), &count, done, statuses_.data()),
             "MPI_Testsome(receives)", rank_, part_);
  if (count == MPI_UNDEFINED) return 0;
  for (int k = 0; k < count; ++k) finish_recv_request(done[k], statuses_[k]);
  return count;
}

void mpi_channels::wait_sends() {
  if (!send_req_.empty())
    mpi::check(MPI_Waitall(int(send_req_.size()), send_req_.data(), MPI_STATUSES_IGNORE),
               "MPI_Waitall(sends)", rank_, part_);
}

bool mpi_channels::test_sends() {
  int flag = 1;
  if (!send_req_.empty())
    mpi::check(MPI_Testall(int(send_req_.size()), send_req_.data(), &flag, MPI_STATUSES_IGNORE),
               "MPI_Testall(sends)", rank_, part_);
  return flag != 0;
}

namespace {
// Whether any request of [first, last) is still pending.
bool pending(const std::vector<MPI_Request>& reqs, int first, int last) {
  for (int k = first; k < last; ++k)
    if (mpi::pending(reqs[std::size_t(k)])) return true;
  return false;
}
}  // namespace

void mpi_channels::unfinished(std::vector<int>& recv_peers, std::vector<int>& send_peers) const {
  for (std::size_t m = 0; m + 1 < recv_first_.size(); ++m)
    if (pending(recv_req_, recv_first_[m], recv_first_[m + 1])) recv_peers.push_back(recv_peer_[m]);
  for (std::size_t m = 0; m + 1 < send_first_.size(); ++m)
    if (pending(send_req_, send_first_[m], send_first_[m + 1])) send_peers.push_back(send_peer_[m]);
}

void mpi_channels::waiting_for(std::vector<std::string>& out) const {
  std::vector<int> recv, send;
  unfinished(recv, send);
  for (int p : recv) out.push_back(format("rank {} (MPI: its message has not arrived)", p));
  for (int p : send)
    out.push_back(format("rank {} (MPI: it has not received this rank's message)", p));
}

}  // namespace halox::detail
