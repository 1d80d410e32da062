"""Collision shapes on Shift bodies (``collision_shapes``) and on the bodies of the other readers."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shiftsim.collision.shapes import BOX, CYLINDER, SPHERE, body_poses, shape_table
from shiftsim.collision.world import CollisionWorld
from shiftsim.errors import ModelError
from shiftsim.formats import read_model
from shiftsim.formats.shift import read_shift
from shiftsim.kinematics import forward
from shiftsim.model import compile_model

ROOT = Path(__file__).resolve().parents[2]
QUARTER_TURN_X = [[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]]  # columns: the shape z axis is the body -y axis


def model_with(shapes: list[Any]) -> dict[str, Any]:
    """A Shift model with one body ``post`` fixed to the world and carrying ``shapes``."""
    return {
        "model_parameters": {"gravity": [0.0, 0.0, -9.81]},
        "bodies": [{"name": "post", "mass": 10.0, "moment_of_inertia": {"Ixx": 1.0, "Iyy": 1.0, "Izz": 1.0},
                    "collision_shapes": shapes}],
        "joints": [{"name": "base", "type": "rigid", "body_frame_pairs": [["fixed", "origin"], ["post", "origin"]]}],
    }


VALID = [
    {"name": "column", "type": "aabb", "cx": 0.0, "cy": 0.0, "cz": 1.0, "hex": 0.2, "hey": 0.3, "hez": 1.0},
    {"name": "pipe", "type": "cylinder", "cz": 2.5, "radius": 0.1, "length": 1.5, "R": QUARTER_TURN_X},
    {"name": "knob", "type": "sphere", "cx": 0.5, "radius": 0.25, "description": "a ball on top"},
]


def read(tmp_path: Path, data: dict[str, Any]):
    path = tmp_path / "model.json"
    path.write_text(json.dumps(data))
    return read_shift(path)


def messages(tmp_path: Path, shapes: list[Any]) -> list[str]:
    with pytest.raises(ModelError) as caught:
        read(tmp_path, model_with(shapes))
    return [f"{p.where}: {p.what} (expected {p.expected})" for p in caught.value.problems]


def test_shift_collision_shapes_become_body_shapes(tmp_path):
    spec = read(tmp_path, model_with(VALID))
    column, pipe, knob = spec.bodies[0].shapes
    assert (column.name, column.kind) == ("column", "box")
    np.testing.assert_array_equal(column.centre, [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(column.half_extents, [0.2, 0.3, 1.0])
    np.testing.assert_array_equal(column.rotation, np.eye(3))
    assert (pipe.kind, pipe.radius, pipe.length) == ("cylinder", 0.1, 1.5)
    np.testing.assert_allclose(pipe.rotation, QUARTER_TURN_X)
    np.testing.assert_array_equal(pipe.centre, [0.0, 0.0, 2.5])  # cx, cy default to 0
    assert (knob.kind, knob.radius) == ("sphere", 0.25)
    assert not any("collision_shapes" in w for w in spec.warnings)


def test_a_body_without_collision_shapes_has_none(tmp_path):
    data = model_with([])
    del data["bodies"][0]["collision_shapes"]
    assert read(tmp_path, data).bodies[0].shapes == []


def test_unknown_shape_keys_are_kept_with_a_warning(tmp_path):
    shapes = copy.deepcopy(VALID)
    shapes[0]["colour"] = "red"
    spec = read(tmp_path, model_with(shapes))
    assert any("bodies[0].collision_shapes[0].colour" in w and "kept" in w for w in spec.warnings)
    assert spec.extras["unused"]["bodies[0].collision_shapes[0].colour"] == "red"


@pytest.mark.parametrize("shape, expected", [
    ({"name": "s", "hex": 1.0, "hey": 1.0, "hez": 1.0},
     "collision_shapes[0]: missing required key 'type'"),
    ({"name": "s", "type": "cone", "radius": 1.0},
     "collision_shapes[0].type: unknown collision shape type 'cone' (expected \"aabb\", \"sphere\" or \"cylinder\")"),
    ({"name": "s", "type": "aabb", "hex": 1.0, "hey": 1.0},
     "collision_shapes[0]: missing required key 'hez' for type 'aabb' (expected hex, hey, hez (m, > 0))"),
    ({"name": "s", "type": "cylinder", "radius": 1.0},
     "collision_shapes[0]: missing required key 'length' for type 'cylinder'"),
    ({"name": "s", "type": "sphere", "radius": 0.0},
     "collision_shapes[0].radius: radius is 0 (expected a size > 0 m)"),
    ({"name": "s", "type": "aabb", "hex": 1.0, "hey": -2.0, "hez": 1.0},
     "collision_shapes[0].hey: hey is -2 (expected a size > 0 m)"),
    ({"name": "s", "type": "sphere", "radius": 1.0, "length": 2.0},
     "collision_shapes[0].length: 'length' does not apply to type 'sphere' (expected only radius as its size)"),
    ({"name": "s", "type": "sphere", "radius": 1.0, "cx": "1"},
     "collision_shapes[0].cx: is the string '1' (expected a finite number (m)"),
    ({"name": "s", "type": "aabb", "hex": 1.0, "hey": 1.0, "hez": 1.0, "R": [[1, 1, 0], [0, 1, 0], [0, 0, 1]]},
     "collision_shapes[0].R: is not a rotation matrix: max |R^T R - I| = 1"),
    ({"type": "sphere", "radius": 1.0}, "collision_shapes[0]: missing required key 'name'"),
    ({"name": "a:b", "type": "sphere", "radius": 1.0}, "collision_shapes[0].name: name 'a:b' contains ':'"),
    ("sphere", "collision_shapes[0]: is the string 'sphere' (expected an object)"),
], ids=["no type", "unknown type", "missing size", "missing length", "zero radius", "negative half extent",
        "size of another type", "centre not a number", "not a rotation", "no name", "name with colon", "not an object"])
def test_bad_collision_shapes_are_refused_with_their_json_path(tmp_path, shape, expected):
    found = messages(tmp_path, [shape])
    assert len(found) == 1, found
    assert found[0].startswith("bodies[0]." + expected), found


def test_every_bad_shape_of_a_file_is_reported_at_once(tmp_path):
    found = messages(tmp_path, [{"name": "s", "type": "sphere", "radius": -1.0}, VALID[0], copy.deepcopy(VALID[0]),
                                {"name": "t", "type": "aabb"}])
    assert any("collision_shapes[0].radius" in m for m in found)
    assert any("collision_shapes[2].name" in m and "both named 'column'" in m for m in found)
    assert sum("collision_shapes[3]: missing required key" in m for m in found) == 3


def test_collision_shapes_must_be_a_list(tmp_path):
    data = model_with([])
    data["bodies"][0]["collision_shapes"] = {"name": "s"}
    with pytest.raises(ModelError, match=r"bodies\[0\]\.collision_shapes: is an object \(expected an array\)"):
        read(tmp_path, data)


def test_shift_shapes_are_placed_in_the_collision_world_by_their_centre_and_axes(tmp_path):
    """The pipe (radius 0.1, length 1.5, its axis turned onto the body's y axis) centred 2.5 m up, and a ball
    of radius 0.2 level with it: 1.0 m along y from the pipe's centre the pipe's cap is 0.25 m from the
    ball's centre, so the gap is 0.05 m; 0.3 m along x instead, the ball touches the pipe's side."""
    model = compile_model(read(tmp_path, model_with([VALID[1]])))
    ball_spec = model_with([{"name": "ball", "type": "sphere", "radius": 0.2}])
    ball_spec["bodies"][0]["name"] = "ball"
    ball_spec["joints"][0]["body_frame_pairs"][1][0] = "ball"
    ball = compile_model(read(tmp_path, ball_spec))
    pipe_poses = body_poses(model, np.zeros((2, 0)))
    ball_poses = body_poses(ball, np.zeros((2, 0)))
    ball_poses[0, 1, :3, 3] = [0.0, 1.0, 2.5]
    ball_poses[1, 1, :3, 3] = [0.3, 0.2, 2.5]
    with CollisionWorld([("m", model), ("n", ball)]) as world:
        result = world.query([pipe_poses, ball_poses])
    np.testing.assert_allclose(result.distance[:, 0], [0.05, 0.0], atol=1e-9)
    assert world.shapes.paths == ("m:post:pipe", "n:ball:ball")


@pytest.mark.parametrize("path, kinds", [
    ("models/mfk/excavator.json", {BOX}),
    ("models/claraty/rover_arm_5dof.xml", {BOX, CYLINDER}),
])
def test_readers_shapes_enter_the_shape_table(path, kinds):
    model = compile_model(read_model(ROOT / path))
    table, warnings = shape_table([("m", model)])
    expected = sum(len(b.shapes) for b in model.spec.bodies if b.active)
    assert len(table) == expected > 0 and warnings == []
    assert set(table.kind.tolist()) == kinds
    for k, path_name in enumerate(table.paths):
        assert path_name == f"m:{model.body_names[table.body[k]]}:{table.specs[k].name}"


def test_shapes_without_volume_are_left_out_with_a_warning(tmp_path):
    model = compile_model(read(tmp_path, model_with(VALID)))
    model.spec.bodies[0].shapes[0].half_extents = np.array([0.2, 0.0, 1.0])  # as an MFK aabb left at size 0
    table, warnings = shape_table([("m", model)])
    assert table.paths == ("m:post:pipe", "m:post:knob")
    assert warnings == ["collision shape 'm:post:column' has no volume (a size is zero or missing): ignored"]


def test_body_poses_are_forward_kinematics_bodies_placed_in_the_world():
    model = compile_model(read_model(ROOT / "models/mfk/excavator.json"))
    rng = np.random.default_rng(7)
    q = rng.uniform(-1.0, 1.0, (20, model.nq))
    placement = np.eye(4)
    placement[:3, :3] = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    placement[:3, 3] = [3.0, -2.0, 0.5]
    np.testing.assert_allclose(body_poses(model, q, placement), placement @ forward(model, q).bodies, atol=1e-12)
    assert SPHERE not in shape_table([("m", model)])[0].kind
