"""A statics problem for the compiled core, and the Python callbacks it makes (couplings, force fields).

The core calls the callbacks with flat float64 memoryviews over its own memory, valid during the call only;
the wrappers here give them to the Python functions as numpy arrays of the right shapes.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .library import check_names, core

Apply = Callable[[np.ndarray], np.ndarray]  # q (nq,) -> q with coupled coordinates recomputed
Jacobian = Callable[[np.ndarray], np.ndarray]  # q (nq,) -> dq/du (nq, nf)
# (q, rotation, position, omega, v) -> Q (nq,), K (nq, nq), energy, conservative
Terms = Callable[..., tuple[np.ndarray, np.ndarray, float, bool]]


SETTINGS = {  # the core's settings (src/fields.h) from a shiftsim.statics.SolverOptions and the runaway distance
    "max_iterations": lambda o, runaway: int(o.max_iterations),
    "full_load_iterations": lambda o, runaway: int(o.full_load_iterations),
    "max_load_halvings": lambda o, runaway: int(o.max_load_halvings),
    "force_tolerance": lambda o, runaway: float(o.force_tolerance),
    "closure_tolerance": lambda o, runaway: float(o.closure_tolerance),
    "max_step": lambda o, runaway: float(o.max_step),
    "max_shifted_step": lambda o, runaway: float(o.max_shifted_step),
    "runaway_sizes": lambda o, runaway: float(runaway),
    "seek_stable": lambda o, runaway: int(o.seek_stable),
    "finite_difference": lambda o, runaway: int(o.finite_difference_stiffness),
    "load_stepping": lambda o, runaway: int(o.load_stepping),
    "structured_from": lambda o, runaway: int(o.structured_from),
}
RESULT_FLAGS = ("converged", "iterations", "residual", "stability", "neutral_count", "size", "force_floor")
"""A solved case's row of flags (``core.solve``), by index."""
EVALUATION_SCALARS = ("energy", "force_scale", "conservative", "size", "force_floor")
"""An evaluation's scalars (``core.evaluate``), by index."""
VERDICTS = ("stable", "neutral", "unstable")
"""The core's stability codes, by index."""

CHAIN_OUTCOMES = ("plain", "not_closed", "rows_changed", "not_plain", "not_solved", "loads_open")
"""How a step of a continuation chain ended (``_core.solve_chain``, src/chain.c), by code: ``plain`` solved (the chain
goes on from it); ``not_closed`` the loops did not close at its values; ``rows_changed`` other closure rows are
independent there; ``not_plain`` not converged, no equilibrium or neutral; ``not_solved`` after a step that ended the
chain; ``loads_open`` held coordinates share its loop forces in proportions statics cannot tell
(``loads.statically_open``)."""

check_names("SETTINGS_FIELDS", tuple(SETTINGS))
check_names("RESULT_FLAGS", RESULT_FLAGS)
check_names("EVALUATION_SCALARS", EVALUATION_SCALARS)
check_names("VERDICTS", VERDICTS)
check_names("CHAIN_OUTCOMES", CHAIN_OUTCOMES)


def settings(options, runaway_sizes: float = 0.0) -> dict[str, int | float]:
    """The settings record the core's problem takes (names: :data:`SETTINGS`); ``options`` a
    :class:`shiftsim.statics.SolverOptions`, or None (zeros: a problem that only closes loops)."""
    if options is None:
        return {name: 0 for name in SETTINGS}
    return {name: read(options, runaway_sizes) for name, read in SETTINGS.items()}


def _array(view: memoryview, shape: tuple[int, ...]) -> np.ndarray:
    return np.frombuffer(view, dtype=np.float64).reshape(shape)


def problem(model_capsule, nq: int, n_nodes: int, free: np.ndarray, rows: np.ndarray, translation: np.ndarray,
            load_frame: np.ndarray, load_follow: np.ndarray, apply: Apply | None, jacobian: Jacobian | None,
            terms: Terms | None, has_rates: bool, options=None, runaway_sizes: float = 0.0, grounds: tuple = ()):
    """The capsule of a ``Problem`` (src/core.h): int64 arrays ``free`` (nf,), ``rows`` (m,), ``translation``
    (nf,) 1 where a translation, ``load_frame``, ``load_follow`` (L,); the callbacks (None where the model
    has none); ``options`` a :class:`shiftsim.statics.SolverOptions`, or None for a problem that only closes
    loops (``assemble``: the solver settings are not read); ``grounds`` the capsules of force fields the core
    evaluates itself (:func:`shiftsim.core.ground.field`)."""
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

    return core.problem(model_capsule, free, rows, translation, load_frame, load_follow, apply_back if apply else None,
                        jacobian_back if jacobian else None, terms_back if terms else None, int(has_rates),
                        settings(options, runaway_sizes), tuple(grounds))
