"""MFK kinematics: node transform order, attach chains, site placement."""

from __future__ import annotations

import copy
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shiftsim.errors import ModelError
from shiftsim.formats.mfk import load_configuration
from shiftsim.formats.mfk.kinematics import (
    attach_order,
    machine_transforms,
    node_local_transform,
    site_from_machine,
)
from shiftsim.formats.mfk.report import describe
from shiftsim.formats.mfk.topcon import Node

MODELS = Path(__file__).resolve().parents[2] / "models" / "mfk"
angles = st.floats(-math.pi, math.pi)
lengths = st.floats(-50, 50)


def rot_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def rot_y(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rot_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def affine(linear: np.ndarray, t=(0.0, 0.0, 0.0)) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3], m[:3, 3] = linear, t
    return m


def load(name: str, values=None):
    path = MODELS / name
    return load_configuration(json.loads(path.read_text()), path, values)


@settings(max_examples=60, deadline=None)
@given(st.tuples(lengths, lengths, lengths), st.tuples(angles, angles, angles),
       st.tuples(st.floats(0.1, 3), st.floats(0.1, 3), st.floats(0.1, 3)))
def test_node_transform_is_T_Rz_Ry_Rx_S(t, r, s):
    rx, ry, rz = r
    node = Node("n", "", values=dict(zip(("tx", "ty", "tz", "rx", "ry", "rz", "sx", "sy", "sz"), (*t, *r, *s))))
    expected = (affine(np.eye(3), t) @ affine(rot_z(rz)) @ affine(rot_y(ry)) @ affine(rot_x(rx))
                @ affine(np.diag(s)))
    assert node_local_transform(node) == pytest.approx(expected, abs=1e-9)


def test_j670_pitch_raises_the_nose():
    # positive ry about J670 y (right) takes x (forward) towards -z (up)
    node = Node("n", "", values={"ry": 0.5})
    assert node_local_transform(node)[:3, :3] @ [1, 0, 0] == pytest.approx([math.cos(0.5), 0, -math.sin(0.5)])


# ------------------------------------------------------------------ attach
def poses_by_description(config) -> dict[tuple[str, str], np.ndarray]:
    return {(config.components[c].description, n): m for (c, n), m in machine_transforms(config).items()}


def permuted(data: dict, order: list[int]) -> dict:
    """The same configuration with its components in another array order (attach indices renumbered)."""
    data = copy.deepcopy(data)
    new_index = {old: new for new, old in enumerate(order)}
    data["components"] = [data["components"][old] for old in order]
    for component in data["components"]:
        for interface in component["interfaces"]:
            if interface["name"] == "attach":
                interface["parent_component_index"] = new_index[interface["parent_component_index"]]
    return data


@pytest.mark.parametrize("name, values", [
    ("excavator.json", {"c1:topcon.nodes.boom.ry": 0.4, "c1:topcon.nodes.stick.ry": -1.2,
                        "c0:topcon.nodes.bucket.ry": 0.2, "c1:topcon.nodes.stick_attach.ry": -0.7}),
    ("crane.json", {"c1:topcon.nodes.boom.ry": 0.7, "c2:topcon.nodes.sheave.ry": -0.7,
                    "c1:topcon.nodes.superstructure.rz": 1.1}),
])
def test_attach_order_does_not_depend_on_array_order(name, values):
    path = MODELS / name
    data = json.loads(path.read_text())
    reference = poses_by_description(load_configuration(data, path, values))
    count = len(data["components"])
    for order in itertools.permutations(range(count)):
        new_index = {old: new for new, old in enumerate(order)}
        moved = {f"c{new_index[int(k.split(':')[0][1:])]}:{k.split(':', 1)[1]}": v for k, v in values.items()}
        poses = poses_by_description(load_configuration(permuted(data, list(order)), path, moved))
        assert poses.keys() == reference.keys()
        for key, pose in poses.items():
            assert pose == pytest.approx(reference[key], abs=1e-12), (order, key)


def test_attach_order_puts_parents_first():
    # crane.json: [0 skip -> 2, 1 crane, 2 hook block -> 1]
    assert attach_order(load("crane.json")) == [1, 2, 0]
    assert attach_order(load("excavator.json")) == [1, 0]


def test_attached_root_takes_the_parent_node_pose():
    config = load("excavator.json", {"c1:topcon.nodes.boom.ry": 0.3, "c0:topcon.nodes.bucket.ry": 0.0,
                                     "c1:topcon.nodes.stick_attach.ry": 0.0})
    poses = machine_transforms(config)
    assert poses[(0, "bucket")] == pytest.approx(poses[(1, "stick_attach")])


def test_attach_cycle_is_refused_naming_it():
    data = json.loads((MODELS / "excavator.json").read_text())
    data["components"][1]["interfaces"].append(
        {"oem": "topcon", "name": "attach", "version": "0.1", "parent_component_index": 0,
         "parent_node_ref": "topcon.nodes.bucket", "local_node_ref": "topcon.nodes.body"})
    with pytest.raises(ModelError) as info:
        load_configuration(data, "cycle.json")
    assert "components attach to each other in a cycle: 0 (generic bucket) -> 1 (generic excavator) -> 0" in \
        str(info.value)
    assert "components[0].interfaces[1].parent_component_index" in str(info.value)


def test_self_attach_is_a_cycle():
    data = json.loads((MODELS / "excavator.json").read_text())
    attach = next(i for i in data["components"][0]["interfaces"] if i["name"] == "attach")
    attach["parent_component_index"], attach["parent_node_ref"] = 0, "topcon.nodes.bucket"
    with pytest.raises(ModelError) as info:
        load_configuration(data, "self.json")
    assert "cycle: 0 (generic bucket) -> 0" in str(info.value)


# --------------------------------------------------------------- placement
def test_placement_example_of_the_format_notes():
    x = site_from_machine(easting=200, northing=100, elevation=50, yaw=math.radians(90))
    assert x[:3, :3] @ [1, 0, 0] + x[:3, 3] == pytest.approx([201, 100, 50])
    assert x[:3, :3] @ [0, 1, 0] + x[:3, 3] == pytest.approx([200, 99, 50])


def test_placement_signs():
    up = site_from_machine()[:3, :3] @ [0, 0, -1]
    assert up == pytest.approx([0, 0, 1])  # J670 -z is up
    front = site_from_machine(pitch=0.2)[:3, :3] @ [1, 0, 0]
    assert front[2] == pytest.approx(math.sin(0.2))  # positive pitch raises the front
    right = site_from_machine(roll=0.2)[:3, :3] @ [0, 1, 0]
    assert right[2] == pytest.approx(-math.sin(0.2))  # positive roll lowers the right side


@settings(max_examples=60, deadline=None)
@given(angles, st.floats(-1.5, 1.5), angles, st.tuples(lengths, lengths, lengths))
def test_placement_equals_axis_map_after_j670_yaw_pitch_roll(yaw, pitch, roll, position):
    """T · R_up(-yaw) · R_E(pitch) · R_N(roll) · M  ==  T · M · Rz(yaw) · Ry(pitch) · Rx(roll) (J670 angles)."""
    axis_map = np.array([[0, 1, 0], [1, 0, 0], [0, 0, -1]])
    expected = affine(axis_map @ rot_z(yaw) @ rot_y(pitch) @ rot_x(roll), position)
    x = site_from_machine(*position, roll=roll, pitch=pitch, yaw=yaw)
    assert x == pytest.approx(expected, abs=1e-9)


def test_point_of_interest_on_site_for_a_placed_rotated_machine():
    boom = 0.3
    config = load("excavator.json", {
        "c1:topcon.nodes.boom.ry": boom, "c1:topcon.nodes.stick.ry": 0.0, "c1:topcon.nodes.stick_attach.ry": 0.0,
        "c0:topcon.nodes.bucket.ry": 0.0, "c1:topcon.transform.local_position.easting": 200.0,
        "c1:topcon.transform.local_position.northing": 100.0, "c1:topcon.transform.local_position.elevation": 50.0,
        "c1:topcon.transform.local_rotation.yaw": math.pi / 2})
    point = describe(config)["points"]["c0:bucket:bucket_r"]
    # by hand: hinge 1.65 m up; boom 5.7 + stick 2.9 + bucket_r 1.5 along the pitched boom, 0.55 to the right
    reach, c, s = 5.7 + 2.9 + 1.5, math.cos(boom), math.sin(boom)
    assert point["machine"] == pytest.approx([reach * c, 0.55, -1.65 - reach * s])
    # yaw +90 deg: forward is east, right is south, J670 z down is -up
    assert point["site"] == pytest.approx([200 + reach * c, 100 - 0.55, 50 + 1.65 + reach * s])


def test_crane_hook_hangs_plumb_below_the_boom_tip_on_site():
    report = describe(load("crane.json"))
    tip, hook = report["points"]["c1:boom_head:boom_tip"]["site"], report["points"]["c2:hook:hook_point"]["site"]
    assert hook[:2] == pytest.approx(tip[:2]) and tip[2] - hook[2] == pytest.approx(6.0)


def test_scale_is_applied_with_a_warning():
    data = json.loads((MODELS / "excavator.json").read_text())
    nodes = next(i for i in data["components"][1]["interfaces"] if i["name"] == "nodes")
    nodes["nodes"][0]["nodes"][0]["sx"] = 2.0  # scale the boom node
    config = load_configuration(data, "scaled.json")
    assert any("node c1:boom has scale (2.0, 1.0, 1.0)" in w for w in config.warnings)
    assert machine_transforms(config)[(1, "stick")][:3, 3] == pytest.approx([2 * 5.7, 0, -1.65])
    boom_box = describe(config)["collision_shapes"]["c1:boom:boom"]
    assert boom_box["half_extents"] == pytest.approx([2 * 2.85, 0.2, 0.625])
    assert np.array(boom_box["rotation_machine"]) == pytest.approx(np.eye(3))
