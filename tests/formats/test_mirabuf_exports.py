"""The two real Fusion 360 exports (Autodesk Synthesis test files) read into ModelSpecs.

Expected values are taken from the decoded protobuf in the test (an
independent path to the same file), or worked out by hand from it.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from shiftsim.formats import read_model
from shiftsim.formats.mirabuf.schema import Assembly
from shiftsim.spec import FIXED

DATA = Path(__file__).parents[1] / "data" / "mirabuf"
HINGE = DATA / "HingeTestFission_v1.mira"
SLIDER = DATA / "SliderTestFission_v2.mira"


def decoded(path: Path) -> Assembly:
    message = Assembly()
    message.ParseFromString(gzip.decompress(path.read_bytes()))
    return message


def by_name(items):
    return {item.name: item for item in items}


def instance_named(message, name: str):
    return next(i for i in message.data.parts.part_instances.values() if i.info.name == name)


def joint_definition(message, name: str):
    return next(d for d in message.data.joints.joint_definitions.values() if d.info.name == name)


def world_axis(spec, joint) -> np.ndarray:
    body = by_name(spec.bodies)[joint.parent.body]
    return body.frames[joint.parent.frame].rotation @ joint.axis


def world_origin(spec, joint) -> np.ndarray:
    return by_name(spec.bodies)[joint.parent.body].frames[joint.parent.frame].translation


@pytest.fixture(scope="module")
def hinge():
    return read_model(HINGE)


@pytest.fixture(scope="module")
def slider():
    return read_model(SLIDER)


def test_both_files_are_gzip_and_read_without_warnings(hinge, slider):
    for path, spec in ((HINGE, hinge), (SLIDER, slider)):
        assert path.read_bytes()[:2] == b"\x1f\x8b"
        assert spec.format == "mirabuf"
        assert spec.warnings == []
        assert np.allclose(spec.gravity, [0.0, -9.81, 0.0])


def test_hinge_bodies_joints_types_and_axes(hinge):
    assert sorted(b.name for b in hinge.bodies) == ["CORE_1", "Swing_1", "Swing_2", "Swing_3"]
    joints = by_name(hinge.joints)
    assert sorted(joints) == ["FourtyFive", "Free", "Parallel", "grounded"]
    assert joints["grounded"].type == "rigid"
    assert (joints["grounded"].parent.body, joints["grounded"].child.body) == (FIXED, "CORE_1")
    message = decoded(HINGE)
    swing_of = {"Parallel": "Swing_1", "Free": "Swing_3", "FourtyFive": "Swing_2"}
    for name, swing in swing_of.items():
        joint = joints[name]
        definition = joint_definition(message, name)
        assert joint.type == "revolute"
        assert (joint.parent.body, joint.child.body) == ("CORE_1", swing)  # base = child_part, moving = parent_part
        assert np.allclose(world_axis(hinge, joint), [0.0, 0.0, 1.0])
        origin_cm = [definition.origin.x, definition.origin.y, definition.origin.z]
        assert np.allclose(world_origin(hinge, joint), np.array(origin_cm) / 100)
        assert joint.initial == (0.0,)


def test_hinge_limits_relative_to_the_file_pose(hinge):
    message = decoded(HINGE)
    joints = by_name(hinge.joints)
    expected = {"Parallel": (-np.pi / 10, 130 * np.pi / 180), "Free": (-145 * np.pi / 180, 130 * np.pi / 180),
                "FourtyFive": (-63 * np.pi / 180, 130 * np.pi / 180)}
    for name, (lower, upper) in expected.items():
        freedom = joint_definition(message, name).rotational.rotational_freedom
        travel = np.array(joints[name].limits) - joints[name].initial[0]
        assert np.allclose(travel, [freedom.limits.lower - freedom.value, freedom.limits.upper - freedom.value])
        assert np.allclose(travel, [lower, upper], atol=1e-6)  # the limits as set in Fusion, in degrees


def test_slider_chain_one_slider_carried_by_the_other(slider):
    assert sorted(b.name for b in slider.bodies) == ["Beam_1", "CORE_1", "ConnectingPlate_1"]
    joints = by_name(slider.joints)
    assert sorted(joints) == ["Slider 1", "Slider 2", "grounded"]
    first, second = joints["Slider 1"], joints["Slider 2"]
    assert first.type == second.type == "prismatic"
    assert joints["grounded"].child.body == first.parent.body == "CORE_1"
    assert first.child.body == second.parent.body == "ConnectingPlate_1"  # slider 2 rides on slider 1
    assert second.child.body == "Beam_1"
    assert np.allclose(world_axis(slider, first), [0.0, 1.0, 0.0])
    assert np.allclose(world_axis(slider, second), [0.0, -1.0, 0.0])
    assert np.allclose(world_origin(slider, first), [0.25, 1.80, 0.50])
    assert np.allclose(world_origin(slider, second), [0.25, 1.331436, 0.55])


def test_slider_values_and_limits_relative_to_file_pose(slider):
    message = decoded(SLIDER)
    joints = by_name(slider.joints)
    for name in ("Slider 1", "Slider 2"):
        freedom = joint_definition(message, name).prismatic.prismatic_freedom
        joint = joints[name]
        assert joint.initial == pytest.approx((freedom.value / 100,))
        travel = np.array(joint.limits) - joint.initial[0]
        assert np.allclose(travel, [(freedom.limits.lower - freedom.value) / 100,
                                    (freedom.limits.upper - freedom.value) / 100])
    # by hand: slider 1 sits at its lower stop (-45 cm, range -45..0); slider 2 at 11.86 cm of 0..50
    assert np.allclose(np.array(joints["Slider 1"].limits) - joints["Slider 1"].initial[0], [0.0, 0.45])
    assert np.allclose(np.array(joints["Slider 2"].limits) - joints["Slider 2"].initial[0],
                       [-0.11856397, 0.38143603], atol=1e-7)


@pytest.mark.parametrize("path", [HINGE, SLIDER])
def test_total_mass_equals_root_definition_mass(path):
    spec = read_model(path)
    message = decoded(path)
    root_key = message.design_hierarchy.nodes[0].value
    parts = message.data.parts
    root_definition = parts.part_definitions[parts.part_instances[root_key].part_definition_reference]
    total = sum(b.mass for b in spec.bodies)
    assert total == pytest.approx(root_definition.physical_data.mass, rel=1e-12)
    # the assembly's centre of mass, too
    com = sum(b.mass * b.com for b in spec.bodies) / total
    stated = root_definition.physical_data.com
    assert np.allclose(com, np.array([stated.x, stated.y, stated.z]) / 100, atol=1e-6)


def test_body_mass_and_centre_of_mass_from_part_definitions(slider):
    message = decoded(SLIDER)
    bodies = by_name(slider.bodies)
    pairs = (("Beam_1", "Beam:1"), ("ConnectingPlate_1", "ConnectingPlate:1"), ("CORE_1", "CORE:1"))
    for body_name, part_name in pairs:
        instance = instance_named(message, part_name)
        definition = message.data.parts.part_definitions[instance.part_definition_reference]
        pose = np.array(instance.global_transform.spatial_matrix).reshape(4, 4)
        com_cm = pose[:3, :3] @ [definition.physical_data.com.x, definition.physical_data.com.y,
                                 definition.physical_data.com.z] + pose[:3, 3]
        assert bodies[body_name].mass == pytest.approx(definition.physical_data.mass)
        assert np.allclose(bodies[body_name].com, com_cm / 100, atol=1e-9)


def test_inertia_is_a_physical_tensor(hinge, slider):
    for body in [*hinge.bodies, *slider.bodies]:
        inertia = body.inertia
        assert np.allclose(inertia, inertia.T)
        moments = np.linalg.eigvalsh(inertia)
        assert moments.min() > 0
        assert moments.sum() - 2 * moments.max() >= -1e-12  # triangle inequality of principal moments


def test_collision_box_bounds_the_meshes_in_world(slider):
    message = decoded(SLIDER)
    beam = by_name(slider.bodies)["Beam_1"]
    instance = instance_named(message, "Beam:1")
    definition = message.data.parts.part_definitions[instance.part_definition_reference]
    pose = np.array(instance.global_transform.spatial_matrix).reshape(4, 4)
    vertices = np.array(definition.bodies[0].triangle_mesh.mesh.verts).reshape(-1, 3) @ pose[:3, :3].T + pose[:3, 3]
    (shape,) = beam.shapes
    assert shape.kind == "box"
    assert np.allclose(shape.centre - shape.half_extents, vertices.min(axis=0) / 100)
    assert np.allclose(shape.centre + shape.half_extents, vertices.max(axis=0) / 100)
    # by hand: the beam is 50 x 120 x 10 cm
    assert np.allclose(2 * shape.half_extents, [0.5, 1.2, 0.1])


def test_wheels_flag_and_motors_in_extras(hinge):
    extras = hinge.extras["mirabuf"]
    assert extras["wheels"] == []
    assert extras["ground"] == "CORE_1"
    assert all(j.actuated for j in hinge.joints if j.type == "revolute")
    assert extras["joints"]["Free"]["simple_motor"]["stall_torque"] == 50.0
