"""shiftsim: a quasi-static multibody simulator.

Read a machine description, compile it into a tree-plus-loops model, solve
static equilibrium, report deflections and joint loads, check collisions;
run scenarios (``run_scenario``) and read their results (``load_results``).

Importing the package is cheap: the public API below is loaded on first use
(module ``__getattr__``), so ``import shiftsim`` imports neither scipy nor
matplotlib, and it leaves the process's environment alone. shiftsim works on
many small matrices, where multi-threaded BLAS only adds overhead; the command
line and :func:`run_scenario` limit BLAS to one thread around their own work
(``threadpoolctl``, see :func:`shiftsim.threads.single_blas_thread`), and
parallel sweeps use processes instead.
"""

from __future__ import annotations

import importlib
from typing import Any

_API = {
    "InputError": "errors", "ModelError": "errors", "ScenarioError": "errors", "ShiftsimError": "errors",
    "SolveError": "errors",
    "read_model": "formats",
    "assemble": "kinematics", "forward": "kinematics", "frame_jacobian": "kinematics",
    "load_model": "loading",
    "Model": "model", "compile_model": "model",
    "Load": "statics", "SolverOptions": "statics", "solve": "statics", "solve_batch": "statics",
    "sensitivity": "sensitivity",
    "RunResults": "output.run_results", "load_results": "output.run_results", "run_scenario": "output.run_results",
}

__all__ = sorted([*_API, "__version__"])


def _version() -> str:
    """The installed distribution's version (written once, in pyproject.toml)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("shiftsim")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value = _version()
    elif name in _API:
        value = getattr(importlib.import_module(f"{__name__}.{_API[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    """The public API only (submodules imported along the way and this module's helpers are left out)."""
    return list(__all__)
