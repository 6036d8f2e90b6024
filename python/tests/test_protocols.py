"""The array and stream protocols on the host: arrays that only speak DLPack or only the buffer
protocol are used in place (zero-copy: the original's halo changes), streams are read from
every convention the array libraries use, and device input is refused clearly where there is
no GPU support."""

import array
import ctypes

import numpy as np
import pytest

import halox
import reference as ref
from collective import check, raises_everywhere


class DLPackOnly:
    """An array that exports nothing but DLPack (as PyTorch and JAX CPU arrays do)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, stream=None):
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_and_buffer_exporters_in_place(comm):
    dom = halox.Cartesian(comm, (30,), periodic=True)
    st = halox.Stencil.star(1, 2)
    n = dom.local_box.shape[0] + 4
    a = np.zeros(n)
    b = array.array("q", [0] * n)  # a buffer-protocol exporter that is not NumPy
    ex = halox.make_exchange(dom, st, DLPackOnly(a), b)
    blk_a = ref.Block(a, dom.local_box.lo, dom.local_box.hi, st.lo)
    blk_b = ref.Block(np.frombuffer(b, dtype=np.int64), dom.local_box.lo, dom.local_box.hi, st.lo)
    for k, blk in enumerate((blk_a, blk_b)):
        ref.fill(blk, dom.extents, dom.periodic, fid=k)
    ex.exchange()
    for k, blk in enumerate((blk_a, blk_b)):
        bad = ref.mismatches(blk, st, dom.extents, dom.periodic, fid=k)
        check(comm, not bad, "; ".join(bad))


class Stream:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class CudaStreamProtocol:
    def __cuda_stream__(self):
        return (0, 0x1234)


def test_stream_conventions():
    h = halox._halox._stream_handle
    assert h(None) == 0
    assert h(0) == 0 and h(1) == 1 and h(2) == 2  # legacy and per-thread default streams
    assert h(0xABCD) == 0xABCD
    assert h(CudaStreamProtocol()) == 0x1234
    assert h(Stream(ptr=0x55)) == 0x55                          # CuPy
    assert h(Stream(cuda_stream=0x66)) == 0x66                  # PyTorch
    assert h(Stream(handle=ctypes.c_void_p(0x77))) == 0x77      # Numba
    assert h(Stream(handle=ctypes.c_void_p(None))) == 0         # Numba's default stream
    with pytest.raises(TypeError, match="a stream is None"):
        h("stream")


class FakeDeviceArray:
    """__cuda_array_interface__ over a host pointer: must be refused, never written."""

    def __init__(self, a):
        self._a = a
        self.__cuda_array_interface__ = {"shape": a.shape, "typestr": "<f8", "version": 3,
                                         "data": (a.ctypes.data, False), "strides": None}


def test_device_input_without_gpu_is_refused(comm):
    if halox.device_count() > 0:
        pytest.skip("a GPU is present: the device tests cover device arrays")
    dom = halox.Cartesian(comm, (8, 8), periodic=True)
    st = halox.Stencil.box(2, 1)
    host = np.full(tuple(n + 2 for n in dom.local_box.shape), 3.0)
    before = host.copy()
    msg = raises_everywhere(comm, lambda: halox.make_exchange(dom, st, FakeDeviceArray(host)))
    check(comm, "CUDA" in msg or "device" in msg, msg)
    check(comm, np.array_equal(host, before), "the host memory behind it was written")
    raises_everywhere(comm, lambda: dom.make_field(st, device=True))
    check(comm, halox.cuda_enabled() or halox.device_count() == 0)


def test_owned_arrays_are_numpy_over_halox_memory(comm):
    dom = halox.Cartesian(comm, (6, 5), periodic=True)
    st = halox.Stencil.box(2, 1)
    u = dom.make_field(st, "float32", 2)
    check(comm, isinstance(u, np.ndarray) and isinstance(u.base, halox._halox._Memory))
    check(comm, u.shape == tuple(n + 2 for n in dom.local_box.shape) + (2,) and u.flags.writeable)
    check(comm, not np.any(u), "zeroed")
    v = u.view()  # a view is another array over the same memory: wrapped, still exchanged
    ex = halox.make_exchange(dom, st, v)
    blk = ref.Block(u, dom.local_box.lo, dom.local_box.hi, st.lo)
    ref.fill(blk, dom.extents, dom.periodic)
    ex.exchange()
    bad = ref.mismatches(blk, st, dom.extents, dom.periodic)
    check(comm, not bad, "; ".join(bad))
    del u, v  # the exchange keeps the memory alive
    ex.exchange()
    check(comm, ex.fields[0].shape[-1] == 2)


def test_none_is_comm_world(comm):
    dom = halox.Cartesian(None, (8, 8), periodic=True)
    check(comm, dom.size == comm.size and dom.rank == comm.rank)
    sub = comm.Split(comm.rank % 2, comm.rank)
    part = halox.Cartesian(sub, (4, 4))
    check(comm, part.size == sub.size and part.rank == sub.rank, "a split communicator")
    with pytest.raises(TypeError, match="mpi4py communicator"):
        halox.Cartesian(42, (4, 4))
    sub.Free()
