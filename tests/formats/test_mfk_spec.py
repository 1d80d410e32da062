"""MFK configuration -> ModelSpec: names, joints, masses, springs, and forward kinematics checked twice."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from shiftsim.errors import ModelError
from shiftsim.formats import read_model
from shiftsim.formats.mfk import load_configuration, mfk_model_spec
from shiftsim.formats.mfk.kinematics import machine_transforms
from shiftsim.formats.mfk.topcon import PointOfInterest
from shiftsim.kinematics import forward
from shiftsim.model import compile_model

MODELS = Path(__file__).resolve().parents[2] / "models" / "mfk"
EXCAVATOR = MODELS / "excavator.json"


def data_of(name: str) -> dict:
    return json.loads((MODELS / name).read_text())


def interface(data: dict, name: str, component: int) -> dict:
    return next(i for i in data["components"][component]["interfaces"] if i["name"] == name)


@pytest.fixture(scope="module")
def excavator():
    return read_model(EXCAVATOR)


def test_read_model_dispatches_bare_and_enveloped_files(tmp_path, excavator):
    assert excavator.format == "mfk" and excavator.name == "Excavator client example"
    path = tmp_path / "wire.json"
    path.write_text(json.dumps({"type": "mfk::ResourceConfiguration", "data": data_of("excavator.json"),
                                "at": 0, "ttl": 10}))
    wrapped = read_model(path)
    assert [b.name for b in wrapped.bodies] == [b.name for b in excavator.bodies]


def test_excavator_names_and_joints(excavator):
    assert [b.name for b in excavator.bodies] == ["c1:body", "c1:boom", "c1:stick", "c1:stick_attach", "c1:tracks",
                                                  "c0:bucket"]
    joints = {j.name: j for j in excavator.joints}
    assert set(joints) == {"c1:body", "c1:boom.ry", "c1:stick.ry", "c1:stick_attach.ry", "c1:tracks.rz",
                           "c0:bucket.ry"}
    assert joints["c1:body"].type == "rigid" and joints["c1:body"].parent.body == "fixed"
    boom = joints["c1:boom.ry"]
    assert boom.type == "revolute" and boom.axis.tolist() == [0, 1, 0] and boom.initial == (0.0,)
    assert (boom.parent.body, boom.parent.frame, boom.child.body) == ("c1:body", "c1.boom.ry", "c1:boom")
    frame = excavator.bodies[0].frames["c1.boom.ry"]
    assert frame.translation == pytest.approx([0, 0, -1.65]) and frame.rotation == pytest.approx(np.eye(3))
    assert joints["c1:tracks.rz"].axis.tolist() == [0, 0, 1]
    bucket = joints["c0:bucket.ry"]  # the attach: the bucket hangs from the excavator's stick_attach node
    assert bucket.parent.body == "c1:stick_attach" and bucket.child.body == "c0:bucket"
    assert excavator.gravity.tolist() == [0.0, 0.0, 9.81]
    assert excavator.assemblies == {"c0": True, "c1": True}
    assert excavator.extras["mfk"]["joints"]["c1:topcon.nodes.boom.ry"] == "c1:boom.ry"
    assert excavator.extras["mfk"]["root_component"] == 1


def test_shapes_and_points_land_on_their_bodies(excavator):
    bodies = {b.name: b for b in excavator.bodies}
    box = bodies["c1:boom"].shapes[0]
    assert (box.name, box.kind) == ("boom", "box")
    assert box.half_extents == pytest.approx([2.85, 0.2, 0.625]) and box.centre == pytest.approx([2.85, 0, 0])
    assert bodies["c0:bucket"].frames["bucket_l"].translation == pytest.approx([1.5, -0.55, 0])
    assert set(bodies["c1:tracks"].frames) == {"base_rl", "base_rr", "base_fl", "base_fr"}
    crane = read_model(MODELS / "crane.json")
    sphere = next(s for b in crane.bodies for s in b.shapes if s.name == "head_sheaves")
    assert sphere.kind == "sphere" and sphere.radius == 0.45


def test_masses_combine_by_the_parallel_axis_theorem(excavator):
    bodies = {b.name: b for b in excavator.bodies}
    assert sum(b.mass for b in excavator.bodies) == pytest.approx(20450)
    body = bodies["c1:body"]
    m1, c1, m2, c2 = 5700, np.array([-0.3, 0.1, -2.0]), 3800, np.array([-2.6, 0.0, -1.6])
    com = (m1 * c1 + m2 * c2) / (m1 + m2)
    assert body.mass == 9500 and body.com == pytest.approx(com)
    # izz by hand: own izz of each box + m * (dx^2 + dy^2) about the common centre
    izz1, izz2 = 5700 * (4.3**2 + 2.8**2) / 12, 3800 * (0.8**2 + 2.8**2) / 12
    d1, d2 = c1 - com, c2 - com
    expected_izz = izz1 + izz2 + m1 * (d1[0] ** 2 + d1[1] ** 2) + m2 * (d2[0] ** 2 + d2[1] ** 2)
    assert body.inertia[2, 2] == pytest.approx(expected_izz, rel=1e-4)  # file values are rounded to 0.1
    expected_ixz = -(m1 * d1[0] * d1[2] + m2 * d2[0] * d2[2])  # tensor element -sum(m x z)
    assert body.inertia[0, 2] == pytest.approx(expected_ixz) and body.inertia[2, 0] == body.inertia[0, 2]


def test_springs_rest_at_the_current_value_unless_given():
    spec = mfk_model_spec(EXCAVATOR, data_of("excavator.json"), {"c1:topcon.nodes.boom.ry": 0.4})
    boom = next(j for j in spec.joints if j.name == "c1:boom.ry")
    assert boom.initial == (0.4,) and boom.stiffness == pytest.approx((-1.4e7 * 0.4, 1.4e7))
    assert boom.limits == (-1.0, 1.25) and boom.actuated
    data = data_of("excavator.json")
    interface(data, "physics", 1)["joints"][1].update(rest=0.1, damping=2.0e5)
    boom = next(j for j in mfk_model_spec(EXCAVATOR, data).joints if j.name == "c1:boom.ry")
    assert boom.stiffness == pytest.approx((-1.4e7 * 0.1, 1.4e7)) and boom.damping == (0.0, 2.0e5)


def test_measurement_script_computes_physics():
    spec = read_model(MODELS / "crane.json")
    boom = next(b for b in spec.bodies if b.name == "c1:boom")
    mass = 360 * 9.2  # kg_per_m * boom_base_length
    assert boom.mass == pytest.approx(mass) and boom.com == pytest.approx([9.2 / 2, 0, -0.05])
    assert boom.inertia[1, 1] == pytest.approx(mass * 9.2**2 / 12)
    tele = next(j for j in spec.joints if j.name == "c1:boom_tele.tx")
    assert tele.type == "prismatic" and tele.axis.tolist() == [1, 0, 0] and tele.initial == (3.0,)


def test_component_without_physics_is_massless_with_a_warning():
    data = data_of("excavator.json")
    data["components"][0]["interfaces"] = [i for i in data["components"][0]["interfaces"] if i["name"] != "physics"]
    spec = mfk_model_spec("nophysics.json", data)
    assert next(b for b in spec.bodies if b.name == "c0:bucket").mass == 0.0
    assert any("component 0 (generic bucket) has no shiftsim.physics interface; its bodies are massless" in w
               for w in spec.warnings)


@pytest.mark.parametrize("change, message", [
    (lambda d: interface(d, "physics", 1)["bodies"][0].update(mass=-5), "mass -5 kg is negative"),
    (lambda d: interface(d, "physics", 1)["bodies"][3].update(ixx=11000), "principal moments"),
    (lambda d: interface(d, "physics", 1)["joints"][1].update(stiffness=-1), "stiffness -1 is negative"),
    (lambda d: interface(d, "physics", 1)["joints"][1].update(lower=1, upper=0), "lower limit 1 is above upper"),
    (lambda d: interface(d, "physics", 1)["bodies"][0].update(node_ref="topcon.nodes.cab"),
     "reference 'topcon.nodes.cab' does not resolve"),
])
def test_impossible_physics_is_refused(change, message):
    data = data_of("excavator.json")
    change(data)
    with pytest.raises(ModelError) as info:
        mfk_model_spec("bad.json", data)
    assert message in str(info.value)


def test_spring_on_a_value_that_is_not_a_joint_is_refused():
    data = data_of("excavator.json")
    interface(data, "physics", 1)["joints"][0]["value_ref"] = "topcon.nodes.body.rz"
    with pytest.raises(ModelError) as info:
        mfk_model_spec("bad.json", data)
    assert "topcon.nodes.body.rz is not an articulated value of component 1" in str(info.value)


def test_scale_cannot_enter_a_rigid_model():
    data = data_of("excavator.json")
    interface(data, "nodes", 1)["nodes"][0]["nodes"][0]["sz"] = 1.5
    with pytest.raises(ModelError) as info:
        mfk_model_spec("scaled.json", data)
    assert "node c1:boom has scale (1.0, 1.0, 1.5)" in str(info.value)
    assert "a rigid-body model cannot carry scale" in str(info.value)


# --------------------------------------------- forward kinematics two ways
def two_ways(name: str, data: dict, rng: np.random.Generator, samples: int = 5) -> None:
    """Poses from the compiled ModelSpec (joint chain) == poses from the node transforms (MFK)."""
    spec = mfk_model_spec(name, data)
    model = compile_model(spec)
    joint_of = spec.extras["mfk"]["joints"]
    for _ in range(samples):
        q = rng.uniform(-1.5, 1.5, model.nq)
        values = {ref: q[model.coordinate_names.index(joint)] for ref, joint in joint_of.items()}
        config = load_configuration(data, name, values)
        poses = forward(model, q)
        for (component, node), expected in machine_transforms(config).items():
            got = poses.bodies[model.body_index(f"c{component}:{node}")]
            assert got == pytest.approx(expected, abs=1e-9), (component, node)
        for component in config.components:
            for point in component.points_of_interest.points if component.points_of_interest else []:
                assert isinstance(point, PointOfInterest)
                node = machine_transforms(config)[(component.index, point.node_ref.split(".")[2])]
                frame = poses.frames[model.frame_index(f"c{component.index}:{point.node_ref.split('.')[2]}:{point.id}")]
                assert frame[:3, 3] == pytest.approx(node[:3, :3] @ point.position + node[:3, 3], abs=1e-9)


@pytest.mark.parametrize("name", ["excavator.json", "crane.json"])
def test_model_forward_kinematics_matches_mfk_node_transforms(name):
    two_ways(name, data_of(name), np.random.default_rng(5))


@pytest.mark.slow
def test_node_with_several_articulated_values_and_fixed_rotations():
    data = data_of("excavator.json")
    boom = interface(data, "nodes", 1)["nodes"][0]["nodes"][0]
    boom.update(rx=0.3, rz=-0.2, ty=0.4)  # fixed roll and yaw around an articulated pitch ...
    interface(data, "replicate", 1)["manifest"] += [  # ... plus articulated tz and rz on the same node
        {"value_ref": "topcon.nodes.boom.tz", "type": "float"}, {"value_ref": "topcon.nodes.boom.rz", "type": "float"}]
    spec = mfk_model_spec("multi.json", data)
    names = [j.name for j in spec.joints]
    assert names[names.index("c1:boom.tz"):names.index("c1:boom.ry") + 1] == ["c1:boom.tz", "c1:boom.rz", "c1:boom.ry"]
    assert {"c1:boom.tz", "c1:boom.rz"} <= {b.name for b in spec.bodies}
    ry = next(j for j in spec.joints if j.name == "c1:boom.ry")
    assert ry.child.frame == "c1.boom.ry.child"  # the fixed roll follows the last joint
    two_ways("multi.json", data, np.random.default_rng(7))


def test_colon_in_a_node_id_cannot_become_a_body_path():
    data = data_of("excavator.json")
    interface(data, "nodes", 1)["nodes"][0]["nodes"][1]["id"] = "left:tracks"
    for item in (*interface(data, "collision_shapes", 1)["shapes"], *interface(data, "points_of_interest", 1)["points"],
                 *interface(data, "physics", 1)["bodies"], *interface(data, "render_assets", 1)["assets"][0]["shapes"],
                 *interface(data, "render_assets", 1)["assets"][1]["shapes"],
                 *interface(data, "render_assets", 1)["assets"][2]["shapes"]):
        if item["node_ref"] == "topcon.nodes.tracks":
            item["node_ref"] = "topcon.nodes.left:tracks"
    for entry in interface(data, "replicate", 1)["manifest"] + interface(data, "physics", 1)["joints"]:
        entry["value_ref"] = entry["value_ref"].replace(".tracks.", ".left:tracks.")
    load_configuration(data, "colon.json")  # fine for MFK itself
    with pytest.raises(ModelError) as info:
        mfk_model_spec("colon.json", data)
    assert "node id 'left:tracks' contains ':'" in str(info.value)
