"""Device tests: one GPU per rank of a node (ranks share GPUs where they outnumber them), no
array library (halox's own device fields, memory from cudaMalloc through ctypes, kernels from
NVRTC: examples/python/cuda_rtc.py), no NumPy. Everything skips where no GPU is usable, and the
session then exits 77 (ctest: skipped)."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))  # collective.py
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "python"))  # cuda_rtc.py

from mpi4py import MPI  # noqa: E402

import halox  # noqa: E402

GPUS = halox.device_count()


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    passed = len(reporter.stats.get("passed", [])) if reporter else 0
    if GPUS == 0 and passed == 0 and exitstatus in (0, 5):
        session.exitstatus = 77  # every test skipped: no GPU here


def pytest_collection_modifyitems(config, items):
    if GPUS == 0:
        why = ("halox built without CUDA" if not halox.cuda_enabled() else
               "no usable CUDA device")
        for item in items:
            if str(item.fspath).startswith(HERE):
                item.add_marker(pytest.mark.skip(reason=why))


@pytest.fixture(scope="session")
def comm():
    return MPI.COMM_WORLD


@pytest.fixture(scope="session")
def rt(comm):
    """The rank's GPU made current, and the ctypes CUDA toolbox."""
    import cuda_rtc
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    halox.set_device(local.rank % GPUS)
    return cuda_rtc.Runtime()
