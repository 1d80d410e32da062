"""Results in Python: run_scenario and load_results give the same arrays; to_dataframe is results.csv."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from helpers.scenario import SCENARIOS, beam_scenario, model_path, run_cli, write_scenario

import shiftsim
from shiftsim.errors import InputError, ScenarioError

TIP = 50.0  # N, beam_scenario's tip load at factor 1


def _beam():
    return beam_scenario(track={"frames": ["beam:link10:tip"], "joints": ["beam:hinge1", "beam:hinge10"],
                                "bodies": ["beam:link10"]})


@pytest.mark.slow
def test_a_run_and_its_folder_give_the_same_results(tmp_path, capsys):
    document = _beam()
    assert run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")[0] == 0
    ran = shiftsim.run_scenario(document, jobs=1)
    loaded = shiftsim.load_results(tmp_path / "out")
    # joints, frame, body, the machine's loaded and unloaded coordinates
    assert ran.keys() == loaded.keys() and len(ran.keys()) == 2 * 5 + 2 + 2 + 2
    for key in ran:
        np.testing.assert_array_equal(ran[key], loaded[key])
    np.testing.assert_array_equal(ran.steps["load:tip"], [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(ran.steps.index, [0, 1, 2])
    assert list(ran.steps.status) == ["converged"] * 3 and ran.steps.stable.all() and not ran.partial
    raw = json.loads((tmp_path / "out" / "results.json").read_text())
    assert ran["beam:hinge1", "effort"].tolist() == [s["joints"]["beam:hinge1"]["effort"] for s in raw["steps"]]
    # the coordinates are the joints' positions (one revolute coordinate each), loaded and unloaded apart
    q = loaded["beam", "coordinates"]
    assert q.shape == (3, 10) and np.array_equal(q[:, 0], loaded["beam:hinge1", "position"])
    assert np.array_equal(q[:, 9], loaded["beam:hinge10", "position"])
    assert np.all(np.abs(q - loaded["beam", "reference_coordinates"])[1:].max(axis=1) > 0)


@pytest.mark.parametrize("limit", [1_000, 2])
def test_a_run_in_memory_equals_its_steps_records(tmp_path, monkeypatch, limit):
    """run_scenario without a folder streams its steps into a store in a temporary folder (removed after) and reads
    it into memory: every array equals the store built from the held steps' records, one by one (their results.json
    objects: another path than the block arrays streamed); the document is results.json's: every step up to the
    limit, else the summary."""
    from shiftsim.output import writers
    from shiftsim.output.results import RunResults
    from shiftsim.scenario import LocalExecutor, build_scenario, run

    monkeypatch.setattr(writers, "JSON_STEP_LIMIT", limit)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    document = json.loads((SCENARIOS / "excavator_lift.json").read_text())
    document["machines"][0]["model"] = str(SCENARIOS / document["machines"][0]["model"])
    ran = shiftsim.run_scenario(document)
    assert list(tmp_path.iterdir()) == []  # the temporary store is gone
    scenario = build_scenario(SCENARIOS / "excavator_lift.json", document)
    steps = run(scenario, LocalExecutor(1)).steps
    records = RunResults.from_steps(writers.results_document(scenario, steps), steps, writers.joint_units(scenario))
    assert ran.keys() == records.keys() and len(ran.keys()) > 20
    for key in records:
        np.testing.assert_array_equal(ran[key], records[key], err_msg=str(key))
    np.testing.assert_array_equal(ran.steps.index, records.steps.index)
    assert ran.steps.status.tolist() == records.steps.status.tolist()
    assert ran.document["summary"]["in_results_json"] is (limit > len(steps))
    if limit > len(steps):
        assert ran.document["steps"] == records.document["steps"] and ran.document["scene"] == records.document["scene"]
    else:
        assert "steps" not in ran.document and "scene" not in ran.document


def test_arrays_have_the_documented_shapes_and_balance_the_loads():
    results = shiftsim.run_scenario(_beam())
    n = 3
    assert results["beam:hinge1", "position"].shape == (n,)
    assert results["beam:hinge1", "wrench_world"].shape == (n, 6)
    assert results["beam:link10:tip", "position"].shape == (n, 3)
    assert results["beam:link10", "rotation"].shape == (n, 3, 3)
    # the root hinge holds the whole beam: its force balances the weight and the tip load (closed form)
    mass = shiftsim.load_model(model_path("cantilever10")).total_mass
    factor = results.steps["load:tip"]
    expected = -(mass * np.array([0.0, 0.0, -9.81]) + np.outer(factor, [0.0, 0.0, -TIP]))
    np.testing.assert_allclose(results["beam:hinge1", "wrench_world"][:, :3], expected, rtol=1e-9, atol=1e-9)
    rotations = results["beam:link10", "rotation"]
    np.testing.assert_allclose(rotations @ rotations.transpose(0, 2, 1), np.broadcast_to(np.eye(3), (n, 3, 3)),
                               atol=1e-12)


def test_to_dataframe_is_the_tidy_csv(tmp_path, capsys):
    pandas = pytest.importorskip("pandas")
    path = write_scenario(tmp_path, _beam())
    assert run_cli(capsys, "run", path, "-o", tmp_path / "out")[0] == 0
    frame = shiftsim.load_results(tmp_path / "out").to_dataframe()
    written = pandas.read_csv(tmp_path / "out" / "results.csv", keep_default_na=False)
    assert list(frame.columns) == ["step", "entity", "quantity", "component", "value", "unit"]
    pandas.testing.assert_frame_equal(frame.astype({"component": str}), written.astype({"component": str}),
                                      check_dtype=False)
    efforts = frame[(frame.entity == "beam:hinge10") & (frame.quantity == "effort")]
    np.testing.assert_allclose(efforts.value, shiftsim.load_results(tmp_path / "out")["beam:hinge10", "effort"])
    steps = shiftsim.load_results(tmp_path / "out").steps_dataframe()
    assert list(steps.columns) == ["step", "load:tip", "status", "iterations", "stability"]


def test_failed_steps_are_nan_and_names_are_checked():
    document = {"name": "slider", "machines": [{"id": "sc", "model": model_path("slider_crank")}],
                "sweep": {"parameters": {"sc:slider_crank:slider_guide": [0.5, 0.9, 0.6]}},
                "track": {"joints": ["sc:slider_crank:crank_pin"]}, "outputs": {"plots": []}}
    results = shiftsim.run_scenario(document)
    effort = results["sc:slider_crank:crank_pin", "effort"]
    assert np.isnan(effort[1]) and np.isfinite(effort[[0, 2]]).all()
    assert list(results.steps.status) == ["converged", "failed", "converged"]
    with pytest.raises(KeyError, match="has no quantity 'force'; it has deflection, effort, pin_force, pin_moment, position"):
        results["sc:slider_crank:crank_pin", "force"]
    # short names: an unambiguous ending, with or without the machine in front (docs/naming.md)
    for short in ("sc:crank_pin", "crank_pin", "slider_crank:crank_pin"):
        np.testing.assert_array_equal(results[short, "effort"], effort)
    with pytest.raises(KeyError, match="no entity 'sc:crank_pi'"):
        results["sc:crank_pi", "effort"]
    with pytest.raises(KeyError, match="not a swept parameter"):
        results.steps["sc:slider_crank:crank"]


@pytest.mark.slow
def test_collision_pairs_and_platform_actuators_are_arrays():
    pairs = shiftsim.run_scenario(SCENARIOS / "two_excavators.json")
    margin = json.loads((SCENARIOS / "two_excavators.json").read_text())["collision"].get("margin", 0.0)
    distance, flag = pairs["ex1|ex2", "distance"], pairs["ex1|ex2", "in_collision"]
    assert distance.shape == flag.shape == (len(pairs.steps),)
    np.testing.assert_array_equal(flag, (distance < margin).astype(float))

    results = shiftsim.run_scenario(SCENARIOS / "mdx_heave.json")
    legs = [key for key in results if key[1] == "actuator_force"]
    assert len(legs) == 6
    n = len(results.steps)
    assert results[legs[0]].shape == (n,) and results[legs[0][0], "actuator_in_range"].shape == (n,)
    pose = next(key for key in results if key[1] == "platform_pose")
    assert results[pose].shape == (n, 6)


def test_bad_input_is_an_input_error(tmp_path):
    with pytest.raises(ScenarioError):
        shiftsim.run_scenario({"name": "x", "machines": []})
    with pytest.raises(InputError, match="cannot read the file"):
        shiftsim.load_results(tmp_path / "nowhere")
    (tmp_path / "results.json").write_text('{"scenario": "x"}')
    with pytest.raises(InputError, match="results.json"):
        shiftsim.load_results(tmp_path)
    with pytest.raises(InputError, match="jobs"):
        shiftsim.run_scenario(_beam(), jobs=0)


@pytest.mark.slow
def test_run_scenario_holds_blas_to_one_thread_and_restores_it():
    code = """
import os, sys
before = dict(os.environ)
import shiftsim
import numpy  # loads the BLAS
from threadpoolctl import threadpool_info
def blas_threads():
    return {info["filepath"]: info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}
outside = blas_threads()
if (os.cpu_count() or 1) > 1 and not any(v in before for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")):
    assert max(outside.values()) > 1, outside  # the limit below has something to limit
import shiftsim.scenario.chain as chain
import shiftsim.scenario.runner as runner
seen = []
def spying(module, name):  # the step path solves a step at a time, the block path a chain's steps together
    solve = getattr(module, name)
    def spy(*args, **kwargs):
        seen.append(blas_threads())
        return solve(*args, **kwargs)
    setattr(module, name, spy)
spying(runner, "solve")
spying(chain, "solve_chain")
shiftsim.run_scenario(%r)
assert seen and all(set(threads.values()) == {1} for threads in seen), seen
after = blas_threads()
assert {path: after[path] for path in outside} == outside  # the caller's setting is back
print("ok", shiftsim.__version__)
""" % (_beam(),)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    from importlib.metadata import version

    assert done.stdout.split() == ["ok", version("shiftsim")]


def test_run_scenario_can_write_the_folder_and_checks_it_first(tmp_path):
    folder = tmp_path / "out"
    ran = shiftsim.run_scenario(_beam(), output=folder)
    np.testing.assert_array_equal(ran["beam:hinge10", "effort"], shiftsim.load_results(folder)["beam:hinge10", "effort"])
    assert (folder / "steps.csv").is_file()
    with pytest.raises(InputError, match="exists and is not empty"):
        shiftsim.run_scenario(_beam(), output=folder)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="is a file, not a folder"):
        shiftsim.run_scenario(_beam(), output=tmp_path / "file" / "out")


def test_short_names_that_fit_several_machines_are_refused_naming_them():
    joint = {"type": "revolute", "position": 0.1, "deflection": 0.0, "effort": 2.0, "wrench_joint": [0.0] * 6,
             "wrench_world": [0.0] * 6}
    step = {"index": 0, "parameters": {}, "status": "converged", "iterations": 1, "residual": 0.0, "stable": True,
            "joints": {"a:arm:pin": joint, "b:arm:pin": {**joint, "effort": 3.0}}, "frames": {}, "bodies": {}}
    results = shiftsim.RunResults.from_document({"scenario": "two", "parameters": [], "steps": [step]})
    assert results["b:pin", "effort"].tolist() == [3.0] and results["a:arm:pin", "effort"].tolist() == [2.0]
    with pytest.raises(KeyError, match="'arm:pin' is ambiguous .* a:arm:pin, b:arm:pin"):
        results["arm:pin", "effort"]


@pytest.mark.slow
def test_opening_a_folder_checks_the_document_but_reads_its_steps_from_the_store(tmp_path, capsys):
    """load_results checks results.json against the results schema with its per-step arrays cut to their first
    step (their values are read from the store): a wrong field before or in the first step is an InputError naming
    the file and the place; a later step is not read. A folder without a store is read from its steps: all checked."""
    document = _beam()
    assert run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")[0] == 0
    path = tmp_path / "out" / "results.json"
    original = json.loads(path.read_text())
    good = shiftsim.load_results(tmp_path / "out")

    def written(change):
        changed = json.loads(json.dumps(original))
        change(changed)
        path.write_text(json.dumps(changed))

    written(lambda d: d["steps"][0].update(status=7))
    with pytest.raises(InputError, match=r"results\.json.*steps\[0\]\.status"):
        shiftsim.load_results(tmp_path / "out")
    written(lambda d: d["scene"]["steps"].__setitem__(0, "nothing"))
    with pytest.raises(InputError, match=r"results\.json.*scene\.steps\[0\]"):
        shiftsim.load_results(tmp_path / "out")
    written(lambda d: d.update(parameters="load:tip"))
    with pytest.raises(InputError, match=r"results\.json.*parameters"):
        shiftsim.load_results(tmp_path / "out")
    written(lambda d: d["steps"][2].update(status=7))  # not read: the values are the store's
    later = shiftsim.load_results(tmp_path / "out")
    assert later.keys() == good.keys() and list(later.steps.status) == ["converged"] * 3
    for name in ("steps", "values"):  # without the store, the steps are read from results.json: every one checked
        for part in (tmp_path / "out" / name).iterdir():
            part.unlink()
        (tmp_path / "out" / name).rmdir()
    with pytest.raises(InputError, match=r"results\.json.*steps\[2\]\.status"):
        shiftsim.load_results(tmp_path / "out")
