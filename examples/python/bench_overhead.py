"""bench_overhead: what calling halox from Python costs on top of the C++ call, per exchange.

    mpirun -np 2 python3 examples/python/bench_overhead.py [--sizes 8,64] [--device]
                                                           [--iters 2000] [--repeats 7]

The same exchange object (a periodic N^3 domain, box(1) stencil, one float64 field) is driven
by a Python loop (`for _ in range(n): ex.exchange()`) and by a C++ loop inside the module
(halox._halox._time_exchange: halo_exchange::exchange() n times, no Python in between), in
alternating short repeats; each row gives both loops' median time per call (the slowest
rank's) and the overhead: the median over repeats of the difference between a Python repeat
and the C++ repeat right after it (pairs cancel the drift of a shared machine). The scheduled pair (schedule_exchange(s) + schedule_wait(s))
is timed the same way for device fields, with the stream given as an integer and as an object
with __cuda_stream__. Every case is checked once (halo values against the global coordinates
they encode): "verified". Host rows need NumPy; the device rows do not.
"""

import argparse
import json
import os
import statistics
import sys
import time

from mpi4py import MPI

import halox

TARGET_US = 2.0


class StreamObject:
    """A stream as the CUDA stream protocol gives it (what CuPy/Numba/PyTorch streams offer)."""

    def __init__(self, handle):
        self.handle_value = handle

    def __cuda_stream__(self):
        return (0, self.handle_value)


def timed_python(fn, iters):
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    return time.perf_counter() - t0


def timed_python_pair(first, second, arg, iters, sync):
    t0 = time.perf_counter()
    for _ in range(iters):
        first(arg)
        second(arg)
    sync()
    return time.perf_counter() - t0


def compare(comm, py_loop, cxx_loop, iters, repeats):
    """Seconds per call: the median of each loop over `repeats` alternating runs (slowest
    rank), and the median of the paired differences."""
    py, cxx = [], []
    py_loop(max(1, iters // 10))  # warm-up
    cxx_loop(max(1, iters // 10))
    for _ in range(repeats):
        comm.Barrier()
        py.append(comm.allreduce(py_loop(iters), op=MPI.MAX) / iters)
        comm.Barrier()
        cxx.append(comm.allreduce(cxx_loop(iters), op=MPI.MAX) / iters)
    diff = statistics.median(p - c for p, c in zip(py, cxx))
    return statistics.median(py), statistics.median(cxx), diff


def verify_host(dom, st, u):
    import numpy as np
    b = dom.local_box
    n = dom.extents
    own = halox.owned_slices(dom, st)
    g = np.indices(b.shape)
    u[own] = sum(((g[i] + b.lo[i]) * 1000 ** i) for i in range(3))
    halox.make_exchange(dom, st, u).exchange()
    o = halox.origin(dom, st)
    a = np.indices(u.shape)
    want = sum((np.mod(a[i] + o[i], n[i]) * 1000 ** i) for i in range(3))
    return bool(np.array_equal(u, want))


def verify_device(dom, st, u, ex):
    try:
        import numpy as np
    except ImportError:
        return None  # no NumPy here: timings only
    host = np.zeros(u.shape)
    b = dom.local_box
    own = halox.owned_slices(dom, st)
    g = np.indices(b.shape)
    host[own] = sum(((g[i] + b.lo[i]) * 1000 ** i) for i in range(3))
    u.copy_from_host(host)
    ex.exchange()
    u.copy_to_host(host)
    o = halox.origin(dom, st)
    a = np.indices(u.shape)
    n = dom.extents
    want = sum((np.mod(a[i] + o[i], n[i]) * 1000 ** i) for i in range(3))
    return bool(np.array_equal(host, want))


def row(comm, timing, **kw):
    if comm.rank == 0:
        py, cxx, diff = timing
        out = {k: kw.pop(k) for k in ("bench", "case", "n", "ranks", "call")}
        out["python_us"] = round(py * 1e6, 3)
        out["cxx_us"] = round(cxx * 1e6, 3)
        out["overhead_us"] = round(diff * 1e6, 3)
        out["target_us"] = kw.pop("target_us")
        out["within_target"] = out["overhead_us"] <= out["target_us"]
        out.update(kw)
        print(json.dumps(out), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="8,64", help="host cases: cells per dimension")
    p.add_argument("--device", action="store_true", help="also the device case (64^3)")
    p.add_argument("--device-size", type=int, default=64)
    p.add_argument("--no-host", action="store_true", help="device rows only")
    p.add_argument("--iters", type=int, default=300, help="calls per repeat")
    p.add_argument("--repeats", type=int, default=31)
    a = p.parse_args()
    comm = MPI.COMM_WORLD
    st = halox.Stencil.box(3, 1)
    common = dict(bench="python_overhead", ranks=comm.size, stencil="box(1)", fields=1,
                  dtype="float64", target_us=TARGET_US, iters=a.iters, repeats=a.repeats)
    if not a.no_host:
        for n in (int(x) for x in a.sizes.split(",")):
            dom = halox.Cartesian(comm, (n, n, n), periodic=True)
            u = dom.make_field(st)
            ok = comm.allreduce(verify_host(dom, st, u), op=MPI.LAND)
            ex = halox.make_exchange(dom, st, u)
            t = compare(comm, lambda k: timed_python(ex.exchange, k),
                        lambda k: halox._halox._time_exchange(ex, k), a.iters, a.repeats)
            row(comm, t, case="host", n=n, call="exchange()", verified=ok, **common)
            ex.close()
    if a.device:
        if halox.device_count() == 0:
            if comm.rank == 0:
                print(json.dumps(dict(case="device", skipped="no CUDA device", **common)))
            return 0
        local = comm.Split_type(MPI.COMM_TYPE_SHARED)
        halox.set_device(local.rank % halox.device_count())
        n = a.device_size
        dom = halox.Cartesian(comm, (n, n, n), periodic=True)
        u = dom.make_field(st, device=True)
        ex = halox.make_exchange(dom, st, u)
        ok = verify_device(dom, st, u, ex)
        ok = None if ok is None else comm.allreduce(ok, op=MPI.LAND)
        path = ex.describe().splitlines()[1].split(" via ")[-1] if comm.size > 1 else "local copies"
        t = compare(comm, lambda k: timed_python(ex.exchange, k),
                    lambda k: halox._halox._time_exchange(ex, k), a.iters, a.repeats)
        row(comm, t, case="device", n=n, call="exchange()", verified=ok, path=path, **common)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        try:
            import cuda_rtc
            rt = cuda_rtc.Runtime()
            stream = rt.stream()
            sync = lambda: rt.synchronize(stream)  # noqa: E731
        except (OSError, cuda_rtc.CudaError) as e:
            if comm.rank == 0:
                print(f"# no stream of its own ({e}): the legacy default stream", file=sys.stderr)
            stream, sync = 0, (lambda: halox.synchronize(0))
        for label, s in (("int", stream), ("__cuda_stream__", StreamObject(stream))):
            t = compare(
                comm,
                lambda k: timed_python_pair(ex.schedule_exchange, ex.schedule_wait, s, k, sync),
                lambda k: halox._halox._time_scheduled(ex, s, k), a.iters, a.repeats)
            row(comm, t, case="device", n=n,
                call=f"schedule_exchange+schedule_wait (stream {label})", verified=ok,
                path=path, **common)
        ex.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
