"""Device arrays from Python, with no array library and no NumPy: halox's own device fields
(DeviceArray), memory from cudaMalloc exported through __cuda_array_interface__, DLPack capsules
of halox's own fields, kernels from NVRTC on the user's streams. Every value is checked against
the serial model (pyref.py) or, for reverse exchanges and boundary rules, bit for bit against
the same exchange of host fields holding the same data (the host paths are checked against
serial references in the CPU suites)."""

import ctypes

import pytest

import halox
import pyref
from collective import check, raises_everywhere

STAMP = r"""
extern "C" __global__ void stamp3(double* f, long long s0, long long s1, long long s2,
                                  long long cs, int nc, long long o0, long long o1, long long o2,
                                  long long g0, long long g1, long long g2, long long n0,
                                  long long n1, long long n2, long long N0, long long N1,
                                  long long N2, long long salt, long long fid, long long spin) {
  if (spin > 0) {  // a slow kernel: work queued behind it must wait for it
    const long long t0 = clock64();
    while (clock64() - t0 < spin) {
    }
  }
  const long long total = n0 * n1 * n2, vol = N0 * N1 * N2;
  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total;
       t += (long long)gridDim.x * blockDim.x) {
    const long long i = t / (n1 * n2), j = (t / n2) % n1, k = t % n2;
    const long long lin = ((g0 + i) * N1 + (g1 + j)) * N2 + (g2 + k);
    for (int c = 0; c < nc; ++c)
      f[(o0 + i) * s0 + (o1 + j) * s1 + (o2 + k) * s2 + c * cs] =
          (double)(((salt * 8 + fid) * vol + lin) * nc + c + 1);
  }
}
extern "C" __global__ void fill2(double* f, long long s0, long long s1, long long lo0,
                                 long long lo1, long long n0, long long n1, long long cs, int nc,
                                 double v) {
  const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (t >= n0 * n1) return;
  const long long i = t / n1, j = t % n1;
  for (int c = 0; c < nc; ++c) f[(lo0 + i) * s0 + (lo1 + j) * s1 + c * cs] = v;
}
"""


# ---- device memory without an array library ---------------------------------------------------

class UserDeviceArray:
    """Memory from cudaMalloc (through ctypes), exported as a CuPy or Numba array would be."""

    def __init__(self, rt, shape, strides=None):
        self.rt, self.shape = rt, tuple(shape)
        if strides is None:
            strides, s = [], 8
            for n in reversed(self.shape):
                strides.insert(0, s)
                s *= n
        self.strides = tuple(strides)
        self.nbytes = sum((n - 1) * s for n, s in zip(self.shape, self.strides)) + 8
        self.ptr = rt.malloc(self.nbytes)
        self.__cuda_array_interface__ = {"shape": self.shape, "typestr": "<f8", "version": 3,
                                         "data": (self.ptr, False), "strides": self.strides}

    def copy_from_host(self, buf):
        self.rt.copy(self.ptr, _address(buf), self.nbytes)

    def copy_to_host(self, buf):
        self.rt.copy(_address(buf), self.ptr, self.nbytes)

    def free(self):
        if self.ptr:
            self.rt.free(self.ptr)
            self.ptr = None


class DLPackOnly:
    """An object that exports its device memory through DLPack only (as PyTorch and JAX do)."""

    def __init__(self, inner):
        self._inner = inner

    def __dlpack__(self, stream=None):
        return self._inner.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self._inner.__dlpack_device__()


class StreamObject:
    """A stream through the CUDA stream protocol (as CuPy, Numba and PyTorch streams offer)."""

    def __init__(self, handle):
        self._h = handle

    def __cuda_stream__(self):
        return (0, self._h)


def _address(buf):
    return ctypes.addressof(ctypes.c_char.from_buffer(buf))


def layout_of(arr, dom, st, dim):
    """pyref.Layout of a strided device array (DeviceArray or UserDeviceArray) padded by st."""
    b = dom.local_box
    strides = [s // 8 for s in arr.strides[:dim]]
    ncomp = arr.shape[dim] if len(arr.shape) > dim else 1
    cs = arr.strides[dim] // 8 if ncomp > 1 else 1
    return pyref.Layout([l - p for l, p in zip(b.lo, st.lo)], arr.shape[:dim], strides, ncomp, cs)


def model_of(arr, dom, st):
    b = dom.local_box
    return pyref.Model(dom.extents, dom.periodic, st, b.lo, b.hi, layout_of(arr, dom, st, dom.dim))


def upload(arr, values):
    arr.copy_from_host(bytearray(pyref.pack(values)))


def download(arr):
    buf = bytearray(arr.nbytes)
    arr.copy_to_host(buf)
    return pyref.unpack(buf)


def host_field(shape):
    """A host field without NumPy: a shaped memoryview over a bytearray."""
    n = 1
    for x in shape:
        n *= x
    raw = bytearray(8 * n)
    return raw, memoryview(raw).cast("d", list(shape))


# ---- the tests ----------------------------------------------------------------------------

def test_device_array_protocols(comm, rt):
    dom = halox.Cartesian(comm, (9, 7, 6), periodic=True)
    st = halox.Stencil.box(3, 1)
    u = dom.make_field(st, "float64", 2, device=True)
    p = dom.make_field(st, "float32", 3, device=True, component_layout="planar")
    shape = tuple(n + 2 for n in dom.local_box.shape)
    cai = u.__cuda_array_interface__
    ok = (isinstance(u, halox.DeviceArray) and u.shape == shape + (2,) and u.dtype == "float64"
          and cai["shape"] == shape + (2,) and cai["typestr"] == "<f8" and cai["version"] == 3
          and cai["data"] == (u.ptr, False) and cai["strides"] is None
          and u.device == halox.current_device() and u.__dlpack_device__() == (2, u.device))
    check(comm, ok, f"DeviceArray {u!r}: {cai}")
    pc = p.__cuda_array_interface__
    check(comm, pc["typestr"] == "<f4" and pc["strides"] is not None and pc["strides"][-1] > 4,
          f"planar layout: {pc}")
    cap = u.__dlpack__()
    is_valid = ctypes.pythonapi.PyCapsule_IsValid
    is_valid.restype, is_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
    check(comm, is_valid(cap, b"dltensor") == 1, "__dlpack__ gives a 'dltensor' capsule")
    del cap  # unconsumed: its destructor frees what it holds
    values = [float(k) for k in range(u.nbytes // 8)]
    upload(u, values)
    check(comm, download(u) == values, "copy_from_host / copy_to_host round trip")


@pytest.mark.parametrize("case", ["3d-box-mixed", "2d-star-sided"])
def test_device_fields_of_every_kind(comm, rt, case):
    """Owned fields (two layouts), cudaMalloc memory through __cuda_array_interface__, an owned
    field through its own DLPack capsule, and a host field, in one exchange."""
    if case == "3d-box-mixed":
        dom = halox.Cartesian(comm, (7, 6, 5), periodic=(True, False, True))
        st = halox.Stencil.box(3, 1)
    else:
        dom = halox.Cartesian(comm, (11, 8), periodic=(False, True))
        st = halox.Stencil.star(lo=(2, 1), hi=(1, 2))
    shape = tuple(n + a + b for n, a, b in zip(dom.local_box.shape, st.lo, st.hi))
    owned = dom.make_field(st, "float64", 2, device=True)
    planar = dom.make_field(st, "float64", 2, device=True, order="F", component_layout="planar")
    user = UserDeviceArray(rt, shape)
    via_dlpack = dom.make_field(st, device=True)
    raw, host = host_field(shape)
    try:
        ex = halox.make_exchange(dom, st, owned, planar, user, DLPackOnly(via_dlpack), host)
        arrays = [owned, planar, user, via_dlpack]
        models = [model_of(a, dom, st) for a in arrays]
        host_model = pyref.Model(dom.extents, dom.periodic, st, dom.local_box.lo, dom.local_box.hi,
                                 layout_of(host, dom, st, dom.dim))
        for salt in range(3):
            for k, (a, m) in enumerate(zip(arrays, models)):
                upload(a, m.initial(fid=k, salt=salt))
            raw[:] = pyref.pack(host_model.initial(fid=9, salt=salt))
            if salt == 0:
                ex.exchange()
            elif salt == 1:
                h = ex.start()
                while not h.test():
                    pass
                h.wait()
            else:
                s = rt.stream()
                ex.schedule_exchange(s)
                ex.schedule_wait(s)
                rt.synchronize(s)
                rt.destroy_stream(s)
            bad = []
            for k, (a, m) in enumerate(zip(arrays, models)):
                bad += [f"field {k}: {d}" for d in
                        pyref.differences(download(a), m.expected(fid=k, salt=salt))]
            bad += [f"host field: {d}" for d in
                    pyref.differences(pyref.unpack(raw), host_model.expected(fid=9, salt=salt))]
            check(comm, not bad, f"{case} round {salt}: " + "; ".join(bad))
        d = ex.describe()
        check(comm, "device" in d, d)
        ex.close()
    finally:
        user.free()


def stamp(kernel, rt, arr, dom, st, salt, fid, stream, spin):
    import cuda_rtc as c
    lay = layout_of(arr, dom, st, 3)
    b = dom.local_box
    n = b.shape
    blocks = min(1024, (n[0] * n[1] * n[2] + 255) // 256)
    kernel.launch((blocks,), (256,), stream, c.ptr(arr.ptr), *[c.i64(x) for x in lay.strides],
                  c.i64(lay.comp_stride), ctypes.c_int(lay.ncomp), *[c.i64(x) for x in st.lo],
                  *[c.i64(x) for x in b.lo], *[c.i64(x) for x in n],
                  *[c.i64(x) for x in dom.extents], c.i64(salt), c.i64(fid), c.i64(spin))


def test_stream_ordered_with_kernels(comm, rt):
    """A slow kernel writes the owned cells on the user's stream, the exchange is scheduled
    behind it, a copy of the result behind that: no host synchronisation in 12 rounds, each
    round's copy checked. The stream given as an integer and as a __cuda_stream__ object."""
    dom = halox.Cartesian(comm, (10, 9, 8), periodic=(True, True, False))
    st = halox.Stencil.box(3, 1)
    shape = tuple(n + 2 for n in dom.local_box.shape)
    u = dom.make_field(st, "float64", 2, device=True)
    user = UserDeviceArray(rt, shape)
    kernel = rt.kernel(STAMP, "stamp3")
    s = rt.stream()
    rounds = 12
    pinned = [rt.malloc_host(a.nbytes * rounds) for a in (u, user)]
    try:
        for k, a in enumerate((u, user)):  # sentinels where no exchange writes (the walls)
            upload(a, model_of(a, dom, st).initial(fid=k))
        ex = [halox.make_exchange(dom, st, u), halox.make_exchange(dom, st, user)]
        streams = [s, StreamObject(s)]
        for r in range(rounds):
            for k, (a, e) in enumerate(zip((u, user), ex)):
                stamp(kernel, rt, a, dom, st, salt=r, fid=k, stream=s, spin=200000 * (r % 3))
                e.schedule_exchange(streams[k])
                e.schedule_wait(streams[k])
                rt.copy(pinned[k] + r * a.nbytes, a.ptr, a.nbytes, stream=s)
        rt.synchronize(s)
        bad = []
        for k, a in enumerate((u, user)):
            m = model_of(a, dom, st)
            n = a.nbytes // 8
            for r in range(rounds):
                got = list((ctypes.c_double * n).from_address(pinned[k] + r * a.nbytes))
                want = m.expected(fid=k, salt=r, base=m.initial(fid=k, salt=r))
                bad += [f"field {k} round {r}: {d}" for d in pyref.differences(got, want, 2)]
        check(comm, not bad, "; ".join(bad[:6]))
        # exchange() after work on the legacy default stream, with no synchronisation between.
        stamp(kernel, rt, u, dom, st, salt=99, fid=0, stream=0, spin=400000)
        ex[0].exchange()
        m = model_of(u, dom, st)
        check(comm, not pyref.differences(download(u), m.expected(fid=0, salt=99)),
              "exchange() sees the legacy default stream's work")
    finally:
        for p in pinned:
            rt.free_host(p)
        user.free()
        rt.destroy_stream(s)


def test_reverse_sum_matches_host(comm, rt):
    dom = halox.Cartesian(comm, (9, 8), periodic=(True, False))
    st = halox.Stencil.box(2, 1)
    shape = tuple(n + 2 for n in dom.local_box.shape)
    d = dom.make_field(st, "float64", device=True)
    raw, host = host_field(shape)
    m = model_of(d, dom, st)
    values = [v if v != pyref.SENTINEL else float((comm.rank * 37 + k) % 53 + 1)
              for k, v in enumerate(m.initial())]
    for op in ("sum", "min", "max"):
        upload(d, values)
        raw[:] = pyref.pack(values)
        halox.make_reverse_exchange(dom, st, op, d).exchange()
        halox.make_reverse_exchange(dom, st, op, host).exchange()
        got, want = download(d), pyref.unpack(raw)
        check(comm, got == want, f"{op}: " + "; ".join(pyref.differences(got, want)))
        # Not vacuous: the reduction changed owned cells somewhere (a rank's own cells may all
        # win a min or a max).
        changed = comm.allreduce(int(want != values))
        check(comm, changed > 0, f"{op}: the reverse exchange changed no cell on any rank")


def test_boundary_rules_match_host(comm, rt):
    dom = halox.Cartesian(comm, (10, 8), periodic=(True, False))
    st = halox.Stencil.box(lo=(1, 2), hi=(1, 1))
    shape = tuple(n + a + b for n, a, b in zip(dom.local_box.shape, st.lo, st.hi))
    fill = rt.kernel(STAMP, "fill2")
    streams = []

    def device_callback(face):
        import cuda_rtc as c
        streams.append(face.stream)
        a = face.array
        i0, i1 = face.index[0], face.index[1]
        n0, n1 = i0.stop - i0.start, i1.stop - i1.start
        fill.launch(((n0 * n1 + 127) // 128,), (128,), face.stream, c.ptr(a.ptr),
                    c.i64(a.strides[0] // 8), c.i64(a.strides[1] // 8), c.i64(i0.start),
                    c.i64(i1.start), c.i64(n0), c.i64(n1), c.i64(a.strides[2] // 8), ctypes.c_int(2),
                    c.f64(9.5))

    def host_callback(face):
        streams.append(face.stream)
        i0, i1 = face.index[0], face.index[1]
        for i in range(i0.start, i0.stop):
            for j in range(i1.start, i1.stop):
                for c in range(2):
                    face.array[i, j, c] = 9.5

    def rules(cb):
        return (halox.Boundary().reflect((1, "low"), [1.0, -1.0]).callback((1, "high"), cb))

    d = dom.make_field(st, "float64", 2, device=True)
    raw, host = host_field(shape + (2,))
    m = model_of(d, dom, st)
    ex_d = halox.make_exchange(dom, halox.halo(st, d, rules(device_callback)))
    ex_h = halox.make_exchange(dom, halox.halo(st, host, rules(host_callback)))
    for salt in range(2):
        values = m.initial(salt=salt)
        upload(d, values)
        raw[:] = pyref.pack(values)
        if salt == 0:
            ex_d.exchange()
        else:
            s = rt.stream()
            ex_d.schedule_exchange(s)
            ex_d.schedule_wait(s)
            rt.synchronize(s)
            rt.destroy_stream(s)
        ex_h.exchange()
        got, want = download(d), pyref.unpack(raw)
        check(comm, got == want, f"round {salt}: " + "; ".join(pyref.differences(got, want)))
    touches = dom.local_box.hi[1] == dom.extents[1]
    device_streams = [x for x in streams if x is not None]
    check(comm, (len(device_streams) == 2 and len(streams) == 4) if touches else not streams,
          f"callback streams {streams}")


def test_unstructured_device_fields(comm, rt):
    r, p = comm.rank, comm.size
    owned = [r * 100 + k for k in range(12 + r)]
    ghosts = [] if p == 1 else sorted({((r + 1) % p) * 100, ((r + 1) % p) * 100 + 1,
                                       ((r - 1) % p) * 100 + 2})
    pat = halox.Unstructured(comm, owned, ghosts)
    n = pat.local_count
    a = pat.make_field("float64", 2, device=True)
    user = UserDeviceArray(rt, (n,))
    try:
        ex = halox.make_exchange(pat, a, user)
        for salt in range(2):
            va = [pyref.SENTINEL] * (2 * n)
            vu = [pyref.SENTINEL] * n
            for k, gid in enumerate(owned):
                va[2 * k], va[2 * k + 1] = float(gid * 10 + salt), float(-gid)
                vu[k] = float(gid + salt)
            upload(a, va)
            upload(user, vu)
            ex.exchange()
            ga, gu = download(a), download(user)
            want_a, want_u = list(va), list(vu)
            for k, gid in enumerate(ghosts):
                e = len(owned) + k
                want_a[2 * e], want_a[2 * e + 1] = float(gid * 10 + salt), float(-gid)
                want_u[e] = float(gid + salt)
            check(comm, ga == want_a and gu == want_u,
                  "; ".join(pyref.differences(ga, want_a) + pyref.differences(gu, want_u)))
    finally:
        user.free()


def test_device_chain(comm, rt):
    r, p = comm.rank, comm.size
    ch = halox.Chain(comm, "float64", periodic=True, device=True)
    check(comm, ch.device and ch.device_staging in ("host_staged", "nccl"), ch.device_staging)
    sizes = [1 + (3 * q) % 4 for q in range(p)]
    arrays = []
    try:
        for rnd in range(2):
            left = UserDeviceArray(rt, (sizes[r],))
            right = UserDeviceArray(rt, (sizes[r] + 1,))
            arrays += [left, right]
            upload(left, [float(r * 100 + rnd * 10 + k) for k in range(sizes[r])])
            upload(right, [float(-r * 100 - rnd * 10 - k) for k in range(sizes[r] + 1)])
            if rnd == 0:
                got_l, got_r = ch.exchange(left, right)
            else:
                s = rt.stream()
                ch.schedule_exchange(s, left, right)
                got_l, got_r = ch.schedule_wait(s)
                rt.synchronize(s)
                rt.destroy_stream(s)
            lq, rq = (r - 1) % p, (r + 1) % p
            want_l = [float(-lq * 100 - rnd * 10 - k) for k in range(sizes[lq] + 1)]
            want_r = [float(rq * 100 + rnd * 10 + k) for k in range(sizes[rq])]
            ok = (isinstance(got_l, halox.DeviceArray) and download(got_l) == want_l
                  and download(got_r) == want_r)
            check(comm, ok, f"round {rnd}: {got_l!r} {got_r!r}")
    finally:
        for a in arrays:
            a.free()


def test_bad_device_input(comm, rt):
    dom = halox.Cartesian(comm, (8, 6), periodic=True)
    st = halox.Stencil.box(2, 1)
    u = dom.make_field(st, device=True)
    shape = tuple(n + 2 for n in dom.local_box.shape)
    wrong = UserDeviceArray(rt, (shape[0] + (1 if comm.rank == 0 else 0), shape[1]))
    values = [float(k) for k in range(u.nbytes // 8)]
    wrong_values = [float(-k) for k in range(wrong.nbytes // 8)]
    upload(u, values)
    upload(wrong, wrong_values)
    try:
        raises_everywhere(comm, lambda: halox.make_exchange(dom, st, u, wrong), bad_ranks=[0],
                          match="has extents")
        check(comm, download(u) == values and download(wrong) == wrong_values,
              "device memory written by a rejected exchange")
        if halox.device_count() > 1:
            mine = halox.current_device()
            other = (mine + 1) % halox.device_count()
            halox.set_device(other)
            elsewhere = UserDeviceArray(rt, shape)
            halox.set_device(mine)
            raises_everywhere(comm, lambda: halox.make_exchange(dom, st, elsewhere),
                              match="this rank's current GPU")
            halox.set_device(other)
            elsewhere.free()
            halox.set_device(mine)
    finally:
        wrong.free()


def test_staging_option(comm, rt):
    dom = halox.Cartesian(comm, (8, 8, 8), periodic=True)
    st = halox.Stencil.box(3, 1)
    u = dom.make_field(st, device=True)
    ex = halox.make_exchange(dom, st, u, device_staging="host_staged")
    m = model_of(u, dom, st)
    upload(u, m.initial())
    ex.exchange()
    check(comm, not pyref.differences(download(u), m.expected()), "host_staged values")
    if comm.size > 1:
        check(comm, "host_staged" in ex.describe(), ex.describe())
        auto = halox.make_exchange(dom, st, u).describe()
        check(comm, "peer_ipc" in auto or "host_staged" in auto or "gpu_aware" in auto, auto)
