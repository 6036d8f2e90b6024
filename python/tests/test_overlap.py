"""Overlapping the interior update with the exchange (interior_slices, start/wait), checked
bit for bit against a serial NumPy run of the same explicit diffusion; and the GIL released
while a rank waits."""

import threading
import time

import numpy as np
import pytest

import halox
from collective import check


def serial(n, steps, k):
    g = np.indices(n)
    u = np.sin(0.3 * g[0]) + np.cos(0.2 * g[1]) + 0.01 * g[0] * g[1]
    for _ in range(steps):
        u = u + k * (np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1)
                     - 4 * u)
    return u


def update(u, v, s, k):
    """v[s] from u around s (s: a tuple of slices into arrays padded by one cell)."""
    def shift(d, by):
        return tuple(slice(x.start + (by if i == d else 0), x.stop + (by if i == d else 0))
                     for i, x in enumerate(s))
    v[s] = u[s] + k * (u[shift(0, -1)] + u[shift(0, 1)] + u[shift(1, -1)] + u[shift(1, 1)]
                       - 4 * u[s])


@pytest.mark.parametrize("order", ["C", "F"])
def test_overlapped_diffusion_matches_serial(comm, order):
    n, steps, k = (23, 17), 12, 0.1
    dom = halox.Cartesian(comm, n, periodic=True)
    st = halox.Stencil.star(2, 1)
    u = [dom.make_field(st, order=order), dom.make_field(st, order=order)]
    ex = [halox.make_exchange(dom, st, u[0]), halox.make_exchange(dom, st, u[1])]
    own = halox.owned_slices(dom, st)
    g = np.indices(n)
    init = np.sin(0.3 * g[0]) + np.cos(0.2 * g[1]) + 0.01 * g[0] * g[1]
    b = dom.local_box
    u[0][own] = init[b.lo[0]:b.hi[0], b.lo[1]:b.hi[1]]
    inner, shell = halox.interior_slices(dom, st)
    for t in range(steps):
        cur, nxt = u[t % 2], u[(t + 1) % 2]
        h = ex[t % 2].start()
        update(cur, nxt, inner, k)
        h.wait()
        for s in shell:
            update(cur, nxt, s, k)
    want = serial(n, steps, k)[b.lo[0]:b.hi[0], b.lo[1]:b.hi[1]]
    check(comm, np.array_equal(u[steps % 2][own], want),
          f"max difference {np.max(np.abs(u[steps % 2][own] - want))}")


def test_gil_released_while_waiting(comm):
    """Rank 0 enters the exchange late; meanwhile its neighbours' Python threads keep running
    while their main threads wait inside exchange()."""
    if comm.size < 2:
        pytest.skip("needs two ranks")
    dom = halox.Cartesian(comm, (8, 8), periodic=True, grid=(comm.size, 1))
    st = halox.Stencil.star(2, 1)
    u = dom.make_field(st)
    ex = halox.make_exchange(dom, st, u, host_shared_memory=False)
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.005)

    comm.Barrier()
    t = threading.Thread(target=tick)
    if comm.rank == 0:
        time.sleep(0.4)
        ex.exchange()
    else:
        t.start()
        start = time.monotonic()
        ex.exchange()
        waited = time.monotonic() - start
        stop.set()
        t.join()
    during = len(ticks)
    neighbour = comm.rank in (1, comm.size - 1)
    check(comm, comm.rank == 0 or not neighbour or (waited > 0.2 and during >= 10),
          f"waited {comm.rank and waited}, the thread ran {during} times meanwhile")
