"""A standing machine's collision shapes below the ground make its equilibrium impossible, named with their
depth: the lowest point of a box, sphere and cylinder in any pose (checked against points sampled on each
shape's surface), a shape hanging below the contacts' plane named in the violations, in a capacity point's
reasons and in a failed sweep step."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.ground import GRAVITY, OPTIONS, free_of, lift_points, machine, standing
from scipy.spatial.transform import Rotation

from shiftsim.collision.shapes import BOX, CYLINDER, SPHERE
from shiftsim.ground.rating import capacity
from shiftsim.ground.validity import lowest_points, violations
from shiftsim.spec import ShapeSpec


def _surface(kind: int, size: np.ndarray, n: int = 60) -> np.ndarray:
    """Points (m, 3) on a shape's surface in its own axes: a box's corners, a sphere's and a cylinder's rims."""
    if kind == BOX:
        return np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)]) * size
    angle = np.linspace(0.0, 2.0 * np.pi, 4 * n, endpoint=False)
    if kind == SPHERE:
        polar = np.linspace(0.0, np.pi, n)[:, None]
        return size[0] * np.stack([np.sin(polar) * np.cos(angle), np.sin(polar) * np.sin(angle),
                                   np.cos(polar) * np.ones_like(angle)], axis=-1).reshape(-1, 3)
    rim = np.stack([size[0] * np.cos(angle), size[0] * np.sin(angle), np.zeros_like(angle)], axis=-1)
    return np.concatenate([rim + [0.0, 0.0, size[2]], rim - [0.0, 0.0, size[2]]])


@pytest.mark.parametrize("kind", [BOX, SPHERE, CYLINDER])
def test_the_lowest_point_of_a_shape_in_any_pose(kind):
    rng = np.random.default_rng(7)
    size = np.array([0.4, 0.25, 0.7]) if kind != SPHERE else np.full(3, 0.3)
    if kind == CYLINDER:
        size[1] = size[0]
    for _ in range(20):
        pose = np.eye(4)
        pose[:3, :3] = Rotation.random(random_state=rng).as_matrix()
        pose[:3, 3] = rng.normal(size=3)
        found = lowest_points(np.array([kind]), pose[None, None], size[None])[0, 0]
        sampled = _surface(kind, size) @ pose[:3, :3].T + pose[:3, 3]
        resolution = 1e-12 if kind == BOX else 1e-3 * size.max()  # samples 3 degrees apart on curved surfaces
        assert found[2] == pytest.approx(sampled[:, 2].min(), abs=resolution)
        assert found[2] <= sampled[:, 2].min() + 1e-12
        # the point found is on the shape: its distance to the nearest sample is that of neighbouring samples
        assert np.min(np.linalg.norm(sampled - found, axis=1)) < 0.05 * size.max()


def _bumper(kind: str, depth: float) -> ShapeSpec:
    """A shape on the box, 1.5 m ahead of its centre, whose lowest point is ``depth`` below the contacts' plane."""
    if kind == "sphere":
        return ShapeSpec("bumper", "sphere", centre=np.array([1.5, 0.0, 0.1 - depth]), radius=0.1)
    tilt = Rotation.from_euler("y", 30, degrees=True).as_matrix()  # a cylinder 0.4 m long, radius 0.1, tilted
    low = 0.2 * np.cos(np.radians(30)) + 0.1 * np.sin(np.radians(30))
    return ShapeSpec("bumper", "cylinder", centre=np.array([1.5, 0.0, low - depth]), rotation=tilt, radius=0.1,
                     length=0.4)


@pytest.mark.parametrize("kind", ["sphere", "cylinder"])
def test_a_shape_below_the_ground_is_named_with_its_depth(kind):
    """A bumper hanging 0.05 m below the contacts (limit 0.02 m) is 0.05 m plus the contacts' sinkage under the
    ground; one hanging 0.01 m is within the limit."""
    stand, q = standing(machine(shapes=[_bumper(kind, 0.05)]))
    sink = -q[stand.base[2]]  # the settled box sits this far down
    found = [v for v in violations(stand, stand.field(q), q[None])[0] if v.place == "box:bumper"]
    assert len(found) == 1 and found[0].value == pytest.approx(0.05 + sink, rel=1e-9)
    assert "below the ground" in found[0].message() and "collision shape" in found[0].message()
    stand, q = standing(machine(shapes=[_bumper(kind, 0.01)]))
    assert violations(stand, stand.field(q), q[None]) == [[]]


def test_a_lift_point_with_a_shape_through_the_ground_has_no_rating():
    stand, q = standing(machine(shapes=[_bumper("sphere", 0.05)]))
    qs, load = lift_points(stand, q, [0.0])
    result = capacity(stand, qs, free_of(stand.model), GRAVITY, load, [], OPTIONS)
    assert result.governs == ["invalid"] and np.isnan(result.rated[0])
    assert any(v.place == "box:bumper" for v in result.invalid[0])


@pytest.mark.slow
def test_a_sweep_step_with_a_track_through_the_ground_fails_naming_the_shape(tmp_path):
    """The shipped undercarriage with its left track's box hanging 0.05 m below its contacts: every step of the
    capacity scenario fails, the track's shape and depth named; the shipped one stands."""
    import json

    from helpers.scenario import capacity_scenario, model_path

    from shiftsim.scenario import LocalExecutor, build_scenario, execute

    model = json.loads(open(model_path("undercarriage_20t")).read())
    body = next(b for b in model["assemblies"][0]["bodies"] if b["name"] == "carbody")
    track = next(s for s in body["collision_shapes"] if s["name"] == "track_left")
    track["cz"] -= 0.05
    (tmp_path / "lower.json").write_text(json.dumps(model))
    document = capacity_scenario()
    document["machines"][0]["model"] = str(tmp_path / "lower.json")
    steps = execute(build_scenario(tmp_path / "s.json", document), LocalExecutor(1))
    assert all(s.status == "failed" for s in steps)
    message = steps[0].failures[0]["message"]
    assert "ex1:lower:carbody:track_left reaches 0.05" in message and "below the ground" in message
