"""Machines attached to other machines (CLARAty composition): one model, names under the host, mounting offsets.

Checked against a balance of the whole machine (the root joint carries the weight of everything it holds,
moments from the reported body poses), against the attached model's own forward kinematics placed at
the mount frame by hand, and against the composition API called directly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from helpers.scenario import REPO, model_path, rpy_matrix, run_cli, write_scenario

import shiftsim
from shiftsim.compose import attach
from shiftsim.formats import read_model
from shiftsim.kinematics import forward
from shiftsim.model import compile_model
from shiftsim.scenario import LocalExecutor, execute, load_scenario
from shiftsim.statics import solve

ARM = str(REPO / "models" / "claraty" / "rover_arm_5dof.xml")
TWO_LINK = str(REPO / "models" / "claraty" / "simple_two_link.xml")
ARM_JOINTS = ["shoulder_azimuth", "shoulder_elevation", "elbow", "wrist_pitch", "turret_roll"]
G = 9.81


def _arm_on_beam(**arm) -> dict:
    """The 5-dof arm hanging (rolled 180 degrees) from the tip of the ten-link cantilever, arm joints held."""
    return {"name": "arm_on_beam",
            "machines": [{"id": "beam", "model": model_path("cantilever10"), "placement": {"position": [1.0, 2.0, 0.0]}},
                         {"id": "arm", "model": ARM, "attach": {"to": "beam:link10:tip"},
                          "placement": {"position": [0.0, 0.0, -0.05], "rotation": {"roll": 180.0}},
                          "joints": {"elbow": -0.5}, "hold": ARM_JOINTS, **arm}],
            "sweep": {"parameters": {"beam:arm:shoulder_elevation": [0.2, 0.6]}},
            "outputs": {"plots": []}}


def _run(tmp_path, document, name="scenario.json"):
    scenario = load_scenario(write_scenario(tmp_path, document, name))
    return scenario, execute(scenario, LocalExecutor(1))


def _pose(body: dict) -> np.ndarray:
    x = np.eye(4)
    x[:3, :3], x[:3, 3] = body["rotation"], body["position"]
    return x


def test_an_arm_on_a_cantilever_joins_its_model(tmp_path):
    scenario, steps = _run(tmp_path, _arm_on_beam())
    (machine,) = scenario.machines
    assert [n for n in machine.model.joint_names if n.startswith("arm:")] == [f"arm:{j}" for j in ARM_JOINTS]
    assert machine.held == tuple(f"arm:{j}" for j in ARM_JOINTS)
    assert len(scenario.input_files) == 3  # the scenario, the beam and the arm
    beam, arm = read_model(model_path("cantilever10")), read_model(ARM)
    masses = {**{f"beam:{b.name}": (b.mass, b.com) for b in beam.bodies},
              **{f"beam:arm:{b.name}": (b.mass, b.com) for b in arm.bodies}}
    total = sum(m for m, _ in masses.values())
    assert total == pytest.approx(20.0 + 4.541)
    arm_model = compile_model(arm)
    for step, elevation in zip(steps, [0.2, 0.6]):
        assert step.converged
        assert step.joints["beam:arm:shoulder_elevation"]["position"] == pytest.approx(elevation, abs=1e-12)
        assert step.joints["beam:arm:elbow"]["position"] == pytest.approx(-0.5, abs=1e-12)
        # the wall hinge carries the weight of the beam and the arm, and the moment of every body's weight
        wall = np.asarray(step.frames["beam:fixed:wall"]["position"])
        moment = sum(np.cross(_pose(step.bodies[name])[:3, :3] @ com + step.bodies[name]["position"] - wall,
                              [0.0, 0.0, -m * G]) for name, (m, com) in masses.items())
        np.testing.assert_allclose(step.joints["beam:hinge1"]["wrench_world"], [0, 0, total * G, *(-moment)],
                                   atol=1e-6)
        # the arm's own kinematics, hung from the beam tip with the mounting offset, gives the instrument's place
        q_arm = np.array([step.joints[f"beam:arm:{j}"]["position"] for j in ARM_JOINTS])
        apxs = forward(arm_model, q_arm).frames[arm_model.frame_index("turret:apxs")]
        offset = np.eye(4)
        offset[:3, :3], offset[:3, 3] = rpy_matrix(180.0, 0.0, 0.0), [0.0, 0.0, -0.05]
        tip = np.eye(4)
        tip[:3, 3] = [0.5, 0.0, 0.0]  # link10's tip frame
        expected = _pose(step.bodies["beam:link10"]) @ tip @ offset @ apxs
        np.testing.assert_allclose(step.frames["beam:arm:turret:apxs"]["position"], expected[:3, 3], atol=1e-9)


def test_the_scenario_solves_what_the_composition_api_builds(tmp_path):
    _, steps = _run(tmp_path, _arm_on_beam())
    offset = np.eye(4)
    offset[:3, :3], offset[:3, 3] = rpy_matrix(180.0, 0.0, 0.0), [0.0, 0.0, -0.05]
    model = compile_model(attach(read_model(model_path("cantilever10")), "link10:tip", read_model(ARM), "arm",
                                 placement=offset))
    held = {"arm:shoulder_azimuth": 0.0, "arm:elbow": -0.5, "arm:wrist_pitch": 0.5, "arm:turret_roll": 0.0}  # file, joints
    for step, elevation in zip(steps, [0.2, 0.6]):
        solution = solve(model, set={**held, "arm:shoulder_elevation": elevation})
        direct = solution.as_dict()["joints"]
        for name, joint in direct.items():
            assert step.joints[f"beam:{name}"]["effort"] == pytest.approx(joint["effort"], rel=1e-9, abs=1e-9)


def test_claraty_on_claraty_nested_attachments(tmp_path):
    """A two-link tool on the arm's instrument frame, the arm on a CLARAty two-link base: names nest."""
    document = {"name": "nested", "world": {"gravity": [0.0, 0.0, -9.81]},
                "machines": [{"id": "tool", "model": TWO_LINK, "attach": {"to": "arm:turret:apxs"},
                              "hold": ["joint1", "joint2"]},
                             {"id": "rover", "model": TWO_LINK, "hold": ["joint1", "joint2"]},
                             {"id": "arm", "model": ARM, "attach": {"to": "rover:link2:ref2"}, "hold": ARM_JOINTS}],
                "sweep": {"parameters": {"rover:arm:tool:joint2": [0.0, 0.5]}},
                "track": {"joints": ["rover:joint1", "rover:arm:tool:joint2"]}, "outputs": {"plots": []}}
    scenario, steps = _run(tmp_path, document)
    (machine,) = scenario.machines
    assert machine.id == "rover" and "arm:tool:joint1" in machine.model.joint_names
    assert set(machine.held) == {"joint1", "joint2", *(f"arm:{j}" for j in ARM_JOINTS), "arm:tool:joint1",
                                 "arm:tool:joint2"}
    for step in steps:
        assert step.converged
        # the massless base carries the arm's weight (the tool is massless too)
        assert step.joints["rover:joint1"]["wrench_world"][2] == pytest.approx(4.541 * G, rel=1e-9)
    assert steps[1].joints["rover:arm:tool:joint2"]["position"] == pytest.approx(0.5, abs=1e-12)


def _refused(tmp_path, capsys, document) -> str:
    path = write_scenario(tmp_path, document)
    code, _, err = run_cli(capsys, "run", path, "-o", tmp_path / "out")
    assert code == 2 and "Traceback" not in err and not (tmp_path / "out").exists()
    return err


def test_unknown_hosts_frames_and_cycles_are_refused(tmp_path, capsys):
    beam = {"id": "beam", "model": model_path("cantilever10")}
    document = {"name": "bad", "machines": [
        beam,
        {"id": "arm", "model": ARM, "attach": {"to": "bean:link10:tip"}},
        {"id": "arm2", "model": ARM, "attach": {"to": "beam:link10:top"}},
        {"id": "a", "model": TWO_LINK, "attach": {"to": "b:link2:ref2"}},
        {"id": "b", "model": TWO_LINK, "attach": {"to": "c:link2:ref2"}},
        {"id": "c", "model": TWO_LINK, "attach": {"to": "a:link2:ref2"}},
        {"id": "self", "model": TWO_LINK, "attach": {"to": "self:link2"}},
        {"id": "mdx_arm", "model": ARM, "attach": {"to": "beam:link9:tip"}, "payload": {"mass": 5.0}}]}
    err = _refused(tmp_path, capsys, document)
    assert "machines[1].attach.to: unknown machine 'bean' (expected one of beam" in err
    assert "machines[2].attach.to: machine 'beam' has no frame 'link10:top' (expected one of link10:tip" in err
    assert "machines[3].attach.to: machines attach to each other in a cycle: a -> b -> c -> a" in err
    assert "machines[6].attach.to: machine 'self' is attached to itself" in err
    assert "machines[7].payload: 'payload' is for an Mdx platform standing in the world, not an attached machine" in err
    assert err.count("cycle") == 1
    document["machines"] = [beam, {"id": "nomount", "model": ARM, "attach": {"to": "beam"}}]
    err = _refused(tmp_path, capsys, document)
    assert 'machines[1].attach.to: "beam" is not allowed here (expected HOST:body:frame' in err


def test_names_of_an_attached_machine_belong_to_its_host(tmp_path, capsys):
    document = _arm_on_beam()
    document["sweep"] = {"parameters": {"arm:elbow": [0.0, 0.1]}}
    document["machines"][1]["hold"] = ["elbow", "shoulder_azimuth", "shoulder_elbow"]
    err = _refused(tmp_path, capsys, document)
    assert "sweep.parameters.arm:elbow" not in err  # an ending of beam:arm:elbow (docs/naming.md): it is that joint
    assert "machines[1].hold[2]: machine 'beam': unknown joint 'arm:shoulder_elbow' (expected one of arm:" in err


def test_short_names_of_an_attached_machine_mean_the_same_joint_everywhere(tmp_path):
    """``arm:shoulder_elevation`` (the attached machine's id in front) and ``beam:shoulder_elevation`` (an ending
    under the host) sweep the joint ``beam:arm:shoulder_elevation``: the same steps, the same results."""
    runs = []
    for name in ("beam:arm:shoulder_elevation", "arm:shoulder_elevation", "beam:shoulder_elevation"):
        document = _arm_on_beam()
        document["sweep"] = {"parameters": {name: [0.2, 0.6]}}
        document["track"] = {"joints": ["beam:arm:elbow"]}
        runs.append(shiftsim.run_scenario(document))
    for run in runs[1:]:
        np.testing.assert_array_equal(run["beam:arm:elbow", "effort"], runs[0]["beam:arm:elbow", "effort"])
    assert runs[0]["arm:elbow", "effort"].shape == (2,)
    assert np.ptp(runs[0]["beam:arm:elbow", "effort"]) > 0  # the sweep moves the arm: the runs are not all at rest


def test_any_machines_placement_is_a_sweep_parameter_in_metres_and_radians():
    """A Shift machine moved and turned by the sweep: each step's tip is the model-frame tip placed by hand
    (scipy Rotation, yaw about world z after the file's roll), and its joint loads in model axes do not change
    (gravity stays along the yaw axis)."""
    roll = 10.0  # degrees: the placement's roll is kept while the yaw is swept
    document = {"name": "moved", "machines": [{"id": "b", "model": model_path("cantilever10"),
                                                "placement": {"position": [5.0, 0.0, 1.0], "rotation": {"roll": roll}}}],
                "sweep": {"parameters": {"b:placement.x": [0.0, 2.0, -3.0], "b:placement.yaw": [0.0, 0.5, -2.0],
                                         "b:placement.z": [1.0, 1.0, 4.0]}},
                "track": {"frames": ["b:link10:tip"], "joints": ["b:hinge1"]}, "outputs": {"plots": []}}
    results = shiftsim.run_scenario(document)
    model = shiftsim.load_model(model_path("cantilever10"))
    single = solve(model, gravity=Rotation.from_euler("x", roll, degrees=True).inv().apply([0.0, 0.0, -G]))
    tip_model = forward(model, single.q).frames[model.frame_index("link10:tip")][:3, 3]
    for step, (x, yaw, z) in enumerate([(0.0, 0.0, 1.0), (2.0, 0.5, 1.0), (-3.0, -2.0, 4.0)]):
        rotation = Rotation.from_euler("ZYX", [yaw, 0.0, math.radians(roll)])
        expected = rotation.apply(tip_model) + [x, 0.0, z]
        np.testing.assert_allclose(results["b:link10:tip", "position"][step], expected, atol=1e-9)
        effort = results["hinge1", "effort"][step]
        assert effort == pytest.approx(single.joint_loads["hinge1"].effort[0], rel=1e-9)
    assert results.steps["b:placement.yaw"].tolist() == [0.0, 0.5, -2.0]
