"""Chains: variable-size rounds with both neighbours, split phase, gather_left/right, against a
model of the whole sequence every rank can compute."""

import numpy as np
import pytest

import halox
from collective import check


def slice_of(r, dtype, salt=0):
    """Rank r's slice of the global sequence: (3r mod 5) elements (rank 0 has none)."""
    n = (3 * r) % 5
    start = sum((3 * q) % 5 for q in range(r))
    return (np.arange(start, start + n) * 10 + salt).astype(dtype)


def neighbour(r, step, size, periodic):
    q = r + step
    if periodic:
        return q % size
    return q if 0 <= q < size else None


@pytest.mark.parametrize("periodic", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_rounds(comm, periodic, dtype):
    ch = halox.Chain(comm, dtype, periodic=periodic)
    r, p = comm.rank, comm.size
    left, right = neighbour(r, -1, p, periodic), neighbour(r, 1, p, periodic)
    check(comm, ch.left == (-1 if left is None else left) and ch.right == (-1 if right is None else right))
    check(comm, ch.dtype == dtype and not ch.device and ch.periodic == periodic)
    for salt in range(3):
        mine = [slice_of(q, dtype, salt) for q in range(p)]
        to_left, to_right = mine[r][:2], mine[r][-3:]
        if salt == 1:
            h = ch.start(to_left, to_right)
            while not h.test():
                pass
            got_l, got_r = h.wait()
        else:
            got_l, got_r = ch.exchange(to_left, None if salt == 2 else to_right)
        want_l = None if left is None else (np.zeros(0, dtype) if salt == 2 else mine[left][-3:])
        want_r = None if right is None else mine[right][:2]
        ok_l = (got_l is None) if want_l is None else (got_l.dtype == dtype and np.array_equal(got_l, want_l))
        ok_r = (got_r is None) if want_r is None else np.array_equal(got_r, want_r)
        check(comm, ok_l and ok_r, f"salt {salt}: from_left {got_l} want {want_l}; from_right {got_r} want {want_r}")


@pytest.mark.parametrize("periodic", [False, True])
def test_gather(comm, periodic):
    ch = halox.Chain(comm, "int64", periodic=periodic)
    r, p = comm.rank, comm.size
    slices = [slice_of(q, "int64") for q in range(p)]
    for w in (0, 1, 4, 9):
        if periodic:
            before = np.concatenate([slices[(r + k) % p] for k in range(1, p)] or [np.zeros(0, "int64")])
            after = before
        else:
            before = np.concatenate(slices[:r] or [np.zeros(0, "int64")])
            after = np.concatenate(slices[r + 1:] or [np.zeros(0, "int64")])
        got_l = ch.gather_left(slices[r], w)
        got_r = ch.gather_right(slices[r], w)
        want_l = before[len(before) - min(w, len(before)):]
        want_r = after[:w]
        check(comm, np.array_equal(got_l, want_l) and np.array_equal(got_r, want_r),
              f"w={w}: left {got_l} want {want_l}; right {got_r} want {want_r}")


def test_payload_errors(comm):
    ch = halox.Chain(comm, "float64")
    bad = np.zeros(3, dtype=np.float32) if comm.rank == 0 else np.zeros(2)
    msg = None
    try:
        ch.exchange(bad, bad)
    except halox.Error as e:
        msg = str(e)
    # The rank with the wrong payload says why; its neighbours fail the round too.
    r = comm.rank
    involved = r == 0 or (comm.size > 1 and r == 1)
    if r == 0:
        ok = msg is not None and "the chain carries float64, the array holds float32" in msg
    else:
        ok = (msg is not None and "rejected its payload" in msg) if involved else msg is None
    check(comm, ok, msg)
    got = ch.exchange(np.ones(1), np.ones(1))  # the chain stays usable
    check(comm, got[0] is None or np.array_equal(got[0], [1.0]))
