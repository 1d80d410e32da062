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

from .errors import InputError, ModelError, ScenarioError, ShiftsimError, SolveError  # noqa: E402
from .formats import read_model  # noqa: E402
from .kinematics import assemble, forward, frame_jacobian  # noqa: E402
from .loading import load_model  # noqa: E402
from .model import Model, compile_model  # noqa: E402
from .statics import Load, SolverOptions, solve, solve_batch  # noqa: E402

__all__ = [
    "InputError", "Load", "Model", "ModelError", "ScenarioError", "ShiftsimError", "SolveError", "SolverOptions",
    "assemble", "compile_model", "forward", "frame_jacobian", "load_model", "read_model", "solve", "solve_batch",
]
