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
from .spatial import cross, rotation_error


@dataclass(frozen=True)
class Poses:
    """World poses of every body and frame: ``bodies`` (..., n_bodies, 4, 4), ``frames`` (..., n_frames, 4, 4)."""

    bodies: np.ndarray
    frames: np.ndarray


def _as_batch(model: Model, q: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    q = np.asarray(q, dtype=float)
    if q.shape[-1:] != (model.nq,):
        raise ValueError(f"expected {model.nq} coordinates, got shape {q.shape}")
    return q.reshape(int(np.prod(q.shape[:-1])), model.nq), q.shape[:-1]


def motion_frames(model: Model, q: np.ndarray) -> np.ndarray:
    """Top three rows of every node's world motion frame W, batch last: ``(n_nodes, 3, 4, B)`` for q (B, nq).

    Nodes are visited parents first; each is one constant product with its
    ``A`` (applied to the parent's 3x4 rows) and then the motion about/along z
    applied in place to two columns (rotation) or one (translation). All work
    is vectorized over the batch, the contiguous axis; nothing loops per
    configuration.
    """
    batch = q.shape[0]
    if batch <= _FEW:
        return _motion_frames_few(model, q)[:, :, :3, :].transpose(0, 2, 3, 1)
    table, coordinate_sign = _node_table(model)
    world = np.empty((model.n_nodes, 3, 4, batch))
    world[0] = np.eye(4)[:3, :, None]
    theta = q.T * coordinate_sign[:, None]  # (nq, B)
    cos, sin = np.cos(theta), np.sin(theta)
    sx, sy = np.empty((3, batch)), np.empty((3, batch))
    for node, parent, joint_t, kind, coordinate in table:
        w = world[node]
        np.matmul(joint_t, world[parent], out=w)
        if kind == REVOLUTE:  # columns 0, 1 of W @ Rz(theta)
            c, s = cos[coordinate], sin[coordinate]
            x, y = w[:, 0], w[:, 1]
            np.multiply(x, s, out=sx)
            np.multiply(y, s, out=sy)
            x *= c
            x += sy
            y *= c
            y -= sx
        elif kind == PRISMATIC:  # column 3 of W @ Tz(theta)
            w[:, 3] += theta[coordinate] * w[:, 2]
    return world


_FEW = 4  # up to this many configurations, per-array overhead dominates: see _motion_frames_few


def _motion_frames_few(model: Model, q: np.ndarray) -> np.ndarray:
    """Motion frames (n_nodes, B, 4, 4) of a few configurations: every node's local transform ``A Z(q)``
    at once, then one 4x4 product per node (fewer array operations per node than the column updates)."""
    batch = q.shape[0]
    _, coordinate_sign = _node_table(model)
    table, revolute, prismatic = _local_tables(model)
    theta = q * coordinate_sign
    local = np.broadcast_to(model.node_joint[:, None], (model.n_nodes, batch, 4, 4)).copy()
    if len(revolute):
        c = np.cos(theta[:, model.node_coordinate[revolute]]).T[:, :, None]
        s = np.sin(theta[:, model.node_coordinate[revolute]]).T[:, :, None]
        part = local[revolute]
        x, y = part[..., 0].copy(), part[..., 1].copy()
        part[..., 0], part[..., 1] = c * x + s * y, c * y - s * x
        local[revolute] = part
    if len(prismatic):
        part = local[prismatic]
        part[..., 3] += theta[:, model.node_coordinate[prismatic]].T[:, :, None] * part[..., 2]
        local[prismatic] = part
    world = np.empty((model.n_nodes, batch, 4, 4))
    world[0] = np.eye(4)
    for node, parent in table:
        np.matmul(world[parent], local[node], out=world[node])
    return world


def _local_tables(model: Model) -> tuple[list[tuple[int, int]], np.ndarray, np.ndarray]:
    """(node, parent) parents first, and the revolute and prismatic nodes."""
    cached = model.__dict__.get("_local_table_cache")
    if cached is None:
        table = [(int(i), int(model.node_parent[i])) for level in model.levels for i in level.nodes]
        cached = (table, np.flatnonzero(model.node_kind == REVOLUTE), np.flatnonzero(model.node_kind == PRISMATIC))
        object.__setattr__(model, "_local_table_cache", cached)
    return cached


def _node_table(model: Model) -> tuple[list[tuple[int, int, np.ndarray, int, int]], np.ndarray]:
    """Per node, parents first: (node, parent, A^T, kind, coordinate); and the sign of every coordinate."""
    cached = model.__dict__.get("_node_table_cache")
    if cached is None:
        order = [int(i) for level in model.levels for i in level.nodes]
        table = [(i, int(model.node_parent[i]), np.ascontiguousarray(model.node_joint[i].T),
                  int(model.node_kind[i]), int(model.node_coordinate[i])) for i in order]
        sign = np.ones(model.nq)
        for i in order:
            if model.node_coordinate[i] >= 0:
                sign[model.node_coordinate[i]] = model.node_sign[i]
        cached = (table, sign)
        object.__setattr__(model, "_node_table_cache", cached)
    return cached


def _frame_offsets(model: Model) -> np.ndarray:
    """D_node @ frame_offset (n_frames, 4, 4): every frame from its node's motion frame."""
    cached = model.__dict__.get("_frame_offset_cache")
    if cached is None:
        cached = model.node_offset[model.frame_node] @ model.frame_offset
        object.__setattr__(model, "_frame_offset_cache", cached)
    return cached


def _pose_tables(model: Model) -> tuple[list[tuple[int, np.ndarray]], list[tuple[int, np.ndarray]]]:
    """(node, (D_node @ offset)^T) for every frame and every body: their poses from the node motion frames."""
    cached = model.__dict__.get("_pose_table_cache")
    if cached is None:
        frames = [(int(n), np.ascontiguousarray((model.node_offset[n] @ x).T))
                  for n, x in zip(model.frame_node, model.frame_offset)]
        bodies = [(int(n), np.ascontiguousarray(model.node_offset[n].T)) for n in model.body_node]
        cached = (frames, bodies)
        object.__setattr__(model, "_pose_table_cache", cached)
    return cached


def _poses(world: np.ndarray, table: list[tuple[int, np.ndarray]]) -> np.ndarray:
    """4x4 poses, batch last (n, 4, 4, B), each ``W_node @ offset`` computed into place."""
    batch = world.shape[-1]
    out = np.empty((len(table), 4, 4, batch))
    out[:, 3, :3] = 0.0
    out[:, 3, 3] = 1.0
    for i, (node, offset_t) in enumerate(table):
        np.matmul(offset_t, world[node], out=out[i, :3])
    return out


def forward(model: Model, q: np.ndarray) -> Poses:
    """World poses of all bodies and frames for one configuration (nq,) or a batch (..., nq).

    The arrays are computed batch last and returned as views with the batch first.
    """
    qb, shape = _as_batch(model, q)
    if qb.shape[0] <= _FEW:  # one stacked product for all poses
        world = _motion_frames_few(model, qb)
        frames = np.moveaxis(world[model.frame_node] @ _frame_offsets(model)[:, None], 1, 0)
        bodies = np.moveaxis(world[model.body_node] @ model.node_offset[model.body_node][:, None], 1, 0)
        return Poses(bodies.reshape(*shape, -1, 4, 4), frames.reshape(*shape, -1, 4, 4))
    world = motion_frames(model, qb)
    frame_table, body_table = _pose_tables(model)
    frames = np.moveaxis(_poses(world, frame_table), -1, 0)
    bodies = np.moveaxis(_poses(world, body_table), -1, 0)
    return Poses(bodies.reshape(*shape, -1, 4, 4), frames.reshape(*shape, -1, 4, 4))


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
    world = motion_frames(model, q).transpose(3, 0, 1, 2)  # (B, n_nodes, 3, 4)
    nodes = model.coordinate_node
    at_coordinates = world[:, nodes]
    axis = at_coordinates[..., 2] * model.node_sign[nodes][None, :, None]
    origin = at_coordinates[..., 3]
    pose = world @ model.node_offset  # 3x4 rows times 4x4
    revolute = (model.node_kind[nodes] == REVOLUTE)[None, :, None]
    omega = np.where(revolute, axis, 0.0)
    v = np.where(revolute, cross(origin, axis), axis)
    return State(q, pose[:, :, :, :3], pose[:, :, :, 3], omega, v)


def point_jacobian(model: Model, s: State, node: int, point: np.ndarray) -> np.ndarray:
    """d(point)/dq (B, nq, 3) for world points ``point`` (B, 3) fixed to ``node``."""
    moves = model.subtree[model.coordinate_node, node]
    return (cross(s.omega, point[:, None, :]) + s.v) * moves[None, :, None]


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
def _closure_tables(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per closure (cached): nodes of both sides, their offsets (K, 4, 4), and which coordinates move each side
    (nq, K) bool."""
    cached = model.__dict__.get("_closure_cache")
    if cached is None:
        node_a = np.array([c.node_a for c in model.closures], dtype=int)
        node_b = np.array([c.node_b for c in model.closures], dtype=int)
        off_a = np.array([c.offset_a for c in model.closures]).reshape(-1, 4, 4)
        off_b = np.array([c.offset_b for c in model.closures]).reshape(-1, 4, 4)
        moves = model.subtree[model.coordinate_node]
        cached = (node_a, node_b, off_a, off_b, moves[:, node_a], moves[:, node_b])
        object.__setattr__(model, "_closure_cache", cached)
    return cached


def closure_poses(model: Model, s: State) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """World rotations and positions of both sides of every closure: (B, n_closures, 3, 3) and (B, n_closures, 3)."""
    node_a, node_b, off_a, off_b, _, _ = _closure_tables(model)
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
    """G (B, 6 n_closures, nq): geometric Jacobian of the closure residual (exact where the loop is closed).

    Rows per closure: d(p_b - p_a)/dq (the twist of each coordinate at both points, where it moves that side)
    and the difference of the angular velocities of the two sides."""
    batch = s.q.shape[0]
    if not model.closures:
        return np.zeros((batch, 0, model.nq))
    _, p_a, _, p_b = closure_poses(model, s)
    _, _, _, _, moves_a, moves_b = _closure_tables(model)
    omega, v = s.omega[:, None], s.v[:, None]  # (B, 1, nq, 3)
    side_a = moves_a.T[None, :, :, None]  # (1, K, nq, 1)
    side_b = moves_b.T[None, :, :, None]
    linear = (cross(omega, p_b[:, :, None, :]) + v) * side_b - (cross(omega, p_a[:, :, None, :]) + v) * side_a
    angular = omega * (side_b.astype(float) - side_a)
    jac = np.concatenate([linear, angular], axis=3)  # (B, K, nq, 6)
    return jac.transpose(0, 1, 3, 2).reshape(batch, -1, model.nq)


@dataclass(frozen=True)
class Assembly:
    """Result of :func:`assemble`: closed configuration, closure residual norm, iterations."""

    q: np.ndarray
    residual: float
    iterations: int


def assemble(model: Model, q: np.ndarray, held: list[int] | tuple[int, ...] = (), tolerance: float = 1e-10,
             max_iterations: int = 100, start: np.ndarray | None = None, held_step: float = 0.1) -> Assembly:
    """Close every loop by moving the coordinates not in ``held`` (nor coupled), from ``q``.

    Gauss-Newton with minimum-norm least-squares steps (the configuration
    moves as little as the loops allow) and step halving. With ``start`` (a
    configuration the held coordinates move away from: the file's ``model.q0``
    for a ``--set`` on the command line, the previous step in a sweep), the
    held coordinates travel from their ``start`` values to their values in
    ``q`` in increments of at most ``held_step`` (rad or m), the loops closed
    at each, so the mechanism stays on the assembly branch it starts on
    instead of jumping to a mirror one. Raises SolveError naming the loop(s)
    with the largest residual when the loops cannot close.
    """
    q = np.asarray(q, float)
    held = [int(i) for i in held]
    if start is None or not held or not model.closures:
        return _close_loops(model, q, held, tolerance, max_iterations)
    current = q.copy()
    current[held] = np.asarray(start, float)[held]
    result = _close_loops(model, current, held, tolerance, max_iterations)
    travel = q[held] - current[held]
    steps = max(1, int(np.ceil(np.max(np.abs(travel)) / held_step)))
    iterations = result.iterations
    for k in range(1, steps + 1):
        current = result.q.copy()
        current[held] = q[held] - travel * (1.0 - k / steps)
        result = _close_loops(model, current, held, tolerance, max_iterations)
        iterations += result.iterations
    return Assembly(result.q, result.residual, iterations)


def _close_loops(model: Model, q: np.ndarray, held: list[int], tolerance: float, max_iterations: int) -> Assembly:
    """Gauss-Newton on the closure residual over the free coordinates (see :func:`assemble`)."""
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


def model_size(model: Model, q: np.ndarray) -> float:
    """The machine's size (m): the largest distance of a frame or body origin from the world origin at q (nq,)."""
    poses = forward(model, q)
    points = np.concatenate([poses.frames[:, :3, 3], poses.bodies[:, :3, 3]])
    return float(np.max(np.linalg.norm(points, axis=1), initial=0.0))
