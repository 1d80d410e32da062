"""Denavit–Hartenberg parameters in Craig's (modified) and Paul's (standard) conventions.

With ``a = length``, ``alpha = twist``, ``d = offset``, ``theta = angle`` and
the joint variable ``q`` added to ``theta`` (revolute) or ``d`` (prismatic),
the transform from the previous link frame to this one is

* ``DH_Craig``: ``Rx(alpha) Tx(a) Rz(theta + q) Tz(d)``   (a row holds alpha_{i-1}, a_{i-1}, d_i, theta_i)
* ``DH_Paul``:  ``Rz(theta + q) Tz(d) Tx(a) Rx(alpha)``   (a row holds theta_i, d_i, a_i, alpha_i)

Because rotations and translations about/along one axis commute, both split
as ``before @ J(q) @ after`` with ``J`` a rotation about, or translation along,
the z axis of the joint frame (:meth:`DhParameters.split`): Craig's joint sits
at the end (``after`` is the identity), Paul's joint comes before the
constant part ``Tz(d) Tx(a) Rx(alpha)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

DhConvention = Literal["DH_Craig", "DH_Paul"]
CONVENTIONS: tuple[DhConvention, ...] = ("DH_Craig", "DH_Paul")


def rot_x(angle: float) -> np.ndarray:
    """4x4 rotation by ``angle`` (rad, right-handed) about x."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[1.0, 0.0, 0.0, 0.0], [0.0, c, -s, 0.0], [0.0, s, c, 0.0], [0.0, 0.0, 0.0, 1.0]])


def rot_z(angle: float) -> np.ndarray:
    """4x4 rotation by ``angle`` (rad, right-handed) about z."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0, 0.0], [s, c, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])


def trans_x(distance: float) -> np.ndarray:
    """4x4 translation by ``distance`` (m) along x."""
    x = np.eye(4)
    x[0, 3] = distance
    return x


def trans_z(distance: float) -> np.ndarray:
    """4x4 translation by ``distance`` (m) along z."""
    x = np.eye(4)
    x[2, 3] = distance
    return x


def joint_motion(value: float, prismatic: bool) -> np.ndarray:
    """The single-dof joint motion of CLARAty: rotation about z, or translation along z."""
    return trans_z(value) if prismatic else rot_z(value)


@dataclass(frozen=True)
class DhParameters:
    """One DH row: ``length`` a (m), ``twist`` alpha (rad), ``offset`` d (m), ``angle`` theta (rad)."""

    convention: DhConvention
    length: float
    twist: float
    offset: float = 0.0
    angle: float = 0.0

    def split(self) -> tuple[np.ndarray, np.ndarray]:
        """``(before, after)`` with ``T(q) = before @ joint_motion(q) @ after`` for either joint type."""
        if self.convention == "DH_Craig":
            return rot_x(self.twist) @ trans_x(self.length) @ rot_z(self.angle) @ trans_z(self.offset), np.eye(4)
        return rot_z(self.angle), trans_z(self.offset) @ trans_x(self.length) @ rot_x(self.twist)

    def matrix(self, q: float = 0.0, prismatic: bool = False) -> np.ndarray:
        """Transform previous link frame <- this link frame for joint variable ``q``."""
        before, after = self.split()
        return before @ joint_motion(q, prismatic) @ after
