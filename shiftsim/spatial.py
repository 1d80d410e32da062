"""Rigid-transform helpers on 4x4 homogeneous matrices (float64).

A transform ``X_a_b`` maps coordinates in frame b to frame a:
``p_a = X_a_b[:3, :3] @ p_b + X_a_b[:3, 3]``.

The rotation builders the readers apply to every model (:func:`rotation_about`,
:func:`euler_rotation`, :func:`quaternion_matrix`) and the solver's
:func:`rotation_vector` are numpy: importing ``scipy.spatial.transform`` takes
0.19 s (it loads scipy.spatial with its KD-tree and Qhull), more than
``shiftsim check`` needs for a whole model. They equal scipy's ``Rotation``
conversions to round-off (tests/commands/test_startup.py, tests/kinematics/test_spatial.py); other
conversions use ``Rotation``, imported where they happen.
"""

from __future__ import annotations

import numpy as np


def transform(rotation: np.ndarray | None = None, translation: np.ndarray | None = None) -> np.ndarray:
    """4x4 transform from a 3x3 rotation and a translation (identity / zero when omitted)."""
    x = np.eye(4)
    if rotation is not None:
        x[:3, :3] = rotation
    if translation is not None:
        x[:3, 3] = translation
    return x


def inverse(x: np.ndarray) -> np.ndarray:
    """Inverse of rigid transforms ``(..., 4, 4)``."""
    out = np.zeros_like(x)
    rt = np.swapaxes(x[..., :3, :3], -1, -2)
    out[..., :3, :3] = rt
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", rt, x[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def skew(v: np.ndarray) -> np.ndarray:
    """The 3x3 cross-product matrix of ``v`` (3,): ``skew(v) @ w == cross(v, w)``."""
    x, y, z = np.asarray(v, float)
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def rotation_about(axis: np.ndarray, angle: float) -> np.ndarray:
    """3x3 right-handed rotation by ``angle`` (rad) about the unit vector ``axis`` (3,).

    Rodrigues' formula on the rotation vector ``axis * angle`` (as ``Rotation.from_rotvec``; a non-unit
    ``axis`` scales the angle by its length).
    """
    rotvec = np.asarray(axis, float) * angle
    turn = float(np.linalg.norm(rotvec))
    if turn == 0.0:
        return np.eye(3)
    k = skew(rotvec / turn)
    return np.eye(3) + np.sin(turn) * k + (1.0 - np.cos(turn)) * (k @ k)


_AXES = {"X": np.array([1.0, 0.0, 0.0]), "Y": np.array([0.0, 1.0, 0.0]), "Z": np.array([0.0, 0.0, 1.0])}


def euler_rotation(sequence: str, angles: np.ndarray) -> np.ndarray:
    """3x3 rotation of intrinsic Euler angles (rad, (3,)) about the moving axes ``sequence`` ("ZYX", "XYZ",
    "ZYZ", ... upper case): ``R = R_1(a_1) R_2(a_2) R_3(a_3)``, as ``Rotation.from_euler(sequence, angles)``."""
    if len(sequence) != 3 or not set(sequence) <= set(_AXES):
        raise ValueError(f"Euler sequence {sequence!r}: expected three of the intrinsic axes X, Y, Z")
    rotation = np.eye(3)
    for name, angle in zip(sequence, np.asarray(angles, float), strict=True):
        rotation = rotation @ rotation_about(_AXES[name], float(angle))
    return rotation


def quaternion_matrix(q: np.ndarray) -> np.ndarray:
    """The 3x3 matrix of the quaternion ``q = (x, y, z, w)`` (4,), scalar last, *not* normalised:
    ``|q|^2`` times the rotation of ``q / |q|`` (so ``R^T R = |q|^4 I``); a unit ``q`` gives
    ``Rotation.from_quat(q).as_matrix()``."""
    x, y, z, w = np.asarray(q, float)
    v = np.array([x, y, z])
    return (w * w - v @ v) * np.eye(3) + 2.0 * np.outer(v, v) + 2.0 * w * skew(v)


def rotation_error(r_target: np.ndarray, r_actual: np.ndarray) -> np.ndarray:
    """World-frame rotation vector taking ``r_target`` to ``r_actual``: rotvec(R_actual R_target^T).

    Works on stacks ``(..., 3, 3)``.
    """
    relative = r_actual @ np.swapaxes(r_target, -1, -2)
    return rotation_vector(relative)


def rotation_vector(r: np.ndarray) -> np.ndarray:
    """Rotation vector (..., 3) of rotation matrices (..., 3, 3), angle in [0, pi].

    The same conversion as ``Rotation.from_matrix(r).as_rotvec()`` (a unit quaternion from the largest of
    the trace and the diagonal, then ``2 atan2(|v|, w)`` along v) written in numpy for stacks of matrices
    (joint-load reports, inverse kinematics), where scipy's per-call cost is most of the work; the solver's
    loop closure uses the C version (core/src/closures.c). Agrees with scipy to round-off (tested, identity
    and half turns included).
    """
    m = np.asarray(r, float)
    shape = m.shape[:-2]
    m = m.reshape(-1, 3, 3)
    diagonal = np.diagonal(m, axis1=1, axis2=2)
    trace = diagonal.sum(axis=1)
    choice = np.argmax(np.concatenate([diagonal, trace[:, None]], axis=1), axis=1)
    quaternion = np.empty((len(m), 4))  # x, y, z, w
    for i in range(3):  # the largest diagonal element: that component first
        j, k = (i + 1) % 3, (i + 2) % 3
        rows = choice == i
        mi = m[rows]
        quaternion[rows, i] = 1.0 - trace[rows] + 2.0 * mi[:, i, i]
        quaternion[rows, j] = mi[:, j, i] + mi[:, i, j]
        quaternion[rows, k] = mi[:, k, i] + mi[:, i, k]
        quaternion[rows, 3] = mi[:, k, j] - mi[:, j, k]
    rows = choice == 3  # the trace largest
    mt = m[rows]
    quaternion[rows, 0] = mt[:, 2, 1] - mt[:, 1, 2]
    quaternion[rows, 1] = mt[:, 0, 2] - mt[:, 2, 0]
    quaternion[rows, 2] = mt[:, 1, 0] - mt[:, 0, 1]
    quaternion[rows, 3] = 1.0 + trace[rows]
    quaternion /= np.linalg.norm(quaternion, axis=1, keepdims=True)
    quaternion *= np.where(quaternion[:, 3:] < 0.0, -1.0, 1.0)  # w >= 0: the angle in [0, pi]
    vector = quaternion[:, :3]
    angle = 2.0 * np.arctan2(np.linalg.norm(vector, axis=1), quaternion[:, 3])
    small = angle <= 1e-3
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(small, 2.0 + angle**2 / 12.0 + 7.0 * angle**4 / 2880.0, angle / np.sin(angle / 2.0))
    return (scale[:, None] * vector).reshape(*shape, 3)


def is_rotation(r: np.ndarray, tolerance: float = 1e-6) -> bool:
    """True when ``r`` is orthonormal with determinant +1 within ``tolerance``."""
    r = np.asarray(r, float)
    return (
        r.shape == (3, 3)
        and bool(np.all(np.isfinite(r)))
        and np.allclose(r @ r.T, np.eye(3), atol=tolerance)
        and abs(np.linalg.det(r) - 1.0) < tolerance
    )


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product over the last axis (size 3) with broadcasting; faster than np.cross on small stacks."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
