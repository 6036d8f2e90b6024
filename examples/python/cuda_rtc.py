"""A minimal CUDA toolbox over ctypes, for GPU work from Python with no array library: kernels
compiled at run time by NVRTC and launched through the driver API, streams, memory and copies
through the CUDA runtime that halox itself loads. heat2d.py --device uses it where CuPy is not
installed; the device tests use it for their kernels and their user-allocated memory.

    rt = Runtime()                       # needs libcudart and libcuda (the driver)
    k = rt.kernel(SOURCE, "name")        # NVRTC (libnvrtc): PTX for the current device, JIT
    s = rt.stream()                      # a non-blocking stream: an integer handle
    k.launch((gx, gy), (bx,), s, ptr(p), i64(n), f64(x))
    rt.synchronize(s)
"""

import ctypes
import glob
import os

c_void_p, c_int, c_uint, c_size_t = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_size_t


class CudaError(RuntimeError):
    pass


def _load(names, what):
    tried = []
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError as e:
            tried.append(f"{n}: {e}")
    raise CudaError(f"{what} not found; tried " + "; ".join(tried))


def _cuda_lib_dirs():
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    return [os.path.join(r, sub) for r in roots if r for sub in ("lib64", "lib")]


def _candidates(stem):
    names = [f"{stem}.so.13", f"{stem}.so.12", f"{stem}.so"]
    for d in _cuda_lib_dirs():
        names += sorted(glob.glob(os.path.join(d, f"{stem}.so*")), reverse=True)
    return names


def ptr(p):
    """A pointer argument (an integer address, or anything with .ptr or .__cuda_array_interface__)."""
    if hasattr(p, "__cuda_array_interface__"):
        p = p.__cuda_array_interface__["data"][0]
    elif hasattr(p, "ptr"):
        p = p.ptr
    return c_void_p(p)


def i64(x):
    return ctypes.c_longlong(int(x))


def f64(x):
    return ctypes.c_double(float(x))


class Kernel:
    def __init__(self, rt, function):
        self._rt, self._f = rt, function

    def launch(self, grid, block, stream, *args):
        """Launches on `stream` (an integer handle; 0: the legacy default stream)."""
        g = tuple(grid) + (1,) * (3 - len(grid))
        b = tuple(block) + (1,) * (3 - len(block))
        holders = list(args)
        params = (c_void_p * len(holders))(
            *[ctypes.cast(ctypes.pointer(a), c_void_p) for a in holders])
        self._rt._check_driver(self._rt.cuda.cuLaunchKernel(
            self._f, g[0], g[1], g[2], b[0], b[1], b[2], 0, c_void_p(stream), params, None),
            "cuLaunchKernel")


class Runtime:
    def __init__(self):
        self.cudart = _load(_candidates("libcudart"), "the CUDA runtime (libcudart)")
        self.cuda = _load(["libcuda.so.1", "libcuda.so"], "the CUDA driver (libcuda)")
        self._nvrtc = None
        rt, dr = self.cudart, self.cuda
        rt.cudaGetErrorString.restype = ctypes.c_char_p
        for f, args in {
            "cudaMalloc": [ctypes.POINTER(c_void_p), c_size_t],
            "cudaFree": [c_void_p],
            "cudaMallocHost": [ctypes.POINTER(c_void_p), c_size_t],
            "cudaFreeHost": [c_void_p],
            "cudaMemcpy": [c_void_p, c_void_p, c_size_t, c_int],
            "cudaMemcpyAsync": [c_void_p, c_void_p, c_size_t, c_int, c_void_p],
            "cudaMemset": [c_void_p, c_int, c_size_t],
            "cudaStreamCreateWithFlags": [ctypes.POINTER(c_void_p), c_uint],
            "cudaStreamDestroy": [c_void_p],
            "cudaStreamSynchronize": [c_void_p],
            "cudaDeviceSynchronize": [],
            "cudaGetDevice": [ctypes.POINTER(c_int)],
            "cudaDeviceGetAttribute": [ctypes.POINTER(c_int), c_int, c_int],
            "cudaGetDeviceCount": [ctypes.POINTER(c_int)],
        }.items():
            getattr(rt, f).argtypes = args
            getattr(rt, f).restype = c_int
        dr.cuModuleLoadData.argtypes = [ctypes.POINTER(c_void_p), ctypes.c_char_p]
        dr.cuModuleGetFunction.argtypes = [ctypes.POINTER(c_void_p), c_void_p, ctypes.c_char_p]
        dr.cuLaunchKernel.argtypes = [c_void_p] + [c_uint] * 7 + [c_void_p, ctypes.POINTER(c_void_p),
                                                                   ctypes.POINTER(c_void_p)]
        dr.cuGetErrorString.argtypes = [c_int, ctypes.POINTER(ctypes.c_char_p)]
        self._check(rt.cudaFree(None), "cudaFree(0)")  # the device's primary context, current

    @property
    def nvrtc(self):
        """NVRTC, loaded on first use (only kernels need it)."""
        if self._nvrtc is not None:
            return self._nvrtc
        nv = _load(_candidates("libnvrtc"), "NVRTC (libnvrtc)")
        nv.nvrtcCreateProgram.argtypes = [ctypes.POINTER(c_void_p), ctypes.c_char_p,
                                          ctypes.c_char_p, c_int, c_void_p, c_void_p]
        nv.nvrtcCompileProgram.argtypes = [c_void_p, c_int, ctypes.POINTER(ctypes.c_char_p)]
        nv.nvrtcGetProgramLogSize.argtypes = [c_void_p, ctypes.POINTER(c_size_t)]
        nv.nvrtcGetProgramLog.argtypes = [c_void_p, ctypes.c_char_p]
        nv.nvrtcGetPTXSize.argtypes = [c_void_p, ctypes.POINTER(c_size_t)]
        nv.nvrtcGetPTX.argtypes = [c_void_p, ctypes.c_char_p]
        nv.nvrtcDestroyProgram.argtypes = [ctypes.POINTER(c_void_p)]
        self._nvrtc = nv
        return nv

    # ---- checks -------------------------------------------------------------------------
    def _check(self, rc, call):
        if rc != 0:
            raise CudaError(f"{call} failed: {self.cudart.cudaGetErrorString(rc).decode()} ({rc})")

    def _check_driver(self, rc, call):
        if rc != 0:
            s = ctypes.c_char_p()
            self.cuda.cuGetErrorString(rc, ctypes.byref(s))
            raise CudaError(f"{call} failed: {s.value.decode() if s.value else rc}")

    # ---- kernels ------------------------------------------------------------------------
    def kernel(self, source, name, options=("--fmad=false",)):
        """`name` (an extern "C" __global__ function of `source`) compiled for this device."""
        dev = c_int()
        self._check(self.cudart.cudaGetDevice(ctypes.byref(dev)), "cudaGetDevice")
        major, minor = c_int(), c_int()
        self._check(self.cudart.cudaDeviceGetAttribute(ctypes.byref(major), 75, dev), "attribute")
        self._check(self.cudart.cudaDeviceGetAttribute(ctypes.byref(minor), 76, dev), "attribute")
        prog = c_void_p()
        nv = self.nvrtc
        if nv.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), f"{name}.cu".encode(), 0,
                                 None, None):
            raise CudaError("nvrtcCreateProgram failed")
        opts = [f"--gpu-architecture=compute_{major.value}{minor.value}".encode()]
        opts += [o.encode() for o in options]
        rc = nv.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        if rc:
            n = c_size_t()
            nv.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
            log = ctypes.create_string_buffer(n.value)
            nv.nvrtcGetProgramLog(prog, log)
            raise CudaError(f"NVRTC could not compile {name}:\n{log.value.decode()}")
        n = c_size_t()
        nv.nvrtcGetPTXSize(prog, ctypes.byref(n))
        ptx = ctypes.create_string_buffer(n.value)
        nv.nvrtcGetPTX(prog, ptx)
        nv.nvrtcDestroyProgram(ctypes.byref(prog))
        module, function = c_void_p(), c_void_p()
        self._check_driver(self.cuda.cuModuleLoadData(ctypes.byref(module), ptx.raw),
                           "cuModuleLoadData")
        self._check_driver(self.cuda.cuModuleGetFunction(ctypes.byref(function), module,
                                                         name.encode()), "cuModuleGetFunction")
        return Kernel(self, function)

    # ---- streams and memory -------------------------------------------------------------
    def stream(self):
        s = c_void_p()
        self._check(self.cudart.cudaStreamCreateWithFlags(ctypes.byref(s), 1), "cudaStreamCreate")
        return s.value

    def destroy_stream(self, s):
        self._check(self.cudart.cudaStreamDestroy(c_void_p(s)), "cudaStreamDestroy")

    def synchronize(self, s=None):
        if s is None:
            self._check(self.cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize")
        else:
            self._check(self.cudart.cudaStreamSynchronize(c_void_p(s)), "cudaStreamSynchronize")

    def malloc(self, nbytes):
        p = c_void_p()
        self._check(self.cudart.cudaMalloc(ctypes.byref(p), max(1, nbytes)), "cudaMalloc")
        return p.value

    def free(self, p):
        self._check(self.cudart.cudaFree(c_void_p(p)), "cudaFree")

    def malloc_host(self, nbytes):
        """Pinned host memory (copies from it run asynchronously)."""
        p = c_void_p()
        self._check(self.cudart.cudaMallocHost(ctypes.byref(p), max(1, nbytes)), "cudaMallocHost")
        return p.value

    def free_host(self, p):
        self._check(self.cudart.cudaFreeHost(c_void_p(p)), "cudaFreeHost")

    def copy(self, dst, src, nbytes, stream=None):
        """Any direction (cudaMemcpyDefault); on `stream` if given, else blocking."""
        if stream is None:
            self._check(self.cudart.cudaMemcpy(c_void_p(dst), c_void_p(src), nbytes, 4), "cudaMemcpy")
        else:
            self._check(self.cudart.cudaMemcpyAsync(c_void_p(dst), c_void_p(src), nbytes, 4,
                                                    c_void_p(stream)), "cudaMemcpyAsync")

    def device_count(self):
        n = c_int()
        self._check(self.cudart.cudaGetDeviceCount(ctypes.byref(n)), "cudaGetDeviceCount")
        return n.value
