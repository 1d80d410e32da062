"""Kinematics as functions of (model, q): poses, joint twists, Jacobians, loop closure, assembly.

Conventions: world-aligned quantities; poses are 4x4 transforms world <- frame;
a Jacobian has 6 rows, linear velocity of the frame origin then angular
velocity, both in world coordinates, and one column per coordinate of q.
Every function takes a single configuration ``(nq,)`` or a batch ``(B, nq)``. Poses, twists and
closure terms are computed by the compiled core (``shiftsim.core``, C): this module validates, calls it and
wraps the arrays.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from .core import library as core_library
from .core.layout import compiled
from .core.library import core
from .core.problem import problem as core_problem
from .errors import SolveError
from .model import Model
from .spatial import cross


@dataclass(slots=True)
class Poses:
    """World poses of every body and frame: ``bodies`` (..., n_bodies, 4, 4), ``frames`` (..., n_frames, 4, 4).

    Per-call data (as Pinocchio's ``Data``): :func:`forward` may write into the arrays again (``out=``)."""

    bodies: np.ndarray
    frames: np.ndarray


def _as_batch(model: Model, q: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    q = np.asarray(q, dtype=float)
    if q.shape[-1:] != (model.nq,):
        raise ValueError(f"expected {model.nq} coordinates, got shape {q.shape}")
    return np.ascontiguousarray(q.reshape(int(np.prod(q.shape[:-1])), model.nq)), q.shape[:-1]


_PARALLEL_FROM = 64  # configurations: fewer run on the calling thread (handing them to workers costs more)


def _threads(batch: int) -> int:
    return core_library.threads() if batch >= _PARALLEL_FROM else 1


def forward(model: Model, q: np.ndarray, bodies: bool = True, frames: bool = True, out: Poses | None = None) -> Poses:
    """World poses of all bodies and frames for one configuration (nq,) or a batch (..., nq).

    Computed by the compiled core (``forward`` in core/src/api.c), batches over every core.
    ``bodies``/``frames`` False leaves that output empty (shape (..., 0, 4, 4)) when only the other is needed.
    ``out``: poses to write into (from an earlier call with the same shapes, as Pinocchio writes into its
    ``Data``), returned; saves allocating the outputs in a loop over single configurations.

    Parameters
    ----------
    model : Model
        The compiled model.
    q : (nq,) or (..., nq) array
        Coordinates (rad for revolute, m for prismatic).
    bodies, frames : bool, optional
        Compute the body poses, the frame poses.
    out : Poses, optional
        Output arrays to fill in place.

    Returns
    -------
    Poses
        ``bodies`` (..., n_bodies, 4, 4) and ``frames`` (..., n_frames, 4, 4): world <- body / frame transforms, m.

    Raises
    ------
    InputError
        ``q`` does not have nq coordinates in its last axis.

    Examples
    --------
    >>> model = shiftsim.load_model("models/shift/cantilever10.json")
    >>> poses = shiftsim.forward(model, model.q0)
    >>> poses.frames.shape
    (22, 4, 4)
    >>> poses.frames[model.frame_names.index("link10:tip"), :3, 3].round(3).tolist()  # m, world axes
    [5.0, 0.0, 2.0]
    """
    if out is not None:
        capsule = model.cache.get("core_model") or compiled(model)
        try:  # the core reads q in place when it is already C-contiguous float64 (it checks, and says if not)
            core.forward(capsule, q, out.bodies if bodies else None, out.frames if frames else None, 1)
        except TypeError:
            core.forward(capsule, np.ascontiguousarray(q, dtype=float), out.bodies if bodies else None,
                         out.frames if frames else None, 1)
        return out
    qb, shape = _as_batch(model, q)
    batch = qb.shape[0]
    body_poses = np.empty((batch, len(model.body_node) if bodies else 0, 4, 4))
    frame_poses = np.empty((batch, len(model.frame_node) if frames else 0, 4, 4))
    core.forward(compiled(model), qb, body_poses if bodies else None, frame_poses if frames else None,
                 _threads(batch))
    # explicit counts, not -1: an empty batch (0, nq) has no size to infer them from
    return Poses(body_poses.reshape(*shape, body_poses.shape[1], 4, 4),
                 frame_poses.reshape(*shape, frame_poses.shape[1], 4, 4))


@dataclass(slots=True)
class State:
    """Kinematic quantities of a batch of configurations, all world-aligned.

    ``rotation`` (B, n_nodes, 3, 3) and ``position`` (B, n_nodes, 3) of every node;
    ``omega`` and ``v`` (B, nq, 3): the twist of each coordinate, so that a point
    p moving with the coordinate has velocity ``omega x p + v`` per unit rate
    (revolute: omega = axis, v = origin x axis; prismatic: omega = 0, v = axis).
    Arrays are C-contiguous float64 (the compiled core reads them in place, see :attr:`arrays`). Per-call data:
    a plain slotted record, quick to make for every configuration an iteration visits.
    """

    q: np.ndarray
    rotation: np.ndarray
    position: np.ndarray
    omega: np.ndarray
    v: np.ndarray

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """rotation, position, omega and v: what the compiled core reads of a state."""
        return self.rotation, self.position, self.omega, self.v


def state(model: Model, q: np.ndarray) -> State:
    """Node poses and coordinate twists for q of shape (B, nq), by the compiled core."""
    q = np.ascontiguousarray(q, dtype=float)
    batch = q.shape[0]
    rotation, position = np.empty((batch, model.n_nodes, 3, 3)), np.empty((batch, model.n_nodes, 3))
    omega, v = np.empty((batch, model.nq, 3)), np.empty((batch, model.nq, 3))
    core.state(compiled(model), q, rotation, position, omega, v, _threads(batch))
    return State(q, rotation, position, omega, v)


def point_jacobian(model: Model, s: State, node: int, point: np.ndarray) -> np.ndarray:
    """d(point)/dq (B, nq, 3) for world points ``point`` (B, 3) fixed to ``node``."""
    moves = model.subtree[model.coordinate_node, node]
    return (cross(s.omega, point[:, None, :]) + s.v) * moves[None, :, None]


def frame_jacobian(model: Model, q: np.ndarray, frame: str | int) -> np.ndarray:
    """Geometric Jacobian (6, nq) — or (B, 6, nq) — of a frame: [linear; angular], world-aligned, at its origin.

    Parameters
    ----------
    model : Model
        The compiled model.
    q : ndarray
        Joint coordinates (nq,) or a batch (B, nq), rad or m.
    frame : str or int
        The frame's name (``model.frame_names``) or index.

    Returns
    -------
    ndarray
        (6, nq) or (B, 6, nq): rows d(origin)/dq (m per rad or m, world axes), then the angular velocity per unit
        joint speed (world axes).

    Raises
    ------
    ModelError
        No frame of that name (the message lists the frames).
    ValueError
        ``q`` does not have nq coordinates in its last axis.

    Examples
    --------
    The tip of the straight cantilever, 0.5 m beyond the last hinge (axis +y): turning that hinge moves it along
    (0, 1, 0) x (0.5, 0, 0) = (0, 0, -0.5) m per rad.

    >>> model = shiftsim.load_model("models/shift/cantilever10.json")
    >>> shiftsim.frame_jacobian(model, model.q0, "link10:tip")[:, -1].round(3).tolist()
    [0.0, 0.0, -0.5, 0.0, 1.0, 0.0]
    """
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
def _closure_tables(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per closure (cached): the nodes of both sides and their offsets (K, 4, 4)."""
    cached = model.cache.get("closures")
    if cached is None:
        node_a = np.array([c.node_a for c in model.closures], dtype=int)
        node_b = np.array([c.node_b for c in model.closures], dtype=int)
        off_a = np.array([c.offset_a for c in model.closures]).reshape(-1, 4, 4)
        off_b = np.array([c.offset_b for c in model.closures]).reshape(-1, 4, 4)
        cached = (node_a, node_b, off_a, off_b)
        model.cache["closures"] = cached
    return cached


def closure_poses(model: Model, s: State) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """World rotations and positions of both sides of every closure: (B, n_closures, 3, 3) and (B, n_closures, 3)."""
    node_a, node_b, off_a, off_b = _closure_tables(model)
    r_a = s.rotation[:, node_a] @ off_a[:, :3, :3]
    p_a = np.einsum("bkij,kj->bki", s.rotation[:, node_a], off_a[:, :3, 3]) + s.position[:, node_a]
    r_b = s.rotation[:, node_b] @ off_b[:, :3, :3]
    p_b = np.einsum("bkij,kj->bki", s.rotation[:, node_b], off_b[:, :3, 3]) + s.position[:, node_b]
    return r_a, p_a, r_b, p_b


def closure_residual(model: Model, s: State) -> np.ndarray:
    """g(q) (B, 6 n_closures): per closure [p_b - p_a, rotvec(R_b R_a^T)], world frame (compiled core)."""
    batch = s.q.shape[0]
    g = np.zeros((batch, 6 * len(model.closures)))
    if model.closures:
        core.closures(compiled(model), *s.arrays, g, None)
    return g


def closure_jacobian(model: Model, s: State) -> np.ndarray:
    """G (B, 6 n_closures, nq): geometric Jacobian of the closure residual (exact where the loop is closed).

    Rows per closure: d(p_b - p_a)/dq (the twist of each coordinate at both points, where it moves that side)
    and the difference of the angular velocities of the two sides (compiled core)."""
    batch = s.q.shape[0]
    jac = np.zeros((batch, 6 * len(model.closures), model.nq))
    if model.closures:
        core.closures(compiled(model), *s.arrays, None, jac)
    return jac


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
    instead of jumping to a mirror one.

    Parameters
    ----------
    model : Model
        The compiled model.
    q : ndarray
        (nq,) coordinates to start from, rad or m; the held ones keep their values.
    held : sequence of int, optional
        Indices of the coordinates that must not move.
    tolerance : float, optional
        Largest loop-closure residual accepted (m and rad).
    max_iterations : int, optional
        Gauss-Newton iterations at most (per increment with ``start``).
    start : ndarray, optional
        (nq,) a closed configuration the held coordinates travel from.
    held_step : float, optional
        Largest change of a held coordinate per increment (rad or m).

    Returns
    -------
    Assembly
        ``q`` the closed coordinates (nq,), ``residual`` the largest closure error left, ``iterations``.

    Raises
    ------
    SolveError
        The loops cannot close; the message names the loop(s) with the largest residual.

    Examples
    --------
    >>> model = shiftsim.load_model("models/shift/four_bar.json")
    >>> q = model.q0.copy()
    >>> q[0] = -0.9  # the crank, rad
    >>> assembly = shiftsim.assemble(model, q, held=[0])
    >>> bool(assembly.residual < 1e-10), float(assembly.q[0])
    (True, -0.9)
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
    """Gauss-Newton on the closure residual over the free coordinates (see :func:`assemble`), by the compiled
    core (``assemble_case`` in core/src/newton.c)."""
    if not model.closures:
        return Assembly(model.apply_couplings(np.asarray(q, float)), 0.0, 0)
    coupled = {c.target for c in model.couplings}
    free = np.array([i for i in range(model.nq) if i not in set(held) and i not in coupled], dtype=np.int64)
    q = np.array(q, dtype=float)
    norm, iterations = core.assemble(compiled(model), _assembly_problem(model, free), q, tolerance, max_iterations)
    if norm > tolerance:
        g = closure_residual(model, state(model, q[None]))[0]
        per_loop = np.linalg.norm(g.reshape(-1, 6), axis=1)
        worst = np.argsort(per_loop)[::-1]
        named = ", ".join(f"{model.joints[model.closures[k].joint].name!r} ({per_loop[k]:.3g})"
                          for k in worst if per_loop[k] > tolerance)
        raise SolveError(f"the loops cannot close with the held joints (residual {norm:.3g} after "
                         f"{iterations} iterations); loop-closing joints with the largest residual: {named}")
    return Assembly(q, norm, iterations)


def _assembly_problem(model: Model, free: np.ndarray):
    """The compiled core's problem that moves ``free`` to close the loops (kept per set of free coordinates)."""
    cache = model.cache.setdefault("core_assembly", {})
    key = free.tobytes()
    if key not in cache:
        empty = np.zeros(0, dtype=np.int64)
        cache[key] = core_problem(compiled(model), model.nq, model.n_nodes, free, empty, np.zeros(len(free), np.int64),
                                  empty, empty, *coupling_callbacks(model, free), None, False)
    return cache[key]


def coupling_callbacks(model: Model, free: np.ndarray) -> tuple:
    """The model's couplings as the compiled core calls them back: ``apply(q)`` (q with coupled coordinates
    recomputed) and ``jacobian(q)`` (dq/du (nq, nf) for the free coordinates), or (None, None) without couplings.
    They hold the model weakly: a problem kept on the model does not keep the model alive."""
    if not model.couplings:
        return None, None
    owner = weakref.ref(model)

    def apply(q: np.ndarray) -> np.ndarray:
        return owner().apply_couplings(q)

    def jacobian(q: np.ndarray) -> np.ndarray:
        return coupling_map(owner(), q)[:, free]

    return apply, jacobian


def model_size(model: Model, q: np.ndarray) -> float:
    """The machine's size (m): the largest distance of a frame origin from the world origin at q (nq,)
    (every body's origin is one of its frames)."""
    frames = forward(model, q, bodies=False).frames
    return float(np.sqrt(np.max(np.einsum("fi,fi->f", frames[:, :3, 3], frames[:, :3, 3]), initial=0.0)))
