"""Kinematics as functions of (model, q): poses, joint twists, Jacobians, loop closure, assembly.

Conventions: world-aligned quantities; poses are 4x4 transforms world <- frame;
a Jacobian has 6 rows, linear velocity of the frame origin then angular
velocity, both in world coordinates, and one column per coordinate of q.
Every function takes a single configuration ``(nq,)`` or a batch ``(B, nq)``;
batched work is vectorized per tree level, never looped per configuration.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import SolveError
from .model import PRISMATIC, REVOLUTE, Model
from .spatial import rotation_error


@dataclass(frozen=True)
class Poses:
    """World poses of every body and frame: ``bodies`` (..., n_bodies, 4, 4), ``frames`` (..., n_frames, 4, 4)."""

    bodies: np.ndarray
    frames: np.ndarray


def _as_batch(model: Model, q: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    q = np.asarray(q, dtype=float)
    if q.shape[-1:] != (model.nq,):
        raise ValueError(f"expected {model.nq} coordinates, got shape {q.shape}")
    return q.reshape(-1, model.nq), q.shape[:-1]


def motion_frames(model: Model, q: np.ndarray) -> np.ndarray:
    """Top three rows of every node's world motion frame W, node-major: ``(n_nodes, B, 3, 4)`` for q (B, nq).

    Per tree level: one product with the constant ``A`` of each node, then the
    motion about/along z applied to the columns in place.
    """
    batch = q.shape[0]
    world = np.empty((model.n_nodes, batch, 3, 4))
    world[0] = np.eye(4)[:3]
    for level, (joint, coordinate, sign, revolute, prismatic) in zip(model.levels, _level_tables(model)):
        n = len(level.nodes)
        w = (world[level.parents].reshape(n, batch * 3, 4) @ joint).reshape(n, batch, 3, 4)
        if len(revolute):
            theta = q[:, coordinate[revolute]].T * sign[revolute, None]
            c, s = np.cos(theta)[:, :, None], np.sin(theta)[:, :, None]
            x, y = w[revolute, :, :, 0], w[revolute, :, :, 1]
            w[revolute, :, :, 0], w[revolute, :, :, 1] = c * x + s * y, c * y - s * x
        if len(prismatic):
            d = (q[:, coordinate[prismatic]].T * sign[prismatic, None])[:, :, None]
            w[prismatic, :, :, 3] += d * w[prismatic, :, :, 2]
        world[level.nodes] = w
    return world


def _level_tables(model: Model) -> list[tuple[np.ndarray, ...]]:
    """Per level: A of its nodes, coordinate index, sign, positions (in the level) of revolute / prismatic nodes."""
    cached = model.__dict__.get("_level_table_cache")
    if cached is None:
        cached = []
        for level in model.levels:
            nodes = level.nodes
            kind = model.node_kind[nodes]
            cached.append((model.node_joint[nodes][:, :, :], model.node_coordinate[nodes], model.node_sign[nodes],
                           np.flatnonzero(kind == REVOLUTE), np.flatnonzero(kind == PRISMATIC)))
        object.__setattr__(model, "_level_table_cache", cached)
    return cached


def _frame_offsets(model: Model) -> np.ndarray:
    """Frame offsets from their node's motion frame: D_node @ frame_offset (n_frames, 4, 4)."""
    cached = model.__dict__.get("_frame_offset_cache")
    if cached is None:
        cached = model.node_offset[model.frame_node] @ model.frame_offset
        object.__setattr__(model, "_frame_offset_cache", cached)
    return cached


def _to_4x4(top: np.ndarray) -> np.ndarray:
    """(…, 3, 4) -> (…, 4, 4) with the bottom row [0, 0, 0, 1]."""
    out = np.zeros(top.shape[:-2] + (4, 4))
    out[..., :3, :] = top
    out[..., 3, 3] = 1.0
    return out


def forward(model: Model, q: np.ndarray) -> Poses:
    """World poses of all bodies and frames for one configuration (nq,) or a batch (..., nq)."""
    qb, shape = _as_batch(model, q)
    batch = qb.shape[0]
    world = motion_frames(model, qb)
    frames = world[model.frame_node].reshape(len(model.frame_node), batch * 3, 4) @ _frame_offsets(model)
    frames = frames.reshape(len(model.frame_node), batch, 3, 4).transpose(1, 0, 2, 3)
    bodies = frames[:, model.body_origin_frame]
    return Poses(_to_4x4(bodies).reshape(*shape, -1, 4, 4), _to_4x4(frames).reshape(*shape, -1, 4, 4))


@dataclass(frozen=True)
class State:
    """Kinematic quantities of a batch of configurations, all world-aligned.

    ``rotation`` (B, n_nodes, 3, 3) and ``position`` (B, n_nodes, 3) of every node;
    ``omega`` and ``v`` (B, nq, 3): the twist of each coordinate, so that a point
    p moving with the coordinate has velocity ``omega x p + v`` per unit rate
    (revolute: omega = axis, v = origin x axis; prismatic: omega = 0, v = axis).
    """

    q: np.ndarray
    rotation: np.ndarray
    position: np.ndarray
    omega: np.ndarray
    v: np.ndarray


def state(model: Model, q: np.ndarray) -> State:
    """Node poses and coordinate twists for q of shape (B, nq)."""
    batch = q.shape[0]
    world = motion_frames(model, q)
    nodes = model.coordinate_node
    axis = world[nodes, :, :, 2].transpose(1, 0, 2) * model.node_sign[nodes][None, :, None]
    origin = world[nodes, :, :, 3].transpose(1, 0, 2)
    pose = (world.reshape(model.n_nodes, batch * 3, 4) @ model.node_offset).reshape(model.n_nodes, batch, 3, 4)
    rotation = pose[:, :, :, :3].transpose(1, 0, 2, 3)
    position = pose[:, :, :, 3].transpose(1, 0, 2)
    revolute = (model.node_kind[nodes] == REVOLUTE)[None, :, None]
    omega = np.where(revolute, axis, 0.0)
    v = np.where(revolute, np.cross(origin, axis), axis)
    return State(q, rotation, position, omega, v)


def point_jacobian(model: Model, s: State, node: int, point: np.ndarray) -> np.ndarray:
    """d(point)/dq (B, nq, 3) for world points ``point`` (B, 3) fixed to ``node``."""
    moves = model.subtree[model.coordinate_node, node]
    return (np.cross(s.omega, point[:, None, :]) + s.v) * moves[None, :, None]


def frame_jacobian(model: Model, q: np.ndarray, frame: str | int) -> np.ndarray:
    """Geometric Jacobian (6, nq) — or (B, 6, nq) — of a frame: [linear; angular], world-aligned, at its origin."""
    f = model.frame_index(frame) if isinstance(frame, str) else frame
    qb, shape = _as_batch(model, q)
    s = state(model, qb)
    node = model.frame_node[f]
    offset = model.frame_offset[f]
    point = np.einsum("bij,j->bi", s.rotation[:, node], offset[:3, 3]) + s.position[:, node]
    linear = point_jacobian(model, s, node, point)
    angular = s.omega * model.subtree[model.coordinate_node, node][None, :, None]
    jac = np.concatenate([linear, angular], axis=2).transpose(0, 2, 1)
    return jac.reshape(*shape, 6, model.nq)


def coupling_map(model: Model, q: np.ndarray) -> np.ndarray:
    """dq/dq (nq, nq) through the couplings: column j is the change of all coordinates per unit change
    of coordinate j when coupled coordinates follow their sources (coupled columns are zero)."""
    t = np.eye(model.nq)
    for c in model.couplings:
        t[c.target] = 0.0
    for c in model.couplings:
        grad = np.atleast_1d(np.asarray(c.gradient(q[list(c.sources)]), float))
        t[c.target] = grad @ t[list(c.sources)]
    return t


# ---------------------------------------------------------------------- loop closure
def closure_poses(model: Model, s: State) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """World rotations and positions of both sides of every closure: (B, n_closures, 3, 3) and (B, n_closures, 3)."""
    node_a = np.array([c.node_a for c in model.closures], dtype=int)
    node_b = np.array([c.node_b for c in model.closures], dtype=int)
    off_a = np.array([c.offset_a for c in model.closures])
    off_b = np.array([c.offset_b for c in model.closures])
    r_a = s.rotation[:, node_a] @ off_a[:, :3, :3]
    p_a = np.einsum("bkij,kj->bki", s.rotation[:, node_a], off_a[:, :3, 3]) + s.position[:, node_a]
    r_b = s.rotation[:, node_b] @ off_b[:, :3, :3]
    p_b = np.einsum("bkij,kj->bki", s.rotation[:, node_b], off_b[:, :3, 3]) + s.position[:, node_b]
    return r_a, p_a, r_b, p_b


def closure_residual(model: Model, s: State) -> np.ndarray:
    """g(q) (B, 6 n_closures): per closure [p_b - p_a, rotvec(R_b R_a^T)], world frame."""
    if not model.closures:
        return np.zeros((s.q.shape[0], 0))
    r_a, p_a, r_b, p_b = closure_poses(model, s)
    return np.concatenate([p_b - p_a, rotation_error(r_a, r_b)], axis=2).reshape(s.q.shape[0], -1)


def closure_jacobian(model: Model, s: State) -> np.ndarray:
    """G (B, 6 n_closures, nq): geometric Jacobian of the closure residual (exact where the loop is closed)."""
    batch = s.q.shape[0]
    if not model.closures:
        return np.zeros((batch, 0, model.nq))
    _, p_a, _, p_b = closure_poses(model, s)
    rows = []
    for k, c in enumerate(model.closures):
        lin = point_jacobian(model, s, c.node_b, p_b[:, k]) - point_jacobian(model, s, c.node_a, p_a[:, k])
        ang = s.omega * (model.subtree[model.coordinate_node, c.node_b].astype(float)
                         - model.subtree[model.coordinate_node, c.node_a])[None, :, None]
        rows.append(np.concatenate([lin, ang], axis=2).transpose(0, 2, 1))
    return np.concatenate(rows, axis=1)


@dataclass(frozen=True)
class Assembly:
    """Result of :func:`assemble`: closed configuration, closure residual norm, iterations."""

    q: np.ndarray
    residual: float
    iterations: int


def assemble(model: Model, q: np.ndarray, held: list[int] | tuple[int, ...] = (), tolerance: float = 1e-10,
             max_iterations: int = 100) -> Assembly:
    """Close every loop by moving the coordinates not in ``held`` (nor coupled), from ``q``.

    Gauss-Newton with minimum-norm least-squares steps (the configuration
    moves as little as the loops allow) and step halving. Raises SolveError
    naming the loop(s) with the largest residual when the loops cannot close.
    """
    q = model.apply_couplings(np.asarray(q, float))
    coupled = {c.target for c in model.couplings}
    free = np.array([i for i in range(model.nq) if i not in set(held) and i not in coupled], dtype=int)
    if not model.closures:
        return Assembly(q, 0.0, 0)

    def residual(qq: np.ndarray) -> tuple[np.ndarray, State]:
        s = state(model, qq[None])
        return closure_residual(model, s)[0], s

    g, s = residual(q)
    norm = float(np.linalg.norm(g))
    iterations = 0
    while norm > tolerance and iterations < max_iterations:
        iterations += 1
        jac = closure_jacobian(model, s)[0] @ coupling_map(model, q)[:, free]
        step = np.linalg.lstsq(jac, -g, rcond=1e-12)[0]
        alpha = 1.0
        while alpha > 1e-6:
            trial = q.copy()
            trial[free] += alpha * step
            trial = model.apply_couplings(trial)
            g_trial, s_trial = residual(trial)
            if np.linalg.norm(g_trial) < norm:
                break
            alpha *= 0.5
        else:
            break
        q, g, s, norm = trial, g_trial, s_trial, float(np.linalg.norm(g_trial))
    if norm > tolerance:
        per_loop = np.linalg.norm(g.reshape(-1, 6), axis=1)
        worst = np.argsort(per_loop)[::-1]
        named = ", ".join(f"{model.joints[model.closures[k].joint].name!r} ({per_loop[k]:.3g})"
                          for k in worst if per_loop[k] > tolerance)
        raise SolveError(f"the loops cannot close with the held joints (residual {norm:.3g} after "
                         f"{iterations} iterations); loop-closing joints with the largest residual: {named}")
    return Assembly(q, norm, iterations)
