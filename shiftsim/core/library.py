"""The compiled core's shared library and the signatures of its entry points (ctypes).

The C sources in ``src/`` are built into the extension ``shiftsim.core._core`` when the package is installed
(``pip install``; see pyproject.toml): loading it costs about a millisecond and nothing is compiled at run time.
Arrays cross as addresses of C-contiguous float64 / int64 / uint8 buffers (:func:`address`).
"""

from __future__ import annotations

import ctypes
import os

import numpy as np

from ..errors import ShiftsimError

_VOID, _I64 = ctypes.c_void_p, ctypes.c_int64


def _load() -> ctypes.CDLL:
    try:
        from . import _core
    except ImportError as error:  # pragma: no cover - an install without its build step
        raise ShiftsimError("shiftsim's compiled core is not built: reinstall the package "
                            "(`pip install -e .` or `make test` builds it; it needs a C compiler)") from error
    return ctypes.CDLL(_core.__file__)


lib = _load()
_SIGNATURES = {
    "shiftsim_state": [_VOID, _I64, _VOID, _VOID, _VOID, _VOID, _VOID, _I64],
    "shiftsim_forward": [_VOID, _I64, _VOID, _VOID, _VOID, _I64],
    "shiftsim_closures": [_VOID, _I64, _VOID, _VOID, _VOID, _VOID, _VOID, _VOID],
    "shiftsim_point_hessian": [_VOID, _I64, _VOID, _VOID, _VOID, _VOID, _I64, _VOID, _VOID, _VOID],
    "shiftsim_terms": [_VOID, _I64, _I64, _VOID, _VOID, _VOID, _VOID, _VOID, _VOID, _I64, _VOID, _VOID, _VOID,
                       _VOID, _I64, _VOID, _VOID, _VOID, _VOID, _VOID, _VOID, _VOID],
    "shiftsim_pair_distance": [_VOID, _I64, _VOID, _VOID, _VOID, _VOID, _I64, _I64, _I64, _VOID, _VOID, _VOID],
    "shiftsim_polynomials": [_I64, _I64, _VOID, _VOID, _VOID, _VOID, _VOID],
    "shiftsim_solve": [_VOID, _VOID, _I64, _VOID, _VOID, _VOID, _VOID, _VOID, _VOID, _I64, _VOID, _VOID, _VOID,
                       _VOID, _VOID, _VOID, _I64],
    "evaluate_case": [_VOID, _VOID, _VOID, _VOID, _VOID, _VOID, _VOID, _VOID, _VOID, _VOID, _VOID, _VOID],
}
for _name, _arguments in _SIGNATURES.items():
    getattr(lib, _name).argtypes = _arguments
    getattr(lib, _name).restype = None


def address(array: np.ndarray | None) -> int | None:
    """The data address of a C-contiguous array (None for None)."""
    if array is None:
        return None
    return array.__array_interface__["data"][0]


def threads() -> int:
    """Threads for batches: every core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1
