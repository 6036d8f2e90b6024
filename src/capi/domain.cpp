// Domains of the C interface: cartesian and box-list domains of 1 to 4 dimensions, their
// queries. The exchange build they carry is in structured.hpp.

#include <utility>

#include "capi/structured.hpp"
#include "capi/structured_fields.hpp"

namespace halox::capi {
namespace {

/// Calls `f.template operator()<D>()` for `dim` in 1..4 (checked before).
template <class F>
auto with_dim(int dim, F&& f) {
  switch (dim) {
    case 1:
      return f.template operator()<1>();
    case 2:
      return f.template operator()<2>();
    case 3:
      return f.template operator()<3>();
    default:
      return f.template operator()<4>();
  }
}

/// The arguments every rank checks together before any domain is constructed, so that a bad
/// dimension on one rank cannot leave the others in the domain's own collective checks.
void check_domain_args(const boost::mpi::communicator& comm, const char* call, int dim,
                       const std::int64_t* global, int count, const void* lo, const void* hi,
                       const void* owners) {
  const int me = comm.rank();
  detail::agree(comm, [&] {
    detail::require(dim >= 1 && dim <= max_dim, "rank {}: {}: dimension {} is not 1 to 4", me, call,
                    dim);
    detail::require(global != nullptr, "rank {}: {}: the global extents are NULL", me, call);
    detail::require(count >= 0, "rank {}: {}: {} boxes", me, call, count);
    detail::require(count == 0 || (lo && hi && owners),
                    "rank {}: {}: the boxes' corners or owners are NULL", me, call);
  });
}

template <int D>
periodic<D> periodic_of(const int* flags) {
  periodic<D> p;
  for (int i = 0; i < D; ++i) p.flags[i] = flags != nullptr && flags[i] != 0;
  return p;
}

template <int D>
extents<D> extents_of(const std::int64_t* v) {
  extents<D> e{};
  for (int i = 0; i < D; ++i) e[i] = v[i];
  return e;
}

halox_domain* new_cartesian(MPI_Comm raw, int dim, const std::int64_t* global, const int* per,
                            const int* grid) {
  const auto comm = attach(raw, "halox_cartesian_create");
  check_domain_args(comm, "halox_cartesian_create", dim, global, 0, nullptr, nullptr, nullptr);
  auto h = std::make_unique<halox_domain>();
  h->ops = with_dim(dim, [&]<int D>() -> std::unique_ptr<domain_ops> {
    std::optional<process_grid<D>> g;
    if (grid) {
      g.emplace();
      for (int i = 0; i < D; ++i) g->dims[i] = grid[i];
    }
    cartesian<D> dom(comm, extents_of<D>(global), periodic_of<D>(per), g);
    return std::make_unique<structured_ops<cartesian<D>, D>>(std::move(dom), h.get());
  });
  return h.release();
}

halox_domain* new_box_list(MPI_Comm raw, int dim, const std::int64_t* global, const int* per,
                           int count, const std::int64_t* lo, const std::int64_t* hi,
                           const int* owners) {
  const auto comm = attach(raw, "halox_box_list_create");
  check_domain_args(comm, "halox_box_list_create", dim, global, count, lo, hi, owners);
  auto h = std::make_unique<halox_domain>();
  h->ops = with_dim(dim, [&]<int D>() -> std::unique_ptr<domain_ops> {
    std::vector<owned_box<D>> boxes(static_cast<std::size_t>(count));
    for (int k = 0; k < count; ++k) {
      boxes[std::size_t(k)].cells = box<D>{extents_of<D>(lo + k * D), extents_of<D>(hi + k * D)};
      boxes[std::size_t(k)].owner = owners[k];
    }
    box_list<D> dom(comm, extents_of<D>(global), periodic_of<D>(per), std::move(boxes));
    return std::make_unique<structured_ops<box_list<D>, D>>(std::move(dom), h.get());
  });
  return h.release();
}

const domain_ops& ops_of(const halox_domain* d, const char* call) {
  return *need(d, call, "dom")->ops;
}

}  // namespace
}  // namespace halox::capi

using namespace halox::capi;

extern "C" {

halox_status halox_cartesian_create(MPI_Comm comm, int dim, const int64_t* global,
                                    const int* periodic, const int* grid, halox_domain** out) {
  return guard([&] {
    *need(out, "halox_cartesian_create", "out") = nullptr;
    *out = new_cartesian(comm, dim, global, periodic, grid);
  });
}

halox_status halox_box_list_create(MPI_Comm comm, int dim, const int64_t* global,
                                   const int* periodic, int count, const int64_t* lo,
                                   const int64_t* hi, const int* owners, halox_domain** out) {
  return guard([&] {
    *need(out, "halox_box_list_create", "out") = nullptr;
    *out = new_box_list(comm, dim, global, periodic, count, lo, hi, owners);
  });
}

halox_status halox_cartesian_create_f(MPI_Fint comm, int dim, const int64_t* global,
                                      const int* periodic, const int* grid, halox_domain** out) {
  return halox_cartesian_create(MPI_Comm_f2c(comm), dim, global, periodic, grid, out);
}

halox_status halox_box_list_create_f(MPI_Fint comm, int dim, const int64_t* global,
                                     const int* periodic, int count, const int64_t* lo,
                                     const int64_t* hi, const int* owners, halox_domain** out) {
  return halox_box_list_create(MPI_Comm_f2c(comm), dim, global, periodic, count, lo, hi, owners,
                               out);
}

halox_status halox_domain_destroy(halox_domain* dom) {
  return guard([&] { delete dom; });
}

halox_status halox_domain_dim(const halox_domain* dom, int* dim) {
  return guard(
      [&] { *need(dim, "halox_domain_dim", "dim") = ops_of(dom, "halox_domain_dim").dim(); });
}

halox_status halox_domain_rank(const halox_domain* dom, int* rank) {
  return guard([&] {
    *need(rank, "halox_domain_rank", "rank") = ops_of(dom, "halox_domain_rank").comm().rank();
  });
}

halox_status halox_domain_block_count(const halox_domain* dom, int* count) {
  return guard([&] {
    *need(count, "halox_domain_block_count", "count") =
        ops_of(dom, "halox_domain_block_count").block_count();
  });
}

halox_status halox_domain_local_box(const halox_domain* dom, int block, int64_t* lo, int64_t* hi) {
  return guard([&] {
    ops_of(dom, "halox_domain_local_box")
        .local_box(block, need(lo, "halox_domain_local_box", "lo"),
                   need(hi, "halox_domain_local_box", "hi"));
  });
}

halox_status halox_domain_grid(const halox_domain* dom, int* dims, int* coords) {
  return guard([&] {
    ops_of(dom, "halox_domain_grid")
        .grid(need(dims, "halox_domain_grid", "dims"), need(coords, "halox_domain_grid", "coords"));
  });
}

}  // extern "C"
