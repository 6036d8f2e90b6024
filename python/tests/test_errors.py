"""Bad input raises halox.Error on every rank (the rank at fault says why, the others that
another rank rejected its input), before anything is sent or written: every array is compared
with its copy from before, and a correct exchange works afterwards (no rank is left behind)."""

import numpy as np
import pytest

import halox
from collective import check, raises_everywhere


@pytest.fixture
def setup(comm):
    dom = halox.Cartesian(comm, (12, 10), periodic=(True, False))
    st = halox.Stencil.box(2, 1)
    u = dom.make_field(st)
    u[...] = np.arange(u.size).reshape(u.shape) + 100 * comm.rank
    return dom, st, u


def unchanged(comm, arrays, copies):
    check(comm, all(np.array_equal(a, c) for a, c in zip(arrays, copies)), "an array was written")


def still_works(comm, dom, st, u):
    ex = halox.make_exchange(dom, st, u)
    ex.exchange()
    own = halox.owned_slices(dom, st)
    check(comm, not np.any(np.isnan(u[own])))


def last_rank(comm):
    return comm.size - 1


CASES = {
    # name: (build(dom, st, u, comm) -> callable, bad ranks (None: all), message)
    "extents on one rank": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(
            dom, st, u if comm.rank != last_rank(comm) else np.zeros((u.shape[0] + 1, u.shape[1]))),
        "last", "has extents"),
    "halo wider than the padding": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(dom, halox.Stencil.box(2, 2), u),
        None, "but the stencil's halo is 2/2"),
    "padding given too narrow": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(
            dom, st, halox.field(np.zeros(dom.local_box.shape), pad=0)),
        None, "but the stencil's halo is 1/1"),
    "negative stencil width": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(dom, halox.Stencil.star(2, -1), u),
        None, "must not be negative"),
    "a field of another domain": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(
            dom, st, u, halox.Cartesian(comm, (12, 10)).make_field(st)),
        None, "belongs to another domain"),
    "an unsupported dtype": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(dom, st, u, u.astype(np.float16)),
        None, "is not one halox binds"),
    "a read-only array": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(dom, st, np.broadcast_to(u, u.shape)),
        None, "read-only"),
    "not an array": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(dom, st, u, "text"),
        None, "not an array or a list of arrays"),
    "reversed view": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(dom, st, u[::-1]),
        None, "positive strides"),
    "wrong number of dimensions": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(dom, st, u[0]),
        None, "needs 2 (or 3 with an axis of components)"),
    "unknown option": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(dom, st, u, host_shared_mem=False),
        None, "unknown exchange option 'host_shared_mem'"),
    "bad option value on one rank": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(
            dom, st, u, device_staging="fast" if comm.rank == 0 else "auto"),
        [0], "device_staging='fast'"),
    "a stencil of another dimension": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(dom, halox.Stencil.box(3, 1), u),
        None, "is 3-D, the domain 2-D"),
    "a rule on a periodic face": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(
            dom, halox.halo(st, u, halox.Boundary().constant((0, "low"), 1.0))),
        None, "which is periodic"),
    "reflect signs for the wrong component count": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(
            dom, halox.halo(st, u, halox.Boundary().reflect((1, "low"), [1.0, -1.0]))),
        None, "has 2 sign(s) but the field has 1 component(s)"),
    "mirror signs for the wrong component count": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(
            dom, halox.halo(st, u, halox.Boundary().mirror((1, "high"), [1.0, -1.0, 2.0]))),
        None, "mirror on the high face of dimension 1 has 3 sign(s) but the field has 1"),
    "a sum over complex values": (
        lambda dom, st, u, comm: lambda: halox.make_reverse_exchange(
            dom, st, "sum", dom.make_field(st, "complex64")),
        None, "needs an arithmetic value type"),
    "an unknown reduction": (
        lambda dom, st, u, comm: lambda: halox.make_reverse_exchange(dom, st, "mean", u),
        None, "reduction 'mean'"),
    "arguments in another order on one rank": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(
            dom, *((u, st) if comm.rank == last_rank(comm) else (st, u))),
        "last", "(domain, stencil, *fields) or (domain, *halos)"),
    "a halo whose stencil is not one": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(dom, halox.halo((1, 1), u)),
        None, "is (1, 1), not a halox.Stencil"),
    "a reverse exchange without its op": (
        lambda dom, st, u, comm: lambda: halox.make_reverse_exchange(dom, st),
        None, "make_reverse_exchange(domain, stencil, op, *fields)"),
    "a component count that disagrees": (
        lambda dom, st, u, comm: lambda: halox.make_exchange(dom, st, halox.field(u, components=3)),
        None, "components=3 was given but the array holds 1"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input(comm, setup, case):
    dom, st, u = setup
    build, bad, match = CASES[case]
    other = np.full(u.shape, 3.0)
    before = [u.copy(), other.copy()]
    bad_ranks = [last_rank(comm)] if bad == "last" else bad
    raises_everywhere(comm, build(dom, st, u, comm), bad_ranks=bad_ranks, match=match)
    unchanged(comm, [u, other], before)
    still_works(comm, dom, st, u)


def test_ranks_that_declare_different_fields(comm):
    if comm.size < 2:
        pytest.skip("needs two ranks")
    dom = halox.Cartesian(comm, (12, 10), periodic=True)
    st = halox.Stencil.box(2, 1)
    u = dom.make_field(st, "float32" if comm.rank == 1 else "float64")
    before = u.copy()
    msg = raises_everywhere(comm, lambda: halox.make_exchange(dom, st, u))
    check(comm, "build different exchanges" in msg or "another rank" in msg, msg)
    unchanged(comm, [u], [before])


def test_domains_that_differ(comm):
    if comm.size > 1:
        extents = (12, 10) if comm.rank == 0 else (12, 11)
        msg = raises_everywhere(comm, lambda: halox.Cartesian(comm, extents))
        check(comm, "global extents" in msg, msg)
    raises_everywhere(comm, lambda: halox.Cartesian(comm, (4, 4), grid=(comm.size + 1, 1)),
                      match="process grid")
    raises_everywhere(comm, lambda: halox.Cartesian(comm, (0, 4)), match="must be positive")
    raises_everywhere(comm, lambda: halox.Cartesian(comm, (4, 4, 4, 4, 4)),
                      match="1 to 4 dimensions")
    raises_everywhere(comm, lambda: halox.Cartesian(comm, (4, 4), periodic=(True,)),
                      match="periodic has 1 entries")
    boxes = [((0, 0), (4, 4), 0), ((3, 0), (6, 4), 0)]
    raises_everywhere(comm, lambda: halox.BoxList(comm, (6, 4), False, boxes), match="overlap")


def test_make_field_errors(comm):
    dom = halox.Cartesian(comm, (8, 8))
    st = halox.Stencil.box(2, 1)
    raises_everywhere(comm, lambda: dom.make_field(st, components=0 if comm.rank == 0 else 1),
                      bad_ranks=[0], match="at least one component")
    raises_everywhere(comm, lambda: dom.make_field(st, "float16"), match="not one halox binds")
    raises_everywhere(comm, lambda: dom.make_field(), match="needs a stencil or pad=")
    raises_everywhere(comm, lambda: dom.make_field(st, order="K"), match="order 'K'")
    raises_everywhere(comm, lambda: dom.make_field(st, centering=halox.Centering.face(2)),
                      match="names no dimension")
    if not halox.cuda_enabled():
        raises_everywhere(comm, lambda: dom.make_field(st, device=True), match="without CUDA")


def test_unstructured_errors(comm):
    mine = list(range(comm.rank * 10, comm.rank * 10 + 10))
    nobody = [10 ** 9]
    raises_everywhere(comm, lambda: halox.Unstructured(comm, mine, nobody if comm.rank == 0 else []),
                      bad_ranks=None, match="")
    raises_everywhere(comm, lambda: halox.Unstructured(comm, mine + mine[:1], []),
                      match="")
    raises_everywhere(comm, lambda: halox.Unstructured(comm, mine, "ids"), match="")
    pat = halox.Unstructured(comm, mine, [])
    f = np.zeros(11)
    before = f.copy()
    raises_everywhere(comm, lambda: halox.make_exchange(pat, f), match="has 11 entities, the pattern has 10")
    raises_everywhere(comm, lambda: halox.make_exchange(pat, halox.field(np.zeros(10), pad=1)),
                      match="no padding")
    raises_everywhere(comm, lambda: halox.make_exchange(pat, np.zeros((10, 3))[:, ::2]),
                      match="")
    unchanged(comm, [f], [before])
    halox.make_exchange(pat, np.zeros(10)).exchange()


def test_agree_helper(comm):
    raises_everywhere(comm, lambda: halox._halox._agree(comm, "mine" if comm.rank == 0 else None),
                      bad_ranks=[0], match="mine")
    halox._halox._agree(comm, None)
