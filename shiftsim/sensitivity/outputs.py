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
=========  ==================================  ==========================================================

A pin component on a redundant closure row (a planar loop's out-of-plane rows) is statically indeterminate:
the solver reports 0 and its derivative is reported as not determined.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kinematics import point_jacobian
from ..model import Model
from . import wrenches
from .names import choose
from .implicit import Equilibrium
from .parameters import AXES, FrameMotion, Parameter, frame_motions

KINDS = ("joint", "frame", "pin", "wrench", "effort")
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
    return out


def select(outputs: list, wanted, where: str = "of", kinds: tuple[str, ...] = KINDS) -> list:
    """The outputs named in ``wanted``: exact names or ``kinds``."""
    return choose(outputs, list(wanted or ()), kinds, "output", where)


def value(eq: Equilibrium, o: Output) -> float:
    """The output's value at the equilibrium."""
    model, s = eq.model, eq.state
    if o.kind == "joint":
        return float(eq.q[o.target])
    if o.kind == "frame":
        node, offset = model.frame_node[o.target], model.frame_offset[o.target]
        return float((s.rotation[0, node] @ offset[:3, 3] + s.position[0, node])[o.component])
    if o.kind == "pin":
        row = 6 * o.target + o.component
        hit = np.flatnonzero(eq.rows == row)
        return float(eq.multipliers[hit[0]]) if len(hit) else 0.0
    if o.kind == "wrench":
        multipliers = np.zeros(6 * len(model.closures))
        multipliers[eq.rows] = eq.multipliers
        return float(wrenches.linearization(eq, o.target, multipliers, [], {})[0][o.component])
    return float(-eq.residual[o.target])


def linearization(eq: Equilibrium, outputs: list[Output], parameters: list[Parameter],
                  force_partial: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str | None]]:
    """C (Y, nf + m) = dy/d(u, lambda), D (Y, P) = dy/dp explicit, and per output a reason it has no derivative
    (None where it has one). ``force_partial`` is dQ/dp (nq, P) over all coordinates."""
    model, s, free = eq.model, eq.state, eq.free
    nf, m = len(free), len(eq.rows)
    c, d = np.zeros((len(outputs), nf + m)), np.zeros((len(outputs), len(parameters)))
    reasons: list[str | None] = [None] * len(outputs)
    position = {k: i for i, k in enumerate(free.tolist())}
    motions = frame_motions(model) if any(p.kind == "frame" for p in parameters) else {}
    multipliers = np.zeros(6 * len(model.closures))
    multipliers[eq.rows] = eq.multipliers
    wrench_terms: dict[int, tuple] = {}
    for i, o in enumerate(outputs):
        if o.kind == "joint":
            if o.target in position:
                c[i, position[o.target]] = 1.0
        elif o.kind == "frame":
            node, offset = model.frame_node[o.target], model.frame_offset[o.target]
            point = s.rotation[0, node] @ offset[:3, 3] + s.position[0, node]
            c[i, :nf] = point_jacobian(model, s, node, point[None])[0][free, o.component]
            for j, p in enumerate(parameters):
                if p.kind == "frame":
                    d[i, j] = _frame_shift(model, s, p, motions.get(p.target), o.target)[o.component]
        elif o.kind == "pin":
            hit = np.flatnonzero(eq.rows == 6 * o.target + o.component)
            if len(hit):
                c[i, nf + hit[0]] = 1.0
            else:
                reasons[i] = "not determined: a redundant closure row (statically indeterminate; reported as 0)"
        elif o.kind == "wrench":
            reasons[i] = wrenches.supported(model, o.target)
            if reasons[i] is None:
                if o.target not in wrench_terms:
                    wrench_terms[o.target] = wrenches.linearization(eq, o.target, multipliers, parameters, motions)
                _, d_q, d_lam, d_p = wrench_terms[o.target]
                c[i, :nf], c[i, nf:], d[i] = d_q[o.component, free], d_lam[o.component, eq.rows], d_p[o.component]
        else:  # effort = -(Q_k + G_k^T lambda): d = H_k du - G_k^T dlambda - dQ_k/dp
            c[i, :nf] = eq.hessian[o.target, free]
            c[i, nf:] = -eq.closure_jacobian[:, o.target]
            d[i] = -force_partial[o.target]
    return c, d, reasons



def _frame_shift(model, s, p: Parameter, motion: FrameMotion | None, frame: int) -> np.ndarray:
    """World shift (3,) of ``frame``'s origin per unit of the frame parameter ``p``, configuration fixed: its own
    offset, plus the subtrees the parameter's frame translates."""
    step = s.rotation[0, model.frame_node[p.target]][:, p.component]
    shift = step.copy() if frame == p.target else np.zeros(3)
    for root, sign, _ in motion.subtrees if motion else ():
        if model.subtree[root, model.frame_node[frame]]:
            shift += sign * step
    return shift
