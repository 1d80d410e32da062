"""The ground of a scenario world (z up): a level plane or a regular x-y height grid, bilinear.

``height(xy)`` returns the height h (B, n), its gradient (B, n, 2) and the
cross derivative d2h/dx dy (B, n) at world points ``xy`` (B, n, 2); within a
grid cell the bilinear surface has d2h/dx2 = d2h/dy2 = 0. Outside the grid the
edge cells are extended (the surface continues with the slope of the
outermost cells).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_FRICTION = 0.6
DEFAULT_SINKAGE = 0.002  # m: the default normal stiffness lets a machine sink this much under its own weight


@dataclass(frozen=True)
class Ground:
    """Ground surface and contact laws.

    ``level``: the height (m) of a level plane; ``grid``: ``(x (nx,), y (ny,), z (nx, ny))`` with
    strictly increasing x and y (m), replacing the plane when given. ``stiffness``: normal
    stiffness per contact (N/m; None: chosen from the machine's weight, see
    :func:`default_stiffness`); ``tangential_stiffness`` (N/m, None: the normal stiffness);
    ``friction``: Coulomb coefficient.
    """

    level: float = 0.0
    grid: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    stiffness: float | None = None
    tangential_stiffness: float | None = None
    friction: float = DEFAULT_FRICTION

    def height(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """h (...), gradient (..., 2) and d2h/dxdy (...) at points ``xy`` (..., 2)."""
        xy = np.asarray(xy, float)
        if self.grid is None:
            shape = xy.shape[:-1]
            return np.full(shape, self.level), np.zeros((*shape, 2)), np.zeros(shape)
        gx, gy, gz = self.grid
        i = np.clip(np.searchsorted(gx, xy[..., 0], side="right") - 1, 0, len(gx) - 2)
        j = np.clip(np.searchsorted(gy, xy[..., 1], side="right") - 1, 0, len(gy) - 2)
        wx, wy = gx[i + 1] - gx[i], gy[j + 1] - gy[j]
        u, v = (xy[..., 0] - gx[i]) / wx, (xy[..., 1] - gy[j]) / wy
        z00, z10, z01, z11 = gz[i, j], gz[i + 1, j], gz[i, j + 1], gz[i + 1, j + 1]
        twist = z00 - z10 - z01 + z11
        h = z00 + (z10 - z00) * u + (z01 - z00) * v + twist * u * v
        gradient = np.stack([((z10 - z00) + twist * v) / wx, ((z01 - z00) + twist * u) / wy], axis=-1)
        return h, gradient, twist / (wx * wy)


def default_stiffness(weight: float, contacts: int, sinkage: float = DEFAULT_SINKAGE) -> float:
    """Normal stiffness per contact (N/m) with which ``contacts`` equally loaded contacts carrying ``weight`` (N)
    sink ``sinkage`` (m): ``weight / (contacts * sinkage)``."""
    return weight / (contacts * sinkage)
