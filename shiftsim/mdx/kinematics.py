"""Leg lengths from a platform pose (inverse) and pose from leg lengths (forward).

Pose conventions (the original middleware's math, see docs/mdx.md):

* A pose is ``xyzrpy``: surge x, sway y, heave z of the platform frame's
  origin relative to its neutral position ``(0, 0, initialHeight)``, then roll,
  pitch, yaw. **Real** poses are in mm and degrees; **normalized** poses are
  fractions of ``maxTranslation`` and ``maxRotation`` (±1 is the platform's
  rated range, not a hard limit).
* The platform's orientation is ``R = Rz(yaw) Ry(pitch) Rx(roll)`` (intrinsic
  z-y'-x'' angles), so platform joint i sits at
  ``q_i = R P_i + (x, y, z + initialHeight)`` in the base frame.
* Leg i's length is ``L_i = |q_i - B_i|``; its raw value maps the actuator
  range [min, max] onto [-1, 1]: ``raw_i = -1 + 2 (L_i - min) / (max - min)``.

Internally the forward solver's unknowns are ``(x, y, z)`` in mm and
``(roll, pitch, yaw)`` in radians; :func:`leg_jacobian` is dL/d of those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
from scipy.spatial.transform import Rotation

if TYPE_CHECKING:  # annotations only: geometry validates a platform with these kinematics
    from .geometry import Platform

Units = Literal["normalized", "real"]

FORWARD_TOLERANCE_MM = 1e-9
FORWARD_MAX_ITERATIONS = 50


def pose_scale(platform: Platform) -> np.ndarray:
    """Real units per normalized unit for each of x, y, z (mm), roll, pitch, yaw (deg)."""
    t, r = platform.max_translation_mm, platform.max_rotation_deg
    return np.array([t, t, t, r, r, r])


def real_pose(platform: Platform, xyzrpy: np.ndarray, units: Units = "normalized") -> np.ndarray:
    """The pose in mm and degrees, from ``units``."""
    xyzrpy = np.asarray(xyzrpy, dtype=float)
    return xyzrpy * pose_scale(platform) if units == "normalized" else xyzrpy


def normalized_pose(platform: Platform, xyzrpy_real: np.ndarray) -> np.ndarray:
    """The pose as fractions of maxTranslation / maxRotation."""
    return np.asarray(xyzrpy_real, dtype=float) / pose_scale(platform)


def _rotation(xyzrpy_real: np.ndarray) -> Rotation:
    """R = Rz(yaw) Ry(pitch) Rx(roll) for poses of shape (..., 6)."""
    roll_pitch_yaw = np.radians(np.asarray(xyzrpy_real)[..., 3:6])
    return Rotation.from_euler("ZYX", roll_pitch_yaw[..., ::-1].reshape(-1, 3))


def platform_joints_in_base_mm(platform: Platform, xyzrpy_real: np.ndarray) -> np.ndarray:
    """Platform joint centres in the base frame, shape (..., 6, 3), for poses (..., 6) in mm/deg."""
    pose = np.asarray(xyzrpy_real, dtype=float)
    batch = pose.shape[:-1]
    flat = pose.reshape(-1, 6)
    rotated = np.einsum("nij,kj->nki", _rotation(flat).as_matrix(), platform.platform_joints_mm())
    centre = flat[:, :3] + np.array([0.0, 0.0, platform.initial_height_mm])
    return (rotated + centre[:, None, :]).reshape(*batch, 6, 3)


def leg_vectors_mm(platform: Platform, xyzrpy_real: np.ndarray) -> np.ndarray:
    """Vectors from base joint to platform joint, shape (..., 6, 3), mm."""
    return platform_joints_in_base_mm(platform, xyzrpy_real) - platform.base_joints_mm()


def leg_lengths_mm(platform: Platform, xyzrpy_real: np.ndarray) -> np.ndarray:
    """Leg lengths (..., 6) in mm for poses (..., 6) in mm and degrees."""
    return np.linalg.norm(leg_vectors_mm(platform, xyzrpy_real), axis=-1)


def raw_from_lengths(platform: Platform, lengths_mm: np.ndarray) -> np.ndarray:
    """Raw actuator values: [min, max] mm maps onto [-1, 1] (not clamped)."""
    lengths = np.asarray(lengths_mm, dtype=float)
    return -1.0 + 2.0 * (lengths - platform.actuator_min_mm) / platform.actuator_stroke_mm


def lengths_from_raw(platform: Platform, raw: np.ndarray) -> np.ndarray:
    """Leg lengths in mm from raw actuator values (inverse of :func:`raw_from_lengths`)."""
    raw = np.asarray(raw, dtype=float)
    return platform.actuator_min_mm + 0.5 * (raw + 1.0) * platform.actuator_stroke_mm


def lengths_in_range(platform: Platform, lengths_mm: np.ndarray) -> np.ndarray:
    """Which legs lie within the actuator range [min, max] (booleans)."""
    lengths = np.asarray(lengths_mm, dtype=float)
    return (lengths >= platform.actuator_min_mm) & (lengths <= platform.actuator_max_mm)


@dataclass(frozen=True)
class LegSolution:
    """Leg lengths (mm), raw values and whether each leg is within its actuator range."""

    lengths_mm: np.ndarray
    raw: np.ndarray
    in_range: np.ndarray

    def as_json(self) -> dict[str, list]:
        return {
            "lengths": self.lengths_mm.tolist(),
            "raw": self.raw.tolist(),
            "in_range": [bool(flag) for flag in self.in_range],
        }


def inverse(platform: Platform, xyzrpy: np.ndarray, units: Units = "normalized") -> LegSolution:
    """Leg lengths, raw values and range flags for a pose (normalized or real)."""
    lengths = leg_lengths_mm(platform, real_pose(platform, xyzrpy, units))
    return LegSolution(lengths, raw_from_lengths(platform, lengths), lengths_in_range(platform, lengths))


def leg_jacobian(platform: Platform, xyzrpy_real: np.ndarray) -> np.ndarray:
    """dL_i / d(x, y, z [mm], roll, pitch, yaw [rad]) at one pose: a (6, 6) matrix.

    Translation rows are the leg unit vectors u_i. An Euler-angle rate turns
    the platform about the world axis e_k (yaw about z, pitch about Rz(yaw) y,
    roll about Rz(yaw) Ry(pitch) x), moving joint i by e_k x (R P_i), so
    dL_i/dk = u_i . (e_k x R P_i) = e_k . ((R P_i) x u_i).
    """
    pose = np.asarray(xyzrpy_real, dtype=float)
    legs = leg_vectors_mm(platform, pose)
    units = legs / np.linalg.norm(legs, axis=-1, keepdims=True)
    arms = _rotation(pose).apply(platform.platform_joints_mm())
    roll, pitch, yaw = np.radians(pose[3:6])
    yaw_rotation = Rotation.from_euler("Z", yaw)
    axes = np.stack(
        [
            (yaw_rotation * Rotation.from_euler("Y", pitch)).apply([1.0, 0.0, 0.0]),
            yaw_rotation.apply([0.0, 1.0, 0.0]),
            np.array([0.0, 0.0, 1.0]),
        ]
    )
    return np.hstack([units, np.cross(arms, units) @ axes.T])


@dataclass(frozen=True)
class ForwardResult:
    """A forward-kinematics solution: pose in mm/deg, how the solve ended, leg residual in mm."""

    xyzrpy_real: np.ndarray
    status: Literal["converged", "singular", "not converged"]
    residual_mm: float
    iterations: int

    @property
    def converged(self) -> bool:
        return self.status == "converged"

    def message(self) -> str:
        if self.status == "singular":
            return (
                f"forward kinematics stopped at a singular pose after {self.iterations} iterations "
                f"(leg length residual {self.residual_mm:.3g} mm)"
            )
        if self.status == "not converged":
            return (
                f"forward kinematics did not converge in {self.iterations} iterations "
                f"(leg length residual {self.residual_mm:.3g} mm): the lengths may not form a pose"
            )
        return f"converged in {self.iterations} iterations (leg length residual {self.residual_mm:.3g} mm)"


def forward(
    platform: Platform,
    lengths_mm: np.ndarray,
    tolerance_mm: float = FORWARD_TOLERANCE_MM,
    max_iterations: int = FORWARD_MAX_ITERATIONS,
) -> ForwardResult:
    """The pose whose legs have ``lengths_mm``, by Newton's method from the neutral pose.

    Each step solves J dp = -r with the analytic :func:`leg_jacobian` and halves
    the step until the residual norm decreases. Ends ``converged`` when every
    leg is within ``tolerance_mm``, ``singular`` when J cannot be inverted,
    ``not converged`` when the iterations run out or no step decreases the residual.
    """
    target = np.asarray(lengths_mm, dtype=float)
    if target.shape != (6,):
        raise ValueError(f"forward kinematics needs 6 leg lengths, got shape {target.shape}")
    to_real = np.array([1.0, 1.0, 1.0, *np.degrees(np.ones(3))])
    pose = np.zeros(6)  # x, y, z in mm; roll, pitch, yaw in rad

    def residual(p: np.ndarray) -> np.ndarray:
        return leg_lengths_mm(platform, p * to_real) - target

    r = residual(pose)
    for iteration in range(max_iterations + 1):
        worst = float(np.max(np.abs(r)))
        if worst <= tolerance_mm:
            return ForwardResult(pose * to_real, "converged", worst, iteration)
        if iteration == max_iterations:
            break
        jacobian = leg_jacobian(platform, pose * to_real)
        if not np.linalg.cond(jacobian) < 1e12:
            return ForwardResult(pose * to_real, "singular", worst, iteration)
        step = np.linalg.solve(jacobian, -r)
        norm, scale = np.linalg.norm(r), 1.0
        while scale > 1e-6:
            trial = pose + scale * step
            r_trial = residual(trial)
            if np.linalg.norm(r_trial) < norm:
                pose, r = trial, r_trial
                break
            scale *= 0.5
        else:
            return ForwardResult(pose * to_real, "not converged", worst, iteration)
    return ForwardResult(pose * to_real, "not converged", float(np.max(np.abs(r))), max_iterations)


def workspace_violations(platform: Platform, xyzrpy_real: np.ndarray) -> list[str]:
    """Why a pose (mm, degrees) is outside the platform's workspace; empty when it is inside.

    The workspace is the rated range (|x|, |y|, |z| <= maxTranslation,
    |roll|, |pitch|, |yaw| <= maxRotation) with every leg within actuatorLen.
    """
    pose = np.asarray(xyzrpy_real, dtype=float)
    limits = pose_scale(platform)
    names = ("x", "y", "z", "roll", "pitch", "yaw")
    units = ("mm", "mm", "mm", "deg", "deg", "deg")
    problems = [
        f"{name} {value:g} {unit} exceeds ±{limit:g} {unit}"
        for name, value, limit, unit in zip(names, pose, limits, units)
        if abs(value) > limit
    ]
    lengths = leg_lengths_mm(platform, pose)
    low, high = platform.actuator_min_mm, platform.actuator_max_mm
    problems += [
        f"leg {i} is {length:.2f} mm, outside [{low:g}, {high:g}] mm"
        for i, length in enumerate(lengths)
        if not low <= length <= high
    ]
    return problems
