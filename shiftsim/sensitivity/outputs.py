"""Outputs of an equilibrium that have sensitivities, and their derivatives with respect to the unknowns
(u, lambda) of the bordered system and, explicitly, to the parameters.

=========  ==================================  ==========================================================
kind       name                                what
=========  ==================================  ==========================================================
``joint``  ``<coordinate>``                    equilibrium joint value (rad or m); prescribed ones do not move
``frame``  ``<body>:<frame>.x|y|z``            world position of a frame's origin (m)
``pin``    ``<closing joint>.fx|fy|fz|mx|my|mz``  the loop-closing joint's multipliers: the wrench on its
                                               child side at the pin, world axes (N, N m)
``wrench`` ``<tree joint>.fx|fy|fz|mx|my|mz``  a tree joint's wrench on its child side, world axes, moment
                                               about the child-side joint frame (``Solution.joint_loads``)
``effort`` ``<coordinate>.effort``             what a prescribed (held or set) coordinate's actuator and
                                               restraints exert on the child (N or N m), as
                                               ``Solution.joint_loads[...].effort``
``wrench_  ``<tree joint>.wrench_joint.fx|…|mz``  the same wrench in the child-side joint frame's axes, which
joint``                                        turn with the configuration (results.json's ``wrench_joint``)
=========  ==================================  ==========================================================

A pin component on a redundant closure row (a planar loop's out-of-plane rows) is statically indeterminate:
the solver reports 0 and its derivative is reported as not determined.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.layout import compiled
from ..core.library import check_names, core
from ..core.library import threads as core_threads
from ..model import Model
from . import wrenches
from .implicit import Equilibrium
from .names import choose
from .parameters import AXES, Parameter, _gravities, _load_arrays, _motion_arrays, _per_case, parameter_codes

KINDS = ("joint", "frame", "pin", "wrench", "effort", "wrench_joint")
"""The output kinds, in the order the compiled core codes them (src/fields.h)."""
check_names("OUTPUT_KINDS", KINDS)
PIN_FIELDS = ("fx", "fy", "fz", "mx", "my", "mz")


@dataclass(frozen=True)
class Output:
    """One scalar output: ``name``, ``kind`` (:data:`KINDS`), ``target`` (coordinate, frame or closure index),
    ``component`` (axis or wrench component)."""

    name: str
    kind: str
    target: int
    component: int


def catalogue(model: Model, free_coordinates) -> list[Output]:
    """Every output of the model with these free coordinates (the others are prescribed and have an effort; made
    once per model and free set)."""
    free = frozenset(int(k) for k in free_coordinates)
    key = ("sensitivity outputs", free)
    if key not in model.cache:
        model.cache[key] = tuple(_catalogue(model, free))
    return list(model.cache[key])


def _catalogue(model: Model, free: frozenset[int]) -> list[Output]:
    out = [Output(name, "joint", k, 0) for k, name in enumerate(model.coordinate_names)]
    out += [Output(f"{name}.{a}", "frame", f, i) for f, name in enumerate(model.frame_names) for i, a in enumerate(AXES)]
    out += [Output(f"{model.joints[c.joint].name}.{w}", "pin", k, i) for k, c in enumerate(model.closures)
            for i, w in enumerate(PIN_FIELDS)]
    out += [Output(f"{j.name}.{w}", "wrench", i, c) for i, j in enumerate(model.joints) if j.in_tree
            for c, w in enumerate(PIN_FIELDS)]
    out += [Output(f"{name}.effort", "effort", k, 0) for k, name in enumerate(model.coordinate_names) if k not in free]
    out += [Output(f"{j.name}.wrench_joint.{w}", "wrench_joint", i, c) for i, j in enumerate(model.joints) if j.in_tree
            for c, w in enumerate(PIN_FIELDS)]
    return out


def select(outputs: list, wanted, where: str = "of", kinds: tuple[str, ...] = KINDS) -> list:
    """The outputs named in ``wanted``: exact names or ``kinds``."""
    return choose(outputs, list(wanted or ()), kinds, "output", where)


def linearization(eq: Equilibrium, outputs: list[Output], parameters: list[Parameter], force_partial: np.ndarray,
                  world_partials: tuple | None = None) -> tuple[np.ndarray, np.ndarray, list[str | None], np.ndarray]:
    """C (Y, nf + m) = dy/d(u, lambda), D (Y, P) = dy/dp explicit, per output a reason it has no derivative (None
    where it has one), and the outputs' values (Y,). ``force_partial`` is dQ/dp (nq, P) over all coordinates;
    ``world_partials`` the ground's world force partials as :func:`.ground.equilibrium_partials` gives them
    (None: computed here when a wrench needs them)."""
    value, c, explicit = output_rows(eq, outputs, parameters, force_partial,
                                     np.concatenate([eq.free, eq.model.nq + eq.rows]), world_partials)
    independent = set(eq.rows.tolist()) if any(o.kind == "pin" for o in outputs) else set()
    reasons: list[str | None] = [
        "not determined: a redundant closure row (statically indeterminate; reported as 0)"
        if o.kind == "pin" and 6 * o.target + o.component not in independent else None for o in outputs]
    return c, explicit, reasons, value


def output_rows(eq: Equilibrium, outputs: list[Output], parameters: list[Parameter], force_partial: np.ndarray,
                columns: np.ndarray | None = None, world_partials: tuple | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The outputs' values (Y,), their rows dy/d(q, lambda) (Y, C) over ``columns`` (C,) of the nq coordinates and then
    the 6 n_closures closure rows (None: all of them), and their explicit partial derivatives dy/dp (Y, P),
    configuration and multipliers fixed: the compiled core's ``output_partials`` (src/output_partials.c) at the
    equilibrium (:func:`output_rows_batch`). An effort's rows are the equilibrium's residual, stiffness and
    ``force_partial`` dQ/dp (nq, P); a wrench with the ground below it takes the ground's forces and their
    derivatives from :func:`.wrenches.ground_forces` (``world_partials`` as :func:`linearization`)."""
    has_wrench = any(o.kind in ("wrench", "wrench_joint") for o in outputs)
    ground = wrenches.ground_forces(eq, parameters, world_partials) if has_wrench else None
    value, state, explicit = output_rows_batch(
        eq.model, eq.q[None], eq.closure_multipliers[None], eq.gravity, eq.loads, parameters, outputs,
        eq.residual[None], eq.hessian[None], np.asarray(force_partial, dtype=float)[None],
        None if ground is None else tuple(a[None] for a in ground), columns)
    return value[0], state[0], explicit[0]


def output_rows_batch(model: Model, q: np.ndarray, multipliers: np.ndarray, gravity: np.ndarray, loads: tuple,
                      parameters: list[Parameter], outputs: list[Output], residual: np.ndarray, hessian: np.ndarray,
                      force_partial: np.ndarray, ground: tuple | None = None, columns: np.ndarray | None = None,
                      threads: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`output_rows` at B configurations ``q`` (B, nq) with ``multipliers`` (B, 6 n_closures), ``gravity`` (3,)
    or (B, 3) m/s^2, the same ``loads`` (``statics.Load``), parameters and outputs, each case's ``residual`` (B, nq),
    ``hessian`` (B, nq, nq) = -d(Q + G^T lambda)/dq and ``force_partial`` (B, nq, P) (the efforts' rows), and
    ``ground`` the ground's point forces per case as :func:`.wrenches.ground_forces` gives them with a leading batch
    axis (None: none), and the ``columns`` of the rows as :func:`output_rows`, over the core's threads as
    ``solve_batch``: values (B, Y), rows (B, Y, C), explicit partials (B, Y, P)."""
    q = np.ascontiguousarray(q, dtype=float).reshape(-1, model.nq)
    batch, n_p, n_y = len(q), len(parameters), len(outputs)
    columns = np.arange(model.nq + 6 * len(model.closures)) if columns is None else columns
    if ground is None:
        ground = (np.zeros((batch, 0), np.int64), np.zeros((batch, 0, 9)), np.zeros((batch, 0, model.nq, 6)),
                  np.zeros((batch, 0, 6, n_p)))
    start, motion = _motion_arrays(model)
    frames, follow, force, torque, factor = _load_arrays(model, loads)
    value, state, explicit = np.empty((batch, n_y)), np.empty((batch, n_y, len(columns))), np.empty((batch, n_y, n_p))
    core.output_partials(
        compiled(model), q, np.ascontiguousarray(multipliers, dtype=float).reshape(batch, -1),
        _gravities(gravity, batch), frames, _per_case(force, batch), _per_case(torque, batch),
        _per_case(factor, batch).reshape(batch, len(loads)), follow, parameter_codes(model, loads, parameters), start,
        motion, *(np.ascontiguousarray(a) for a in ground), np.ascontiguousarray(residual, dtype=float),
        np.ascontiguousarray(hessian, dtype=float), np.ascontiguousarray(force_partial, dtype=float),
        output_codes(model, outputs), np.ascontiguousarray(columns, dtype=np.int64), value, state, explicit,
        1 if batch == 1 else core_threads() if threads is None else int(threads))
    return value, state, explicit


def output_codes(model: Model, outputs: list[Output]) -> np.ndarray:
    """The outputs as the core's rows (Y, 4) int64 (kind, target, component, 0; src/output_partials.c), resolved once
    per model and output names and kept on the model."""
    key = ("output codes", tuple(o.name for o in outputs))
    codes = model.cache.get(key)
    if codes is None:
        codes = np.array([(KINDS.index(o.kind), o.target, o.component, 0) for o in outputs],
                         dtype=np.int64).reshape(len(outputs), 4)
        codes.flags.writeable = False
        model.cache[key] = codes
    return codes
