"""Generalized forces, their tangent stiffness and the potential energy, for batches of configurations.

Everything is world-aligned and batched over a leading dimension B. For a
coordinate k with twist (omega_k, v_k) (see ``kinematics.State``), a point p
moved by k has ``dp/dq_k = omega_k x p + v_k`` and, for two coordinates j, k
that both move p, ``d2p/dq_j dq_k = omega_s x (omega_d x p + v_d)`` where s is
the one nearer the root and d the other. All stiffness terms below follow from
these two facts. ``stiffness[b, k, j] = dQ_k/dq_j`` (row: force component).

Constant world forces are aggregated per node as ``F = sum f`` and
``P = sum p f^T``, then summed over subtrees, so gravity on n bodies costs
O(n^2) small array operations, not O(n^3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .kinematics import State, closure_poses, point_jacobian
from .model import Model
from .spatial import cross


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


def _pair_tables(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Coordinate pairs (s, d) with s's node an ancestor-or-self of d's node, and the 'before' matrix."""
    cached = model.__dict__.get("_pair_cache")
    if cached is None:
        nodes = model.coordinate_node
        before = model.subtree[nodes][:, nodes]  # before[j, k]: node j is ancestor-or-self of node k
        s_idx, d_idx = np.nonzero(before)
        strictly = before & ~np.eye(model.nq, dtype=bool)
        cached = (s_idx, d_idx, before, strictly)
        object.__setattr__(model, "_pair_cache", cached)
    return cached


def _subtree_matrix(model: Model) -> np.ndarray:
    """subtree as float (n_nodes, n_nodes), cached."""
    cached = model.__dict__.get("_subtree_float_cache")
    if cached is None:
        cached = model.subtree.astype(float)
        object.__setattr__(model, "_subtree_float_cache", cached)
    return cached


def _symmetric_from_upper(model: Model, m: np.ndarray) -> np.ndarray:
    """Symmetric matrix taking m[j, k] where coordinate j is nearer the root than (or equal to) k, zero for
    coordinates on different branches."""
    _, _, before, strictly = _pair_tables(model)
    return np.where(before, m, 0.0) + np.where(strictly.T, np.swapaxes(m, 1, 2), 0.0)


def point_hessian(model: Model, s: State, jv: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """direction . d2p/dq_j dq_k (B, nq, nq) for a point with Jacobian ``jv`` (B, nq, 3) (zero rows: not moved).

    For j nearer the root than (or equal to) k, d2p/dq_j dq_k = omega_j x Jv_k: zero where k does not move the
    point, and kept where the point lies on j's own axis (Jv_j = 0 there, yet j turns k's motion)."""
    m = s.omega @ np.swapaxes(cross(jv, direction[:, None, :]), 1, 2)  # omega_j . (Jv_k x u)
    return _symmetric_from_upper(model, m)


def _torque_stiffness(model: Model, s: State, node: int, torque: np.ndarray) -> np.ndarray:
    """d(omega_k . tau)/dq_j as [k, j]: (omega_j x omega_k) . tau for j strictly nearer the root than k."""
    _, _, _, strictly = _pair_tables(model)
    moves = model.subtree[model.coordinate_node, node]
    axes_cross = cross(s.omega[:, :, None, :], s.omega[:, None, :, :])  # [b, j, k] = omega_j x omega_k
    value = np.einsum("bjki,bi->bkj", axes_cross, torque)  # [b, k, j]
    mask = strictly.T & moves[:, None] & moves[None, :]
    return value * mask


def gravity_and_world_forces(model: Model, s: State, gravity: np.ndarray, point_forces: list[tuple[int, np.ndarray, np.ndarray]]) -> ForceTerms:
    """Constant world forces: gravity on every centre of mass plus ``(node, point (B,3), force (B,3))`` items."""
    batch = s.q.shape[0]
    com = np.einsum("bnij,nj->bni", s.rotation, model.node_com) + s.position
    f = model.node_mass[None, :, None] * gravity[:, None, :]
    force_node = f.copy()
    p_node = com[:, :, :, None] * f[:, :, None, :]
    for node, point, force in point_forces:
        force_node[:, node] += force
        p_node[:, node] += point[:, :, None] * force[:, None, :]
    sub = _subtree_matrix(model)
    nodes = model.coordinate_node
    fk = (sub[nodes] @ force_node)  # (B, nq, 3) force on each coordinate's subtree
    pk = (sub[nodes] @ p_node.reshape(batch, -1, 9)).reshape(batch, -1, 3, 3)
    moment = np.stack([pk[..., 1, 2] - pk[..., 2, 1], pk[..., 2, 0] - pk[..., 0, 2], pk[..., 0, 1] - pk[..., 1, 0]], axis=-1)
    q_force = np.sum(s.omega * moment + s.v * fk, axis=2)

    # K[s, d] = w_s . (P_d w_d + v_d x F_d - w_d tr(P_d)) for s nearer the root than (or equal to) d
    trace = pk[..., 0, 0] + pk[..., 1, 1] + pk[..., 2, 2]
    per_d = np.einsum("bkij,bkj->bki", pk, s.omega) + cross(s.v, fk) - s.omega * trace[..., None]
    stiffness = _symmetric_from_upper(model, s.omega @ np.swapaxes(per_d, 1, 2))
    energy = -np.trace(p_node.sum(axis=1), axis1=1, axis2=2)
    return ForceTerms(q_force, stiffness, energy, True)


def joint_springs(model: Model, q: np.ndarray) -> ForceTerms:
    """Joint-level stiffness arrays and joint restraints (springs only): Q = -f(q)."""
    batch = q.shape[0]
    q_force = np.zeros((batch, model.nq))
    stiffness = np.zeros((batch, model.nq, model.nq))
    energy = np.zeros(batch)
    laws = model.joint_springs
    if len(laws.coordinates):
        f, df, e = laws.evaluate(q)
        np.add.at(q_force, (slice(None), laws.coordinates), -f)
        diag = np.zeros((batch, model.nq))
        np.add.at(diag, (slice(None), laws.coordinates), -df)
        stiffness += diag[:, :, None] * np.eye(model.nq)
        energy += e.sum(axis=1)
    for r in model.joint_restraints:
        if r.kind != "spring":
            continue
        x = q[:, r.coordinate]
        q_force[:, r.coordinate] -= r.law.force(x)
        stiffness[:, r.coordinate, r.coordinate] -= r.law.stiffness(x)
        energy += r.law.potential(x)
    return ForceTerms(q_force, stiffness, energy, True)


def rate_forces(model: Model, rates: np.ndarray) -> np.ndarray:
    """Dampers and friction at coordinate rates (B, nq): Q = -f(rate), constant within a step."""
    q_force = np.zeros_like(rates)
    laws = model.joint_dampers
    if len(laws.coordinates):
        f, _, _ = laws.evaluate(rates)
        np.add.at(q_force, (slice(None), laws.coordinates), -f)
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
    """Distance x (B,), dx/dq (B, nq) and d2x/dq2 (B, nq, nq) of a pair restraint."""
    node_a, node_c = model.frame_node[r.parent_frame], model.frame_node[r.child_frame]
    r_a, p_a = frame_point(model, s, r.parent_frame)
    _, p_c = frame_point(model, s, r.child_frame)
    jv_a = point_jacobian(model, s, node_a, p_a)
    jv_c = point_jacobian(model, s, node_c, p_c)
    d = p_c - p_a
    jd = jv_c - jv_a
    if r.distance_type == "euclidean":
        x = np.linalg.norm(d, axis=1)
        u = d / np.maximum(x, 1e-300)[:, None]
        grad = np.einsum("bki,bi->bk", jd, u)
        projected = jd - grad[:, :, None] * u[:, None, :]
        hess = (np.einsum("bji,bki->bjk", projected, projected) / np.maximum(x, 1e-300)[:, None, None]
                + point_hessian(model, s, jv_c, u) - point_hessian(model, s, jv_a, u))
        return x, grad, hess
    e = r_a[:, :, "xyz".index(r.distance_type[1].lower())]
    x = np.einsum("bi,bi->b", e, d)
    moves_a = model.subtree[model.coordinate_node, node_a][None, :, None]
    de = cross(s.omega, e[:, None, :]) * moves_a  # d e / dq_j
    grad = np.einsum("bki,bi->bk", jd, e) + np.einsum("bki,bi->bk", de, d)
    cross_terms = np.einsum("bji,bki->bjk", de, jd)
    # d2e/dq_j dq_k . d = d . (omega_s x (omega_d x e)), both moving frame a
    m = np.einsum("bji,bki->bjk", cross(d[:, None, :], s.omega), de)  # (d x omega_j) . (omega_k x e)
    m = _symmetric_from_upper(model, m) * (moves_a[..., 0][:, :, None] & moves_a[..., 0][:, None, :])
    hess = (point_hessian(model, s, jv_c, e) - point_hessian(model, s, jv_a, e)
            + cross_terms + np.swapaxes(cross_terms, 1, 2) + m)
    return x, grad, hess


def pair_springs(model: Model, s: State) -> ForceTerms:
    """Body-frame-pair springs: Q = -f(x) dx/dq (the child frame is pulled toward the parent frame when f > 0)."""
    batch = s.q.shape[0]
    q_force = np.zeros((batch, model.nq))
    stiffness = np.zeros((batch, model.nq, model.nq))
    energy = np.zeros(batch)
    for r in model.pair_restraints:
        if r.kind != "spring":
            continue
        x, grad, hess = pair_distance(model, s, r)
        f, df = r.law.force(x), r.law.stiffness(x)
        q_force -= f[:, None] * grad
        stiffness -= df[:, None, None] * grad[:, :, None] * grad[:, None, :] + f[:, None, None] * hess
        energy += r.law.potential(x)
    return ForceTerms(q_force, stiffness, energy, True)


def applied_loads(model: Model, s: State, loads: list[AppliedLoad]) -> tuple[list[tuple[int, np.ndarray, np.ndarray]], ForceTerms]:
    """Split loads: world-fixed forces go to the aggregated constant forces (returned as point forces);
    torques and following loads are evaluated here (not conservative)."""
    batch = s.q.shape[0]
    point_forces = []
    q_force = np.zeros((batch, model.nq))
    stiffness = np.zeros((batch, model.nq, model.nq))
    conservative = True
    for load in loads:
        node = model.frame_node[load.frame]
        rotation, point = frame_point(model, s, load.frame)
        moves = model.subtree[model.coordinate_node, node]
        if not load.follow:
            if np.any(load.force):
                point_forces.append((node, point, load.force))
            if np.any(load.torque):
                conservative = False
                q_force += np.einsum("bki,bi->bk", s.omega, load.torque) * moves
                stiffness += _torque_stiffness(model, s, node, load.torque)
            continue
        conservative = False
        force = np.einsum("bij,bj->bi", rotation, load.force)
        torque = np.einsum("bij,bj->bi", rotation, load.torque)
        jv = point_jacobian(model, s, node, point)
        q_force += np.einsum("bki,bi->bk", jv, force) + np.einsum("bki,bi->bk", s.omega, torque) * moves
        turning_force = cross(s.omega, force[:, None, :]) * moves[None, :, None]  # d force / dq_j
        turning_torque = cross(s.omega, torque[:, None, :]) * moves[None, :, None]
        stiffness += (point_hessian(model, s, jv, force)
                      + np.einsum("bji,bki->bkj", turning_force, jv)
                      + _torque_stiffness(model, s, node, torque)
                      + np.einsum("bji,bki->bkj", turning_torque, s.omega * moves[None, :, None]))
    return point_forces, ForceTerms(q_force, stiffness, np.zeros(batch), conservative)


def closure_force_stiffness(model: Model, s: State, multipliers: np.ndarray) -> np.ndarray:
    """d(G^T lambda)/dq as [k, j] for fixed multipliers (B, 6 n_closures): the closure wrenches
    (force lambda_p at the child frame origin and torque lambda_r on the child, the opposite on the
    parent-side chain) differentiated with the points and axes they act through.

    All closures at once: the force terms add up to omega_j . (X_k) with
    X_k = sum over closures of (Jv_b,k - Jv_a,k) x lambda_p, the torque terms to
    (omega_j x omega_k) . T_k with T_k the net closure torque on what coordinate k moves.
    """
    batch = s.q.shape[0]
    if not model.closures:
        return np.zeros((batch, model.nq, model.nq))
    _, _, _, strictly = _pair_tables(model)
    moves_a, moves_b = _closure_moves(model)
    _, p_a, _, p_b = closure_poses(model, s)
    lam = multipliers.reshape(batch, -1, 6)
    force, torque = lam[:, :, None, :3], lam[:, :, None, 3:]
    omega, v = s.omega[:, None], s.v[:, None]
    jv_b = (cross(omega, p_b[:, :, None]) + v) * moves_b[None, :, :, None]  # (B, closures, nq, 3)
    jv_a = (cross(omega, p_a[:, :, None]) + v) * moves_a[None, :, :, None]
    x = cross(jv_b - jv_a, force).sum(axis=1)  # (B, nq, 3)
    stiffness = _symmetric_from_upper(model, s.omega @ np.swapaxes(x, 1, 2))
    t = (torque * (moves_b.astype(float) - moves_a)[None, :, :, None]).sum(axis=1)  # (B, nq, 3)
    m = s.omega @ np.swapaxes(cross(s.omega, t), 1, 2)  # m[j, k] = omega_j . (omega_k x T_k)
    return stiffness + np.swapaxes(np.where(strictly, m, 0.0), 1, 2)


def _closure_moves(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """(closures, nq) bool: coordinate k moves the parent-side end / the child frame of each closure."""
    cached = model.__dict__.get("_closure_moves_cache")
    if cached is None:
        by_coordinate = model.subtree[model.coordinate_node]
        cached = (by_coordinate[:, [c.node_a for c in model.closures]].T,
                  by_coordinate[:, [c.node_b for c in model.closures]].T)
        object.__setattr__(model, "_closure_moves_cache", cached)
    return cached
