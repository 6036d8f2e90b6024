"""The installed package (ctest python_install): imported from the prefix given, one checked
exchange of a periodic 2-D field."""
import os
import sys

import numpy as np
from mpi4py import MPI

import halox

prefix = os.path.realpath(sys.argv[1])
assert os.path.realpath(halox.__file__).startswith(prefix), halox.__file__
comm = MPI.COMM_WORLD
dom = halox.Cartesian(comm, (10, 7), periodic=True)
st = halox.Stencil.box(2, 1)
u = dom.make_field(st)
b = dom.local_box
g = np.indices(b.shape)
u[halox.owned_slices(dom, st)] = (g[0] + b.lo[0]) * 100 + g[1] + b.lo[1]
halox.make_exchange(dom, st, u).exchange()
o = halox.origin(dom, st)
a = np.indices(u.shape)
want = np.mod(a[0] + o[0], 10) * 100 + np.mod(a[1] + o[1], 7)
ok = comm.allreduce(bool(np.array_equal(u, want)), op=MPI.LAND)
if comm.rank == 0:
    print(f"installed halox from {os.path.dirname(halox.__file__)}: exchange {'verified' if ok else 'WRONG'}")
sys.exit(0 if ok else 1)
