"""Shared by the Python tests: they run under mpirun, every rank running every test in the same
order, so every check is collective (a failure on one rank fails the test on every rank, and no
rank is left waiting in the next test's collectives)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from mpi4py import MPI  # noqa: E402


@pytest.fixture
def comm():
    return MPI.COMM_WORLD
