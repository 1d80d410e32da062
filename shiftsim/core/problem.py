"""A statics problem for the compiled core, and the Python callbacks it makes (couplings, force fields).

The core calls the callbacks with flat float64 memoryviews over its own memory, valid during the call only;
the wrappers here give them to the Python functions as numpy arrays of the right shapes.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .library import core

Apply = Callable[[np.ndarray], np.ndarray]  # q (nq,) -> q with coupled coordinates recomputed
Jacobian = Callable[[np.ndarray], np.ndarray]  # q (nq,) -> dq/du (nq, nf)
# (q, rotation, position, omega, v) -> Q (nq,), K (nq, nq), energy, conservative
Terms = Callable[..., tuple[np.ndarray, np.ndarray, float, bool]]


def _array(view: memoryview, shape: tuple[int, ...]) -> np.ndarray:
    return np.frombuffer(view, dtype=np.float64).reshape(shape)


def problem(model_capsule, nq: int, n_nodes: int, free: np.ndarray, rows: np.ndarray, translation: np.ndarray,
            load_frame: np.ndarray, load_follow: np.ndarray, apply: Apply | None, jacobian: Jacobian | None,
            terms: Terms | None, has_rates: bool, options=None, runaway_sizes: float = 0.0):
    """The capsule of a ``Problem`` (src/core.h): int64 arrays ``free`` (nf,), ``rows`` (m,), ``translation``
    (nf,) 1 where a translation, ``load_frame``, ``load_follow`` (L,); the callbacks (None where the model
    has none); ``options`` a :class:`shiftsim.statics.SolverOptions`, or None for a problem that only closes
    loops (``assemble``: the solver settings are not read)."""
    nf = len(free)

    def apply_back(q, out):
        _array(out, (nq,))[...] = apply(_array(q, (nq,)).copy())

    def jacobian_back(q, out):
        _array(out, (nq, nf))[...] = jacobian(_array(q, (nq,)).copy())

    def terms_back(q, rotation, position, omega, v, q_force, stiffness, extra):
        force, k, energy, conservative = terms(_array(q, (nq,)).copy(), _array(rotation, (n_nodes, 3, 3)).copy(),
                                               _array(position, (n_nodes, 3)).copy(), _array(omega, (nq, 3)).copy(),
                                               _array(v, (nq, 3)).copy())
        _array(q_force, (nq,))[...] += force
        _array(stiffness, (nq, nq))[...] += k
        _array(extra, (2,))[...] = (energy, 1.0 if conservative else 0.0)

    settings = (0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, 0) if options is None else (
        int(options.max_iterations), int(options.full_load_iterations), int(options.max_load_halvings),
        float(options.force_tolerance), float(options.closure_tolerance), float(options.max_step),
        float(options.max_shifted_step), float(runaway_sizes), int(options.seek_stable),
        int(options.finite_difference_stiffness), int(options.load_stepping))
    return core.problem(model_capsule, free, rows, translation, load_frame, load_follow, apply_back if apply else None,
                        jacobian_back if jacobian else None, terms_back if terms else None, int(has_rates), *settings)
