"""Generalized forces, their tangent stiffness and the potential energy, for batches of configurations.

Everything is world-aligned and batched over a leading dimension B. For a
coordinate k with twist (omega_k, v_k) (see ``kinematics.State``), a point p
moved by k has ``dp/dq_k = omega_k x p + v_k`` and, for two coordinates j, k
that both move p, ``d2p/dq_j dq_k = omega_s x (omega_d x p + v_d)`` where s is
the one nearer the root and d the other. All stiffness terms below follow from
these two facts. ``stiffness[b, k, j] = dQ_k/dq_j`` (row: force component).

Every term is computed by the compiled core (``shiftsim.core``, core/src/forces.c); this module wraps it
for batches of states (``kinematics.State``) and for the Python callers (joint loads, force fields).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .core.layout import DISTANCE_TYPES, compiled
from .core.library import core
from .kinematics import State
from .model import Model


@dataclass
class AppliedLoad:
    """A force and torque at a frame, world-fixed or following the frame (``follow``).

    ``force``/``torque`` are (B, 3): world components for world-fixed loads,
    frame components for following loads.
    """

    frame: int
    force: np.ndarray
    torque: np.ndarray
    follow: bool


@dataclass
class ForceTerms:
    """Q (B, nq), stiffness dQ/dq (B, nq, nq), potential energy (B,) and whether it is exact (conservative)."""

    Q: np.ndarray
    stiffness: np.ndarray
    energy: np.ndarray
    conservative: bool


class ForceField(Protocol):
    """Forces that depend on the configuration and are not part of the model (ground contacts, say).

    The solver adds ``terms`` to the model's own force terms at every evaluation (they are not
    scaled by the load factor: they are supports, not loads); joint loads take ``point_forces``
    as external forces on the bodies.
    """

    def terms(self, model: Model, s: State) -> ForceTerms:
        """Generalized force (B, nq), its stiffness dQ/dq (B, nq, nq) and energy (B,) at the states ``s``."""

    def point_forces(self, model: Model, s: State) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """(node, point (B, 3), force (B, 3)) world-axes forces acting on nodes, for joint loads."""


_INTEGER_ARRAYS = ("point_node", "frames", "follow")


def _terms(model: Model, which: int, s: State, **arrays) -> ForceTerms:
    """One of the model's own force terms at the states ``s`` by the compiled core (``terms`` in core/src/api.c):
    which 0 gravity and world forces, 1 joint springs, 2 pair springs, 3 torques and following loads."""
    batch = s.q.shape[0]
    q_force, stiffness, energy = np.zeros((batch, model.nq)), np.zeros((batch, model.nq, model.nq)), np.zeros(batch)
    given = {name: np.ascontiguousarray(value, dtype=np.int64 if name in _INTEGER_ARRAYS else float)
             for name, value in arrays.items()}
    names = ("gravity", "point_node", "point", "force", "frames", "forces", "torques", "follow")
    core.terms(compiled(model), which, np.ascontiguousarray(s.q, dtype=float), *s.arrays,
               *(given.get(name) for name in names), q_force, stiffness, energy)
    return ForceTerms(q_force, stiffness, energy, True)


def point_hessian(model: Model, s: State, node: int, jv: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """direction . d2p/dq_j dq_k (B, nq, nq) for a point on ``node`` with Jacobian ``jv`` (B, nq, 3) and
    ``direction`` (B, 3) (compiled core).

    For j nearer the root than (or equal to) k, both moving the point, d2p/dq_j dq_k = omega_j x Jv_k: kept where
    the point lies on j's own axis (Jv_j = 0 there, yet j turns k's motion)."""
    out = np.zeros((s.q.shape[0], model.nq, model.nq))
    core.point_hessian(compiled(model), *s.arrays, int(node), np.ascontiguousarray(jv, dtype=float),
                       np.ascontiguousarray(direction, dtype=float), out)
    return out


def gravity_and_world_forces(model: Model, s: State, gravity: np.ndarray,
                             point_forces: list[tuple[int, np.ndarray, np.ndarray]]) -> ForceTerms:
    """Constant world forces: gravity (B, 3) on every centre of mass plus ``(node, point (B,3), force (B,3))`` items.

    Aggregated per node as F = sum f and P = sum p f^T and summed over subtrees (see core/src/forces.c)."""
    batch = s.q.shape[0]
    nodes = np.array([node for node, _, _ in point_forces], dtype=np.int64)
    points = np.zeros((batch, len(point_forces), 3))
    forces = np.zeros((batch, len(point_forces), 3))
    for i, (_, point, force) in enumerate(point_forces):
        points[:, i], forces[:, i] = point, force
    gravity = np.broadcast_to(np.asarray(gravity, float), (batch, 3))
    return _terms(model, 0, s, gravity=gravity, point_node=nodes, point=points, force=forces)


def joint_springs(model: Model, q: np.ndarray) -> ForceTerms:
    """Joint-level stiffness arrays and joint spring restraints: Q = -f(q), at q (B, nq)."""
    q = np.ascontiguousarray(q, dtype=float)
    return _terms(model, 1, State(q, None, None, None, None))


def pair_springs(model: Model, s: State) -> ForceTerms:
    """Body-frame-pair springs: Q = -f(x) dx/dq (the child frame is pulled toward the parent frame when f > 0)."""
    return _terms(model, 2, s)


def rate_forces(model: Model, rates: np.ndarray) -> np.ndarray:
    """Dampers and friction at coordinate rates (B, nq): Q = -f(rate), constant within a step."""
    q_force = np.zeros_like(rates)
    laws = model.joint_dampers
    if len(laws.coordinates):  # the solver's own polynomial law (core/src/laws.c) at every (case, law)
        x = np.ascontiguousarray(rates[:, laws.coordinates]).reshape(-1)
        coefficients = np.ascontiguousarray(np.tile(laws.coefficients, (len(rates), 1)))
        f, df, energy = np.empty_like(x), np.empty_like(x), np.empty_like(x)
        core.polynomials(coefficients, x, f, df, energy)
        np.add.at(q_force, (slice(None), laws.coordinates), -f.reshape(len(rates), -1))
    for r in model.joint_restraints:
        if r.kind in ("damper", "friction"):
            q_force[:, r.coordinate] -= r.law.force(rates[:, r.coordinate])
    return q_force


def frame_point(model: Model, s: State, frame: int) -> tuple[np.ndarray, np.ndarray]:
    """World rotation (B,3,3) and origin (B,3) of a frame."""
    node, offset = model.frame_node[frame], model.frame_offset[frame]
    rotation = s.rotation[:, node] @ offset[:3, :3]
    return rotation, np.einsum("bij,j->bi", s.rotation[:, node], offset[:3, 3]) + s.position[:, node]


def pair_distance(model: Model, s: State, r) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distance x (B,), dx/dq (B, nq) and d2x/dq2 (B, nq, nq) of a pair restraint: euclidean, or along an axis
    of the parent frame (``Tx``, ``Ty``, ``Tz``)."""
    batch = s.q.shape[0]
    x, grad, hess = np.zeros(batch), np.zeros((batch, model.nq)), np.zeros((batch, model.nq, model.nq))
    core.pair_distance(compiled(model), *s.arrays, int(r.parent_frame), int(r.child_frame),
                       DISTANCE_TYPES[r.distance_type], x, grad, hess)
    return x, grad, hess


def applied_loads(model: Model, s: State,
                  loads: list[AppliedLoad]) -> tuple[list[tuple[int, np.ndarray, np.ndarray]], ForceTerms]:
    """Split loads: world-fixed forces go to the aggregated constant forces (returned as point forces);
    torques and following loads are evaluated here (not conservative)."""
    point_forces = []
    for load in loads:
        if not load.follow and np.any(load.force):
            point_forces.append((int(model.frame_node[load.frame]), frame_point(model, s, load.frame)[1], load.force))
    batch = s.q.shape[0]
    forces = np.zeros((batch, len(loads), 3))
    torques = np.zeros((batch, len(loads), 3))
    for i, load in enumerate(loads):
        forces[:, i], torques[:, i] = load.force, load.torque
    terms = _terms(model, 3, s, frames=[l.frame for l in loads], forces=forces, torques=torques,
                   follow=[l.follow for l in loads])
    # the core's rule: torques, and following forces, have no potential
    terms.conservative = not any(np.any(l.torque) or (l.follow and np.any(l.force)) for l in loads)
    return point_forces, terms
