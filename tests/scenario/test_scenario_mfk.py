"""MFK machines in scenarios: joints by name, value references for placement and geometry; site placement.

Positions are checked against ``shiftsim mfk show``'s report (``formats.mfk.report.describe``), which
poses points through the MFK node transforms and the transform interface directly, without the
ModelSpec, the compiled model or forward kinematics; placements against matrices written out here.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers.scenario import REPO, rpy_matrix, run_cli, write_scenario

from shiftsim.formats.mfk import load_configuration
from shiftsim.formats.mfk.report import describe
from shiftsim.jsonio import read_json
from shiftsim.scenario import LocalExecutor, execute, load_scenario

EXCAVATOR = REPO / "models" / "mfk" / "excavator.json"
POINTS = {"ex:c0:bucket:bucket_r": "c0:bucket:bucket_r", "ex:c0:bucket:bucket_l": "c0:bucket:bucket_l",
          "ex:c1:stick_attach:stick_attach": "c1:stick_attach:stick_attach", "ex:c1:tracks:base_fl": "c1:tracks:base_fl"}
"""Scenario frame names and ``shiftsim mfk show``'s point names: one scheme, the machine id in front."""
POSITION = "topcon.transform.local_position."
ROTATION = "topcon.transform.local_rotation."


def _scenario(machine: dict, sweep: dict | None = None, gravity=(0.0, 0.0, -9.81)) -> dict:
    document = {"name": "mfk", "world": {"gravity": list(gravity)},
                "machines": [{"id": "ex", "model": str(EXCAVATOR), **machine}],
                "track": {"frames": list(POINTS)}, "outputs": {"plots": []}}
    if sweep:
        document["sweep"] = {"parameters": sweep}
    return document


def _run(tmp_path, document, name="scenario.json"):
    scenario = load_scenario(write_scenario(tmp_path, document, name))
    return scenario, execute(scenario, LocalExecutor(1))


def _site_points(values: dict[str, float]) -> dict[str, np.ndarray]:
    """Site positions of the points of interest from the MFK report, with ``values`` written in."""
    data, _ = read_json(EXCAVATOR)
    report = describe(load_configuration(data, EXCAVATOR, values))
    return {name: np.asarray(report["points"][key]["site"]) for name, key in POINTS.items()}


def _reference(step, name: str) -> np.ndarray:
    """The unloaded position of a tracked frame: loaded position minus deflection."""
    frame = step.frames[name]
    return np.asarray(frame["position"]) - np.asarray(frame["deflection"])


def _site_from_machine(east, north, up, roll, pitch, yaw) -> np.ndarray:
    """T(E, N, U) R_up(-yaw) R_E(pitch) R_N(roll) M written out (M: J670 x, y, z -> N, E, -U)."""
    def about(axis, angle):  # Rodrigues
        k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]], float)
        return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k
    m = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
    x = np.eye(4)
    x[:3, :3] = about([0, 0, 1], -yaw) @ about([1, 0, 0], pitch) @ about([0, 1, 0], roll) @ m
    x[:3, 3] = [east, north, up]
    return x


def test_placed_by_its_transform_interface_under_a_site_placement(tmp_path):
    """Transform values in `joints` place the machine on site; the scenario placement places the site."""
    site = {"easting": 50.0, "northing": 120.0, "elevation": 3.0, "roll": -0.02, "pitch": 0.05, "yaw": 0.5}
    values = {POSITION + k: v for k, v in list(site.items())[:3]} | {ROTATION + k: v for k, v in list(site.items())[3:]}
    placement = {"position": [-40.0, -100.0, 1.0], "rotation": {"yaw": 30.0}}
    document = _scenario({"joints": values, "placement": placement}, gravity=(0.0, 0.0, 0.0))
    scenario, (step,) = _run(tmp_path, document)
    world_from_site = np.eye(4)
    world_from_site[:3, :3], world_from_site[:3, 3] = rpy_matrix(0, 0, 30.0), placement["position"]
    expected = world_from_site @ _site_from_machine(*site.values())
    np.testing.assert_allclose(scenario.machines[0].placement.matrix, expected, atol=1e-12)
    for name, site_point in _site_points(values).items():
        world = world_from_site[:3, :3] @ site_point + world_from_site[:3, 3]
        np.testing.assert_allclose(step.frames[name]["position"], world, atol=1e-9)


def test_sweeping_the_boom_joint_moves_the_boom_as_the_mfk_value_does(tmp_path):
    angles = [-0.2, 0.1, 0.45]
    scenario, steps = _run(tmp_path, _scenario({}, {"ex:c1:boom.ry": angles}))
    (parameter,) = scenario.sweep.parameters
    assert (parameter.kind, parameter.target, parameter.unit) == ("joint", "c1:boom.ry", "rad")
    assert not any("gravity" in w for w in scenario.warnings)  # J670 gravity (z down) on site points down world z
    for step, angle in zip(steps, angles):
        assert step.converged
        assert step.joints["ex:c1:boom.ry"]["position"] == pytest.approx(angle, abs=1e-12)
        # the unloaded machine is the configuration with the boom at the swept angle
        for name, site_point in _site_points({"c1:topcon.nodes.boom.ry": angle}).items():
            np.testing.assert_allclose(_reference(step, name), site_point, atol=1e-9)
    tips = [step.frames["ex:c0:bucket:bucket_r"]["position"][2] for step in steps]
    assert np.all(np.diff(tips) > 0)  # positive ry raises the boom


@pytest.mark.parametrize("where, name", [("sweep", "ex:topcon.nodes.boom.ry"), ("sweep", "ex:c1:topcon.nodes.boom.ry"),
                                         ("joints", "topcon.nodes.boom.ry"), ("hold", "c1:topcon.nodes.boom.ry")])
def test_an_articulated_value_reference_is_refused_with_the_joint_name(tmp_path, capsys, where, name):
    """One name per joint: the MFK value reference of a joint is not a second name for it in a scenario."""
    local = name.removeprefix("ex:")
    machine = {"joints": {local: 0.1}} if where == "joints" else {"hold": [local]} if where == "hold" else {}
    document = _scenario(machine, {name: [0.0, 0.1]} if where == "sweep" else None)
    code, _, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 2 and "Traceback" not in err
    assert f"machine 'ex': {local} is the MFK value reference of the joint c1:boom.ry" in err
    assert "(expected the joint's name, ex:c1:boom.ry (one name per joint; docs/naming.md))" in err


def test_a_bare_component_index_is_refused_with_the_assembly_name(tmp_path, capsys):
    document = _scenario({}, {f"ex:1:{POSITION}northing": [0.0, 1.0]})
    code, _, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 2
    assert (f"'1:{POSITION}northing' names the component by its bare index (expected the component's assembly "
            f"name: 'c1:{POSITION}northing' (docs/naming.md)") in err


def test_sweeping_northing_and_yaw_moves_the_machine_on_site(tmp_path):
    northings = [0.0, 10.0, 25.0]
    scenario, steps = _run(tmp_path, _scenario({}, {f"ex:{POSITION}northing": northings}))
    assert [(p.kind, p.target, p.unit) for p in scenario.sweep.parameters] == [
        ("placement", "c1:topcon.transform.local_position.northing", "m")]
    for step, northing in zip(steps, northings):
        # the same machine under the same gravity carries the same loads (each step starts from the previous
        # equilibrium, so the digits agree to the solver's tolerance, not bit for bit)
        assert step.joints.keys() == steps[0].joints.keys()
        for joint, values in step.joints.items():
            for key, value in values.items():
                if isinstance(value, str):
                    assert value == steps[0].joints[joint][key]
                else:
                    np.testing.assert_allclose(value, steps[0].joints[joint][key], rtol=1e-9, atol=1e-9)
        for name in POINTS:
            np.testing.assert_allclose(step.frames[name]["position"],
                                       np.add(steps[0].frames[name]["position"], [0.0, northing, 0.0]), atol=1e-9)
    yaws = [0.0, 0.7, -1.2]
    _, turned = _run(tmp_path, _scenario({}, {f"ex:{ROTATION}yaw": yaws}), "yaw.json")
    for step, yaw in zip(turned, yaws):
        for name in POINTS:  # yaw turns clockwise seen from above (from north toward east) about the site origin
            clockwise = rpy_matrix(0.0, 0.0, -np.degrees(yaw))
            np.testing.assert_allclose(step.frames[name]["position"], clockwise @ steps[0].frames[name]["position"],
                                       atol=1e-9)
        for name, joint in step.joints.items():
            assert joint["effort"] == pytest.approx(steps[0].joints[name]["effort"], rel=1e-9, abs=1e-6)


def test_geometry_values_reload_the_configuration(tmp_path):
    """A measurement in `joints` and a swept one re-run the measurement script (node offsets follow)."""
    static = {"topcon.measurements.boom_length.value": 6.2}
    lengths = [2.6, 3.4]
    document = _scenario({"joints": static}, {"ex:topcon.measurements.stick_length.value": lengths})
    scenario, steps = _run(tmp_path, document)
    assert [(p.kind, p.unit) for p in scenario.sweep.parameters] == [("geometry", "")]
    for step, length in zip(steps, lengths):
        assert step.converged
        expected = _site_points({"c1:topcon.measurements.boom_length.value": 6.2,
                                 "c1:topcon.measurements.stick_length.value": length})
        for name, site_point in expected.items():
            np.testing.assert_allclose(_reference(step, name), site_point, atol=1e-9)
    reach = [np.linalg.norm(_reference(s, "ex:c0:bucket:bucket_r")[:2]) for s in steps]
    assert reach[1] > reach[0]  # the longer stick reaches farther


def test_a_geometry_value_that_breaks_the_model_fails_its_step_only(tmp_path):
    document = _scenario({}, {"ex:topcon.collision_shapes.boom.hex": [0.3, -0.1, 0.5]})
    _, steps = _run(tmp_path, document)
    assert [s.status for s in steps] == ["converged", "failed", "converged"]
    (failure,) = steps[1].failures
    assert failure["machine"] == "ex" and "no valid model with this step's values" in failure["message"]
    assert "hex of shape 'boom' is -0.1 (expected >= 0)" in failure["message"]


@pytest.mark.slow
def test_joints_by_name_are_written_into_the_configuration_and_held(tmp_path):
    """An articulated joint in `joints` (full name or an unambiguous ending) is written into the configuration,
    so the stick spring's rest follows and the held stick stays there."""
    document = _scenario({"joints": {"stick.ry": 0.3}, "hold": ["c1:stick.ry"]}, {"ex:c0:bucket.ry": [0.0, 0.4]})
    scenario, steps = _run(tmp_path, document)
    machine = scenario.machines[0]
    assert machine.held == ("c1:stick.ry",)
    assert scenario.sweep.parameters[0].target == "c0:bucket.ry"
    for step, bucket in zip(steps, [0.0, 0.4]):
        assert step.joints["ex:c1:stick.ry"]["position"] == pytest.approx(0.3, abs=1e-12)
        assert step.joints["ex:c0:bucket.ry"]["position"] == pytest.approx(bucket, abs=1e-12)
        for name, site_point in _site_points({"c1:topcon.nodes.stick.ry": 0.3, "c0:topcon.nodes.bucket.ry": bucket}).items():
            np.testing.assert_allclose(_reference(step, name), site_point, atol=1e-9)

    # unheld, the stick at 0.3 only sags by its load over the spring (rest 0.3), far less than 0.3 rad
    free = _scenario({"joints": {"c1:stick.ry": 0.3}})
    _, (step,) = _run(tmp_path, free, "free.json")
    sag = step.joints["ex:c1:stick.ry"]["position"] - 0.3
    assert step.converged and abs(sag) < 0.05  # a spring resting at the file's 0 would pull it 0.3 rad back
    assert abs(sag) == pytest.approx(abs(step.joints["ex:c1:stick.ry"]["effort"]) / 3.6e6, rel=0.05)

    twice = _scenario({}, {f"ex:{POSITION}easting": [0.1], f"ex:c1:{POSITION}easting": [0.2]})
    with pytest.raises(Exception, match=f"sets the same quantity as 'ex:{POSITION}easting'"):
        load_scenario(write_scenario(tmp_path, twice, "twice.json"))


def test_unknown_references_exit_2_naming_the_path_and_the_valid_references(tmp_path, capsys):
    document = _scenario({"joints": {"topcon.nodes.bom.ry": 0.1, "c1:topcon.transform.local_position.nothing": 4.0},
                          "hold": [f"{POSITION}easting", "topcon.measurements.stick_length.value"]},
                         {"ex:topcon.nodes.boom.rq": [0.0], "ex:c2:topcon.nodes.boom.ry": [0.0]})
    path = write_scenario(tmp_path, document)
    code, _, err = run_cli(capsys, "run", path, "-o", tmp_path / "out")
    assert code == 2 and "Traceback" not in err and not (tmp_path / "out").exists()
    assert ('machines[0].joints["topcon.nodes.bom.ry"]: machine \'ex\': MFK value reference \'topcon.nodes.bom.ry\' '
            "does not resolve: no component has topcon.nodes.bom (expected one of body, boom, bucket") in err
    assert "c1:boom.ry" in err.split("joints and placement values: one of", 1)[1].split("\n")[0]
    assert ("c1:topcon.transform.local_position.nothing\"]: machine 'ex': MFK value reference "
            "'c1:topcon.transform.local_position.nothing' does not resolve: topcon.transform.local_position has no "
            "value 'nothing' (expected one of easting, elevation, northing") in err
    # the machine did not load, so hold and sweep are not looked at yet; fix joints and run again
    del document["machines"][0]["joints"]
    code, _, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 2
    assert ("machines[0].hold[0]: machine 'ex': c1:topcon.transform.local_position.easting is a placement value, "
            "not a joint: nothing to hold (expected a joint: one of c0:bucket.ry, c1:boom.ry, c1:stick.ry, "
            "c1:stick_attach.ry, c1:tracks.rz)") in err
    assert "machines[0].hold[1]: machine 'ex': c1:topcon.measurements.stick_length.value is fixed geometry" in err
    assert ("sweep.parameters[\"ex:topcon.nodes.boom.rq\"]: machine 'ex': MFK value reference 'topcon.nodes.boom.rq' "
            "does not resolve: topcon.nodes.boom has no value 'rq' (expected one of rx, ry, rz") in err
    assert "c1:boom.ry" in err.split("boom.rq", 2)[2]  # the valid names nearby
    assert ("sweep.parameters[\"ex:c2:topcon.nodes.boom.ry\"]: machine 'ex': MFK value reference "
            "'c2:topcon.nodes.boom.ry' does not resolve: component c2 does not exist (expected c0 .. c1;") in err
