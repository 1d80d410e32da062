"""Mesh mass properties (divergence theorem) against closed forms."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from shiftsim.formats.mirabuf.mesh import box_inertia, is_closed, solid_properties, weld


def box_triangles(low, high) -> tuple[np.ndarray, np.ndarray]:
    """Outward-facing box mesh with 3 unshared vertices per triangle (as Fusion exports them)."""
    low, high = np.asarray(low, float), np.asarray(high, float)
    corners = np.array(list(itertools.product(*zip(low, high))))  # index bits: x*4 + y*2 + z
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    centre = (low + high) / 2
    triangles = []
    for a, b, c, d in faces:
        for tri in ((a, b, c), (a, c, d)):
            p = corners[list(tri)]
            if np.cross(p[1] - p[0], p[2] - p[0]) @ (p.mean(axis=0) - centre) < 0:
                tri = tri[::-1]
            triangles.append(tri)
    vertices = corners[np.array(triangles).reshape(-1)]
    return vertices, np.arange(len(vertices)).reshape(-1, 3)


def test_box_volume_centroid_and_inertia_match_closed_form():
    low, high = np.array([1.0, -2.0, 0.5]), np.array([4.0, 3.0, 1.5])
    vertices, triangles = box_triangles(low, high)
    welded = weld(vertices, triangles)
    assert not is_closed(triangles)  # unshared vertices: open until welded
    assert is_closed(welded)
    solid = solid_properties(vertices, welded)
    a, b, c = high - low
    assert np.isclose(solid.volume, a * b * c)
    assert np.allclose(solid.centroid, (low + high) / 2)
    mass = 7.0
    expected = mass / 12 * np.diag([b**2 + c**2, a**2 + c**2, a**2 + b**2])
    assert np.allclose(solid.inertia(mass), expected)
    assert np.allclose(box_inertia(mass, (high - low) / 2), expected)


def test_right_tetrahedron_matches_closed_form_including_products():
    a, b, c = 2.0, 3.0, 5.0
    vertices = np.array([[0, 0, 0], [a, 0, 0], [0, b, 0], [0, 0, c]], float)
    triangles = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    assert is_closed(triangles)
    solid = solid_properties(vertices, triangles)
    assert np.isclose(solid.volume, a * b * c / 6)
    assert np.allclose(solid.centroid, [a / 4, b / 4, c / 4])
    m = 3.0
    expected = np.array([
        [3 * m / 80 * (b**2 + c**2), m * a * b / 80, m * a * c / 80],
        [m * a * b / 80, 3 * m / 80 * (a**2 + c**2), m * b * c / 80],
        [m * a * c / 80, m * b * c / 80, 3 * m / 80 * (a**2 + b**2)],
    ])
    assert np.allclose(solid.inertia(m), expected)


def test_inward_facing_mesh_gives_the_same_solid():
    vertices, triangles = box_triangles([0, 0, 0], [1, 2, 3])
    inward = triangles[:, ::-1]
    welded = weld(vertices, inward)
    assert is_closed(welded)
    solid = solid_properties(vertices, welded)
    assert np.isclose(solid.volume, 6.0)
    assert np.allclose(solid.inertia(1.0), box_inertia(1.0, [0.5, 1.0, 1.5]))


def test_open_and_inconsistent_meshes_are_not_closed():
    vertices, triangles = box_triangles([0, 0, 0], [1, 1, 1])
    welded = weld(vertices, triangles)
    assert not is_closed(welded[:-2])  # one face missing
    flipped = welded.copy()
    flipped[0] = flipped[0, ::-1]  # one triangle facing the wrong way
    assert not is_closed(flipped)
    assert not is_closed(np.zeros((0, 3), dtype=int))


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.floats(0.1, 5.0), min_size=3, max_size=3),
    st.lists(st.floats(-10.0, 10.0), min_size=3, max_size=3),
    st.integers(0, 2**31 - 1),
)
def test_rotated_box_inertia_is_rotated_closed_form(sides, offset, seed):
    rotation = Rotation.random(random_state=seed).as_matrix()
    half = np.array(sides) / 2
    vertices, triangles = box_triangles(-half, half)
    moved = vertices @ rotation.T + np.array(offset)
    solid = solid_properties(moved, weld(moved, triangles))
    assert np.allclose(solid.centroid, offset, atol=1e-9)
    expected = rotation @ box_inertia(2.0, half) @ rotation.T
    assert np.allclose(solid.inertia(2.0), expected, atol=1e-9 * max(sides) ** 2)
