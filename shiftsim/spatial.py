"""Rigid-transform helpers on 4x4 homogeneous matrices (float64).

A transform ``X_a_b`` maps coordinates in frame b to frame a:
``p_a = X_a_b[:3, :3] @ p_b + X_a_b[:3, 3]``. Rotation conversions go through
``scipy.spatial.transform.Rotation``.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation


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


def rotation_about(axis: np.ndarray, angle: float) -> np.ndarray:
    """3x3 right-handed rotation by ``angle`` (rad) about the unit vector ``axis``."""
    return Rotation.from_rotvec(np.asarray(axis, float) * angle).as_matrix()


def rotation_error(r_target: np.ndarray, r_actual: np.ndarray) -> np.ndarray:
    """World-frame rotation vector taking ``r_target`` to ``r_actual``: rotvec(R_actual R_target^T).

    Works on stacks ``(..., 3, 3)``.
    """
    relative = r_actual @ np.swapaxes(r_target, -1, -2)
    shape = relative.shape[:-2]
    return Rotation.from_matrix(relative.reshape(-1, 3, 3)).as_rotvec().reshape(*shape, 3)


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
