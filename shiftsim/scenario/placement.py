"""Where a machine stands in the scenario world, and the maps between its model frame and the world.

A placement is the rigid transform world <- model: ``p_world = R @ p_model + t``.
``rotation`` is given either as roll/pitch/yaw in degrees, meaning
``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)`` (rotations about the fixed world x, y, z
axes applied in that order; equivalently intrinsic z-y'-x''), or as a 3x3
matrix whose columns are the model axes in world coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import Problems
from ..spatial import is_rotation
from ..typed import bound_of, shown


@dataclass(frozen=True)
class Placement:
    """Rigid transform world <- model (``rotation`` 3x3, ``position`` of the model origin in the world, m)."""

    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    position: np.ndarray = field(default_factory=lambda: np.zeros(3))

    @property
    def matrix(self) -> np.ndarray:
        x = np.eye(4)
        x[:3, :3] = self.rotation
        x[:3, 3] = self.position
        return x

    def vector_to_model(self, world: np.ndarray) -> np.ndarray:
        """Components of a free vector (force, gravity) in model axes: ``R^T v``."""
        return self.rotation.T @ np.asarray(world, float)

    def vector_to_world(self, model: np.ndarray) -> np.ndarray:
        """Components of free vectors ``(..., 3)`` in world axes: ``R v``."""
        return np.asarray(model, float) @ self.rotation.T

    def point_to_world(self, model: np.ndarray) -> np.ndarray:
        """World coordinates of points ``(..., 3)`` given in the model frame."""
        return self.vector_to_world(model) + self.position

    def poses_to_world(self, model: np.ndarray) -> np.ndarray:
        """World poses ``(..., 4, 4)`` of poses given in the model frame."""
        return self.matrix @ np.asarray(model, float)

    def moved(self, values: dict[str, float]) -> Placement:
        """This placement with some of its position components (``x``, ``y``, ``z``, m) and its ``yaw`` (rad, about
        the world z axis, keeping the pitch and roll of ``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``) replaced."""
        position = self.position.copy()
        for axis, name in enumerate("xyz"):
            if name in values:
                position[axis] = values[name]
        rotation = self.rotation
        if "yaw" in values:
            from scipy.spatial.transform import Rotation  # scipy: 0.5 s to import, paid only by placements that turn

            _, pitch, roll = Rotation.from_matrix(self.rotation).as_euler("ZYX")
            rotation = Rotation.from_euler("ZYX", [values["yaw"], pitch, roll]).as_matrix()
        return Placement(rotation, position)

    def then(self, inner: np.ndarray) -> Placement:
        """This placement followed by the rigid transform ``inner`` (4x4, this frame <- model): world <- model."""
        inner = np.asarray(inner, float)
        return Placement(self.rotation @ inner[:3, :3], self.rotation @ inner[:3, 3] + self.position)


def read_placement(value: dict[str, Any] | None, where: str, problems: Problems) -> Placement:
    """Placement from an already schema-checked ``placement`` object; a bad matrix is a problem at ``where``."""
    if not value:
        return Placement()
    position = np.asarray(value.get("position", [0.0, 0.0, 0.0]), float)
    if np.any(np.abs(position) > bound_of("m")):
        problems.add(f"{where}.position", f"is {shown(value['position'])}",
                     f"a position in m within ±{bound_of('m'):g} per component")
        position = np.zeros(3)
    rotation = value.get("rotation")
    if rotation is None:
        return Placement(np.eye(3), position)
    if isinstance(rotation, dict):
        angles = [rotation.get("yaw", 0.0), rotation.get("pitch", 0.0), rotation.get("roll", 0.0)]
        if not any(angles):  # no turn: the identity, exactly as scipy builds it, without importing scipy
            return Placement(np.eye(3), position)
        from scipy.spatial.transform import Rotation  # scipy: 0.5 s to import, paid only by placements that turn

        return Placement(Rotation.from_euler("ZYX", angles, degrees=True).as_matrix(), position)
    matrix = np.asarray(rotation, float)
    if not is_rotation(matrix):
        problems.add(f"{where}.rotation", "the matrix is not a rotation (orthonormal with determinant +1 to 1e-6)",
                     "a proper rotation matrix, or {\"roll\", \"pitch\", \"yaw\"} in degrees")
        return Placement(np.eye(3), position)
    return Placement(matrix, position)
