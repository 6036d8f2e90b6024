"""Unstructured patterns: owners found by halox (or given), ghosts filled from their owners,
reverse sums/min/max/replace into the owners, entity- and component-major arrays, owned and
wrapped; every value checked against a model every rank computes for all ranks."""

import numpy as np
import pytest

import halox
from collective import check


def owned_ids(r):
    """Rank r owns ids r*1000 .. r*1000 + 19 + r (uneven counts)."""
    return np.arange(r * 1000, r * 1000 + 20 + r, dtype=np.int64)


def ghost_ids(r, size):
    """Rank r's ghosts: the neighbours' ends on a ring and a few ids further away."""
    if size == 1:
        return np.zeros(0, dtype=np.int64)
    nxt, prv = (r + 1) % size, (r - 1) % size
    far = (r + 2) % size
    g = [owned_ids(nxt)[:3], owned_ids(prv)[-2:]]
    if far != r:
        g.append(owned_ids(far)[[5, 11]])
    return np.unique(np.concatenate(g))[::-1].copy()  # any order


def value(gid, comp=0, ncomp=1, salt=0):
    return (np.asarray(gid) * 10 + salt) * ncomp + comp + 1


SENTINEL = -7


def layout(pat, comm, permuted):
    """Local indices of owned ids and ghosts (owned first, or shuffled with gaps)."""
    o, g = owned_ids(comm.rank), ghost_ids(comm.rank, comm.size)
    if not permuted:
        return o, g, None, None, len(o) + len(g)
    n = len(o) + len(g) + 3
    perm = np.random.default_rng(comm.rank).permutation(n)[: len(o) + len(g)]
    return o, g, perm[: len(o)], perm[len(o):], n


@pytest.mark.parametrize("permuted", [False, True])
def test_forward(comm, permuted):
    o, g, ol, gl, n = layout(None, comm, permuted)
    pat = halox.Unstructured(comm, o, g, owned_local=ol, ghost_local=gl,
                             local_count=n if permuted else None)
    check(comm, pat.local_count == n and pat.owned_count == len(o) and pat.ghost_count == len(g))
    check(comm, list(pat.ghost_owners) == [int(x) // 1000 for x in g], "owners found")
    ol = np.arange(len(o)) if ol is None else ol
    gl = np.arange(len(o), len(o) + len(g)) if gl is None else gl
    em = pat.make_field("float64", 2)                          # entity-major, owned
    cm = pat.make_field("int32", 3, layout="component_major")  # component-major, owned
    w1 = np.zeros(n, dtype=np.int64)                           # wrapped 1-D
    w2 = np.zeros((3, n), dtype=np.float32)                    # wrapped [component][entity]
    check(comm, em.shape == (n, 2) and cm.shape == (n, 3) and cm.strides[0] == 4)
    ex = halox.make_exchange(pat, em, cm, w1, halox.field(w2, component_axis=0))
    views = [(em, 2), (cm, 3), (w1[:, None], 1), (w2.T, 3)]
    for salt in range(2):
        for arr, nc in views:
            arr[...] = SENTINEL
            for c in range(nc):
                arr[ol, c] = value(o, c, nc, salt)
        ex.exchange() if salt == 0 else ex.start().wait()
        for k, (arr, nc) in enumerate(views):
            ok = all(np.array_equal(arr[gl, c], value(g, c, nc, salt).astype(arr.dtype))
                     and np.array_equal(arr[ol, c], value(o, c, nc, salt).astype(arr.dtype))
                     for c in range(nc))
            check(comm, ok, f"field {k} salt {salt}")
    if permuted:  # entities that are neither owned nor ghosts are never written
        free = np.setdiff1d(np.arange(n), np.concatenate([ol, gl]))
        check(comm, np.all(em[free] == SENTINEL), "gaps untouched")


def test_given_owners(comm):
    o, g = owned_ids(comm.rank), ghost_ids(comm.rank, comm.size)
    owners = (g // 1000).astype(np.int32)
    pat = halox.Unstructured(comm, list(o), list(g), ghost_owners=owners)
    f = pat.make_field("float64")
    f[: len(o)] = value(o)
    f[len(o):] = SENTINEL
    halox.make_exchange(pat, f).exchange()
    check(comm, np.array_equal(f[len(o):], value(g)), "ghosts")
    check(comm, [p for p, _ in pat.recvs] == sorted(set(owners.tolist())), f"recvs {pat.recvs}")


@pytest.mark.parametrize("op", ["sum", "min", "max", "replace"])
def test_reverse(comm, op):
    o, g = owned_ids(comm.rank), ghost_ids(comm.rank, comm.size)
    pat = halox.Unstructured(comm, o, g)
    f = pat.make_field("int64", 2)

    def contribution(r, gid, c):
        return (np.asarray(gid) * 7 + r * 13 + c) % 101

    for c in range(2):
        f[: len(o), c] = value(o, c, 2)
        f[len(o):, c] = contribution(comm.rank, g, c)
    ghosts_before = f[len(o):].copy()
    halox.make_reverse_exchange(pat, op, f).exchange()
    for c in range(2):
        want = value(o, c, 2).astype(np.int64)
        # Every rank's ghosts of my ids, in halox's order: peers by increasing rank.
        for r in range(comm.size):
            gr = ghost_ids(r, comm.size)
            mine = gr[gr // 1000 == comm.rank]
            for gid in sorted(mine, key=lambda x: list(gr).index(x)):
                k = int(gid - comm.rank * 1000)
                v = contribution(r, gid, c)
                want[k] = {"sum": want[k] + v, "min": min(want[k], v), "max": max(want[k], v),
                           "replace": v}[op]
        check(comm, np.array_equal(f[: len(o), c], want), f"owners, component {c}")
    check(comm, np.array_equal(f[len(o):], ghosts_before), "ghosts left as they were")
