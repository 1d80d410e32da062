"""A synthetic assembly built with our schema: grouping, mass, motion links, ball and custom joints.

The assembly (lengths in cm, as in real files)::

    Robot (root component, no bodies; mass = everything)
    ├── Base:1        grounded, 20 cm cube, 8 kg
    ├── Link:1        revolute "Shoulder" on Base about world z, value 3.5 rad (> pi)
    │   └── Bolt:1    design-tree child of Link:1 (not in any joint tree)
    ├── Weight:1      welded to Link:1 by a rigid group
    ├── Pendulum:1    BALL joint "Ball" on Link:1
    ├── Wheel:1       revolute "Spin" on Base about world x, wheel, linked to Shoulder (ratio 2, reversed)
    └── Carriage:1    slider "Lift" on Base along world x, linked to Shoulder (0.5 mm per degree)
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.mirabuf import (
    CUSTOM,
    LINK_POSE,
    PLANAR,
    SHOULDER_VALUE,
    by_name,
    pose,
    robot,
    rz,
    write,
)
from scipy.spatial.transform import Rotation

from shiftsim.errors import ModelError
from shiftsim.formats import read_model
from shiftsim.formats.mirabuf import read_mirabuf
from shiftsim.spec import FIXED


@pytest.fixture
def spec(tmp_path):
    return read_model(write(tmp_path, robot()))


def test_parts_grouped_by_joint_trees_rigid_groups_and_design_tree(spec):
    parts = spec.extras["mirabuf"]["body_parts"]
    assert parts == {
        "Base_1": ["Base:1", "Robot"],  # the root component joins the ground
        "Link_1": ["Bolt:1", "Link:1", "Weight:1"],  # Bolt by the design tree, Weight by the rigid group
        "Pendulum_1": ["Pendulum:1"],
        "Carriage_1": ["Carriage:1"],
        "Wheel_1": ["Wheel:1"],
    }
    assert spec.extras["mirabuf"]["ground"] == "Base_1"
    grounded = by_name(spec.joints)["grounded"]
    assert (grounded.type, grounded.parent.body, grounded.child.body) == ("rigid", FIXED, "Base_1")


def test_mass_without_double_counting_and_com_by_hand(spec):
    bodies = by_name(spec.bodies)
    assert sum(b.mass for b in bodies.values()) == pytest.approx(12.7)
    link = bodies["Link_1"]
    assert link.mass == pytest.approx(2.0 + 0.5 + 1.0)  # link's own 2 kg + bolt + weight, not 2.5 + 0.5
    link_com = LINK_POSE @ [20.0, 2.0, 2.0, 1.0]
    bolt_com = LINK_POSE @ [30.0, 2.0, 2.0, 1.0]
    weight_com = LINK_POSE @ [38.0, 2.0, 2.0, 1.0]
    expected = (2.0 * link_com + 0.5 * bolt_com + 1.0 * weight_com)[:3] / 3.5 / 100
    assert np.allclose(link.com, expected)


def test_body_inertia_by_parallel_axis_theorem(spec):
    """Base is one cube; Link is three boxes: compare with closed forms and Steiner by hand."""
    bodies = by_name(spec.bodies)
    side = 0.2
    assert np.allclose(bodies["Base_1"].inertia, 8.0 * side**2 / 6 * np.eye(3))

    def box(mass, sides_cm, com_cm):
        a, b, c = np.array(sides_cm) / 100
        local = mass / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
        rotation = LINK_POSE[:3, :3]
        return mass, rotation @ local @ rotation.T, (LINK_POSE @ [*com_cm, 1.0])[:3] / 100

    pieces = [box(2.0, (40, 4, 4), (20, 2, 2)), box(0.5, (2, 2, 2), (30, 2, 2)), box(1.0, (4, 4, 4), (38, 2, 2))]
    com = sum(m * c for m, _, c in pieces) / 3.5
    expected = sum(i + m * ((c - com) @ (c - com) * np.eye(3) - np.outer(c - com, c - com)) for m, i, c in pieces)
    assert np.allclose(bodies["Link_1"].inertia, expected)


def test_revolute_value_wrapped_and_limits_relative(spec):
    shoulder = by_name(spec.joints)["Shoulder"]
    assert shoulder.type == "revolute"
    (initial,) = shoulder.initial
    assert initial == pytest.approx(SHOULDER_VALUE - 2 * math.pi)
    assert -math.pi < initial <= math.pi
    assert np.allclose(np.array(shoulder.limits) - initial, [-1.0 - SHOULDER_VALUE, 5.0 - SHOULDER_VALUE])
    spin = by_name(spec.joints)["Spin"]
    assert spin.limits is None  # lower = upper = 0: unlimited


def test_ball_joint_is_spherical_at_the_pivot(spec):
    ball = by_name(spec.joints)["Ball"]
    assert ball.type == "spherical"
    assert (ball.parent.body, ball.child.body) == ("Link_1", "Pendulum_1")
    assert ball.initial == (0.0, 0.0, 0.0)
    frame = by_name(spec.bodies)["Link_1"].frames[ball.parent.frame]
    assert np.allclose(frame.translation, (LINK_POSE @ [40.0, 2.0, 2.0, 1.0])[:3] / 100)


def test_motion_links_become_couplings(spec):
    joints = by_name(spec.joints)
    shoulder0 = joints["Shoulder"].initial[0]
    spin, lift = joints["Spin"], joints["Lift"]
    assert spin.coupling.sources == ("Shoulder",)
    for delta in (0.0, 0.3, -1.2):
        # reversed, ratio 2: the wheel turns twice as far the other way
        assert spin.coupling.function(np.array([shoulder0 + delta])) == pytest.approx(0.2 - 2.0 * delta)
        # 0.5 mm per degree of shoulder
        assert lift.coupling.function(np.array([shoulder0 + delta])) == pytest.approx(
            0.05 + 0.5e-3 * math.degrees(delta))
    assert np.allclose(spin.coupling.gradient(np.array([shoulder0])), [-2.0])
    assert "Shoulder" in spin.coupling.text


def test_wheels_flagged(spec):
    assert spec.extras["mirabuf"]["wheels"] == ["Spin"]
    assert spec.extras["mirabuf"]["joints"]["Spin"]["wheel"] is True


def test_raw_and_gzip_and_unknown_fields_read_the_same(tmp_path):
    builder = robot()
    gz = read_mirabuf(write(tmp_path, builder, "a.mira"))
    raw = read_mirabuf(write(tmp_path, builder, "b.mira", compress=False))
    # unknown fields: an extra varint field 99 on the assembly and a string field 15 on a part instance
    builder.assembly.data.parts.part_instances["Base:1"].info.name = "Base:1"
    data = builder.assembly.SerializeToString() + bytes([0x98, 0x06, 0x2A])  # field 99, varint 42
    (tmp_path / "c.mira").write_bytes(data)
    unknown = read_mirabuf(tmp_path / "c.mira")
    for other in (raw, unknown):
        assert [b.name for b in other.bodies] == [b.name for b in gz.bodies]
        assert all(np.allclose(x.inertia, y.inertia) for x, y in zip(other.bodies, gz.bodies))
        assert [j.initial for j in other.joints] == [j.initial for j in gz.joints]


def test_old_exports_have_revolute_axis_x_flipped(tmp_path):
    builder = robot(version=4)
    axis = builder.assembly.data.joints.joint_definitions["Spin"].rotational.rotational_freedom.axis
    axis.x = -1.0  # what an old exporter wrote for a +x axis
    spec = read_mirabuf(write(tmp_path, builder))
    spin = by_name(spec.joints)["Spin"]
    frame = by_name(spec.bodies)["Base_1"].frames[spin.parent.frame]
    assert np.allclose(frame.rotation @ spin.axis, [1.0, 0.0, 0.0])
    assert any("x negated" in w for w in spec.warnings)


def test_custom_joint_is_a_chain_through_massless_links(tmp_path):
    builder = robot(ball_motion=CUSTOM)
    dofs = builder.assembly.data.joints.joint_definitions["Ball"].custom.dofs
    dofs[0].value, dofs[0].limits.lower, dofs[0].limits.upper = 0.25, -1.0, 1.0
    del dofs[2]
    spec = read_mirabuf(write(tmp_path, builder))
    joints = by_name(spec.joints)
    chain = spec.extras["mirabuf"]["joints"]["Ball"]["chain"]
    assert chain == ["Ball_0", "Ball_1"]
    first, second = joints["Ball_0"], joints["Ball_1"]
    assert first.type == second.type == "revolute"
    assert first.parent.body == "Link_1" and second.child.body == "Pendulum_1"
    assert first.child.body == second.parent.body == "Ball_link1"
    assert by_name(spec.bodies)["Ball_link1"].mass == 0.0
    assert first.initial == pytest.approx((0.25,))
    assert np.allclose(np.array(first.limits) - 0.25, [-1.25, 0.75])

    from shiftsim.kinematics import forward
    from shiftsim.model import compile_model

    model = compile_model(spec)
    q0 = model.apply_couplings(model.q0)
    assert np.allclose(forward(model, q0).bodies, np.eye(4), atol=1e-12)
    q = q0.copy()
    q[model.coordinates_of("Ball_0")[0]] += 0.3  # first DOF: about world x through the pivot
    q[model.coordinates_of("Ball_1")[0]] += 0.2  # second DOF: about y, carried by the first
    pendulum = forward(model, q).bodies[model.body_names.index("Pendulum_1")]
    pivot = (LINK_POSE @ [40.0, 2.0, 2.0, 1.0])[:3] / 100
    turn = Rotation.from_rotvec([0.3, 0.0, 0.0]).as_matrix() @ Rotation.from_rotvec([0.0, 0.2, 0.0]).as_matrix()
    assert np.allclose(pendulum, pose(turn, pivot - turn @ pivot), atol=1e-12)


@pytest.mark.parametrize("angle, wrapped", [(math.pi, math.pi), (-math.pi, math.pi), (3 * math.pi, math.pi),
                                            (3.5, 3.5 - 2 * math.pi), (-4.0, 2 * math.pi - 4.0), (0.5, 0.5)])
def test_revolute_values_wrap_into_half_open_interval(angle, wrapped):
    from shiftsim.formats.mirabuf.joints import wrap_angle

    assert wrap_angle(angle) == pytest.approx(wrapped, abs=1e-12)


def test_open_mesh_falls_back_to_bounding_box_inertia(tmp_path):
    builder = robot()
    mesh = builder.assembly.data.parts.part_definitions["base"].bodies[0].triangle_mesh
    mesh.has_volume = False
    spec = read_mirabuf(write(tmp_path, builder))
    assert np.allclose(by_name(spec.bodies)["Base_1"].inertia, 8.0 * 0.2**2 / 6 * np.eye(3))
    assert any("'Base:1'" in w and "open" in w and "bounding box" in w for w in spec.warnings)

    builder = robot()
    mesh = builder.assembly.data.parts.part_definitions["weight"].bodies[0].triangle_mesh.mesh
    del mesh.indices[-6:]  # drop one face of the weight: not watertight
    spec = read_mirabuf(write(tmp_path, builder))
    assert any("'Weight:1'" in w and "open" in w for w in spec.warnings)
    assert by_name(spec.bodies)["Link_1"].mass == pytest.approx(3.5)


# ---------------------------------------------------------------- bad references


def refused(tmp_path, builder) -> str:
    with pytest.raises(ModelError) as caught:
        read_mirabuf(write(tmp_path, builder))
    message = str(caught.value)
    assert str(tmp_path / "robot.mira") in message
    return message


def test_unknown_part_definition_is_refused(tmp_path):
    builder = robot()
    builder.assembly.data.parts.part_instances["Wheel:1"].part_definition_reference = "nope"
    message = refused(tmp_path, builder)
    assert "part_instances['Wheel:1'].part_definition_reference" in message
    assert "names no part definition ('nope')" in message


def test_unknown_joint_parts_and_definition_are_all_reported(tmp_path):
    builder = robot()
    joints = builder.assembly.data.joints
    joints.joint_instances["Spin"].parent_part = "Wheel:9"
    joints.joint_instances["Lift"].child_part = "Base:7"
    message = refused(tmp_path, builder)
    assert "joint_instances['Spin'].parent_part: names no part instance ('Wheel:9')" in message
    assert "joint_instances['Lift'].child_part: names no part instance ('Base:7')" in message

    builder = robot()
    builder.assembly.data.joints.joint_instances["Spin"].joint_reference = "missing"
    message = refused(tmp_path, builder)
    assert "joint_instances['Spin'].joint_reference: names no joint definition ('missing')" in message


def test_bad_transform_and_mesh_are_refused(tmp_path):
    builder = robot()
    matrix = builder.assembly.data.parts.part_instances["Wheel:1"].global_transform.spatial_matrix
    del matrix[12:]
    mesh = builder.assembly.data.parts.part_definitions["bolt"].bodies[0].triangle_mesh.mesh
    mesh.indices[0] = 10_000
    message = refused(tmp_path, builder)
    assert "part_instances['Wheel:1'].global_transform: spatial_matrix has 12 values" in message
    assert "part_definitions['bolt'].bodies[0].triangle_mesh.mesh.indices: index out of range" in message

    builder = robot()
    matrix = builder.assembly.data.parts.part_instances["Wheel:1"].global_transform.spatial_matrix
    matrix[0] = 2.0  # a scale
    assert "global_transform: spatial_matrix is not a rigid transform" in refused(tmp_path, builder)


def test_unsupported_motion_types_and_dof_combinations_are_refused(tmp_path):
    builder = robot()
    builder.assembly.data.joints.joint_definitions["Spin"].joint_motion_type = PLANAR
    message = refused(tmp_path, builder)
    assert "joint_definitions['Spin'].joint_motion_type: joint 'Spin' is PLANAR, which is not read" in message

    builder = robot(ball_motion=CUSTOM)
    dofs = builder.assembly.data.joints.joint_definitions["Ball"].custom.dofs
    dofs[1].axis.x, dofs[1].axis.y, dofs[1].axis.z = -1.0, 0.0, 0.0
    message = refused(tmp_path, builder)
    assert "custom.dofs: CUSTOM joint 'Ball': DOFs 0 and 1 turn about parallel axes" in message

    builder = robot()
    axis = builder.assembly.data.joints.joint_definitions["Spin"].rotational.rotational_freedom.axis
    axis.x = 0.0
    assert "rotational.rotational_freedom.axis: axis [0.0, 0.0, 0.0] has no direction" in refused(tmp_path, builder)


def test_bad_motion_links_and_missing_ground_are_refused(tmp_path):
    builder = robot()
    builder.assembly.data.joints.joint_instances["Spin"].motion_link[0].joint_instance = "Elbow"
    message = refused(tmp_path, builder)
    assert "joint_instances['Spin'].motion_link[0].joint_instance: 'Elbow' is not another 1-dof" in message

    builder = robot()
    builder.assembly.data.joints.joint_instances["Spin"].motion_link[0].ratio = 0.0
    assert "motion_link[0].ratio: ratio 0" in refused(tmp_path, builder)

    builder = robot()
    del builder.assembly.data.joints.joint_instances["grounded"]
    assert "data.joints.joint_instances: no 'grounded' entry" in refused(tmp_path, builder)


# ---------------------------------------------------------------- kinematics of the synthetic assembly


def test_forward_kinematics_puts_parts_where_the_file_says_and_moves_them(spec):
    from shiftsim.kinematics import forward
    from shiftsim.model import compile_model

    model = compile_model(spec)
    q0 = model.apply_couplings(model.q0)
    poses = forward(model, q0)
    for body, parts in spec.extras["mirabuf"]["body_parts"].items():
        for part in parts:
            frame = model.frame_index(f"{body}:{part.replace(':', '_')}")
            expected = ROBOT_POSES[part].copy()
            expected[:3, 3] /= 100
            assert np.allclose(poses.frames[frame], expected, atol=1e-12)

    shoulder = model.coordinates_of("Shoulder")[0]
    q = q0.copy()
    q[shoulder] += 0.4
    q = model.apply_couplings(q)
    moved = forward(model, q)
    pivot = np.array([0.10, 0.20, 0.10])
    turn = pose(rz(0.4), pivot - rz(0.4) @ pivot)
    for body in ("Link_1", "Pendulum_1"):  # the pendulum rides on the link
        assert np.allclose(moved.bodies[model.body_names.index(body)], turn, atol=1e-12)
    # the coupled wheel turned -0.8 rad about +x through its pivot; the carriage slid 0.5 mm/deg
    wheel_pivot = np.array([0.0, 0.10, 0.10])
    spin = Rotation.from_rotvec([-0.8, 0.0, 0.0]).as_matrix()
    assert np.allclose(moved.bodies[model.body_names.index("Wheel_1")], pose(spin, wheel_pivot - spin @ wheel_pivot))
    slide = 0.5e-3 * math.degrees(0.4)
    assert np.allclose(moved.bodies[model.body_names.index("Carriage_1")], pose(translation=(slide, 0.0, 0.0)))
    assert np.allclose(moved.bodies[model.body_names.index("Base_1")], np.eye(4))

    # the ball joint's frame has world axes: q = (a, 0, 0) turns the pendulum about world z at the pivot
    q = q0.copy()
    q[model.coordinates_of("Ball")[0]] += 0.25
    swung = forward(model, q).bodies[model.body_names.index("Pendulum_1")]
    ball_pivot = (LINK_POSE @ [40.0, 2.0, 2.0, 1.0])[:3] / 100
    assert np.allclose(swung, pose(rz(0.25), ball_pivot - rz(0.25) @ ball_pivot), atol=1e-12)

ROBOT_POSES = robot().poses
