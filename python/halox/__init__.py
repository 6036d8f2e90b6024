"""halox: declarative halo (ghost-cell) exchange for domain-decomposed stencil codes.

Say what the halo looks like (a stencil, a domain, your arrays) and halox derives how to move
it: one message per neighbour, a plan built once, no copy of your arrays::

    from mpi4py import MPI
    import halox

    st = halox.Stencil.box(3, 1)                       # faces, edges, corners; width 1
    dom = halox.Cartesian(MPI.COMM_WORLD, (64, 64, 64), periodic=True)
    u = dom.make_field(st)                             # a NumPy array with halo padding
    ex = halox.make_exchange(dom, st, u)               # collective; the plan is built here
    ex.exchange()                                      # u's halo cells now hold the neighbours'

Fields are the user's arrays, used in place: NumPy arrays (any numeric dtype, C or Fortran
order, any positive strides), device arrays through ``__cuda_array_interface__`` or DLPack
(CuPy, Numba, PyTorch, JAX), or the arrays ``make_field`` returns. Every set-up call is
collective and raises :class:`Error` on every rank when any rank's input is wrong, before
anything is sent or written. See docs/python.md.
"""

from ._halox import (  # noqa: F401  (the public API)
    Box,
    BoundaryFace,
    BoxList,
    Cartesian,
    Centering,
    Chain,
    ChainHandle,
    DeviceArray,
    Domain,
    FieldBlocks,
    Error,
    Exchange,
    Handle,
    Reduction,
    Stencil,
    Unstructured,
    cuda_enabled,
    current_device,
    device_count,
    node_shared_zeros,
    set_device,
    split_interior,
    synchronize,
)

__all__ = [
    "Box", "BoundaryFace", "BoxList", "Cartesian", "Centering", "Chain", "ChainHandle",
    "DeviceArray", "Domain", "Error", "FieldBlocks", "Exchange", "Handle", "Reduction", "Stencil",
    "Unstructured", "Boundary", "Field", "Halo", "field", "halo", "make_exchange",
    "make_reverse_exchange", "origin", "owned_slices", "interior_slices", "split_interior",
    "cuda_enabled", "current_device", "device_count", "node_shared_zeros", "set_device",
    "synchronize",
]


class Field:
    """One field of an exchange with how to read its array(s); made by :func:`field`."""

    __slots__ = ("arrays", "pad", "component_axis", "name", "centering", "dtype", "components",
                 "shared_points")

    def __init__(self, arrays, pad=None, component_axis=None, name=None, centering=None,
                 dtype=None, components=None, shared_points=None):
        self.arrays = arrays
        self.pad = pad
        self.component_axis = component_axis
        self.name = name
        self.centering = centering
        self.dtype = dtype
        self.components = components
        self.shared_points = shared_points

    def __repr__(self):
        return f"halox.field({self.arrays!r}, pad={self.pad!r}, name={self.name!r})"


def field(arrays, *, pad=None, component_axis=None, name=None, centering=None, dtype=None,
          components=None, shared_points=None):
    """Your array(s) as a field, where the defaults do not fit.

    ``arrays``: one array, or a list with one array per owned box (BoxList). ``pad``: the halo
    padding the array has around the owned box (default: the stencil's widths): an integer,
    one integer per dimension, or a pair ``(below, above)`` of those. ``component_axis``: the
    axis of components in an array with one axis more than the domain (default: the last).
    ``name``: used in error messages. ``centering``: a :class:`Centering` (staggered fields
    have one more point along their staggered non-periodic dimensions). ``shared_points``:
    ``"owner_overwrites"`` (the default: the exchange writes the owner's value over the points
    a staggered field's blocks share) or ``"keep"`` (each block keeps its own; only the halo
    proper is filled; docs/staggered.md). ``dtype`` and
    ``components``: the element type and components per cell, needed only where a rank has no
    array (a BoxList rank without boxes: ``halox.field([], dtype="float32", components=3)``);
    elsewhere they must agree with the arrays.
    """
    return Field(arrays, pad, component_axis, name, centering, dtype, components, shared_points)


class Boundary:
    """Physical boundary rules of one field, one per non-periodic face of the global box::

        bc = (halox.Boundary()
              .constant((0, "low"), 1.0)          # inflow: halo cells beyond x = 0 hold 1
              .zero_gradient((0, "high"))         # outflow: copies of the last owned cell
              .reflect((1, "low"), [1.0, -1.0])   # wall: mirrored, component 1 negated
              .callback((1, "high"), fill))       # fill(face): anything else

    A face is ``(dim, "low" | "high")``. Pass it with the field: ``halox.halo(st, u, bc)``.
    After every exchange the rules run in dimension order, low face before high. A callback
    gets a :class:`BoundaryFace`: ``face.array[face.index] = ...`` fills the cells.
    """

    __slots__ = ("rules",)

    def __init__(self):
        self.rules = []

    def _add(self, fc, kind, payload):
        dim, side = fc
        self.rules.append((dim, side, kind, payload))
        return self

    def constant(self, face, value):
        """Every halo cell beyond ``face`` holds ``value`` (all components)."""
        return self._add(face, "constant", value)

    def zero_gradient(self, face):
        """Halo cells beyond ``face`` hold the owned cell at the face in the same line."""
        return self._add(face, "zero_gradient", None)

    def reflect(self, face, signs=None):
        """The halo cell k cells beyond ``face`` holds the cell k - 1 inside it, component c
        times ``signs[c]`` (no signs: as it is)."""
        return self._add(face, "reflect", None if signs is None else list(signs))

    def mirror(self, face, signs=None):
        """The halo cell k cells beyond ``face`` holds the cell k inside the boundary cell (a
        mirror about the boundary cell's centre, which is not repeated: at the high face of n
        cells, cell n - 1 + k holds cell n - 1 - k), component c times ``signs[c]``. Along a
        staggered dimension the same as :meth:`reflect` (about the boundary point). numpy.pad's
        "reflect" mode; :meth:`reflect` is its "symmetric"."""
        return self._add(face, "mirror", None if signs is None else list(signs))

    def callback(self, face, fn):
        """``fn(face)`` fills the cells itself (a :class:`BoundaryFace`), once per block."""
        return self._add(face, "callback", fn)

    def __repr__(self):
        return f"halox.Boundary({self.rules!r})"


class Halo:
    """A field exchanged with its own stencil and boundary rules; made by :func:`halo`."""

    __slots__ = ("stencil", "field", "boundary")

    def __init__(self, stencil, fld, boundary=None):
        self.stencil = stencil
        self.field = fld
        self.boundary = boundary


def halo(stencil, fld, boundary=None):
    """``fld`` (an array, a list of arrays or a :func:`field`) exchanged for ``stencil`` with
    the :class:`Boundary` rules ``boundary``: ``make_exchange(dom, halo(st_u, u, bc), halo(st_p,
    p))`` gives every field its own halo, still one message per neighbour."""
    return Halo(stencil, fld, boundary)


def _spec(f, rules=None):
    # (arrays, pad, component_axis, name, centering, dtype, rules, components, shared_points):
    # what the compiled builders read. Nothing here checks anything: the checks run on every
    # rank at once, in C++.
    if isinstance(f, Field):
        return (f.arrays, f.pad, f.component_axis, f.name, f.centering, f.dtype, rules,
                f.components, f.shared_points)
    return (f, None, None, None, None, None, rules, None, None)


def _structured(args, what):
    """(stencils, field specs) of make_exchange's arguments after the domain; raises TypeError
    where they are neither (stencil, *fields) nor halos."""
    if args and isinstance(args[0], Stencil):
        st = args[0]
        fields = args[1:]
        return [st] * len(fields), [_spec(f) for f in fields]
    if args and all(isinstance(a, Halo) for a in args):
        return ([h.stencil for h in args],
                [_spec(h.field, None if h.boundary is None else list(h.boundary.rules))
                 for h in args])
    raise TypeError(f"halox.{what}(domain, stencil, *fields) or (domain, *halos), not "
                    f"({', '.join(type(a).__name__ for a in args)})")


def _check_domain(domain, what):
    # Without a domain there is no communicator to agree on: a local TypeError.
    if not isinstance(domain, (Domain, Unstructured)):
        raise TypeError(f"halox.{what}: the first argument is a Cartesian, BoxList or "
                        f"Unstructured, not {type(domain).__name__}")


def make_exchange(domain, *args, **options):
    """Builds the :class:`Exchange` of ``domain``'s halos (collective).

    ``make_exchange(dom, stencil, *fields)``: every field exchanged for one stencil.
    ``make_exchange(dom, *halos)``: each :func:`halo` with its own stencil and boundary rules.
    ``make_exchange(pattern, *fields)``: an :class:`Unstructured` pattern (owners to ghosts).
    A field is an array, a list of arrays (one per owned box) or a :func:`field`. Keyword
    arguments are ``exchange_options`` (``device_staging="host_staged"``,
    ``host_shared_memory=False``, ``node_size=2``, ...); the ``HALOX_*`` environment variables
    override them. Raises :class:`Error` on every rank when any rank's input is wrong.
    """
    _check_domain(domain, "make_exchange")
    if isinstance(domain, Unstructured):
        return domain._build([_spec(f) for f in args], None, options)
    try:
        stencils, specs = _structured(args, "make_exchange")
    except TypeError as e:  # raised on every rank, by the collective builder
        return domain._build([], [], None, options, str(e))
    return domain._build(stencils, specs, None, options)


def make_reverse_exchange(domain, *args, **options):
    """Builds the reverse (halo-to-owner) :class:`Exchange` (collective).

    ``make_reverse_exchange(dom, stencil, op, *fields)`` or ``(pattern, op, *fields)``: every
    halo value is sent back to the owned cell it mirrors and combined into it with ``op``
    (``"sum"``, ``"min"``, ``"max"``, ``"replace"`` or a :class:`Reduction`), in a fixed order:
    deterministic for a fixed decomposition. Halo cells are left as they are.
    """
    _check_domain(domain, "make_reverse_exchange")
    if isinstance(domain, Unstructured):
        if not args:
            return domain._build([], None, options,
                                 "halox.make_reverse_exchange(pattern, op, *fields): no op")
        return domain._build([_spec(f) for f in args[1:]], args[0], options)
    if len(args) < 2 or not isinstance(args[0], Stencil):
        return domain._build([], [], None, options,
                             "halox.make_reverse_exchange(domain, stencil, op, *fields), not "
                             f"({', '.join(type(a).__name__ for a in args)})")
    st, op, fields = args[0], args[1], args[2:]
    return domain._build([st] * len(fields), [_spec(f) for f in fields], op, options)


def _pad_below(pad, dim):
    if isinstance(pad, Stencil):
        return tuple(pad.lo)
    if isinstance(pad, int):
        return (pad,) * dim
    pad = tuple(pad)
    if len(pad) == 2 and not isinstance(pad[0], int):
        below = pad[0]
        return (below,) * dim if isinstance(below, int) else tuple(below)
    return pad


def origin(domain, pad, block=0):
    """The global cell at element 0 of an array padded by ``pad`` (a Stencil, an integer, D
    integers or a pair below/above) around owned box ``block``: array index = global - origin."""
    box = domain.local_boxes[block]
    below = _pad_below(pad, domain.dim)
    return tuple(lo - p for lo, p in zip(box.lo, below))


def owned_slices(domain, pad, block=0):
    """The owned cells of block ``block`` in an array padded by ``pad``, as a tuple of slices
    (cell-centred fields)."""
    return domain.local_boxes[block].slices(origin(domain, pad, block))


def interior_slices(domain, stencil, pad=None, block=0):
    """``(interior, shell)`` as tuples of slices into an array padded by ``pad`` (default: the
    stencil's widths): the owned cells whose ``stencil`` reads no halo cell, and the rest as at
    most 2·dim slabs. Update the interior while an exchange is in flight, the shell after
    ``wait()``::

        inner, shell = halox.interior_slices(dom, st)
        h = ex.start()
        update(inner)
        h.wait()
        for s in shell:
            update(s)
    """
    pad = stencil if pad is None else pad
    o = origin(domain, pad, block)
    inner, shell = split_interior(domain.local_boxes[block], stencil)
    return inner.slices(o), [b.slices(o) for b in shell]
