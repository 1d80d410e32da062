"""Mass properties of triangle meshes.

A closed, consistently oriented triangle mesh bounds a solid. Its volume,
first and second moments follow from the divergence theorem as sums over
signed tetrahedra spanned by a reference point and each triangle: the
tetrahedron ``(0, a, b, c)`` has signed volume ``v = det[a b c] / 6``, first
moment ``v (a + b + c) / 4`` and second moment
``∫ x xᵀ dV = v / 20 (a aᵀ + b bᵀ + c cᵀ + s sᵀ)`` with ``s = a + b + c``.

Exporters often split vertices along sharp edges (one copy per face normal),
so closedness is judged after welding vertices that coincide within a small
tolerance of the mesh size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WELD_TOLERANCE = 1e-7
"""Vertices closer than this fraction of the mesh's bounding-box diagonal are one vertex."""


@dataclass(frozen=True)
class SolidProperties:
    """Unit-density properties of the solid a closed mesh bounds (mesh length units).

    ``second_moment`` is ``∫ (x - centroid)(x - centroid)ᵀ dV`` about the centroid.
    """

    volume: float
    centroid: np.ndarray
    second_moment: np.ndarray

    def inertia(self, mass: float) -> np.ndarray:
        """Inertia tensor about the centroid of this solid with ``mass`` spread uniformly."""
        covariance = self.second_moment * (mass / self.volume)
        return np.trace(covariance) * np.eye(3) - covariance


def weld(vertices: np.ndarray, triangles: np.ndarray, tolerance: float = WELD_TOLERANCE) -> np.ndarray:
    """Triangle indices rewritten so that coincident vertices share one index."""
    if len(vertices) == 0:
        return triangles
    size = float(np.linalg.norm(np.ptp(vertices, axis=0))) or 1.0
    keys = np.round((vertices - vertices.min(axis=0)) / (size * tolerance)).astype(np.int64)
    _, first, group = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    return first[group.reshape(-1)][triangles]


def is_closed(triangles: np.ndarray) -> bool:
    """True when every edge is used exactly twice, once in each direction (welded indices).

    That is the condition for a consistently oriented, watertight surface;
    degenerate triangles (repeated vertex) make the mesh count as open.
    """
    if len(triangles) == 0:
        return False
    if np.any(triangles[:, 0] == triangles[:, 1]) or np.any(triangles[:, 1] == triangles[:, 2]) or np.any(
        triangles[:, 2] == triangles[:, 0]
    ):
        return False
    directed = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])
    unique_directed = np.unique(directed, axis=0)
    if len(unique_directed) != len(directed):
        return False  # an edge traversed twice in the same direction: inconsistent orientation
    reversed_edges = directed[:, ::-1]
    merged = np.unique(np.concatenate([directed, reversed_edges]), axis=0)
    return len(merged) == len(directed)  # every reverse edge is itself present


def solid_properties(vertices: np.ndarray, triangles: np.ndarray) -> SolidProperties:
    """Volume, centroid and central second moment of the solid bounded by a closed mesh.

    An inward-facing mesh (negative signed volume) is treated as its outward twin.
    The caller checks closedness first (:func:`is_closed`).
    """
    reference = vertices.mean(axis=0)
    a, b, c = (vertices[triangles[:, k]] - reference for k in range(3))
    tetra_volumes = np.einsum("ij,ij->i", a, np.cross(b, c)) / 6.0
    s = a + b + c
    volume = float(tetra_volumes.sum())
    first = (tetra_volumes[:, None] * s).sum(axis=0) / 4.0
    outer = np.einsum("ti,tj->tij", a, a) + np.einsum("ti,tj->tij", b, b) + np.einsum("ti,tj->tij", c, c)
    outer += np.einsum("ti,tj->tij", s, s)
    second = np.einsum("t,tij->ij", tetra_volumes, outer) / 20.0
    if volume < 0.0:
        volume, first, second = -volume, -first, -second
    centroid_offset = first / volume
    central = second - volume * np.outer(centroid_offset, centroid_offset)
    return SolidProperties(volume=volume, centroid=reference + centroid_offset, second_moment=central)


def box_inertia(mass: float, half_extents: np.ndarray) -> np.ndarray:
    """Inertia of a solid box about its centre along its edges: m/3 (b² + c²) ... for half extents."""
    squares = np.asarray(half_extents, dtype=float) ** 2
    return np.diag(mass / 3.0 * (squares.sum() - squares))
