"""Forward exchanges on Cartesian domains: every allocated element of every field checked
against the serial model (reference.py), for 1-4 dimensions, star/box/per-side/offset stencils,
periodic and walled dimensions, owned and wrapped arrays of every layout, every dtype."""

import numpy as np
import pytest

import halox
import reference as ref
from collective import check, raises_everywhere

EXTENTS = {1: (13,), 2: (9, 7), 3: (6, 5, 7), 4: (4, 3, 5, 3)}


def stencils(dim):
    out = {
        "star1": halox.Stencil.star(dim, 1),
        "box1": halox.Stencil.box(dim, 1),
        "sided": halox.Stencil.star(lo=[1] + [0] * (dim - 1), hi=[2] + [1] * (dim - 1)),
        "offsets": halox.Stencil.from_offsets([tuple(1 if k == 0 else 0 for k in range(dim)),
                                               tuple(-1 for _ in range(dim))]),
    }
    if dim <= 3:
        out["box2"] = halox.Stencil.box(dim, 2)
    return out


PERIODIC = {"all": lambda d: (True,) * d, "none": lambda d: (False,) * d,
            "mixed": lambda d: tuple(i % 2 == 0 for i in range(d))}


def block_of(dom, array, pad_lo, centering=None, component_axis=None):
    b = dom.local_box
    return ref.Block(array, b.lo, b.hi, pad_lo, centering, component_axis)


def agree(comm, block, st, dom, fid=0, salt=0):
    bad = ref.mismatches(block, st, dom.extents, dom.periodic, fid, salt)
    check(comm, not bad, "; ".join(bad))


@pytest.mark.parametrize("dim", [1, 2, 3, 4])
@pytest.mark.parametrize("per", list(PERIODIC))
def test_every_stencil_and_periodicity(comm, dim, per):
    dom = halox.Cartesian(comm, EXTENTS[dim], periodic=PERIODIC[per](dim))
    for name, st in stencils(dim).items():
        u = dom.make_field(st, dtype=np.float64, components=2)
        blk = block_of(dom, u, st.lo)
        ex = halox.make_exchange(dom, st, u)
        ref.fill(blk, dom.extents, dom.periodic, salt=0)
        ex.exchange()
        agree(comm, blk, st, dom, salt=0)
        ref.fill(blk, dom.extents, dom.periodic, salt=1)  # again, split phase
        h = ex.start()
        while not h.test():
            pass
        h.wait()
        agree(comm, blk, st, dom, salt=1)
        ex.close()


def test_wrapped_layouts_in_one_exchange(comm):
    """C order, Fortran order, components first or last, a strided view of a larger array,
    padding wider than the stencil: one exchange, each checked."""
    dom = halox.Cartesian(comm, (10, 8, 6), periodic=(True, False, True))
    st = halox.Stencil.box(3, 1)
    n = dom.local_box.shape
    alloc = tuple(x + 2 for x in n)
    c_order = np.zeros(alloc + (3,), dtype=np.float64)
    f_order = np.zeros(alloc, dtype=np.float32, order="F")
    planar = np.zeros((2,) + alloc, dtype=np.int64)
    big = np.zeros(tuple(2 * x for x in alloc), dtype=np.float64)
    strided = big[::2, ::2, ::2]
    wide = np.zeros(tuple(x + 4 for x in n), dtype=np.int32)  # padding 2 for a width-1 stencil
    blocks = [block_of(dom, c_order, st.lo),
              block_of(dom, f_order, st.lo),
              block_of(dom, planar, st.lo, component_axis=0),
              block_of(dom, strided, st.lo),
              block_of(dom, wide, (2, 2, 2))]
    ex = halox.make_exchange(dom, st, c_order, f_order,
                             halox.field(planar, component_axis=0, name="planar"), strided,
                             halox.field(wide, pad=2))
    for salt in range(2):
        for k, blk in enumerate(blocks):
            ref.fill(blk, dom.extents, dom.periodic, fid=k, salt=salt)
        ex.exchange()
        for k, blk in enumerate(blocks):
            agree(comm, blk, st, dom, fid=k, salt=salt)
    check(comm, ex.fields[1] is f_order and ex.fields[3] is strided, "Exchange.fields")


def test_owned_layouts(comm):
    dom = halox.Cartesian(comm, (11, 9), periodic=True)
    st = halox.Stencil.box(2, 2)
    fields = [dom.make_field(st, "float64", 3, order="F"),
              dom.make_field(st, "int32", 2, component_layout="planar"),
              dom.make_field(st, "float32", 2, order="F", component_layout="planar"),
              dom.make_field(pad=((2, 2), (3, 2)), dtype="uint16")]
    check(comm, fields[0].flags.f_contiguous is False and fields[0].shape[-1] == 3, "F, 3 comps")
    n = dom.local_box.shape
    check(comm, fields[3].shape == (n[0] + 5, n[1] + 4), f"pad shape {fields[3].shape}")
    blocks = [block_of(dom, f, st.lo) for f in fields[:3]] + [block_of(dom, fields[3], (2, 2))]
    ex = halox.make_exchange(dom, st, *fields)
    for k, blk in enumerate(blocks):
        ref.fill(blk, dom.extents, dom.periodic, fid=k)
    ex.exchange()
    for k, blk in enumerate(blocks):
        agree(comm, blk, st, dom, fid=k)


DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128"]


def test_every_dtype_in_one_exchange(comm):
    dom = halox.Cartesian(comm, (5, 4), periodic=(True, False))
    st = halox.Stencil.box(2, 1)
    fields = [dom.make_field(st, t) for t in DTYPES]
    check(comm, [f.dtype.name for f in fields] == DTYPES, "dtypes")
    pts = dom.extents
    b = dom.local_box
    g = ref.grid(b.lo, b.shape)
    own = halox.owned_slices(dom, st)
    for k, f in enumerate(fields):
        f[...] = 0
        v = ref.key(pts, g, fid=k)
        f[own] = (v % 2 == 1) if f.dtype == bool else (v + 1j * v if f.dtype.kind == "c" else v)
    ex = halox.make_exchange(dom, st, *fields)
    ex.exchange()
    blk = block_of(dom, np.zeros(fields[0].shape), st.lo)
    filled, wrapped = ref.sources(blk.origin, blk.spatial_shape, (b.lo, b.hi), st, pts,
                                  dom.periodic)
    for k, f in enumerate(fields):
        v = ref.key(pts, wrapped, fid=k)
        want = (v % 2 == 1) if f.dtype == bool else (v + 1j * v if f.dtype.kind == "c" else v)
        want = np.where(filled, np.asarray(want).astype(f.dtype), np.zeros((), f.dtype))
        check(comm, np.array_equal(f, want), f"dtype {f.dtype}")


def test_domain_queries(comm):
    p = comm.size
    dom = halox.Cartesian(comm, (4 * p, 6), periodic=(True, False), grid=(p, 1))
    check(comm, dom.grid == (p, 1) and dom.dim == 2 and dom.rank == comm.rank and dom.size == p)
    check(comm, dom.coords(comm.rank) == (comm.rank, 0) and dom.rank_of((comm.rank, 0)) == comm.rank)
    check(comm, dom.local_box == halox.Box((4 * comm.rank, 0), (4 * comm.rank + 4, 6)),
          repr(dom.local_box))
    boxes = comm.allgather(dom.local_box)
    check(comm, boxes == [dom.boxes_of(r)[0] for r in range(p)], "boxes_of")
    check(comm, sum(b.volume for b in boxes) == 4 * p * 6, "boxes tile the domain")
    auto = halox.Cartesian(comm, (64, 64, 64))
    check(comm, int(np.prod(auto.grid)) == p and auto.periodic == (False,) * 3)


def test_one_copy_shared_memory_for_owned_fields(comm):
    """Owned host fields and node_shared_zeros arrays keep halox's one-copy shared-memory path;
    other arrays take two."""
    dom = halox.Cartesian(comm, (24, 20, 16), periodic=True)
    st = halox.Stencil.box(3, 1)
    owned = dom.make_field(st)
    wrapped = np.zeros_like(owned)
    shared = halox.node_shared_zeros(owned.shape, owned.dtype)
    check(comm, shared.shape == owned.shape and shared.dtype == owned.dtype and not shared.any())
    for bad, text in (((4, -1), "negative extent"), ((1 << 40, 1 << 40), "overflows")):
        try:
            halox.node_shared_zeros(bad)
            check(comm, False, f"node_shared_zeros{bad} was accepted")
        except halox.Error as e:
            check(comm, text in str(e), str(e))
    one_copy = "one copy, straight from the sender's owned cells"
    ex_owned = halox.make_exchange(dom, st, owned, shm_direct_min_bytes=0)
    ex_wrapped = halox.make_exchange(dom, st, wrapped, shm_direct_min_bytes=0)
    ex_shared = halox.make_exchange(dom, st, shared, shm_direct_min_bytes=0)
    ex_mpi = halox.make_exchange(dom, st, dom.make_field(st), host_shared_memory=False)
    d_owned, d_wrapped, d_mpi = ex_owned.describe(), ex_wrapped.describe(), ex_mpi.describe()
    d_shared = ex_shared.describe()
    if comm.size > 1:
        check(comm, one_copy in d_owned, d_owned)
        check(comm, one_copy in d_shared, d_shared)
        check(comm, one_copy not in d_wrapped and "shared memory" in d_wrapped, d_wrapped)
        check(comm, "shared memory" not in d_mpi, d_mpi)
    for ex, arr in ((ex_owned, owned), (ex_wrapped, wrapped), (ex_shared, shared)):
        blk = block_of(dom, arr, st.lo)
        for salt in range(3):
            ref.fill(blk, dom.extents, dom.periodic, salt=salt)
            ex.exchange()
            agree(comm, blk, st, dom, salt=salt)


def test_lifetime_and_state(comm):
    dom = halox.Cartesian(comm, (8, 8), periodic=True)
    st = halox.Stencil.star(2, 1)
    u = dom.make_field(st)
    with halox.make_exchange(dom, st, u) as ex:
        check(comm, ex.direction == "forward" and not ex.closed and not ex.in_flight)
        h = ex.start()
        check(comm, ex.in_flight)
        try:
            ex.start()
            second = None
        except halox.Error as e:
            second = str(e)
        check(comm, second is not None and "still in flight" in second, second)
        h.wait()
        h.wait()  # idempotent
        check(comm, not ex.in_flight)
        ex.start()  # left in flight: closing completes it
    check(comm, ex.closed and "closed" in repr(ex))
    try:
        ex.exchange()
        msg = None
    except halox.Error as e:
        msg = str(e)
    check(comm, msg is not None and "closed" in msg, msg)
    h.wait()  # a handle of a closed exchange: nothing left to wait for


def test_node_centred_and_face_centred_fields(comm):
    dom = halox.Cartesian(comm, (7, 6, 5), periodic=(False, True, False))
    st = halox.Stencil.box(3, 1)
    for at in (halox.Centering.node(), halox.Centering.face(0), halox.Centering.edge(2)):
        owned = dom.make_field(st, centering=at)
        b = dom.local_box
        lo, hi = ref.stored_box(b.lo, b.hi, at)
        wrapped = np.zeros(tuple(h - l + 2 for l, h in zip(lo, hi)))
        blocks = [block_of(dom, owned, st.lo, at), block_of(dom, wrapped, st.lo, at)]
        ex = halox.make_exchange(dom, st, owned, halox.field(wrapped, centering=at))
        for k, blk in enumerate(blocks):
            ref.fill(blk, dom.extents, dom.periodic, fid=k)
        ex.exchange()
        for k, blk in enumerate(blocks):
            agree(comm, blk, st, dom, fid=k)


def kept_points(block, extents, periodic):
    """Array index of the block's copies of points a higher block owns (stored, not owned)."""
    stored = ref.stored_box(block.box_lo, block.box_hi, block.centering)
    o_lo, o_hi = ref.owned_points(block.box_lo, block.box_hi, extents, periodic,
                                  block.centering)
    g = ref.grid(block.origin, block.spatial_shape)
    mask = np.ones(block.spatial_shape, dtype=bool)
    own = np.ones(block.spatial_shape, dtype=bool)
    for i in range(block.dim):
        mask &= (g[i] >= stored[0][i]) & (g[i] < stored[1][i])
        own &= (g[i] >= o_lo[i]) & (g[i] < o_hi[i])
    return mask & ~own


def test_shared_points_kept(comm):
    """shared_points="keep": every shared copy keeps this rank's own value, every halo point
    holds its owner's; next to it a field whose owner overwrites them, in the same exchange."""
    for per in ((False, True, False), (True, True, True)):
        dom = halox.Cartesian(comm, (7, 6, 5), periodic=per)
        st = halox.Stencil.box(3, 1)
        for at in (halox.Centering.node(), halox.Centering.face(0), halox.Centering.edge(2)):
            owned = dom.make_field(st, centering=at, shared_points="keep")
            b = dom.local_box
            lo, hi = ref.stored_box(b.lo, b.hi, at)
            wrapped = np.zeros(tuple(h - l + 2 for l, h in zip(lo, hi)))
            other = np.zeros_like(wrapped)
            blocks = [block_of(dom, a, st.lo, at) for a in (owned, wrapped, other)]
            ex = halox.make_exchange(dom, st, owned,
                                     halox.field(wrapped, centering=at, shared_points="keep"),
                                     halox.field(other, centering=at))
            mine = -1000.0 * (comm.rank + 1)
            for k, blk in enumerate(blocks):
                ref.fill(blk, dom.extents, dom.periodic, fid=k)
                blk.array[kept_points(blk, dom.extents, dom.periodic)] = mine
            ex.exchange()
            for k, blk in enumerate(blocks):
                want = ref.expected(blk, st, dom.extents, dom.periodic, fid=k)[0]
                if k < 2:
                    want[kept_points(blk, dom.extents, dom.periodic)] = mine
                bad = np.argwhere(np.asarray(blk.array) != want)[:3]
                check(comm, len(bad) == 0, f"{at} field {k} periodic {per}: {bad.tolist()}")


def test_shared_points_bad_and_mismatched(comm):
    dom = halox.Cartesian(comm, (6, 4), periodic=(True, False))
    st = halox.Stencil.star(2, 1)
    node = halox.Centering.node()
    raises_everywhere(comm, lambda: dom.make_field(st, centering=node, shared_points="mine"),
                      match="shared_points 'mine' is neither 'owner_overwrites' nor 'keep'")
    if comm.size > 1:
        f = dom.make_field(st, centering=node, shared_points="keep" if comm.rank == 1 else None)
        raises_everywhere(comm, lambda: halox.make_exchange(dom, st, f),
                          match="shared points kept")


def test_stats_counts_and_bytes(comm):
    """stats(): exchanges counted, every rank's bytes sent equal to what the others received."""
    dom = halox.Cartesian(comm, (6, 4 * comm.size, 5), periodic=True)
    st = halox.Stencil.box(3, 1)
    u = dom.make_field(st, dtype=np.float64)
    ex = halox.make_exchange(dom, st, u, label="py-stats", wait_timeout=60)
    for _ in range(3):
        ex.exchange()
    s = ex.stats()
    check(comm, s["label"] == "py-stats" and s["exchanges"] == 3, s)
    check(comm, s["start"]["count"] == 3 and s["wait"]["count"] == 3, s)
    sent = sum(r["bytes_sent"] for r in s["routes"])
    got = sum(r["bytes_received"] for r in s["routes"])
    check(comm, comm.allreduce(sent) == comm.allreduce(got), (sent, got))
    ex.close()
