"""Cartesian constraints for inverse kinematics (CLARAty §8.2–8.5).

A constraint is a residual ``r(q)`` that is zero when it holds, with its
Jacobian ``dr/dq`` over all coordinates. Units: metres for positions, radians
for orientations.

* :class:`EndEffectorConstraint` — the pose of ``frame`` in ``relative_to``
  (the world when None) equals a target: position (3 rows,
  ``p - p_target`` in the reference frame's axes), orientation (3 rows,
  the rotation vector of ``R R_target^T`` in the reference frame's axes), or
  both. Absolute or relative, fully or partially constraining the frame.
* :class:`ContactConstraint` — ``frame`` touches the surface given by frame
  ``surface``: its origin lies on the surface's x-y plane (1 row, the signed
  distance along the surface's z axis minus ``gap``) and, with
  ``oppose_normals``, its z axis points against the surface's z axis (3 rows,
  ``z_frame + z_surface``; rank 2), leaving sliding in the plane and turning
  about the normal free.

Constraint objects hold frame names; :meth:`bind` checks them against a
model and returns an evaluator working on frame indices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from scipy.spatial.transform import Rotation

from ..errors import InputError, Problem
from ..model import Model
from ..spatial import is_rotation
from .frames import FrameKinematics, cross_matrices, frame_index, frame_table


def rotation_log_jacobian_inverse(rotvec: np.ndarray) -> np.ndarray:
    """``J_l^{-1}(phi)`` (3x3): d log(exp(d) exp(phi)) / d d at d = 0, for the rotation vector ``phi`` (3,).

    ``I - [phi]/2 + (1/t^2 - (1 + cos t) / (2 t sin t)) [phi]^2`` with ``t = |phi|``;
    the series ``1/12 + t^2/720`` near zero. The log map is not differentiable
    at ``t = pi``; there the sine is floored, which still gives a descent direction.
    """
    x, y, z = np.asarray(rotvec, float).tolist()
    return np.array(_log_jacobian_inverse(x, y, z))


def _log_jacobian_inverse(x: float, y: float, z: float) -> tuple[tuple[float, float, float], ...]:
    """The rows of :func:`rotation_log_jacobian_inverse` of ``phi = (x, y, z)``, from scalars, written out:
    ``[phi]^2 = phi phi^T - t^2 I``, so the matrix is ``(1 - c t^2) I - [phi]/2 + c phi phi^T``."""
    tt = x * x + y * y + z * z
    t = math.sqrt(tt)
    if t < 1e-4:
        c = 1.0 / 12.0 + tt / 720.0
    else:
        c = 1.0 / tt - (1.0 + math.cos(t)) / (2.0 * t * max(math.sin(t), 1e-9))
    a = 1.0 - c * tt
    cx, cy, cz = c * x, c * y, c * z
    return ((a + cx * x, 0.5 * z + cx * y, -0.5 * y + cx * z),
            (-0.5 * z + cx * y, a + cy * y, 0.5 * x + cy * z),
            (0.5 * y + cx * z, -0.5 * x + cy * z, a + cz * z))


def rotation_vector3(m: np.ndarray) -> tuple[float, float, float]:
    """Rotation vector (rad, angle in [0, pi]) of one rotation matrix ``m`` (3, 3), as three floats.

    The conversion of :func:`shiftsim.spatial.rotation_vector` (and of scipy's
    ``Rotation.from_matrix(m).as_rotvec()``): a quaternion from the largest of the
    trace and the diagonal, then ``2 atan2(|v|, w)`` along v; written on scalars
    because the solver converts one matrix per iteration, where array calls cost
    more than the arithmetic.
    """
    (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = m.tolist()
    trace = m00 + m11 + m22
    largest = max(m00, m11, m22, trace)  # ties go to the first, as numpy's argmax in spatial.rotation_vector
    if largest == m00:
        x, y, z, w = 1.0 - trace + 2.0 * m00, m10 + m01, m20 + m02, m21 - m12
    elif largest == m11:
        x, y, z, w = m01 + m10, 1.0 - trace + 2.0 * m11, m21 + m12, m02 - m20
    elif largest == m22:
        x, y, z, w = m02 + m20, m12 + m21, 1.0 - trace + 2.0 * m22, m10 - m01
    else:
        x, y, z, w = m21 - m12, m02 - m20, m10 - m01, 1.0 + trace
    length = math.sqrt(x * x + y * y + z * z + w * w)
    if w < 0.0:  # w >= 0: the angle in [0, pi]
        length = -length
    x, y, z, w = x / length, y / length, z / length, w / length
    angle = 2.0 * math.atan2(math.sqrt(x * x + y * y + z * z), w)
    if angle <= 1e-3:
        scale = 2.0 + angle * angle / 12.0 + 7.0 * angle ** 4 / 2880.0
    else:
        scale = angle / math.sin(angle / 2.0)
    return scale * x, scale * y, scale * z


def _exact_rotation(m: np.ndarray) -> bool:
    """True when ``m`` is a 3x3 rotation to round-off (columns orthonormal within 1e-12, determinant
    positive): such a target is used as given. Anything else (NaN included) fails and is checked and
    projected onto the rotations the slower way."""
    if m.shape != (3, 3):
        return False
    (a, b, c), (d, e, f), (g, h, i) = m.tolist()
    gram = (a * a + d * d + g * g - 1.0, b * b + e * e + h * h - 1.0, c * c + f * f + i * i - 1.0,
            a * b + d * e + g * h, a * c + d * f + g * i, b * c + e * f + h * i)
    determinant = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
    return all(abs(value) <= 1e-12 for value in gram) and determinant > 0.0


class BoundConstraint(Protocol):
    """A constraint checked against one model: evaluates its rows from a :class:`FrameKinematics`."""

    name: str
    kind: str
    rows: int

    def evaluate(self, kin: FrameKinematics) -> tuple[np.ndarray, np.ndarray]:
        """``(residual (rows,), jacobian (rows, nq))`` at the first configuration of ``kin``."""

    def report(self, residual: np.ndarray) -> dict:
        """Errors of this constraint for a residual (metres, radians)."""


def _frame(model: Model, name: str, where: str, problems: list[Problem]) -> int | None:
    try:
        return frame_index(model, name, ("inverse kinematics", where))
    except InputError as error:
        problems.extend(error.problems)
        return None


@dataclass(frozen=True)
class EndEffectorConstraint:
    """Place ``frame`` at ``position`` and/or ``rotation`` in ``relative_to`` (world when None).

    ``rotation`` is a 3x3 matrix whose columns are the target frame's axes in
    the reference frame; ``weight`` scales the rows in the least squares.
    """

    frame: str
    position: np.ndarray | None = None
    rotation: np.ndarray | None = None
    relative_to: str | None = None
    weight: float = 1.0
    name: str = ""

    @property
    def label(self) -> str:
        return self.name or (self.frame if self.relative_to is None else f"{self.frame} in {self.relative_to}")

    def bind(self, model: Model) -> BoundEndEffector:
        where = f"constraint {self.label!r}"
        problems: list[Problem] = []
        position = rotation = None
        if self.position is None and self.rotation is None:
            problems.append(Problem("inverse kinematics", where, "neither a position nor a rotation",
                                    "a target position, rotation or both"))
        if self.position is not None:
            position = np.asarray(self.position, float)
            if position.shape != (3,) or not all(map(math.isfinite, position.tolist())):
                problems.append(Problem("inverse kinematics", where, f"target position {self.position!r}",
                                        "3 finite numbers (m)"))
        if self.rotation is not None:
            rotation = np.asarray(self.rotation, float)
            if _exact_rotation(rotation):
                rotation = rotation.copy()
            elif not is_rotation(rotation):
                problems.append(Problem("inverse kinematics", where, "target rotation is not a rotation matrix",
                                        "an orthonormal 3x3 matrix with determinant +1"))
            else:  # the nearest exact rotation: the residual assumes one
                rotation = Rotation.from_matrix(rotation).as_matrix()
        if not (np.isfinite(self.weight) and self.weight > 0):
            problems.append(Problem("inverse kinematics", where, f"weight {self.weight}", "a positive number"))
        f = _frame(model, self.frame, where, problems)
        reference = None if self.relative_to is None else _frame(model, self.relative_to, where, problems)
        if problems:
            raise InputError(problems)
        bound = BoundEndEffector(self.label, f, reference, position, rotation, float(self.weight))
        if reference is None and rotation is not None:
            bound.offset_target = frame_table(model, f).rotation @ rotation.T
        return bound


@dataclass
class BoundEndEffector:
    """An :class:`EndEffectorConstraint` bound to a model: frame indices (``reference`` None = world), targets."""

    name: str
    frame: int
    reference: int | None
    position: np.ndarray | None
    rotation: np.ndarray | None
    weight: float
    kind: str = "end_effector"
    rows: int = field(init=False)
    # the frame's rotation in its node times the target's transpose (3, 3), for a rotation target in the world
    offset_target: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.rows = 3 * ((self.position is not None) + (self.rotation is not None))

    def evaluate(self, kin: FrameKinematics) -> tuple[np.ndarray, np.ndarray]:
        if self.offset_target is not None:
            return self._in_world(kin)
        rotation, origin, jac = kin.relative(self.frame, self.reference)
        jac = kin.rotate_rows(jac, self.reference)[0]
        if self.rotation is None:
            return origin[0] - self.position, jac[:3]
        error = rotation_vector3(rotation[0] @ self.rotation.T)
        angular = np.array(_log_jacobian_inverse(*error)) @ jac[3:]
        if self.position is None:
            return np.array(error), angular
        return np.concatenate([origin[0] - self.position, error]), np.concatenate([jac[:3], angular])

    def _in_world(self, kin: FrameKinematics) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`evaluate` for a rotation target in the world, straight from the node's pose and the
        coordinate twists (the solver's usual case, in as few array operations as it takes).

        Column i of the rows is [v_i + omega_i x p; J_l^{-1}(e) omega_i] (p: the frame's origin, e: the
        rotation error), so the transposed rows (nq, 6) are ``omega @ [[p]x, J_l^{-T}]``, v added to the
        first three columns.
        """
        table = frame_table(kin.model, self.frame)
        s = kin.state
        node_rotation = s.rotation[0, table.node]
        # the frame's origin p = R_node o + p_node on floats (three entries: cheaper than array calls)
        (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = node_rotation.tolist()
        (ox, oy, oz), (nx, ny, nz) = table.origin.tolist(), s.position[0, table.node].tolist()
        x = r00 * ox + r01 * oy + r02 * oz + nx
        y = r10 * ox + r11 * oy + r12 * oz + ny
        z = r20 * ox + r21 * oy + r22 * oz + nz
        error = rotation_vector3(node_rotation @ self.offset_target)  # R R_target^T, R = R_node R_offset
        (a, b, c), (d, e, f), (g, h, i) = _log_jacobian_inverse(*error)
        on_omega = np.array([[0.0, -z, y, a, d, g], [z, 0.0, -x, b, e, h], [-y, x, 0.0, c, f, i]])
        twists = s.omega[0] @ on_omega
        twists[:, :3] += s.v[0]
        if table.moves is not None:
            twists *= table.moves
        if self.position is None:
            return np.array(error), twists[:, 3:].T
        px, py, pz = self.position.tolist()
        return np.array([x - px, y - py, z - pz, *error]), twists.T

    def report(self, residual: np.ndarray) -> dict:
        out: dict = {"name": self.name, "kind": self.kind}
        k = 0
        if self.position is not None:
            out["position_error"] = math.hypot(*residual[:3].tolist())
            k = 3
        if self.rotation is not None:
            out["orientation_error"] = math.hypot(*residual[k:k + 3].tolist())
        return out


@dataclass(frozen=True)
class ContactConstraint:
    """``frame`` on the surface of frame ``surface`` (its x-y plane, normal +z), ``gap`` metres above it.

    With ``oppose_normals`` the frame's z axis also points into the surface
    (against the surface normal), as a tool touching a face.
    """

    frame: str
    surface: str
    gap: float = 0.0
    oppose_normals: bool = True
    weight: float = 1.0
    name: str = ""

    @property
    def label(self) -> str:
        return self.name or f"{self.frame} on {self.surface}"

    def bind(self, model: Model) -> BoundContact:
        where = f"constraint {self.label!r}"
        problems: list[Problem] = []
        if not np.isfinite(self.gap):
            problems.append(Problem("inverse kinematics", where, f"gap {self.gap}", "a finite distance (m)"))
        if not (np.isfinite(self.weight) and self.weight > 0):
            problems.append(Problem("inverse kinematics", where, f"weight {self.weight}", "a positive number"))
        f = _frame(model, self.frame, where, problems)
        s = _frame(model, self.surface, where, problems)
        if problems:
            raise InputError(problems)
        return BoundContact(self.label, f, s, float(self.gap), self.oppose_normals, float(self.weight))


@dataclass
class BoundContact:
    """A :class:`ContactConstraint` bound to a model (frame indices)."""

    name: str
    frame: int
    surface: int
    gap: float
    oppose_normals: bool
    weight: float
    kind: str = "contact"
    rows: int = field(init=False)

    def __post_init__(self) -> None:
        self.rows = 4 if self.oppose_normals else 1

    def evaluate(self, kin: FrameKinematics) -> tuple[np.ndarray, np.ndarray]:
        rotation, origin = (a[0] for a in kin.pose(self.frame))
        s_rotation, s_origin = (a[0] for a in kin.pose(self.surface))
        jac, s_jac = kin.jacobian(self.frame)[0], kin.jacobian(self.surface)[0]
        normal = s_rotation[:, 2]
        arm = origin - s_origin
        distance_row = normal @ (jac[:3] - s_jac[:3]) + np.cross(normal, arm) @ s_jac[3:]
        residual = [np.array([normal @ arm - self.gap])]
        rows = [distance_row[None]]
        if self.oppose_normals:
            z = rotation[:, 2]
            residual.append(z + normal)
            rows.append(-cross_matrices(z) @ jac[3:] - cross_matrices(normal) @ s_jac[3:])
        return np.concatenate(residual), np.concatenate(rows)

    def report(self, residual: np.ndarray) -> dict:
        out = {"name": self.name, "kind": self.kind, "distance_error": float(abs(residual[0]))}
        if self.oppose_normals:
            # |z_f + n| = 2 sin(angle between z_f and -n / 2)
            out["normal_error"] = float(2.0 * np.arcsin(min(1.0, np.linalg.norm(residual[1:4]) / 2.0)))
        return out


CartesianConstraint = EndEffectorConstraint | ContactConstraint
