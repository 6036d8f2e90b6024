"""heat2d: explicit 2-D heat equation on a periodic grid, halos exchanged by halox from Python,
checked bit for bit against a serial NumPy run of the same problem on rank 0.

    mpirun -np 4 python3 examples/python/heat2d.py [--n 96] [--steps 50] [--no-overlap]
                                                   [--device] [--engine auto|cupy|nvrtc]

Host: the fields are halox-owned NumPy arrays; each step starts the exchange, updates the
interior (the cells whose stencil reads no halo), waits, then updates the shell around it.
--device: the fields are halox-owned device arrays (one GPU per rank of a node) and every step
runs in stream order with no host synchronisation: schedule_exchange(stream), the interior
kernel, schedule_wait(stream), the shell kernels. The kernels come from CuPy where it is
installed (it takes halox's arrays through __cuda_array_interface__, without a copy), else
from NVRTC through ctypes (cuda_rtc.py, next to this file). Needs NumPy and mpi4py.
"""

import argparse
import os
import sys
import time

import numpy as np
from mpi4py import MPI

import halox

K = 0.1  # diffusion number (stable below 0.25)


def initial(n):
    g = np.indices(n)
    return np.sin(0.2 * g[0]) + np.cos(0.15 * g[1]) + 1e-3 * g[0] * g[1]


def serial(n, steps):
    u = initial(n)
    for _ in range(steps):
        u = u + K * (np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1)
                     - 4 * u)
    return u


def shifted(s, d, by):
    return tuple(slice(x.start + (by if i == d else 0), x.stop + (by if i == d else 0))
                 for i, x in enumerate(s))


def update(xp, u, v, s):
    """v[s] = one step of u on the cells s (tuples of slices into arrays padded by one cell);
    the same operations in the same order as serial(), so the results agree bit for bit."""
    v[s] = u[s] + K * (u[shifted(s, 0, -1)] + u[shifted(s, 0, 1)] + u[shifted(s, 1, -1)]
                       + u[shifted(s, 1, 1)] - 4 * u[s])


HEAT_KERNEL = r"""
extern "C" __global__ void heat_step(const double* u, double* v, long long s0, long long lo0,
                                     long long lo1, long long hi0, long long hi1, double k) {
  const long long i = lo0 + blockIdx.y, j = lo1 + blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= hi0 || j >= hi1) return;
  const long long c = i * s0 + j;
  v[c] = u[c] + k * (u[c - s0] + u[c + s0] + u[c - 1] + u[c + 1] - 4.0 * u[c]);
}
"""


def run_host(dom, st, steps, overlap):
    u = [dom.make_field(st), dom.make_field(st)]
    ex = [halox.make_exchange(dom, st, u[0]), halox.make_exchange(dom, st, u[1])]
    own = halox.owned_slices(dom, st)
    b = dom.local_box
    u[0][own] = initial(dom.extents)[b.lo[0]:b.hi[0], b.lo[1]:b.hi[1]]
    inner, shell = halox.interior_slices(dom, st)
    start = time.perf_counter()
    for t in range(steps):
        cur, nxt = u[t % 2], u[(t + 1) % 2]
        if overlap:
            h = ex[t % 2].start()
            update(np, cur, nxt, inner)
            h.wait()
            for s in shell:
                update(np, cur, nxt, s)
        else:
            ex[t % 2].exchange()
            update(np, cur, nxt, own)
    seconds = time.perf_counter() - start
    return np.array(u[steps % 2][own]), seconds


def run_device(dom, st, steps, engine, comm):
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    halox.set_device(local.rank % halox.device_count())
    u = [dom.make_field(st, device=True), dom.make_field(st, device=True)]
    ex = [halox.make_exchange(dom, st, u[0]), halox.make_exchange(dom, st, u[1])]
    own = halox.owned_slices(dom, st)
    b = dom.local_box
    host = np.zeros(u[0].shape)
    host[own] = initial(dom.extents)[b.lo[0]:b.hi[0], b.lo[1]:b.hi[1]]
    u[0].copy_from_host(host)
    inner, shell = halox.interior_slices(dom, st)
    if engine == "cupy":
        import cupy as cp
        arrays = [cp.asarray(x) for x in u]  # halox's memory, no copy
        stream = cp.cuda.Stream(non_blocking=True)

        def sweep(k, s):
            with stream:
                update(cp, arrays[k], arrays[1 - k], s)

        sync = stream.synchronize
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import cuda_rtc
        rt = cuda_rtc.Runtime()
        kernel = rt.kernel(HEAT_KERNEL, "heat_step")
        stream = rt.stream()
        s0 = u[0].strides[0] // 8

        def sweep(k, s):
            rows, cols = s[0].stop - s[0].start, s[1].stop - s[1].start
            if rows <= 0 or cols <= 0:
                return
            kernel.launch(((cols + 127) // 128, rows), (128,), stream,
                          cuda_rtc.ptr(u[k]), cuda_rtc.ptr(u[1 - k]), cuda_rtc.i64(s0),
                          cuda_rtc.i64(s[0].start), cuda_rtc.i64(s[1].start),
                          cuda_rtc.i64(s[0].stop), cuda_rtc.i64(s[1].stop), cuda_rtc.f64(K))

        def sync():
            rt.synchronize(stream)
    sync()
    start = time.perf_counter()
    for t in range(steps):
        k = t % 2
        ex[k].schedule_exchange(stream)  # packs after the previous step's kernels
        sweep(k, inner)                  # overlaps with the messages
        ex[k].schedule_wait(stream)      # the stream waits for the halo
        for s in shell:
            sweep(k, s)
    sync()
    seconds = time.perf_counter() - start
    u[steps % 2].copy_to_host(host)
    return host[own].copy(), seconds


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=96, help="cells per dimension")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--no-overlap", action="store_true", help="exchange(), then update every cell")
    p.add_argument("--device", action="store_true", help="fields and kernels on the GPU")
    p.add_argument("--engine", choices=["auto", "cupy", "nvrtc"], default="auto",
                   help="--device kernels: CuPy or NVRTC (auto: CuPy where installed)")
    a = p.parse_args()
    comm = MPI.COMM_WORLD
    n = (a.n, a.n + 7)  # not square: a wrong axis would show
    dom = halox.Cartesian(comm, n, periodic=True)
    st = halox.Stencil.star(2, 1)
    if a.device and halox.device_count() == 0:
        if comm.rank == 0:
            print("heat2d --device: no CUDA device here (halox built with CUDA: "
                  f"{halox.cuda_enabled()}); skipped")
        return 77
    if a.device:
        engine = a.engine
        if engine == "auto":
            try:
                import cupy  # noqa: F401
                engine = "cupy"
            except ImportError:
                engine = "nvrtc"
        mine, seconds = run_device(dom, st, a.steps, engine, comm)
        what = f"device ({engine})"
    else:
        mine, seconds = run_host(dom, st, a.steps, not a.no_overlap)
        what = "host" + ("" if a.no_overlap else ", interior overlapped with the exchange")
    parts = comm.gather((dom.local_box, mine), root=0)
    worst = comm.reduce(seconds, op=MPI.MAX, root=0)
    ok = True
    if comm.rank == 0:
        want = serial(n, a.steps)
        got = np.empty(n)
        for box, block in parts:
            got[box.lo[0]:box.hi[0], box.lo[1]:box.hi[1]] = block
        diff = float(np.max(np.abs(got - want)))
        ok = diff == 0.0
        print(f"heat2d: {n[0]}x{n[1]} cells, {a.steps} steps, {comm.size} rank(s), {what}: "
              f"{worst * 1e3:.1f} ms")
        print(("verified: bit for bit equal to the serial run" if ok else
               f"MISMATCH: max |difference| = {diff:.3e} against the serial run"))
    ok = comm.bcast(ok, root=0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
