"""Reverse (halo-to-owner) exchanges on Cartesian domains: every copy (halo point or shared
staggered point) of every rank is combined into its owner; the model computes, on every rank,
what all ranks' copies contribute (their values are a known function of rank and position)."""

import numpy as np
import pytest

import halox
import reference as ref
from collective import check


def contribution(rank, idx):
    """The value a rank's copy at array index `idx` (a tuple of index arrays) sends back."""
    v = np.full(idx[0].shape, 7 * rank + 3, dtype=np.int64)
    for x in idx:
        v = v * 31 + x
    return v % 997 + 1


def model(dom, st, op, centering=None):
    """Per global point: the owner's initial value combined with every rank's copies."""
    pts = ref.point_extents(dom.extents, dom.periodic, centering)
    g = ref.grid((0,) * dom.dim, pts)
    acc = ref.key(pts, g).astype(np.int64)
    ufunc = {"sum": np.add, "min": np.minimum, "max": np.maximum}[op]
    for r in range(dom.size):
        for b in dom.boxes_of(r):
            idx, wrapped, _ = ref.copies(b.lo, b.hi, st.lo, st.hi, st, dom.extents, dom.periodic,
                                         centering)
            ufunc.at(acc, wrapped, contribution(r, idx))
    return acc


@pytest.mark.parametrize("op", ["sum", "min", "max"])
def test_reverse_combines_every_copy(comm, op):
    cases = [((9, 7), (True, True), halox.Stencil.box(2, 1), None),
             ((10, 6), (False, True), halox.Stencil.star(2, 2), None),
             ((6, 5, 4), (True, False, True), halox.Stencil.box(3, 1), None),
             ((7, 6), (False, False), halox.Stencil.box(2, 1), halox.Centering.node())]
    for extents, periodic, st, at in cases:
        dom = halox.Cartesian(comm, extents, periodic=periodic)
        f64 = dom.make_field(st, "float64", centering=at)
        i64 = dom.make_field(st, "int64", centering=at)
        rev = halox.make_reverse_exchange(dom, st, op, f64, i64)
        check(comm, rev.direction == "reverse")
        b = dom.local_box
        pts = ref.point_extents(extents, periodic, at)
        s_lo, s_hi = ref.stored_box(b.lo, b.hi, at)
        origin = tuple(l - p for l, p in zip(s_lo, st.lo))
        o_lo, o_hi = ref.owned_points(b.lo, b.hi, extents, periodic, at)
        own = tuple(slice(l - o, h - o) for l, h, o in zip(o_lo, o_hi, origin))
        idx, _, _ = ref.copies(b.lo, b.hi, st.lo, st.hi, st, extents, periodic, at)
        for arr in (f64, i64):
            arr[...] = -1
            arr[own] = ref.key(pts, ref.grid(o_lo, tuple(h - l for l, h in zip(o_lo, o_hi))))
            arr[idx] = contribution(comm.rank, idx)
        before = f64.copy()
        rev.exchange()
        want = model(dom, st, op, at)
        g = ref.grid(o_lo, tuple(h - l for l, h in zip(o_lo, o_hi)))
        for arr in (f64, i64):
            check(comm, np.array_equal(arr[own], want[g]), f"{extents} {at} {arr.dtype}: owners")
            check(comm, np.array_equal(arr[idx], before[idx]), "copies are left as they were")


def test_reverse_replace_and_errors(comm):
    dom = halox.Cartesian(comm, (8, 8), periodic=True)
    st = halox.Stencil.star(2, 1)
    u = dom.make_field(st, "complex128")
    # replace takes any type: every copy holds 5+1j, so every owned cell some halo mirrors (the
    # shell of a star(1) on a periodic domain) ends up 5+1j, the interior stays 0.
    own = halox.owned_slices(dom, st)
    u[...] = 5 + 1j
    u[own] = 0
    rev = halox.make_reverse_exchange(dom, st, halox.Reduction.replace, u)
    rev.exchange()
    inner, shell = halox.interior_slices(dom, st)
    touched = np.zeros(u.shape, dtype=bool)
    for s in shell:
        touched[s] = True
    check(comm, np.all(u[touched] == 5 + 1j) and np.all(u[inner] == 0), "replace")
    try:
        halox.make_reverse_exchange(dom, st, "sum", u)
        msg = None
    except halox.Error as e:
        msg = str(e)
    check(comm, msg is not None and "arithmetic value type" in msg, msg)
