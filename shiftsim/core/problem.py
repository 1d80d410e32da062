"""A statics problem for the compiled core: the ``Problem`` struct of src/core.h, and the Python callbacks.

Couplings and force fields (ground contacts, tyres) are Python objects; the core calls them back through
C function pointers (ctypes) for the models that have them. An exception raised in a callback is kept and
raised again when the core returns (the core sees NaN and stops converging).
"""

from __future__ import annotations

import ctypes
from typing import Callable

import numpy as np

_DOUBLES = ctypes.c_double

CouplingCallback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
FieldCallback = ctypes.CFUNCTYPE(ctypes.c_int, *([ctypes.c_void_p] * 8))


class CProblem(ctypes.Structure):
    """``Problem`` of src/core.h."""

    _fields_ = [("nf", ctypes.c_int64), ("m", ctypes.c_int64), ("n_loads", ctypes.c_int64),
                ("free", ctypes.c_void_p), ("rows", ctypes.c_void_p), ("translation", ctypes.c_void_p),
                ("load_frame", ctypes.c_void_p), ("load_follow", ctypes.c_void_p),
                ("coupling_apply", CouplingCallback), ("coupling_jacobian", CouplingCallback),
                ("field_terms", FieldCallback), ("has_rates", ctypes.c_int64),
                ("max_iterations", ctypes.c_int64), ("full_load_iterations", ctypes.c_int64),
                ("max_load_halvings", ctypes.c_int64), ("force_tolerance", ctypes.c_double),
                ("closure_tolerance", ctypes.c_double), ("max_step", ctypes.c_double),
                ("max_shifted_step", ctypes.c_double), ("runaway_sizes", ctypes.c_double),
                ("seek_stable", ctypes.c_int64),
                ("finite_difference", ctypes.c_int64), ("load_stepping", ctypes.c_int64)]


def view(address: int, shape: tuple[int, ...]) -> np.ndarray:
    """A float64 array over memory the core owns (valid during the callback only)."""
    count = int(np.prod(shape))
    if count == 0:
        return np.zeros(shape)
    return np.frombuffer((_DOUBLES * count).from_address(address), dtype=np.float64).reshape(shape)


class Callbacks:
    """The C function pointers of one problem and the first exception any of them raised."""

    def __init__(self, nq: int, nf: int, n_nodes: int,
                 apply: Callable[[np.ndarray], np.ndarray] | None,
                 jacobian: Callable[[np.ndarray], np.ndarray] | None,
                 terms: Callable[..., tuple[np.ndarray, np.ndarray, float, bool]] | None):
        self.error: BaseException | None = None
        self.apply = CouplingCallback(self._guard(lambda q, out: self._fill(out, (nq,), apply(view(q, (nq,))))))\
            if apply else CouplingCallback()
        self.jacobian = CouplingCallback(self._guard(
            lambda q, out: self._fill(out, (nq, nf), jacobian(view(q, (nq,)).copy())))) if jacobian else CouplingCallback()
        self.terms = FieldCallback(self._guard(lambda *a: self._field(terms, nq, n_nodes, *a))) if terms \
            else FieldCallback()

    @property
    def any(self) -> bool:
        """True when the core will call Python back (then batches run on one thread)."""
        return bool(self.apply) or bool(self.terms)

    def _guard(self, function):
        def call(*arguments) -> int:
            if self.error is not None:
                return 1
            try:
                function(*arguments)
                return 0
            except BaseException as error:  # kept and raised when the core returns
                self.error = error
                return 1
        return call

    @staticmethod
    def _fill(address: int, shape: tuple[int, ...], values: np.ndarray) -> None:
        view(address, shape)[...] = values

    @staticmethod
    def _field(terms, nq, n_nodes, q, rotation, position, omega, v, q_force, stiffness, extra) -> None:
        force, k, energy, conservative = terms(view(q, (nq,)).copy(), view(rotation, (n_nodes, 3, 3)).copy(),
                                               view(position, (n_nodes, 3)).copy(), view(omega, (nq, 3)).copy(),
                                               view(v, (nq, 3)).copy())
        view(q_force, (nq,))[...] += force
        view(stiffness, (nq, nq))[...] += k
        view(extra, (2,))[...] = (energy, 1.0 if conservative else 0.0)

    def raise_error(self) -> None:
        if self.error is not None:
            raise self.error
