"""shiftsim: a quasi-static multibody simulator.

Read a machine description, compile it into a tree-plus-loops model, solve
static equilibrium, report deflections and joint loads, check collisions.

shiftsim works on many small matrices, where multi-threaded BLAS only adds
overhead (a 50x50 eigen-decomposition is 15x slower with threads on two
cores). Unless the environment already says otherwise, importing shiftsim
before numpy keeps BLAS to one thread per process; parallel sweeps use
processes instead.
"""

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

__version__ = "0.1.0"
