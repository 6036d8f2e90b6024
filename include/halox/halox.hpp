#pragma once
/// @file
/// halox: declarative halo exchange for domain-decomposed stencil codes. Include this header.
///
/// ```
/// constexpr auto st = halox::stencil<3>::box(1);
/// auto dom = halox::cartesian<3>(world, {512, 512, 512}, halox::periodic{true, true, true});
/// auto u = dom.make_field<double>(st);
/// auto ex = halox::make_exchange(dom, st, u);
/// ex.exchange();
/// ```

#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>

#include "halox/boundary/boundary.hpp"
#include "halox/chain/chain_exchange.hpp"
#include "halox/core/box.hpp"
#include "halox/core/error.hpp"
#include "halox/core/options.hpp"
#include "halox/core/reduction.hpp"
#include "halox/domain/box_list.hpp"
#include "halox/domain/cartesian.hpp"
#include "halox/domain/decomposition.hpp"
#include "halox/domain/interior.hpp"
#include "halox/domain/unstructured.hpp"
#include "halox/exchange/field_halo.hpp"
#include "halox/exchange/halo_exchange.hpp"
#include "halox/exchange/make_exchange.hpp"
#include "halox/exchange/unstructured_exchange.hpp"
#include "halox/field/entity_field.hpp"
#include "halox/field/field.hpp"
#include "halox/field/memory.hpp"
#include "halox/pattern/halo_pattern.hpp"
#include "halox/pattern/stencil.hpp"
#include "halox/plan/structured_plan.hpp"

/// @mainpage halox API reference
/// halox exchanges the halos of domain-decomposed fields, on CPUs and NVIDIA GPUs, over MPI,
/// shared memory, CUDA IPC and NCCL. This reference is generated from the public headers; the
/// guides live in the repository: README.md (quick start), docs/getting-started.md,
/// docs/concepts.md, docs/errors.md, docs/staggered.md, docs/unstructured.md, docs/chain.md,
/// docs/nccl.md, docs/performance.md. Start with namespace halox: `make_exchange`,
/// `make_reverse_exchange`, `split_interior`, `make_plan`, the domains (`cartesian`, `box_list`,
/// `unstructured`) and `exchange_options`.

/// @namespace halox
/// Declarative halo exchange: stencils (`stencil`, `halo_pattern`), domains (`cartesian`,
/// `box_list`, `unstructured`), fields, and the communication objects built from them with
/// `make_exchange` and `make_reverse_exchange`; `split_interior` for overlap, `make_plan` for
/// the plan itself, `exchange_options` for the transports. Names under `halox::detail` are
/// internal.
