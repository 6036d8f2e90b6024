"""Per-field halos and physical boundary rules (constant, zero gradient, reflect and mirror with
signs, a Python callback), checked against a serial model: one global array with its halo, filled by
periodic wrapping and then by the rules in dimension order, low face before high, as
docs/staggered.md defines them. Box stencils fill every halo direction, so each block's
allocated cells are exactly that array's."""

import numpy as np

import halox
import reference as ref
from collective import check


def global_model(extents, periodic, st, ncomp, rules, fid):
    """The global array (points -lo .. n + hi per dimension, components last) after the
    exchange and the rules."""
    dim = len(extents)
    shape = tuple(n + a + b for n, a, b in zip(extents, st.lo, st.hi))
    g = ref.grid(tuple(-a for a in st.lo), shape)
    inside = np.ones(shape, dtype=bool)
    wrapped = []
    for i in range(dim):
        if periodic[i]:
            wrapped.append(np.mod(g[i], extents[i]))
        else:
            inside &= (g[i] >= 0) & (g[i] < extents[i])
            wrapped.append(np.clip(g[i], 0, extents[i] - 1))
    G = np.empty(shape + (ncomp,))
    for c in range(ncomp):
        G[..., c] = np.where(inside, ref.key(extents, wrapped, c, ncomp, fid), ref.SENTINEL)
    for d in range(dim):
        for side in ("low", "high"):
            rule = rules.get((d, side))
            if rule is None:
                continue
            kind, payload = rule
            lo_w, hi_w, n = st.lo[d], st.hi[d], extents[d]
            at = (lambda k: k + lo_w)  # array index of global coordinate k along d
            beyond = list(range(-lo_w, 0)) if side == "low" else list(range(n, n + hi_w))
            for k in beyond:
                sl = [slice(None)] * dim
                sl[d] = at(k)
                if kind == "constant":
                    G[tuple(sl)] = payload
                elif kind == "zero_gradient":
                    src = list(sl)
                    src[d] = at(0 if side == "low" else n - 1)
                    G[tuple(sl)] = G[tuple(src)]
                elif kind in ("reflect", "mirror"):
                    # reflect: about the face; mirror: about the boundary cell's centre.
                    src = list(sl)
                    if kind == "reflect":
                        src[d] = at(-1 - k if side == "low" else 2 * n - 1 - k)
                    else:
                        src[d] = at(-k if side == "low" else 2 * (n - 1) - k)
                    signs = np.ones(ncomp) if payload is None else np.asarray(payload)
                    G[tuple(sl)] = G[tuple(src)] * signs
                elif kind == "callback":
                    gg = tuple(x[tuple(sl)] for x in g)
                    G[tuple(sl)] = payload(gg)[..., None]
    return G


def callback_values(g):
    """What the test's callbacks write at global cells g: depends on where the cell is."""
    v = np.zeros(g[0].shape)
    for i, x in enumerate(g):
        v = v * 100 + x
    return -1000.0 - v


def make_callback(seen):
    def fill(face):
        g = ref.grid(face.cells.lo, face.cells.shape)
        values = callback_values(g)
        target = face.array[face.index]
        face.array[face.index] = values.reshape(values.shape + (1,) * (target.ndim - values.ndim))
        seen.append((face.dim, face.side, face.stream, face.block))
    return fill


CASES = [
    # extents, periodic, per-field: (stencil widths lo, hi, components, rules)
    ((10, 8), (True, False), [
        ((2, 1), (1, 2), 2, {(1, "low"): ("reflect", [1.0, -1.0]), (1, "high"): ("constant", 5.0)}),
        ((1, 1), (1, 1), 1, {(1, "low"): ("zero_gradient", None), (1, "high"): ("callback", None)}),
        ((2, 2), (2, 2), 2, {(1, "low"): ("mirror", [1.0, -1.0]), (1, "high"): ("mirror", None)}),
    ]),
    ((6, 5, 4), (False, False, False), [
        ((1, 2, 1), (2, 1, 1), 1, {(0, "low"): ("constant", -3.0), (0, "high"): ("zero_gradient", None),
                                   (1, "low"): ("reflect", None), (1, "high"): ("callback", None),
                                   (2, "low"): ("zero_gradient", None), (2, "high"): ("reflect", [-2.0])}),
        ((1, 1, 1), (1, 1, 1), 3, {(2, "low"): ("constant", 2.5), (0, "high"): ("reflect", [1.0, -1.0, 0.5])}),
        # mirror reads one cell further in than reflect: equal widths on both sides of a mirrored
        # dimension, so that a block one cell thick still holds what its mirror reads.
        ((1, 2, 1), (1, 2, 1), 1, {(0, "low"): ("mirror", [-1.0]), (0, "high"): ("reflect", None),
                                   (1, "low"): ("mirror", None), (1, "high"): ("zero_gradient", None),
                                   (2, "low"): ("constant", 4.0), (2, "high"): ("mirror", [2.0])}),
    ]),
]


def test_rules_of_every_kind_per_field_halos(comm):
    for extents, periodic, fields in CASES:
        dom = halox.Cartesian(comm, extents, periodic=periodic)
        halos, blocks, models, seen = [], [], [], []
        for fid, (lo, hi, ncomp, rules) in enumerate(fields):
            st = halox.Stencil.box(lo=lo, hi=hi)
            arr = dom.make_field(st, "float64", ncomp)
            if ncomp == 1:
                arr = arr[..., None]  # the model's view: components last
                arr_field = arr[..., 0]
            else:
                arr_field = arr
            bc = halox.Boundary()
            for (d, side), (kind, payload) in rules.items():
                if kind == "callback":
                    bc.callback((d, side), make_callback(seen))
                else:
                    getattr(bc, kind)((d, side), *([] if kind == "zero_gradient" else [payload]))
            halos.append(halox.halo(st, arr_field, bc))
            b = dom.local_box
            blocks.append(ref.Block(arr, b.lo, b.hi, st.lo, component_axis=arr.ndim - 1))
            model_rules = {k: (v[0], callback_values if v[0] == "callback" else v[1])
                           for k, v in rules.items()}
            models.append((st, global_model(extents, periodic, st, ncomp, model_rules, fid)))
        ex = halox.make_exchange(dom, *halos)
        for round_ in range(2):
            for fid, blk in enumerate(blocks):
                ref.fill(blk, dom.extents, dom.periodic, fid=fid)
            seen.clear()
            if round_ == 0:
                ex.exchange()
            else:
                h = ex.start()
                while not h.test():
                    pass
            for fid, (blk, (st, G)) in enumerate(zip(blocks, models)):
                sl = tuple(slice(o + a, o + a + n) for o, a, n in
                           zip(blk.origin, st.lo, blk.spatial_shape))
                want = G[sl]
                got = blk.array
                bad = np.argwhere(got != want)
                check(comm, bad.size == 0,
                      f"{extents} field {fid}: {len(bad)} cells differ, first "
                      f"{tuple(bad[0]) if bad.size else ''}: got "
                      f"{got[tuple(bad[0])] if bad.size else ''} want {want[tuple(bad[0])] if bad.size else ''}")
            check(comm, all(s[2] is None for s in seen), f"host callbacks get no stream: {seen}")
            # Each callback ran once per exchange on each rank whose block touches its face.
            b = dom.local_box
            want_calls = sorted((d, side) for _, _, _, rules in fields for (d, side), (k, _) in rules.items()
                                if k == "callback" and (b.lo[d] == 0 if side == "low" else b.hi[d] == extents[d]))
            check(comm, sorted((d, s) for d, s, _, _ in seen) == want_calls, f"calls {seen}")


def test_callback_exception_reaches_python_and_object_stays_usable(comm):
    dom = halox.Cartesian(comm, (8, 6), periodic=(True, False))
    st = halox.Stencil.box(2, 1)
    u = dom.make_field(st)

    class Boom(Exception):
        pass

    calls = []

    def fill(face):
        calls.append(face.side)
        if len(calls) == 1:
            raise Boom("from the callback")
        face.array[face.index] = 42.0

    ex = halox.make_exchange(dom, halox.halo(st, u, halox.Boundary().callback((1, "low"), fill)))
    touches = dom.local_box.lo[1] == 0
    try:
        ex.exchange()
        raised = None
    except Boom as e:
        raised = e
    check(comm, (raised is not None) == touches, f"the callback's own exception: {raised!r}")
    ex.exchange()
    if touches:
        check(comm, np.all(u[:, 0] == 42.0), "the next exchange runs the callback again")
    else:
        check(comm, True)


def test_mirror_and_reflect_by_hand_1d(comm):
    # Cells 0..3 hold 10..13, three halo cells a side. mirror: cell -k holds cell k (the boundary
    # cell not repeated, numpy.pad's "reflect"); reflect: cell 3 + k holds cell 4 - k (numpy.pad's
    # "symmetric"). Then the other way round, negated.
    tables = {
        False: [13, 12, 11, 10, 11, 12, 13, 13, 12, 11],
        True: [-12, -11, -10, 10, 11, 12, 13, -12, -11, -10],
    }
    st = halox.Stencil.box(1, 3)
    for swap, table in tables.items():
        dom = halox.Cartesian(comm, (4,), periodic=(False,))
        u = dom.make_field(st)
        if swap:
            bc = halox.Boundary().reflect((0, "low"), [-1.0]).mirror((0, "high"), [-1.0])
        else:
            bc = halox.Boundary().mirror((0, "low")).reflect((0, "high"))
        ex = halox.make_exchange(dom, halox.halo(st, u, bc))
        lo, hi = dom.local_box.lo[0], dom.local_box.hi[0]
        u[:] = -1.0
        u[3:3 + hi - lo] = 10.0 + np.arange(lo, hi)
        ex.exchange()
        want = np.asarray(table[lo:hi + 6], dtype=float)
        check(comm, np.array_equal(u, want), f"swap={swap} cells {lo - 3}..{hi + 2}: {u} want {want}")
