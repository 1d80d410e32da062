"""The numpy rotation vector of the solver's hot path against scipy's Rotation (the reference conversion)."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from shiftsim.spatial import rotation_error, rotation_vector


def _same_rotation_vector(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Largest difference per row; at a half turn v and -v are the same rotation."""
    straight = np.abs(a - b).max(axis=1)
    flipped = np.where(np.linalg.norm(b, axis=1) > np.pi - 1e-6, np.abs(a + b).max(axis=1), np.inf)
    return np.minimum(straight, flipped)


def test_rotation_vector_equals_scipy_for_random_small_and_half_turn_rotations():
    rng = np.random.default_rng(0)
    axes = rng.normal(size=(300, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    cases = {
        "random": Rotation.random(1000, random_state=1).as_matrix(),
        "tiny": Rotation.from_rotvec(axes * 1e-9).as_matrix(),
        "small": Rotation.from_rotvec(axes * rng.uniform(1e-5, 2e-3, (300, 1))).as_matrix(),
        "half turn": Rotation.from_rotvec(axes * (np.pi - rng.uniform(0.0, 1e-7, (300, 1)))).as_matrix(),
        "identity": np.eye(3)[None],
    }
    for name, matrices in cases.items():
        difference = _same_rotation_vector(rotation_vector(matrices), Rotation.from_matrix(matrices).as_rotvec())
        assert difference.max() < 1e-12, name


def test_rotation_error_keeps_stack_shapes_and_is_the_relative_rotation():
    r_a = Rotation.random(6, random_state=2).as_matrix().reshape(2, 3, 3, 3)
    r_b = Rotation.random(6, random_state=3).as_matrix().reshape(2, 3, 3, 3)
    error = rotation_error(r_a, r_b)
    assert error.shape == (2, 3, 3)
    expected = (Rotation.from_matrix(r_b.reshape(-1, 3, 3)) * Rotation.from_matrix(r_a.reshape(-1, 3, 3)).inv()).as_rotvec()
    np.testing.assert_allclose(error.reshape(-1, 3), expected, atol=1e-12)
