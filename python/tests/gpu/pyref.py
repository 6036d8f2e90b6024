"""The serial model of reference.py in plain Python (no NumPy: the GPU machine may lack it), for
flat buffers of doubles with any strides: which global point every allocated element of a
block must hold after a forward exchange, and the values that encode them."""

import itertools
import struct

SENTINEL = -7.0


def key(points, g, c=0, ncomp=1, fid=0, salt=0):
    volume, lin = 1, 0
    for n, x in zip(points, g):
        volume *= n
        lin = lin * n + x
    return float(((salt * 8 + fid) * volume + lin) * ncomp + c + 1)


class Layout:
    """A block's array: global point at element 0 (`origin`), spatial shape, element strides,
    components and the distance between them, all in elements."""

    def __init__(self, origin, shape, strides, ncomp=1, comp_stride=1):
        self.origin, self.shape, self.strides = tuple(origin), tuple(shape), tuple(strides)
        self.ncomp, self.comp_stride = ncomp, comp_stride

    def offset(self, idx, c=0):
        return sum(i * s for i, s in zip(idx, self.strides)) + c * self.comp_stride

    def span(self):
        """Elements from the first to the last, inclusive."""
        return self.offset([n - 1 for n in self.shape], self.ncomp - 1) + 1

    def points(self):
        for idx in itertools.product(*(range(n) for n in self.shape)):
            yield idx, tuple(i + o for i, o in zip(idx, self.origin))


def source(g, stored_lo, stored_hi, st_lo, st_hi, used, points, periodic):
    """The wrapped global point element g must hold, or None (nothing writes it)."""
    d = []
    for i, x in enumerate(g):
        if x < stored_lo[i] - st_lo[i] or x >= stored_hi[i] + st_hi[i]:
            return None
        d.append(-1 if x < stored_lo[i] else 1 if x >= stored_hi[i] else 0)
    if any(d) and tuple(d) not in used:
        return None
    w = []
    for i, x in enumerate(g):
        if periodic[i]:
            w.append(x % points[i])
        elif 0 <= x < points[i]:
            w.append(x)
        else:
            return None
    return tuple(w)


class Model:
    """A cell-centred field of one block: `box` the owned cells, `pad` below."""

    def __init__(self, extents, periodic, stencil, box_lo, box_hi, layout):
        self.extents, self.periodic = tuple(extents), tuple(periodic)
        self.st_lo, self.st_hi = tuple(stencil.lo), tuple(stencil.hi)
        self.used = {tuple(d) for d in stencil.directions}
        self.lo, self.hi = tuple(box_lo), tuple(box_hi)
        self.layout = layout

    def owned(self, g):
        return all(l <= x < h for x, l, h in zip(g, self.lo, self.hi))

    def initial(self, fid=0, salt=0):
        """Sentinel everywhere, encoded values on the owned cells: a flat list of the span."""
        out = [SENTINEL] * self.layout.span()
        for idx, g in self.layout.points():
            if self.owned(g):
                for c in range(self.layout.ncomp):
                    out[self.layout.offset(idx, c)] = key(self.extents, g, c, self.layout.ncomp, fid, salt)
        return out

    def expected(self, fid=0, salt=0, base=None):
        """What the flat span must hold after a forward exchange (elements outside the array's
        elements, in gaps of a strided layout, as in `base`)."""
        out = list(base) if base is not None else [SENTINEL] * self.layout.span()
        for idx, g in self.layout.points():
            w = source(g, self.lo, self.hi, self.st_lo, self.st_hi, self.used, self.extents,
                       self.periodic)
            for c in range(self.layout.ncomp):
                out[self.layout.offset(idx, c)] = (SENTINEL if w is None else
                                                   key(self.extents, w, c, self.layout.ncomp, fid, salt))
        return out


def pack(values):
    return struct.pack(f"{len(values)}d", *values)


def unpack(buf):
    return list(memoryview(buf).cast("B").cast("d"))


def differences(got, want, limit=4):
    bad = [f"element {k}: got {g}, want {w}" for k, (g, w) in enumerate(zip(got, want)) if g != w]
    return bad[:limit] + ([f"... {len(bad)} in all"] if len(bad) > limit else [])
