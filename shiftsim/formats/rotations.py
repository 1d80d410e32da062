"""The rotation rule every reader applies to a rotation written as a 3x3 matrix.

Files round matrices: a 2 degree rotation typed to five decimals has
``max |R^T R - I|`` = 1.6e-6. A matrix within :data:`ROTATION_TOLERANCE`
(1e-3) of orthonormal, with positive determinant, is accepted and replaced by
the nearest rotation (polar decomposition: ``U V^T`` from the SVD ``M = U S
V^T``, the rotation closest in the Frobenius norm). Beyond the tolerance, or
with a negative determinant (a reflection), it is refused with the number.

A reader keeps one :class:`RotationRounding` per file; it remembers the worst
deviation above :data:`ROUNDING_NOTICE` and where it was, so the file gets one
warning (:meth:`RotationRounding.warning`) however many matrices were rounded.
Deviations below :data:`ROUNDING_NOTICE` are float rounding and pass silently.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..typed import Mismatch

ROTATION_TOLERANCE = 1e-3
"""Largest accepted ``max |R^T R - I|`` of a rotation matrix in a file."""

ROUNDING_NOTICE = 1e-6
"""Deviations above this are reported (once per file); below it they are float rounding."""


def nearest_rotation(matrix: np.ndarray) -> tuple[np.ndarray, float]:
    """``(R, deviation)``: the rotation nearest to the 3x3 ``matrix`` and its ``max |M^T M - I|``.

    Raises :class:`~shiftsim.typed.Mismatch` beyond :data:`ROTATION_TOLERANCE`
    or when the determinant is not positive.
    """
    matrix = np.asarray(matrix, dtype=float)
    deviation = float(np.max(np.abs(matrix.T @ matrix - np.eye(3))))
    det = float(np.linalg.det(matrix))
    expected = f"a rotation matrix: orthonormal within {ROTATION_TOLERANCE:g}, determinant +1"
    if not deviation <= ROTATION_TOLERANCE:
        raise Mismatch(f"is not a rotation matrix: max |R^T R - I| = {deviation:.3g}", expected)
    if not det > 0.0:
        raise Mismatch(f"is a reflection, not a rotation: det R = {det:.6g}", expected)
    u, _, vt = np.linalg.svd(matrix)
    return u @ vt, deviation


@dataclass
class RotationRounding:
    """The rotations of one file: each made exact, the worst rounding remembered for one warning."""

    count: int = 0
    worst: float = 0.0
    worst_place: str = ""

    def rotation(self, matrix: np.ndarray, place: str) -> np.ndarray:
        """The nearest rotation to ``matrix`` (found at ``place``); raises ``Mismatch`` as :func:`nearest_rotation`."""
        rotation, deviation = nearest_rotation(matrix)
        if deviation > ROUNDING_NOTICE:
            self.count += 1
            if deviation > self.worst:
                self.worst, self.worst_place = deviation, place
        return rotation

    def warning(self, one: str = "a rotation matrix", many: str = "rotation matrices") -> str | None:
        """The file's one rounding warning, or ``None`` when nothing was rounded; ``one``/``many`` name
        what was read (CLARAty's quaternions are "a rotation"/"rotations")."""
        if not self.count:
            return None
        several = f"{self.count} {many} are" if self.count > 1 else f"{one} is"
        return (f"{several} not orthonormal (worst max |R^T R - I| = {self.worst:.2g} at {self.worst_place}); "
                f"replaced by the nearest rotation")
