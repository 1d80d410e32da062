"""Signed distances of shape pairs in the collision world against closed forms and a second algorithm.

Each pair is two one-body "machines" posed directly. Closed forms: sphere
against anything is the point's signed distance to the other shape minus the
radius (exact for convex shapes, apart or overlapping); box, cylinder pairs
in configurations whose contact is known by hand (face on face, vertex on
face, edge on face, side on side, rim on face), each also moved as a whole by
random rigid motions (distance is invariant). Random box pairs are checked
against bound-constrained minimisation (apart) and the separating-axis
theorem (overlapping), written here independently of the library.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.spatial.transform import Rotation

from shiftsim.collision.world import CollisionWorld
from shiftsim.model import compile_model
from shiftsim.spec import BodySpec, FrameRef, JointSpec, ModelSpec, ShapeSpec

TOLERANCE = 1e-4  # m, the requirement
RNG_SEED = 20240601


def solid(shape: ShapeSpec):
    """A model with one body carrying ``shape`` (at its origin), rigidly on ``fixed``."""
    body = BodySpec("part", mass=1.0, inertia=np.eye(3), shapes=[shape])
    spec = ModelSpec("solid", "test", "test", bodies=[body],
                     joints=[JointSpec("mount", "rigid", FrameRef("fixed"), FrameRef("part"))])
    return compile_model(spec)


def box(hx: float, hy: float, hz: float) -> ShapeSpec:
    return ShapeSpec("box", "box", half_extents=np.array([hx, hy, hz]))


def sphere(r: float) -> ShapeSpec:
    return ShapeSpec("ball", "sphere", radius=r)


def cylinder(r: float, length: float) -> ShapeSpec:
    return ShapeSpec("can", "cylinder", radius=r, length=length)


def pose(rotation: np.ndarray | Rotation = np.eye(3), position=(0.0, 0.0, 0.0)) -> np.ndarray:
    x = np.eye(4)
    x[:3, :3] = rotation.as_matrix() if isinstance(rotation, Rotation) else rotation
    x[:3, 3] = position
    return x


def query(shape_a: ShapeSpec, poses_a: np.ndarray, shape_b: ShapeSpec, poses_b: np.ndarray):
    """The world's result for shapes a and b at poses (B, 4, 4) each."""
    poses_a, poses_b = np.asarray(poses_a).reshape(-1, 4, 4), np.asarray(poses_b).reshape(-1, 4, 4)
    fixed = np.broadcast_to(np.eye(4), poses_a.shape)
    with CollisionWorld([("a", solid(shape_a)), ("b", solid(shape_b))]) as world:
        return world.query([np.stack([fixed, poses_a], 1), np.stack([fixed, poses_b], 1)])


def rigid_motions(count: int, rng: np.random.Generator) -> list[np.ndarray]:
    return [pose(Rotation.random(random_state=rng), rng.uniform(-3, 3, 3)) for _ in range(count)]


# ---------------------------------------------------------------------- independent closed forms
def point_to_box(point: np.ndarray, half: np.ndarray) -> float:
    """Signed distance of a point (box coordinates) to a centred box."""
    outside = np.abs(point) - half
    if np.all(outside <= 0):
        return float(outside.max())
    return float(np.linalg.norm(np.maximum(outside, 0.0)))


def point_to_cylinder(point: np.ndarray, radius: float, length: float) -> float:
    """Signed distance of a point (cylinder coordinates, axis z) to a centred solid cylinder."""
    radial = math.hypot(point[0], point[1]) - radius
    axial = abs(point[2]) - length / 2
    if radial <= 0 and axial <= 0:
        return max(radial, axial)
    return math.hypot(max(radial, 0.0), max(axial, 0.0))


def in_frame(x: np.ndarray, point: np.ndarray) -> np.ndarray:
    return x[:3, :3].T @ (point - x[:3, 3])


def sat_box_box(xa, ha, xb, hb) -> float:
    """Separating-axis signed distance of two boxes (exact when they overlap)."""
    ra, rb = xa[:3, :3], xb[:3, :3]
    axes = [*ra.T, *rb.T] + [np.cross(u, v) for u in ra.T for v in rb.T]
    best = -math.inf
    for n in axes:
        if np.linalg.norm(n) < 1e-9:
            continue
        n = n / np.linalg.norm(n)
        reach = np.abs(ra.T @ n) @ ha + np.abs(rb.T @ n) @ hb
        best = max(best, abs(n @ (xb[:3, 3] - xa[:3, 3])) - reach)
    return best


def minimised_box_box(xa, ha, xb, hb) -> float:
    """Distance of two apart boxes: min |p - q| over the boxes' own coordinates, which are simple bounds."""
    def gap(uv):
        return xa[:3, :3] @ uv[:3] + xa[:3, 3] - xb[:3, :3] @ uv[3:] - xb[:3, 3]

    def objective(uv):
        g = gap(uv)
        return g @ g, np.concatenate([2 * xa[:3, :3].T @ g, -2 * xb[:3, :3].T @ g])

    bounds = [(-h, h) for h in (*ha, *hb)]
    best = math.inf
    towards = np.concatenate([in_frame(xa, xb[:3, 3]).clip(-ha, ha), in_frame(xb, xa[:3, 3]).clip(-hb, hb)])
    for start in (np.zeros(6), towards):
        result = minimize(objective, start, jac=True, method="L-BFGS-B", bounds=bounds,
                          options={"ftol": 1e-16, "gtol": 1e-13, "maxiter": 2000})
        best = min(best, math.sqrt(max(result.fun, 0.0)))
    return best


# ---------------------------------------------------------------------- spheres
def test_sphere_sphere_apart_and_overlapping_match_centre_distance_minus_radii():
    rng = np.random.default_rng(RNG_SEED)
    centres_a, centres_b = rng.uniform(-0.6, 0.6, (200, 3)), rng.uniform(-0.6, 0.6, (200, 3))
    result = query(sphere(0.4), [pose(Rotation.random(random_state=rng), c) for c in centres_a],
                   sphere(0.3), [pose(Rotation.random(random_state=rng), c) for c in centres_b])
    expected = np.linalg.norm(centres_b - centres_a, axis=1) - 0.7
    assert (expected < 0).sum() > 20 and (expected > 0).sum() > 20
    np.testing.assert_allclose(result.distance[:, 0], expected, atol=TOLERANCE)


@pytest.mark.slow
@pytest.mark.parametrize("other, point_distance", [
    (box(0.5, 0.3, 0.2), lambda p: point_to_box(p, np.array([0.5, 0.3, 0.2]))),
    (cylinder(0.4, 1.2), lambda p: point_to_cylinder(p, 0.4, 1.2)),
    (sphere(0.35), lambda p: float(np.linalg.norm(p)) - 0.35),
], ids=["box", "cylinder", "sphere"])
def test_sphere_against_rotated_shapes_matches_the_point_distance_minus_the_radius(other, point_distance):
    rng = np.random.default_rng(RNG_SEED)
    radius = 0.25
    spheres = [pose(np.eye(3), c) for c in rng.uniform(-0.8, 0.8, (300, 3))]
    others = [pose(Rotation.random(random_state=rng), rng.uniform(-0.2, 0.2, 3)) for _ in range(300)]
    result = query(sphere(radius), spheres, other, others)
    expected = np.array([point_distance(in_frame(o, s[:3, 3])) - radius for s, o in zip(spheres, others)])
    assert (expected < 0).sum() > 30 and (expected > 0).sum() > 30
    np.testing.assert_allclose(result.distance[:, 0], expected, atol=TOLERANCE)
    # witness points: on the sphere's surface, and the distance apart along the normal
    on_a, on_b = result.points[:, 0, 0], result.points[:, 0, 1]
    centres = np.array([s[:3, 3] for s in spheres])
    np.testing.assert_allclose(np.linalg.norm(on_a - centres, axis=1), radius, atol=TOLERANCE)
    np.testing.assert_allclose(np.einsum("ij,ij->i", on_b - on_a, result.normal[:, 0]), expected, atol=TOLERANCE)


# ---------------------------------------------------------------------- boxes
def box_cases():
    """(half extents a, pose a, half extents b, pose b, exact signed distance) worked out by hand."""
    ha, hb = np.array([1.0, 0.6, 0.4]), np.array([0.5, 0.3, 0.2])
    yield "face on face", ha, pose(), hb, pose(position=(1.8, 0.2, -0.1)), 0.3
    yield "face into face", ha, pose(), hb, pose(position=(1.35, 0.2, -0.1)), -0.15
    yield "deep overlap, thinnest way out", ha, pose(), hb, pose(position=(0.1, 0.0, 0.25)), 0.25 - 0.6
    gaps = np.array([0.3, 0.4, 1.2])  # vertex to vertex: corners (1, .6, .4) and (c - (.5, .3, .2))
    yield "vertex to vertex", ha, pose(), hb, pose(position=ha + hb + gaps), float(np.linalg.norm(gaps))
    turned = Rotation.from_euler("z", 45, degrees=True)  # b's vertical edge faces a's +x face
    edge = (0.5 + 0.3) / math.sqrt(2)
    yield "edge on face", ha, pose(), hb, pose(turned, (1.0 + edge + 0.25, 0.1, 0.0)), 0.25
    yield "edge into face", ha, pose(), hb, pose(turned, (1.0 + edge - 0.05, 0.1, 0.0)), -0.05
    cube = np.full(3, 0.3)  # b a cube turned so that its main diagonal lies along x: a vertex faces a's face
    diagonal = Rotation.align_vectors([[1.0, 0.0, 0.0]], [[1.0, 1.0, 1.0]])[0]
    yield "vertex on face", ha, pose(), cube, pose(diagonal, (1.0 + 0.3 * math.sqrt(3) + 0.1, 0.0, 0.0)), 0.1


@pytest.mark.parametrize("name, ha, xa, hb, xb, expected", list(box_cases()), ids=[c[0] for c in box_cases()])
def test_box_box_closed_forms_hold_under_rigid_motions(name, ha, xa, hb, xb, expected):
    motions = [np.eye(4), *rigid_motions(30, np.random.default_rng(RNG_SEED))]
    result = query(box(*ha), [m @ xa for m in motions], box(*hb), [m @ xb for m in motions])
    np.testing.assert_allclose(result.distance[:, 0], expected, atol=TOLERANCE)


@pytest.mark.slow
def test_random_box_pairs_match_minimisation_when_apart_and_separating_axes_when_overlapping():
    rng = np.random.default_rng(RNG_SEED)
    ha, hb = np.array([0.8, 0.3, 0.5]), np.array([0.4, 0.6, 0.2])
    xa = [pose(Rotation.random(random_state=rng), rng.uniform(-0.8, 0.8, 3)) for _ in range(150)]
    xb = [pose(Rotation.random(random_state=rng), rng.uniform(-0.8, 0.8, 3)) for _ in range(150)]
    result = query(box(*ha), xa, box(*hb), xb)
    apart = overlapping = 0
    for k, (a, b) in enumerate(zip(xa, xb)):
        sat = sat_box_box(a, ha, b, hb)
        if sat < 0:
            overlapping += 1
            assert result.distance[k, 0] == pytest.approx(sat, abs=TOLERANCE)
        else:
            apart += 1
            assert result.distance[k, 0] == pytest.approx(minimised_box_box(a, ha, b, hb), abs=TOLERANCE)
    assert apart > 20 and overlapping > 20


# ---------------------------------------------------------------------- cylinders
def cylinder_cases():
    """(shape a, pose a, shape b, pose b, exact signed distance); cylinders along their z axes."""
    r, length = 0.3, 1.0
    slab = box(2.0, 2.0, 0.5)  # top face at z = 0.5
    yield "standing on a face", slab, pose(), cylinder(r, length), pose(position=(0.2, -0.3, 0.5 + 0.5 + 0.2)), 0.2
    lying = Rotation.from_euler("x", 90, degrees=True)
    yield "lying on a face", slab, pose(), cylinder(r, length), pose(lying, (0.1, 0.0, 0.5 + r + 0.15)), 0.15
    yield "lying into a face", slab, pose(), cylinder(r, length), pose(lying, (0.1, 0.0, 0.5 + r - 0.04)), -0.04
    tilt = math.radians(30)  # rim on a face: lowest point r sin(t) + L/2 cos(t) below the centre
    low = r * math.sin(tilt) + length / 2 * math.cos(tilt)
    tilted = Rotation.from_euler("x", tilt)
    yield "rim on a face", slab, pose(), cylinder(r, length), pose(tilted, (0.0, 0.0, 0.5 + low + 0.07)), 0.07
    yield "rim into a face", slab, pose(), cylinder(r, length), pose(tilted, (0.0, 0.0, 0.5 + low - 0.03)), -0.03
    side = cylinder(0.25, 2.0)
    yield "side by side", cylinder(r, length), pose(), side, pose(position=(0.3, 0.4, 0.1)), 0.5 - 0.55
    yield "side by side apart", cylinder(r, length), pose(), side, pose(position=(0.6, 0.8, 0.1)), 1.0 - 0.55
    crossed = Rotation.from_euler("y", 90, degrees=True)  # axes x and z, 0.7 apart along y
    yield "crossed apart", cylinder(r, 3.0), pose(), side, pose(crossed, (0.0, 0.7, 0.0)), 0.7 - 0.55
    yield "crossed into", cylinder(r, 3.0), pose(), side, pose(crossed, (0.0, 0.5, 0.0)), 0.5 - 0.55
    yield "cap on cap", cylinder(r, length), pose(), side, pose(position=(0.1, 0.0, 0.5 + 1.0 + 0.12)), 0.12


@pytest.mark.parametrize("name, sa, xa, sb, xb, expected", list(cylinder_cases()), ids=[c[0] for c in cylinder_cases()])
def test_cylinder_closed_forms_hold_under_rigid_motions(name, sa, xa, sb, xb, expected):
    motions = [np.eye(4), *rigid_motions(30, np.random.default_rng(RNG_SEED))]
    result = query(sa, [m @ xa for m in motions], sb, [m @ xb for m in motions])
    np.testing.assert_allclose(result.distance[:, 0], expected, atol=TOLERANCE)


@pytest.mark.slow
def test_random_cylinder_pairs_are_certified_or_refined_to_the_separation_maximum():
    """Far from a closed form: the reported distance is the maximum over directions of the shadows' gap,
    checked here by a dense scan of directions (a lower bound) and the witness points (an upper bound when apart)."""
    rng = np.random.default_rng(RNG_SEED)
    xa = [pose(Rotation.random(random_state=rng), rng.uniform(-0.5, 0.5, 3)) for _ in range(60)]
    xb = [pose(Rotation.random(random_state=rng), rng.uniform(-0.5, 0.5, 3)) for _ in range(60)]
    result = query(cylinder(0.3, 1.0), xa, cylinder(0.25, 0.8), xb)
    directions = rng.normal(size=(200_000, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)

    def support(x, r, half, n):
        local = n @ x[:3, :3]
        return n @ x[:3, 3] + r * np.hypot(local[:, 0], local[:, 1]) + half * np.abs(local[:, 2])

    for k, (a, b) in enumerate(zip(xa, xb)):
        scanned = np.max(-support(a, 0.3, 0.5, directions) - support(b, 0.25, 0.4, -directions))
        distance = result.distance[k, 0]
        assert distance >= scanned - 1e-9  # no direction separates them more than reported
        assert distance == pytest.approx(scanned, abs=5e-3)  # the scan is coarse: 200 000 directions
        if distance > 0:
            gap = np.linalg.norm(result.points[k, 0, 1] - result.points[k, 0, 0])
            assert gap == pytest.approx(distance, abs=TOLERANCE)
