"""Mdx motion platforms in scenarios: the pose swept, legs from inverse kinematics, actuator forces and their plot.

Leg lengths are compared with ``shiftsim.mdx.kinematics``, forces with ``shiftsim.mdx.statics`` (its own
solve of the platform model) and, at one pose, with six two-force legs balanced by hand (a 6x6 system).
"""

from __future__ import annotations

import csv
import io
import json

import jsonschema
import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from helpers.scenario import REPO, model_path, png_size, run_cli, write_scenario

from shiftsim.formats.mdx import platform_model_spec
from shiftsim.mdx.geometry import read_platform
from shiftsim.mdx.kinematics import leg_lengths_mm, raw_from_lengths
from shiftsim.commands._mdx_statics import ActuatorStatics
from shiftsim.scenario import LocalExecutor, execute, load_scenario
from shiftsim.plots.registry import FIGURE_SIZES, chosen_plots
from shiftsim.scenario.schema import load_schema

CHAIR_FILE = str(REPO / "models" / "mdx" / "chair.json")
CHAIR, _ = read_platform()
MASS, COM_M = 90.0, np.array([0.03, -0.01, 0.25])
# x, y, z (mm), roll, pitch, yaw (deg) of three poses, and the same as fractions of 40 mm and 25 degrees
POSES = np.array([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [10.0, -15.0, 20.0, 5.0, -8.0, 12.5], [-20.0, 8.0, -10.0, -5.0, 10.0, -20.0]])
SCALE = np.array([40.0, 40.0, 40.0, 25.0, 25.0, 25.0])
AXES = ("x", "y", "z", "roll", "pitch", "yaw")


def _document(poses: np.ndarray, units: str | None = None, **outputs) -> dict:
    machine = {"id": "chair", "model": CHAIR_FILE, "payload": {"mass": MASS, "com": COM_M.tolist()}}
    if units:
        machine["units"] = units
    return {"name": "platform", "machines": [machine],
            "sweep": {"parameters": {f"chair:{a}": poses[:, k].tolist() for k, a in enumerate(AXES)}},
            "track": {"joints": [f"chair:leg{i}" for i in range(6)]}, "outputs": {"plots": [], **outputs}}


def _run(tmp_path, document, name="scenario.json"):
    scenario = load_scenario(write_scenario(tmp_path, document, name))
    return scenario, execute(scenario, LocalExecutor(1))


def _two_force_legs(pose: np.ndarray) -> np.ndarray:
    """Leg forces (+ pushes) balancing the payload: sum f_i u_i = m g up, sum (q_i - c) x f_i u_i = 0."""
    rotation = Rotation.from_euler("ZYX", pose[[5, 4, 3]], degrees=True).as_matrix()
    centre_mm = pose[:3] + [0.0, 0.0, CHAIR.initial_height_mm]
    top = (CHAIR.platform_joints_mm() @ rotation.T + centre_mm) / 1000
    legs = top - CHAIR.base_joints_mm() / 1000
    u = legs / np.linalg.norm(legs, axis=1, keepdims=True)
    c = rotation @ COM_M + centre_mm / 1000
    matrix = np.vstack([u.T, np.cross(top - c, u).T])
    return np.linalg.solve(matrix, [0.0, 0.0, MASS * 9.81, 0.0, 0.0, 0.0])


def test_legs_and_forces_follow_the_platform_kinematics_and_statics(tmp_path):
    scenario, steps = _run(tmp_path, _document(POSES / SCALE))
    assert [(p.kind, p.unit) for p in scenario.sweep.parameters] == [("pose", "-")] * 6
    statics = ActuatorStatics(platform_model_spec(CHAIR, payload_kg=MASS, payload_com_mm=COM_M * 1000))
    for step, pose in zip(steps, POSES):
        assert step.converged
        record = step.actuators["chair"]
        lengths_mm = leg_lengths_mm(CHAIR, pose)
        np.testing.assert_allclose(record["pose"], pose, atol=1e-12)
        np.testing.assert_allclose(record["lengths"], lengths_mm / 1000, rtol=1e-12)
        np.testing.assert_allclose(record["raw"], raw_from_lengths(CHAIR, lengths_mm), rtol=1e-12)
        assert record["in_range"] == [666 <= length <= 790 for length in lengths_mm]
        np.testing.assert_allclose(record["forces"], statics.forces_N(lengths_mm), rtol=1e-7, atol=1e-7)
        for i in range(6):  # the actuator joints sit at the leg lengths and carry the forces
            joint = step.joints[f"chair:leg{i}"]
            assert joint["position"] == pytest.approx(lengths_mm[i] / 1000, rel=1e-12)
            assert joint["effort"] == pytest.approx(record["forces"][i], rel=1e-12)
    np.testing.assert_allclose(steps[1].actuators["chair"]["forces"], _two_force_legs(POSES[1]), rtol=1e-7)


def test_real_units_give_the_same_motion(tmp_path):
    _, normalized = _run(tmp_path, _document(POSES / SCALE), "normalized.json")
    scenario, real = _run(tmp_path, _document(POSES, units="real"), "real.json")
    assert [p.unit for p in scenario.sweep.parameters] == ["mm", "mm", "mm", "deg", "deg", "deg"]
    for a, b in zip(normalized, real):
        np.testing.assert_allclose(b.actuators["chair"]["forces"], a.actuators["chair"]["forces"], rtol=1e-9)
        np.testing.assert_allclose(b.actuators["chair"]["lengths"], a.actuators["chair"]["lengths"], rtol=1e-12)


@pytest.mark.slow
def test_start_pose_in_joints_and_legs_out_of_range_are_flagged(tmp_path, capsys):
    """A pitch beyond the actuators' reach is solved and flagged, not hidden; unswept components keep their
    `joints` value; the results validate and the CSV holds the actuator rows."""
    document = _document(np.zeros((1, 6)))
    document["machines"][0]["joints"] = {"z": 1.0}
    document["sweep"] = {"parameters": {"chair:pitch": [0.0, 1.6]}}
    document["outputs"] = {"plots": ["actuators"], "csv": True, "dpi": 30}
    path = write_scenario(tmp_path, document)
    code, out, err = run_cli(capsys, "run", path, "-o", tmp_path / "out")
    assert code == 0, err
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    jsonschema.Draft202012Validator(load_schema("results")).validate(results)
    first, last = (step["actuators"]["chair"] for step in results["steps"])
    np.testing.assert_allclose(first["pose"], [0, 0, 40, 0, 0, 0], atol=1e-12)
    expected = leg_lengths_mm(CHAIR, np.array([0.0, 0.0, 40.0, 0.0, 40.0, 0.0]))
    assert last["in_range"] == [666 <= length <= 790 for length in expected] and not all(last["in_range"])
    assert "legs outside actuatorLen" in out
    rows = list(csv.reader(io.StringIO((tmp_path / "out" / "results.csv").read_text())))
    table = {(r[0], r[1], r[2], r[3]): r[4] for r in rows[1:]}  # step, entity, quantity, component: value
    assert float(table[("1", "chair:leg1", "actuator_length", "")]) == last["lengths"][1]
    assert table[("1", "chair:leg1", "actuator_in_range", "")] == str(int(last["in_range"][1]))
    assert float(table[("1", "chair", "platform_pose", "pitch")]) == pytest.approx(40.0)
    width, height = FIGURE_SIZES["actuators"]
    assert png_size(tmp_path / "out" / "actuators.png") == (round(width * 30), round(height * 30))


def test_the_actuator_plot_is_drawn_by_default_and_only_for_platforms(tmp_path, capsys):
    document = _document(POSES[:2] / SCALE)
    del document["outputs"]
    scenario = load_scenario(write_scenario(tmp_path, document))
    assert chosen_plots(scenario) == ("deflection", "efforts", "pin_loads", "pose", "convergence", "actuators")
    beam = {"name": "beam", "machines": [{"id": "beam", "model": model_path("cantilever10")}],
            "outputs": {"plots": ["actuators"]}}
    code, _, err = run_cli(capsys, "run", write_scenario(tmp_path, beam, "beam.json"), "-o", tmp_path / "beam")
    assert code == 2 and "outputs.plots[0]: 'actuators' cannot be drawn: the scenario has no Mdx platform" in err


def test_names_the_pose_sets_are_refused_elsewhere(tmp_path, capsys):
    document = _document(POSES[:1] / SCALE)
    document["machines"][0].update(joints={"leg2": 0.7, "roll": [0.1]}, hold=["z", "leg0"])
    document["sweep"]["parameters"]["chair:leg5"] = [0.7]
    path = write_scenario(tmp_path, document)
    code, _, err = run_cli(capsys, "run", path, "-o", tmp_path / "out")
    assert code == 2 and "Traceback" not in err
    assert "machines[0].joints.roll: a list given for a pose component (expected a number (-))" in err
    document["machines"][0]["joints"] = {"leg2": 0.7}
    code, _, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 2
    assert ("machines[0].joints.leg2: machine 'chair': actuator 'leg2' is set by the platform pose (inverse "
            "kinematics) (expected a pose component: x, y, z, roll, pitch, yaw)") in err
    assert "machines[0].hold[0]: machine 'chair': 'z' is a pose component: the pose is always prescribed" in err
    assert "machines[0].hold[1]: machine 'chair': actuator 'leg0' is set by the platform pose" in err
    assert "sweep.parameters.chair:leg5: machine 'chair': actuator 'leg5' is set by the platform pose" in err
    beam = {"name": "beam", "machines": [{"id": "beam", "model": model_path("cantilever10"), "units": "real",
                                          "payload": {"mass": 1.0}}]}
    code, _, err = run_cli(capsys, "run", write_scenario(tmp_path, beam, "beam.json"), "-o", tmp_path / "out")
    assert code == 2
    assert "machines[0].units: 'units' is for an Mdx platform standing in the world, not a shift model" in err
    assert "machines[0].payload: 'payload' is for an Mdx platform" in err
