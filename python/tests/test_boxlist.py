"""BoxList domains: several boxes per rank (and ranks with none), fields as lists of arrays,
owned and wrapped, every block checked against the serial model."""

import numpy as np

import halox
import reference as ref
from collective import check


def tiling(size):
    """A 12 x 10 box cut into 6 pieces of uneven sizes; with 3 or more ranks the last rank owns
    none."""
    cuts0, cuts1 = (0, 3, 8, 12), (0, 6, 10)
    boxes = []
    for i in range(3):
        for j in range(2):
            boxes.append(((cuts0[i], cuts1[j]), (cuts0[i + 1], cuts1[j + 1])))
    owners = max(1, size - 1) if size >= 3 else size
    return [(lo, hi, k % owners) for k, (lo, hi) in enumerate(boxes)]


def test_boxes_per_rank_owned_and_wrapped(comm):
    boxes = tiling(comm.size)
    for per in ((True, True), (False, True), (False, False)):
        dom = halox.BoxList(comm, (12, 10), per, boxes)
        check(comm, [ (tuple(b.lo), tuple(b.hi)) for b in dom.local_boxes] ==
              [(lo, hi) for lo, hi, o in boxes if o == comm.rank], "local_boxes")
        st = halox.Stencil.box(2, 2)
        owned = dom.make_field(st, "float64", 2)
        wrapped_c = [np.zeros((b.shape[0] + 4, b.shape[1] + 4), dtype=np.int32) for b in dom.local_boxes]
        wrapped_f = [np.zeros((b.shape[0] + 4, b.shape[1] + 4), order="F") for b in dom.local_boxes]
        check(comm, isinstance(owned, halox.FieldBlocks) and len(owned) == len(dom.local_boxes))
        # A rank without boxes names what its peers' arrays hold (dtype, components).
        fields = [owned, halox.field(wrapped_c, dtype="int32"), halox.field(wrapped_f, dtype="float64")]
        ex = halox.make_exchange(dom, st, *fields)
        blocks = [[ref.Block(a, b.lo, b.hi, st.lo) for a, b in zip(list(arrays), dom.local_boxes)]
                  for arrays in (owned, wrapped_c, wrapped_f)]
        for salt in range(2):
            for k, blks in enumerate(blocks):
                for blk in blks:
                    ref.fill(blk, dom.extents, dom.periodic, fid=k, salt=salt)
            if salt:
                ex.start().wait()
            else:
                ex.exchange()
            bad = []
            for k, blks in enumerate(blocks):
                for blk in blks:
                    bad += ref.mismatches(blk, st, dom.extents, dom.periodic, fid=k, salt=salt)
            check(comm, not bad, f"periodic {per}: " + "; ".join(bad))
        check(comm, isinstance(ex.fields[0], tuple), "a BoxList field is a tuple of arrays")


def test_boxes_of_every_rank(comm):
    boxes = tiling(comm.size)
    dom = halox.BoxList(comm, (12, 10), True, boxes)
    for r in range(comm.size):
        want = [halox.Box(lo, hi) for lo, hi, o in boxes if o == r]
        check(comm, dom.boxes_of(r) == want, f"boxes_of({r})")
    check(comm, dom.extents == (12, 10) and dom.periodic == (True, True))
