"""Frames in motion: the transform between any two frames, frame Jacobians and frame velocities.

CLARAty §7.1–7.3, on any compiled :class:`~shiftsim.model.Model`.

Conventions:

* ``q`` is a configuration ``(nq,)`` or a batch ``(..., nq)`` over all the
  model's coordinates. Coupled coordinates (``Joint_Constraint``, couplings of
  any format) are recomputed from their sources: whatever q holds there is
  ignored.
* A frame is named by its ``body:frame`` path (a bare body path is its origin)
  or given by its index in ``Model.frame_names``.
* A Jacobian has 6 rows, linear velocity of the frame origin then angular
  velocity, and by default one column per *independent* coordinate (those no
  coupling drives, :func:`independent_coordinates`); a coupled coordinate's
  motion is carried into its sources' columns through
  :func:`~shiftsim.kinematics.coupling_map`. Closed loops are not eliminated
  here: the columns are the tree's coordinates and the loop closure relates
  them; :func:`shiftsim.ik.loops.closed_loop_jacobian` keeps the loops closed.
* Reference and axes: with ``relative_to=None`` the velocities are relative to
  the world; with ``relative_to=A`` they are the motion of the frame as seen by
  an observer fixed to frame A: linear ``v_B - v_A - w_A x (p_B - p_A)`` (the
  rate of change of B's origin in A) and angular ``w_B - w_A``. The rows are
  given in the axes of ``expressed_in``, which defaults to ``relative_to``
  (world axes when both are None). They are always about B's origin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError, Problem
from ..kinematics import State, coupling_map, forward, state
from ..model import Model
from ..spatial import inverse

FrameLike = str | int


def independent_coordinates(model: Model) -> np.ndarray:
    """Indices of the coordinates no coupling drives, in coordinate order (cached on the model, read-only)."""
    cached = model.cache.get("ik_independent")
    if cached is None:
        coupled = {c.target for c in model.couplings}
        cached = np.array([i for i in range(model.nq) if i not in coupled], dtype=int)
        cached.flags.writeable = False
        model.cache["ik_independent"] = cached
    return cached


def frame_index(model: Model, frame: FrameLike, where: tuple[str, str] | None = None) -> int:
    """Index of a frame given by ``body:frame`` path, bare body path or index.

    An unknown name raises InputError; ``where`` = (file or option, place) says
    where the name came from in the message (e.g. ``("--frame", "arm:tool")``).
    """
    if isinstance(frame, (int, np.integer)):
        if not 0 <= frame < len(model.frame_names):
            raise IndexError(f"frame index {frame} out of range (the model has {len(model.frame_names)} frames)")
        return int(frame)
    try:
        return model.frame_index(frame)
    except InputError as error:
        if where is None:
            raise
        raise InputError([Problem(where[0], where[1], p.what, p.expected) for p in error.problems]) from None


def coupling_maps(model: Model, q: np.ndarray) -> np.ndarray:
    """dq/du ``(B, nq, n_independent)`` for a batch ``(B, nq)``: the coupling map on the independent columns."""
    columns = independent_coordinates(model)
    if not model.couplings:
        return np.broadcast_to(np.eye(model.nq)[:, columns], (q.shape[0], model.nq, len(columns)))
    return np.stack([coupling_map(model, qi)[:, columns] for qi in q])


# ``a @ _CROSS`` is the cross-product matrix of a, flattened row-major: one product instead of six assignments.
_CROSS = np.zeros((3, 9))
_CROSS[2, 1], _CROSS[1, 2] = -1.0, 1.0
_CROSS[2, 3], _CROSS[0, 5] = 1.0, -1.0
_CROSS[1, 6], _CROSS[0, 7] = -1.0, 1.0


def cross_matrices(v: np.ndarray) -> np.ndarray:
    """Cross-product matrices ``(..., 3, 3)`` of vectors ``(..., 3)``: ``cross_matrices(a) @ b = a x b``."""
    return (v @ _CROSS).reshape(*v.shape[:-1], 3, 3)


@dataclass(frozen=True)
class FrameTable:
    """Constants of one frame: its ``node``, the frame's ``rotation`` (3, 3) and ``origin`` (3,) in the node,
    and ``moves`` (nq, 1): 1.0 for each coordinate whose motion carries the frame, 0.0 for the others
    (None when every coordinate carries it)."""

    node: int
    rotation: np.ndarray
    origin: np.ndarray
    moves: np.ndarray | None


def frame_table(model: Model, f: int) -> FrameTable:
    """The :class:`FrameTable` of frame index ``f``, cached on the model."""
    cache = model.cache.setdefault("ik_frames", {})
    if f not in cache:
        node = int(model.frame_node[f])
        offset = model.frame_offset[f]
        carried = model.subtree[model.coordinate_node, node]
        moves = None if carried.all() else carried.astype(float)[:, None]
        cache[f] = FrameTable(node, offset[:3, :3].copy(), offset[:3, 3].copy(), moves)
    return cache[f]


class FrameKinematics:
    """World poses and Jacobians of frames at a batch of configurations, from one kinematics pass.

    ``q`` (B, nq) must already hold consistent coupled coordinates. Jacobians
    returned here have one column per coordinate of q (all of them); callers
    restrict them to independent coordinates with :func:`coupling_maps`.
    Results are cached per frame.
    """

    def __init__(self, model: Model, q: np.ndarray):
        self.model = model
        self.q = q
        self.state: State = state(model, q)
        self._poses: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._jacobians: dict[int, np.ndarray] = {}

    def pose(self, f: int) -> tuple[np.ndarray, np.ndarray]:
        """World rotation (B, 3, 3) and origin (B, 3) of frame ``f``."""
        if f not in self._poses:
            table = frame_table(self.model, f)
            rotation = self.state.rotation[:, table.node]
            self._poses[f] = (rotation @ table.rotation, rotation @ table.origin + self.state.position[:, table.node])
        return self._poses[f]

    def jacobian(self, f: int) -> np.ndarray:
        """(B, 6, nq): [linear velocity of the origin; angular velocity], world axes, per unit coordinate rate."""
        if f not in self._jacobians:
            s = self.state
            moves = frame_table(self.model, f).moves
            origin = self.pose(f)[1]
            # per coordinate: v + omega x origin (omega @ [origin]x = omega x origin), then omega; zero where
            # the coordinate does not carry the frame
            twists = np.concatenate([s.v + s.omega @ cross_matrices(origin), s.omega], axis=2)
            if moves is not None:
                twists *= moves
            self._jacobians[f] = twists.transpose(0, 2, 1)
        return self._jacobians[f]

    def relative(self, f: int, reference: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pose of frame ``f`` in ``reference`` (rotation, origin, in reference axes) and the world-axes
        Jacobian of its motion as seen from ``reference`` (see the module docstring); world when None."""
        rotation, origin = self.pose(f)
        jac = self.jacobian(f)
        if reference is None:
            return rotation, origin, jac
        ref_rotation, ref_origin = self.pose(reference)
        ref_jac = self.jacobian(reference)
        arm = origin - ref_origin
        linear = jac[:, :3] - ref_jac[:, :3] + cross_matrices(arm) @ ref_jac[:, 3:]
        angular = jac[:, 3:] - ref_jac[:, 3:]
        ref_t = np.swapaxes(ref_rotation, -1, -2)
        return (ref_t @ rotation, np.einsum("bij,bj->bi", ref_t, arm),
                np.concatenate([linear, angular], axis=1))

    def rotate_rows(self, jac: np.ndarray, axes: int | None) -> np.ndarray:
        """Rows of a world-axes (B, 6, n) Jacobian given in the axes of frame ``axes`` (unchanged when None)."""
        if axes is None:
            return jac
        rotation_t = np.swapaxes(self.pose(axes)[0], -1, -2)
        return np.concatenate([rotation_t @ jac[:, :3], rotation_t @ jac[:, 3:]], axis=1)


def _batch(model: Model, q: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    q = np.asarray(q, dtype=float)
    if q.shape[-1:] != (model.nq,):
        raise ValueError(f"expected {model.nq} coordinates, got shape {q.shape}")
    return model.apply_couplings(q.reshape(-1, model.nq)), q.shape[:-1]


def transform_between(model: Model, q: np.ndarray, from_frame: FrameLike, to_frame: FrameLike) -> np.ndarray:
    """Pose ``X_from_to`` (4x4, or (..., 4, 4) for a batch) of ``to_frame`` in ``from_frame``:
    ``p_from = X[:3, :3] @ p_to + X[:3, 3]``."""
    a, b = frame_index(model, from_frame), frame_index(model, to_frame)
    qb, shape = _batch(model, q)
    frames = forward(model, qb).frames
    return (inverse(frames[:, a]) @ frames[:, b]).reshape(*shape, 4, 4)


def jacobian(model: Model, q: np.ndarray, frame: FrameLike, *, relative_to: FrameLike | None = None,
             expressed_in: FrameLike | None = None, coordinates: str = "independent") -> np.ndarray:
    """Jacobian ``(6, n)`` — ``(..., 6, n)`` for a batch — of a frame: [linear; angular] at its origin.

    ``relative_to`` and ``expressed_in`` choose the observer and the axes (module
    docstring; default: world, world axes). ``coordinates="independent"``
    (default) gives one column per :func:`independent_coordinates` entry with
    couplings folded in; ``"all"`` gives the raw tree Jacobian, one column per
    coordinate of q, as if every coordinate moved on its own.
    """
    if coordinates not in ("independent", "all"):
        raise ValueError(f"coordinates must be 'independent' or 'all', not {coordinates!r}")
    f = frame_index(model, frame)
    reference = None if relative_to is None else frame_index(model, relative_to)
    axes = reference if expressed_in is None else frame_index(model, expressed_in)
    qb, shape = _batch(model, q)
    kin = FrameKinematics(model, qb)
    jac = kin.rotate_rows(kin.relative(f, reference)[2], axes)
    if coordinates == "independent":
        jac = jac @ coupling_maps(model, qb)
    return jac.reshape(*shape, 6, jac.shape[-1])


def frame_velocity(model: Model, q: np.ndarray, rates: np.ndarray, frame: FrameLike, *,
                   relative_to: FrameLike | None = None, expressed_in: FrameLike | None = None) -> np.ndarray:
    """Twist ``(6,)`` — ``(..., 6)`` — [linear velocity of the origin; angular velocity] of a frame.

    ``rates`` has the shape of ``q`` (rad/s, m/s per coordinate); the rates of
    coupled coordinates are ignored and follow their sources through the
    couplings. Observer and axes as in :func:`jacobian`.
    """
    rates = np.asarray(rates, dtype=float)
    q = np.asarray(q, dtype=float)
    if rates.shape != q.shape:
        raise ValueError(f"rates have shape {rates.shape}, q has shape {q.shape}: give one rate per coordinate")
    jac = jacobian(model, q, frame, relative_to=relative_to, expressed_in=expressed_in)
    independent = rates[..., independent_coordinates(model)]
    return np.einsum("...ij,...j->...i", jac, independent)
