"""Bad scenarios: every refusal exits 2 and names the JSON path, what is wrong and what was expected."""

from __future__ import annotations

import pytest
from helpers.scenario import beam_scenario, model_path, run_cli, write_scenario

from shiftsim.errors import ScenarioError
from shiftsim.scenario import load_scenario
from shiftsim.scenario.schema import json_path


def _refused(tmp_path, capsys, document) -> str:
    """Run the scenario; assert exit 2, no output folder, no traceback; return stderr."""
    path = write_scenario(tmp_path, document)
    code, out, err = run_cli(capsys, "run", path, "-o", tmp_path / "out")
    assert code == 2, err
    assert not (tmp_path / "out").exists()
    assert "Traceback" not in err and str(path) in err
    return err


def test_wrong_types_are_named_by_json_path(tmp_path, capsys):
    document = beam_scenario(machines=[{"id": "beam", "model": model_path("cantilever10"), "hold": "hinge1",
                                        "placement": {"position": "abc", "rotation": {"roll": "x"}},
                                        "joints": {"hinge2": "up"}}],
                             outputs={"csv": 1, "dpi": 5})
    err = _refused(tmp_path, capsys, document)
    assert "machines[0].hold: the string 'hinge1' given (expected an array)" in err
    assert "machines[0].placement.position: the string 'abc' given (expected three numbers [x, y, z])" in err
    assert 'machines[0].placement.rotation: {"roll": "x"} has the wrong form (expected {"roll", "pitch", "yaw"}' in err
    assert "machines[0].joints.hinge2:" in err and "a joint value (rad or m)" in err
    assert "outputs.csv: the number 1 given (expected true or false)" in err
    assert "outputs.dpi: 5 is out of range (expected a value >= 20)" in err


def test_missing_and_unknown_keys(tmp_path, capsys):
    document = beam_scenario(outputs={"plot": []}, sweep={"mode": "lines", "parameters": {"load:tip": {"from": 0, "to": 1}}})
    del document["name"]
    err = _refused(tmp_path, capsys, document)
    assert "(top level): missing required key 'name'" in err
    assert "outputs.plot: unknown key 'plot' (expected one of plots" in err
    assert 'sweep.mode: "lines" is not allowed (expected one of "line", "grid")' in err
    assert "sweep.parameters.load:tip:" in err and '{"from": a, "to": b, "steps": n}' in err


def test_unknown_machine_in_loads_sweep_and_track(tmp_path, capsys):
    document = beam_scenario(loads=[{"name": "tip", "frame": "bem:link10:tip", "force": [0, 0, -1]}],
                             sweep={"parameters": {"beem:hinge1": [0.0, 0.1]}},
                             track={"frames": ["baem:link10:tip"]})
    err = _refused(tmp_path, capsys, document)
    assert "loads[0].frame: unknown machine 'bem' (expected one of beam)" in err
    assert "sweep.parameters.beem:hinge1: unknown machine 'beem' (expected one of beam)" in err
    assert "track.frames[0]: unknown machine 'baem' (expected one of beam)" in err


def test_unknown_joint_frame_body_and_load(tmp_path, capsys):
    document = beam_scenario(machines=[{"id": "beam", "model": model_path("cantilever10"), "hold": ["hinge11"],
                                        "joints": {"hinge12": 0.1}}],
                             sweep={"parameters": {"beam:hinge13": [0.0, 0.1], "load:tap": [1.0, 2.0]}},
                             track={"frames": ["beam:link10:top"], "bodies": ["beam:link11"]})
    err = _refused(tmp_path, capsys, document)
    assert "machines[0].hold[0]: machine 'beam': unknown joint 'hinge11' (expected one of hinge1" in err
    assert "machines[0].joints.hinge12: machine 'beam': unknown joint 'hinge12'" in err
    assert "sweep.parameters.beam:hinge13: machine 'beam': unknown joint 'hinge13'" in err
    assert "sweep.parameters.load:tap: unknown load 'tap' (expected one of tip)" in err
    assert "track.frames[0]: machine 'beam': unknown frame 'link10:top'" in err
    assert "track.bodies[0]: machine 'beam': unknown body 'link11'" in err


def test_missing_model_file_is_reported_once(tmp_path, capsys):
    document = beam_scenario(machines=[{"id": "beam", "model": "nowhere/cantilever.json"}])
    err = _refused(tmp_path, capsys, document)
    assert f"machines[0].model: model file 'nowhere/cantilever.json' not found (looked for {tmp_path}/nowhere" in err
    assert len([line for line in err.splitlines() if str(tmp_path) in line]) == 1  # no follow-on noise


def test_invalid_model_file_problems_are_passed_on(tmp_path, capsys):
    (tmp_path / "broken.json").write_text('{"model_parameters": {"version": "0.2"}, "bodies": [{"name": "a:b"}]}')
    err = _refused(tmp_path, capsys, beam_scenario(machines=[{"id": "beam", "model": "broken.json"}]))
    assert "machines[0].model: model file 'broken.json' is invalid" in err
    assert "contains ':'" in err


def test_machine_ids_and_load_names(tmp_path, capsys):
    reserved = beam_scenario(machines=[{"id": "load", "model": model_path("cantilever10")},
                                       {"id": "a b", "model": model_path("cantilever10")}])
    err = _refused(tmp_path, capsys, reserved)
    assert 'machines[0].id: "load" is reserved' in err
    assert 'machines[1].id: "a b" is not allowed here' in err
    twice = beam_scenario(machines=[{"id": "beam", "model": model_path("cantilever10")},
                                    {"id": "beam", "model": model_path("four_bar")}],
                          loads=[{"name": "tip", "frame": "beam:link10:tip"}, {"name": "tip", "frame": "beam:link9:tip"}])
    err = _refused(tmp_path, capsys, twice)
    assert "machines[1].id: machine id 'beam' is already used by machines[0] (expected a unique id)" in err
    assert "loads[1].name: load name 'tip' is already used by loads[0] (expected a unique name)" in err


def test_sweep_consistency_rules(tmp_path, capsys):
    line = beam_scenario(sweep={"parameters": {"load:tip": [0.0, 1.0], "beam:hinge1": [0.0, 0.1, 0.2]}})
    err = _refused(tmp_path, capsys, line)
    assert "sweep.parameters: a line sweep needs equally many values per parameter (load:tip: 2, beam:hinge1: 3)" in err

    time_first = beam_scenario(sweep={"mode": "grid", "parameters": {"time": [0.0, 1.0], "load:tip": [0.0, 1.0]}})
    assert "sweep.parameters.time: time is not the last parameter of a grid" in _refused(tmp_path, capsys, time_first)
    backwards = beam_scenario(sweep={"parameters": {"time": [0.0, 2.0, 1.0]}})
    assert "sweep.parameters.time: time values do not increase strictly" in _refused(tmp_path, capsys, backwards)
    twice = {"name": "fb", "machines": [{"id": "fb", "model": model_path("four_bar")}],
             "sweep": {"parameters": {"fb:four_bar:crank_pin": [0.0], "fb:crank_pin": [0.1]}}}
    assert "sweep.parameters.fb:crank_pin: sets the same quantity as 'fb:four_bar:crank_pin'" \
        in _refused(tmp_path, capsys, twice)
    bad_name = beam_scenario(sweep={"parameters": {"hinge1": [0.0]}})
    assert "sweep.parameters.hinge1: 'hinge1' is not a parameter name (expected MACHINE:JOINT, load:LOADNAME or time)" \
        in _refused(tmp_path, capsys, bad_name)


def test_placement_and_assembly_rules(tmp_path, capsys):
    document = beam_scenario(machines=[{"id": "beam", "model": model_path("cantilever10"),
                                        "placement": {"rotation": [[1, 0, 0], [0, 1, 0], [0, 0, 2]]},
                                        "assemblies": {"arm": False}}])
    err = _refused(tmp_path, capsys, document)
    assert "machines[0].placement.rotation: the matrix is not a rotation" in err
    assert "machines[0].assemblies.arm: the model has no assembly 'arm'" in err


def test_start_state_that_cannot_close_its_loops(tmp_path, capsys):
    document = {"name": "sc", "machines": [{"id": "sc", "model": model_path("slider_crank"),
                                            "joints": {"slider_guide": 2.0}, "hold": ["slider_guide"]}]}
    err = _refused(tmp_path, capsys, document)
    assert "machines[0].joints: machine 'sc': the start state cannot be assembled" in err


def test_multi_dof_and_non_finite_values(tmp_path, capsys):
    document = beam_scenario(machines=[{"id": "beam", "model": model_path("cantilever10"), "joints": {"hinge1": [0.1, 0.2]}}])
    assert "machines[0].joints.hinge1: 2 values for joint 'hinge1' (expected 1 (its degrees of freedom))" \
        in _refused(tmp_path, capsys, document)
    path = tmp_path / "nan.json"
    path.write_text('{"name": "n", "machines": [{"id": "b", "model": "%s", "placement": {"position": [NaN, 0, 0]}}]}'
                    % model_path("cantilever10"))
    code, _, err = run_cli(capsys, "run", path, "-o", tmp_path / "out")
    assert code == 2 and "machines[0].placement.position[0]: nan is not a finite number" in err


def test_not_json_and_missing_file(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text("{name: ")
    code, _, err = run_cli(capsys, "run", path)
    assert code == 2 and "not valid JSON" in err and "line 1" in err
    code, _, err = run_cli(capsys, "run", tmp_path / "absent.json")
    assert code == 2 and "cannot read the file" in err


def test_errors_are_collected_not_stopped_at_the_first(tmp_path):
    document = beam_scenario(loads=[{"name": "tip", "frame": "beam:link10:tap"}], track={"joints": ["beam:hange1"]})
    with pytest.raises(ScenarioError) as caught:
        load_scenario(write_scenario(tmp_path, document))
    assert [p.where for p in caught.value.problems] == ["loads[0].frame", "track.joints[0]"]


def test_json_path_rendering():
    assert json_path([]) == "(top level)"
    assert json_path(["machines", 0, "joints", "arm:boom_cyl"]) == "machines[0].joints.arm:boom_cyl"
    assert json_path(["machines", 1, "joints", "topcon.nodes.boom.ry"]) == 'machines[1].joints["topcon.nodes.boom.ry"]'
