"""A scenario's analysis.capacity inside ``shiftsim run``: results.json, capacity.csv, capacity.png, report, summary."""

from __future__ import annotations

import csv
import json

import jsonschema
import pytest
from helpers.scenario import capacity_scenario
from helpers.scenario import run_cli, write_scenario

from shiftsim.scenario.schema import load_schema


@pytest.mark.slow
def test_run_computes_the_capacity_analysis_after_the_sweep(tmp_path, capsys):
    document = capacity_scenario(outputs={"csv": True, "plots": ["footprint"]})
    path = write_scenario(tmp_path, document)
    code, out, _ = run_cli(capsys, "run", path, "-o", tmp_path / "out")
    assert code == 0
    folder = tmp_path / "out"
    results = json.loads((folder / "results.json").read_text())
    jsonschema.Draft202012Validator(load_schema("results")).validate(results)
    capacity = results["capacity"]
    # the same numbers as the capacity command gives for the scenario
    code, alone, _ = run_cli(capsys, "capacity", path, "--json")
    assert code == 0 and json.loads(alone)["points"] == capacity["points"]
    points = capacity["points"]
    assert [p["step"] for p in points] == [s["index"] for s in results["steps"]] == [0, 1]
    for p in points:
        assert p["rated_load"] == pytest.approx(min(0.75 * p["tipping_load"], 0.87 * p["hydraulic_load"]))
    with open(folder / "capacity.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [float(r["rated_mass"]) for r in rows] == pytest.approx([p["rated_mass"] for p in points], rel=1e-12)
    assert [r["ex1:front:arm:boom_cyl"] for r in rows] == ["2.2", "2.4"]
    assert (folder / "capacity.png").read_bytes()[:4] == b"\x89PNG"
    assert 'alt="capacity.png"' in (folder / "report.html").read_text()
    least = min(points, key=lambda p: p["rated_mass"])
    assert (f"capacity        payload: rated {least['rated_mass'] / 1000:.3g} t at least (step {least['step']}:"
            in out) and "capacity.csv" in out


def test_a_bad_capacity_analysis_is_refused_before_solving(tmp_path, capsys):
    document = capacity_scenario()
    document["analysis"]["capacity"]["load"] = "paylod"
    code, _, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 2 and "Traceback" not in err
    assert "analysis.capacity.load: unknown load 'paylod' (expected one of payload)" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_without_an_analysis_run_writes_no_capacity(tmp_path, capsys):
    document = capacity_scenario(outputs={"csv": True, "plots": []})
    del document["analysis"]
    code, out, _ = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 0 and "  capacity  " not in out and "capacity.csv" not in out
    assert "capacity" not in json.loads((tmp_path / "out" / "results.json").read_text())
    assert not (tmp_path / "out" / "capacity.csv").exists()


@pytest.mark.parametrize("joint, why", [
    ("ex1:lower:slew", "is a revolute joint, not a stroke"),
    ("ex1:front:arm:boom_cyl_oil", "is not held (nor swept)"),
])
def test_a_cylinder_that_is_not_a_held_stroke_is_refused(tmp_path, capsys, joint, why):
    """A revolute joint or an unheld oil-column spring as a 'cylinder' would govern the rating with a force that
    is no cylinder's (712 N instead of 28,778 N): refused before solving, exit 2, the place named."""
    document = capacity_scenario()
    document["analysis"]["capacity"]["cylinders"] = {joint: {"bore": 0.14, "rod": 0.1, "pressure": 34.3e6}}
    code, _, err = run_cli(capsys, "capacity", write_scenario(tmp_path, document))
    assert code == 2 and "Traceback" not in err
    assert f"analysis.capacity.cylinders.{joint}: joint '{joint}' {why}" in err
    assert "a held prismatic stroke joint" in err


def test_a_sweep_reaches_every_lift_point_the_capacity_search_holds_its_load_at(tmp_path, capsys):
    """Steps 71 and 72 of the shipped chart (over the side; the stick stroke jumps 1.1 m between them) failed with
    "no equilibrium after 85 iterations" at 1 t: their starts closed the loops by stretching the oil columns and
    moving the base. Now each step starts where the capacity search's lift point does."""
    document = capacity_scenario()
    document["sweep"] = {"mode": "line", "parameters": {"ex1:lower:slew": [1.5707963267948966] * 2,
                                                        "ex1:front:arm:boom_cyl": [1.75, 1.907142857142857],
                                                        "ex1:front:arm:stick_cyl": [3.4, 2.3]}}
    path = write_scenario(tmp_path, document)
    code, out, _ = run_cli(capsys, "run", path, "-o", tmp_path / "out")
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert code == 0, out
    assert [s["status"] for s in results["steps"]] == ["converged", "converged"]
    weight = sum(s["ground"]["ex1"]["ground_reaction"]["force"][2] for s in results["steps"]) / 2
    for step, point in zip(results["steps"], results["capacity"]["points"]):
        assert step["ground"]["ex1"]["ground_reaction"]["force"][2] == pytest.approx(weight, rel=1e-9)
        assert point["valid"] and point["tipping_load"] > 9810.0  # tips above the swept 1 t: the sweep holds it


def test_the_ground_limits_are_scenario_options_and_an_invalid_point_makes_run_exit_1(tmp_path, capsys):
    """``ground.sink_limit`` below the 2 mm the machine sinks unloaded: every equilibrium is impossible, named by
    its contact, in the sweep (failed steps) and the capacity (invalid points); run exits 1."""
    document = capacity_scenario()
    document["ground"]["sink_limit"] = 1e-4
    path = write_scenario(tmp_path, document)
    code, out, _ = run_cli(capsys, "run", path, "-o", tmp_path / "out")
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert code == 1
    assert results["capacity"]["sink_limit"] == 1e-4
    for point in results["capacity"]["points"]:
        assert not point["valid"] and any("ex1:lower:carbody:track_" in r and "sinks" in r for r in point["invalid"])
    assert "INVALID capacity at step(s) 0, 1" in out


def test_only_undocumented_invalid_points_count():
    from shiftsim.scenario.capacity_analysis import unexpected_invalid
    points = [{"step": 0, "valid": True}, {"step": 1, "valid": False}, {"step": 2, "valid": False}]
    assert unexpected_invalid({"points": points}) == [1, 2]
    assert unexpected_invalid({"points": points, "expected_invalid": [2]}) == [1]
    assert unexpected_invalid({"load": "payload", "error": "no lift point"}) == [-1]
    assert unexpected_invalid(None) == []
