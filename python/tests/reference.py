"""The serial NumPy model the Python tests check halox against.

Values encode what they are: the element of global point g (periodic-wrapped), component c, of
field `fid` in round `salt` holds ((salt * 8 + fid) * volume + linear(g)) * ncomp + c + 1, so a
halo cell holding the wrong cell's value, the wrong component or last round's value is caught.
Cells nothing writes hold SENTINEL. The model says, for every allocated point of a block, which
global point it must hold after a forward exchange (docs/concepts.md, docs/staggered.md): its
own where it owns it; the owner's for a shared copy or for a halo point in one of the stencil's
directions that lies inside the global box of points (or wraps around a periodic dimension);
nothing elsewhere. It is written from the documented rules, not from halox's code.
"""

import itertools

import numpy as np

SENTINEL = -7


def staggered(centering, dim):
    """Dimensions along which a centering has one point per cell boundary."""
    if centering is None:
        return [False] * dim
    return [centering.staggered(i, dim) for i in range(dim)]


def point_extents(extents, periodic, centering=None):
    """Points per dimension: cells, plus one along staggered non-periodic dimensions."""
    st = staggered(centering, len(extents))
    return tuple(n + (1 if s and not p else 0) for n, p, s in zip(extents, periodic, st))


def stored_box(box_lo, box_hi, centering=None):
    """The points a block of cells [lo, hi) stores: [lo, hi] along staggered dimensions."""
    st = staggered(centering, len(box_lo))
    return tuple(box_lo), tuple(h + (1 if s else 0) for h, s in zip(box_hi, st))


def owned_points(box_lo, box_hi, extents, periodic, centering=None):
    """The points a block owns: where its cells start, plus the high wall point."""
    st = staggered(centering, len(box_lo))
    hi = tuple(h + (1 if s and not p and h == n else 0)
               for h, n, p, s in zip(box_hi, extents, periodic, st))
    return tuple(box_lo), hi


def key(points, coords, comp=0, ncomp=1, fid=0, salt=0):
    """The encoded value of global points `coords` (a tuple of index arrays, wrapped)."""
    volume = int(np.prod(points))
    lin = np.ravel_multi_index(tuple(np.asarray(c, dtype=np.int64) for c in coords), points)
    return ((salt * 8 + fid) * volume + lin) * ncomp + comp + 1


def used_table(stencil):
    """used[slot] for every direction slot (dimension 0 fastest), as halox numbers them."""
    dim = stencil.dim
    table = np.zeros(3 ** dim, dtype=bool)
    for d in stencil.directions:
        table[sum((d[i] + 1) * 3 ** i for i in range(dim))] = True
    return table


def grid(lo, shape):
    """Global coordinates of every element of an array starting at global point `lo`."""
    return tuple(np.arange(l, l + s).reshape([-1 if k == i else 1 for k in range(len(lo))])
                 + np.zeros(shape, dtype=np.int64)
                 for i, (l, s) in enumerate(zip(lo, shape)))


def sources(alloc_lo, alloc_shape, stored, stencil, points, periodic):
    """(filled, wrapped): for every element of a block's allocated array, whether the forward
    exchange (or the owner) gives it a value, and the global point it must hold."""
    g = grid(alloc_lo, alloc_shape)
    s_lo, s_hi = stored
    dim = len(alloc_lo)
    slot = np.zeros(alloc_shape, dtype=np.int64)
    within = np.ones(alloc_shape, dtype=bool)
    halo = np.zeros(alloc_shape, dtype=bool)
    for i in range(dim):
        d = np.where(g[i] < s_lo[i], -1, np.where(g[i] >= s_hi[i], 1, 0))
        halo |= d != 0
        slot += (d + 1) * 3 ** i
        within &= (g[i] >= s_lo[i] - stencil.lo[i]) & (g[i] < s_hi[i] + stencil.hi[i])
    filled = within & (~halo | used_table(stencil)[slot])
    wrapped = []
    for i in range(dim):
        if periodic[i]:
            wrapped.append(np.mod(g[i], points[i]))
        else:
            filled &= (g[i] >= 0) & (g[i] < points[i])
            wrapped.append(np.clip(g[i], 0, points[i] - 1))
    return filled, tuple(wrapped)


class Block:
    """One block of a field as the tests lay it out: its array, where it sits, its centering."""

    def __init__(self, array, box_lo, box_hi, pad_lo, centering=None, component_axis=None):
        self.array = array
        self.box_lo, self.box_hi = tuple(box_lo), tuple(box_hi)
        self.pad_lo = tuple(pad_lo)
        self.centering = centering
        self.dim = len(box_lo)
        if component_axis is None and array.ndim == self.dim + 1:
            component_axis = self.dim
        self.component_axis = component_axis

    @property
    def ncomp(self):
        return 1 if self.component_axis is None else self.array.shape[self.component_axis]

    @property
    def origin(self):
        return tuple(l - p for l, p in zip(self.box_lo, self.pad_lo))

    @property
    def spatial_shape(self):
        return tuple(n for a, n in enumerate(self.array.shape) if a != self.component_axis)

    def comp(self, c):
        """The view of component c (the whole array for one component)."""
        if self.component_axis is None:
            return self.array
        index = [slice(None)] * self.array.ndim
        index[self.component_axis] = c
        return self.array[tuple(index)]


def fill(block, extents, periodic, fid=0, salt=0):
    """Sentinel everywhere, the encoded values on the block's owned points."""
    pts = point_extents(extents, periodic, block.centering)
    lo, hi = owned_points(block.box_lo, block.box_hi, extents, periodic, block.centering)
    own = tuple(slice(l - o, h - o) for l, h, o in zip(lo, hi, block.origin))
    g = grid(lo, tuple(h - l for l, h in zip(lo, hi)))
    for c in range(block.ncomp):
        view = block.comp(c)
        view[...] = np.array(SENTINEL).astype(view.dtype)
        view[own] = key(pts, g, c, block.ncomp, fid, salt).astype(view.dtype)


def expected(block, stencil, extents, periodic, fid=0, salt=0):
    """What every element of the block must hold after a forward exchange, per component."""
    pts = point_extents(extents, periodic, block.centering)
    stored = stored_box(block.box_lo, block.box_hi, block.centering)
    filled, wrapped = sources(block.origin, block.spatial_shape, stored, stencil, pts, periodic)
    out = []
    for c in range(block.ncomp):
        want = np.where(filled, key(pts, wrapped, c, block.ncomp, fid, salt), SENTINEL)
        out.append(want.astype(block.comp(c).dtype))
    return out


def mismatches(block, stencil, extents, periodic, fid=0, salt=0, limit=4):
    """Descriptions of elements that differ from the model (empty when all agree)."""
    bad = []
    for c, want in enumerate(expected(block, stencil, extents, periodic, fid, salt)):
        got = np.asarray(block.comp(c))
        for idx in zip(*np.nonzero(got != want)):
            g = tuple(int(i) + o for i, o in zip(idx, block.origin))
            bad.append(f"point {g} c{c}: got {got[idx]}, want {want[idx]}")
            if len(bad) >= limit:
                return bad
    return bad


def copies(block_lo, block_hi, pad_lo, pad_hi, stencil, extents, periodic, centering=None):
    """The copies a block holds after a forward exchange (shared points and halo points):
    (array coordinates, wrapped global points) of every element that is not its own."""
    pts = point_extents(extents, periodic, centering)
    stored = stored_box(block_lo, block_hi, centering)
    alloc_lo = tuple(l - p for l, p in zip(stored[0], pad_lo))
    shape = tuple(h - l + p + q for l, h, p, q in zip(stored[0], stored[1], pad_lo, pad_hi))
    filled, wrapped = sources(alloc_lo, shape, stored, stencil, pts, periodic)
    o_lo, o_hi = owned_points(block_lo, block_hi, extents, periodic, centering)
    g = grid(alloc_lo, shape)
    own = np.ones(shape, dtype=bool)
    for i in range(len(block_lo)):
        own &= (g[i] >= o_lo[i]) & (g[i] < o_hi[i])
    mask = filled & ~own
    return np.nonzero(mask), tuple(w[mask] for w in wrapped), alloc_lo


def directions(dim):
    """Every direction but the centre, dimension 0 fastest."""
    return [d[::-1] for d in itertools.product((-1, 0, 1), repeat=dim) if any(d)]
