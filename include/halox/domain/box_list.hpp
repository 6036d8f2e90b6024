#pragma once
/// @file
/// The general structured domain: a user-given list of boxes with owner ranks.

#include <algorithm>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "halox/core/format.hpp"
#include "halox/domain/domain_base.hpp"

namespace halox {

namespace detail {
/// Every rank's boxes: `coords` holds `per_box` indices per box (lo, then hi), rank 0's boxes
/// first; `owners` the rank of each box.
struct gathered_boxes {
  std::vector<index> coords;
  std::vector<int> owners;
};
/// Collective over `comm`: gathers every rank's `mine` (`per_box` indices per box) on every
/// rank, in rank order (box_list::from_local).
gathered_boxes all_gather_boxes(const boost::mpi::communicator& comm,
                                const std::vector<index>& mine, int per_box);
}  // namespace detail

/// One box of a box-list domain and the rank that owns it.
template <int D>
struct owned_box {
  box<D> cells;
  int owner = 0;
};

/// A global box covered by user-given boxes, any number per rank (including none).
///
/// Every rank passes the same list (or only its own boxes, to from_local). It must tile `[0,
/// global)` exactly: boxes non-empty, inside the global box, not overlapping, covering every cell;
/// owners in `[0, comm.size())`. A rank's blocks are its boxes in list order. Queries scan the list
/// (fine for the hundreds of boxes such decompositions typically have).
///
/// Collective over `comm`: every rank must construct it. Throws halox::error, on every rank,
/// when the ranks' extents, periodicity or box lists differ (one all-reduce of their hash), or
/// when the list does not tile the global box.
template <int D>
class box_list : public domain_base<box_list<D>, D> {
 public:
  /// The same over a raw MPI communicator; `comm` must stay valid while the domain and its
  /// exchange objects are built (halox does not take ownership).
  box_list(MPI_Comm comm, const extents<D>& global, periodic<D> per,
           std::vector<owned_box<D>> boxes)
      : box_list(boost::mpi::communicator(comm, boost::mpi::comm_attach), global, per,
                 std::move(boxes)) {}

  box_list(const boost::mpi::communicator& comm, const extents<D>& global, periodic<D> per,
           std::vector<owned_box<D>> boxes)
      : domain_base<box_list<D>, D>(comm, global, per), boxes_(std::move(boxes)) {
    this->agree_and_check(
        "box_list",
        [&](detail::settings_hash& h) {
          h.add(boxes_.size());
          for (const auto& b : boxes_) {
            for (int i = 0; i < D; ++i)
              h.add(std::uint64_t(b.cells.lo[i])), h.add(std::uint64_t(b.cells.hi[i]));
            h.add(std::uint64_t(std::int64_t(b.owner)));
          }
        },
        [&](detail::settings_list& l) {
          l.push_back("box count");
          l.push_back(std::to_string(boxes_.size()));
          for (std::size_t k = 0; k < boxes_.size(); ++k) {
            l.push_back(detail::format("box #{}", k));
            l.push_back(
                detail::format("{} (owner {})", to_string(boxes_[k].cells), boxes_[k].owner));
          }
        },
        [&] { validate(); });
    local_id_.resize(boxes_.size());
    std::vector<int> count(comm.size(), 0);
    for (std::size_t k = 0; k < boxes_.size(); ++k) {
      local_id_[k] = count[boxes_[k].owner]++;
      if (boxes_[k].owner == rank_) local_.push_back(boxes_[k].cells);
    }
  }

  /// The domain from each rank's own boxes: collective over `comm`, it gathers every rank's
  /// `mine` on every rank (one all-gather of their count, one of their corners) and builds the
  /// list in rank order: rank 0's boxes first, each rank's in the order it gave them, so that
  /// this rank's blocks (`local_boxes()`) are `mine` as given. The gathered list is checked as
  /// the constructor checks one (a box number in a message counts boxes in that order; the
  /// message names the box's owner too), and the error is thrown on every rank. A rank may
  /// give no box.
  /// ```
  /// auto dom = halox::box_list<2>::from_local(world, {nx, ny}, {false, false}, my_chunks);
  /// ```
  static box_list from_local(const boost::mpi::communicator& comm, const extents<D>& global,
                             periodic<D> per, const std::vector<box<D>>& mine) {
    std::vector<index> flat;
    flat.reserve(mine.size() * 2 * D);
    for (const auto& b : mine) {
      flat.insert(flat.end(), b.lo.begin(), b.lo.end());
      flat.insert(flat.end(), b.hi.begin(), b.hi.end());
    }
    const auto all = detail::all_gather_boxes(comm, flat, 2 * D);
    std::vector<owned_box<D>> boxes(all.owners.size());
    for (std::size_t k = 0; k < boxes.size(); ++k) {
      for (int i = 0; i < D; ++i) {
        boxes[k].cells.lo[i] = all.coords[k * 2 * D + std::size_t(i)];
        boxes[k].cells.hi[i] = all.coords[k * 2 * D + std::size_t(D + i)];
      }
      boxes[k].owner = all.owners[k];
    }
    return box_list(comm, global, per, std::move(boxes));
  }
  /// from_local over a raw MPI communicator (not taken over: it must outlive the set-up).
  static box_list from_local(MPI_Comm comm, const extents<D>& global, periodic<D> per,
                             const std::vector<box<D>>& mine) {
    return from_local(boost::mpi::communicator(comm, boost::mpi::comm_attach), global, per, mine);
  }

  const std::vector<box<D>>& local_boxes() const { return local_; }
  std::vector<box<D>> boxes_of(int r) const {
    std::vector<box<D>> out;
    for (const auto& b : boxes_)
      if (b.owner == r) out.push_back(b.cells);
    return out;
  }
  template <class F>
  void for_each_owner(const box<D>& q, F&& f) const {
    if (q.empty()) return;
    for (std::size_t k = 0; k < boxes_.size(); ++k)
      if (!intersect(q, boxes_[k].cells).empty()) f(boxes_[k].owner, local_id_[k], boxes_[k].cells);
  }

 private:
  void validate() const {
    for (std::size_t k = 0; k < boxes_.size(); ++k) {
      const auto& b = boxes_[k];
      detail::require(!b.cells.empty(), "rank {}: box #{} {} (owner {}) is empty", rank_, k,
                      to_string(b.cells), b.owner);
      detail::require(intersect(b.cells, global_) == b.cells,
                      "rank {}: box #{} {} (owner {}) reaches outside the global box {}", rank_, k,
                      to_string(b.cells), b.owner, to_string(global_));
      detail::require(b.owner >= 0 && b.owner < comm_.size(),
                      "rank {}: box #{} has owner rank {} outside [0, {})", rank_, k, b.owner,
                      comm_.size());
    }
    // Sweep along dimension 0: only boxes whose x-ranges overlap need a full test. Stable, so
    // that the pair named is the same on every run.
    std::vector<std::size_t> order(boxes_.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(),
                     [&](auto a, auto b) { return boxes_[a].cells.lo[0] < boxes_[b].cells.lo[0]; });
    for (std::size_t a = 0; a < order.size(); ++a)
      for (std::size_t b = a + 1; b < order.size(); ++b) {
        const auto& A = boxes_[order[a]];
        const auto& B = boxes_[order[b]];
        if (B.cells.lo[0] >= A.cells.hi[0]) break;
        detail::require(intersect(A.cells, B.cells).empty(),
                        "rank {}: boxes #{} {} (owner {}) and #{} {} (owner {}) overlap", rank_,
                        order[a], to_string(A.cells), A.owner, order[b], to_string(B.cells),
                        B.owner);
      }
    // Disjoint boxes inside the global box: their cells add up to at most its cell count,
    // which fits in an index (checked before this).
    index covered = 0;
    for (const auto& b : boxes_) covered += b.cells.volume();
    detail::require(covered == global_.volume(),
                    "rank {}: the boxes cover {} of the {} cells of the global box {}", rank_,
                    covered, global_.volume(), to_string(global_));
  }

  using base = domain_base<box_list<D>, D>;
  using base::comm_;
  using base::global_;
  using base::rank_;
  std::vector<owned_box<D>> boxes_;
  std::vector<int> local_id_;
  std::vector<box<D>> local_;
};

}  // namespace halox
