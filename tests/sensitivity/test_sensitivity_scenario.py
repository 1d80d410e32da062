"""A scenario's ``analysis.sensitivity``: results.json's section, sensitivity.csv, sensitivity.png and the report's
ranked table, checked against central finite differences (Richardson) of whole scenario runs whose *model file* is
edited, on a machine turned by its placement and loaded in world axes; bad names are refused before any solve."""

from __future__ import annotations

import csv
import json

import jsonschema
import numpy as np
import pytest
from helpers.scenario import PNG_SIGNATURE, SCENARIOS, model_path, run_cli, write_scenario

from shiftsim import run_scenario
from shiftsim.cli import main
from shiftsim.errors import ScenarioError
from shiftsim.scenario.definition import build_scenario
from shiftsim.scenario.schema import load_schema
from shiftsim.scenario.sensitivity_analysis import sensitivity_spec

MASSES = {"ex1:arm:stick.mass": (1, 1), "ex1:arm:bucket.mass": (1, 2)}  # assembly, body of each in the file
OUTPUTS = ["ex1:arm:boom_cyl.effort", "ex1:arm:bucket:tip.z"]


def excavator(model: str) -> dict:
    """The held excavator arm, yawed 90 degrees, a payload with a world x component, two lift points."""
    return {
        "name": "lift",
        "machines": [{"id": "ex1", "model": model, "placement": {"rotation": {"yaw": 90.0}},
                      "hold": ["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"]}],
        "loads": [{"name": "payload", "frame": "ex1:arm:bucket:tip", "force": [2000.0, 0.0, -14715.0],
                   "direction": "world"}],
        "sweep": {"parameters": {"ex1:arm:boom_cyl": [2.0, 2.6]}},
        "track": {"joints": ["ex1:arm:boom_cyl"], "frames": ["ex1:arm:bucket:tip"]},
        "outputs": {"csv": True, "plots": ["convergence"]},
        "analysis": {"sensitivity": {"of": OUTPUTS, "wrt": ["mass", "ex1:gravity.z"], "top": 4}},
    }


def _with_mass(tmp_path, name: str, delta: float) -> str:
    """A copy of the model file with one body's mass moved by ``delta`` (kg)."""
    document = json.loads(open(model_path("excavator_hydraulic")).read())
    assembly, body = MASSES[name]
    document["assemblies"][assembly]["bodies"][body]["inertia"]["mass"] += delta
    path = tmp_path / f"model_{name}_{delta!r}.json"
    path.write_text(json.dumps(document))
    return str(path)


def _outputs(model: str) -> list[tuple[float, float]]:
    """(boom cylinder effort, tip z in world axes) at each step of the scenario run on ``model``."""
    document = excavator(model)
    del document["analysis"]
    steps = run_scenario(document).document["steps"]
    return [(s["joints"]["ex1:arm:boom_cyl"]["effort"], s["frames"]["ex1:arm:bucket:tip"]["position"][2])
            for s in steps]


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sensitivity_run")
    path = write_scenario(folder, excavator(model_path("excavator_hydraulic")))
    return main(["run", str(path), "-o", str(folder / "out")]), folder / "out"


@pytest.mark.slow
def test_the_section_validates_and_its_values_are_the_steps(ran):
    code, out = ran
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    jsonschema.Draft202012Validator(load_schema("results")).validate(results)
    section = results["sensitivity"]
    assert section["of"] == OUTPUTS and len(section["points"]) == 2
    for point, step in zip(section["points"], results["steps"]):
        assert point["step"] == step["index"] and point["machine"] == "ex1"
        assert set(point["parameter_values"]) >= {"ex1:arm:stick.mass", "ex1:gravity.z"}
        effort = point["outputs"]["ex1:arm:boom_cyl.effort"]["value"]
        assert effort == pytest.approx(step["joints"]["ex1:arm:boom_cyl"]["effort"], rel=1e-8)
        # yaw about z: the model's z is the world's z
        tip = point["outputs"]["ex1:arm:bucket:tip.z"]["value"]
        assert tip == pytest.approx(step["frames"]["ex1:arm:bucket:tip"]["position"][2], abs=1e-9)


@pytest.mark.slow
def test_mass_derivatives_against_richardson_differences_of_whole_runs(ran, tmp_path):
    section = json.loads((ran[1] / "results.json").read_text())["sensitivity"]
    for name in MASSES:
        h = 2.0

        def central(step: float):
            plus = _outputs(_with_mass(tmp_path, name, step))
            minus = _outputs(_with_mass(tmp_path, name, -step))
            return [[(a - b) / (2 * step) for a, b in zip(p, m)] for p, m in zip(plus, minus)]

        coarse, fine = central(h), central(h / 2)
        for k, point in enumerate(section["points"]):
            for i, output in enumerate(OUTPUTS):
                reference = (4 * fine[k][i] - coarse[k][i]) / 3
                exact = point["outputs"][output]["derivative"][name]
                assert exact == pytest.approx(reference, rel=1e-6, abs=1e-12), (name, output, k)


def test_csv_report_and_chart_hold_the_section(ran):
    out = ran[1]
    section = json.loads((out / "results.json").read_text())["sensitivity"]
    rows = list(csv.DictReader((out / "sensitivity.csv").open()))
    assert len(rows) == 2 * len(OUTPUTS) * len(section["points"][0]["parameter_values"])
    for row in rows:
        point = section["points"][int(row["step"])]
        o = point["outputs"][row["output"]]
        assert float(row["derivative"]) == pytest.approx(o["derivative"][row["parameter"]], rel=1e-12)
        value = point["parameter_values"][row["parameter"]]
        # the change per 1 %: 0.01 p dy/dp, the first-order change the tornado chart draws
        assert float(row["change_per_percent"]) == pytest.approx(0.01 * value * float(row["derivative"]),
                                                                 rel=1e-12, abs=1e-12)
    assert (out / "sensitivity.png").read_bytes()[:8] == PNG_SIGNATURE
    report = (out / "report.html").read_text()
    assert "Sensitivities (ranked" in report and "ex1:arm:boom_cyl.effort (change per 1 % of each parameter)" in report
    # the largest mover of the cylinder force at step 1 heads its table
    changes = section["points"][1]["outputs"]["ex1:arm:boom_cyl.effort"]["change_per_percent"]
    first = max(changes, key=lambda p: abs(changes[p]))
    table = report.split("ex1:arm:boom_cyl.effort (change per 1 %")[1]
    assert table.index(first) < min(table.index(p) for p in changes if p != first and p in table)


@pytest.mark.parametrize("entry, where, what", [
    ({"of": ["ex9:arm:boom_cyl.effort"]}, "analysis.sensitivity.of[0]", "names no machine"),
    ({"of": ["ex1:arm:boom_cyl.efort"]}, "analysis.sensitivity.of[0]", "has no output 'arm:boom_cyl.efort'"),
    ({"of": ["ex1:effort"], "wrt": ["mass", "ex1:arm:boom.mas"]}, "analysis.sensitivity.wrt[1]",
     "has no parameter 'arm:boom.mas'"),
    ({"of": ["ex1:effort"], "mode": "reverse"}, "analysis.sensitivity.mode", ""),
])
def test_bad_names_exit_2_naming_the_entry_before_any_solve(tmp_path, capsys, entry, where, what):
    document = excavator(model_path("excavator_hydraulic"))
    document["analysis"]["sensitivity"] = entry
    path = write_scenario(tmp_path, document)
    code, _, err = run_cli(capsys, "run", path, "-o", tmp_path / "out")
    assert code == 2 and where in err and what in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def capacity_scenario(undercarriage: str) -> dict:
    """The shipped capacity chart cut to two lift points over the side (where tipping governs), its ground's
    stiffness given (the default one follows the machine's weight), a tight search, and the sensitivities of
    the chart's loads and of the left front pad's force."""
    document = json.loads((SCENARIOS / "excavator_capacity.json").read_text())
    document["machines"][0]["model"] = undercarriage
    document["machines"][1]["model"] = model_path("excavator_hydraulic")
    document["ground"]["stiffness"] = 2.5e7
    document["sweep"]["parameters"] = {"ex1:lower:slew": [1.5707963267948966], "ex1:front:arm:boom_cyl": [2.2],
                                       "ex1:front:arm:stick_cyl": [2.3, 3.4]}
    document["analysis"]["capacity"]["tolerance"] = 1e-10
    document["analysis"]["sensitivity"] = {"of": ["ex1:capacity", "ex1:lower:carbody:track_fl.fz"],
                                           "wrt": ["ex1:lower:carbody.mass", "ex1:ground.stiffness"]}
    document["outputs"] = {"csv": False, "plots": []}
    return document


def _with_carbody_mass(tmp_path, delta: float) -> str:
    """A copy of the undercarriage file with the carbody's mass moved by ``delta`` (kg)."""
    document = json.loads(open(model_path("undercarriage_20t")).read())
    body = next(b for a in document["assemblies"] for b in a["bodies"] if b["name"] == "carbody")
    body["inertia"]["mass"] += delta
    path = tmp_path / f"undercarriage_{delta!r}.json"
    path.write_text(json.dumps(document))
    return str(path)


@pytest.mark.slow
def test_rated_load_sensitivities_against_whole_capacity_runs_on_edited_files(tmp_path):
    ran = run_scenario(capacity_scenario(model_path("undercarriage_20t"))).document
    section, chart = ran["sensitivity"], ran["capacity"]
    assert section["of"] == ["ex1:lower:carbody:track_fl.fz", "ex1:tipping_load", "ex1:hydraulic_load",
                             "ex1:rated_load"]
    points = section["points"]
    assert [p["step"] for p in points] == [0, 1] and all("error" not in p for p in points)
    for p, c in zip(points, chart["points"]):
        rated = p["outputs"]["ex1:rated_load"]
        assert rated["governs"] == c["governs"] == "tipping" and rated["near_switch"] is False
        # the tipping load is the event's: where the centre of pressure is 1e-7 of the edge inside it
        assert rated["value"] == pytest.approx(c["rated_load"], rel=1e-4)
        assert abs(p["outputs"]["ex1:tipping_load"]["search_gap"]) < 1e-4
        assert p["outputs"]["ex1:lower:carbody:track_fl.fz"]["reason"] is None

    def rated(delta: float) -> list[float]:
        """The rated load of each lift point where the sensitivities take the tipping event (the section's
        value)."""
        document = capacity_scenario(_with_carbody_mass(tmp_path, delta))
        document["analysis"]["sensitivity"] = {"of": ["ex1:rated_load"], "wrt": ["ex1:gravity.z"]}
        return [p["outputs"]["ex1:rated_load"]["value"] for p in run_scenario(document).document["sensitivity"]["points"]]

    def central(h: float) -> list[float]:
        return [(a - b) / (2 * h) for a, b in zip(rated(h), rated(-h))]

    coarse, fine = central(100.0), central(50.0)
    for p, c, f in zip(points, coarse, fine):
        reference = (4 * f - c) / 3
        ours = p["outputs"]["ex1:rated_load"]["derivative"]["ex1:lower:carbody.mass"]
        assert ours == pytest.approx(reference, rel=1e-6), (ours, reference)
        assert ours > 0.0  # a heavier carbody lifts more over the side


def test_capacity_outputs_without_a_chart_are_refused():
    path = SCENARIOS / "excavator_capacity.json"
    document = json.loads(path.read_text())
    del document["analysis"]["capacity"]
    document["analysis"] = {"sensitivity": {"of": ["ex1:rated_load"]}}
    with pytest.raises(ScenarioError, match=r"analysis\.sensitivity\.of\[0\].*no analysis\.capacity"):
        sensitivity_spec(build_scenario(path, document))


@pytest.mark.slow
def test_the_command_on_a_scenario_prints_the_runs_section(ran, tmp_path, capsys):
    """``shiftsim sensitivity SCENARIO --json`` differentiates the same steps as ``shiftsim run``."""
    path = write_scenario(tmp_path, excavator(model_path("excavator_hydraulic")))
    code, out, _ = run_cli(capsys, "sensitivity", path, "--json", "--csv", tmp_path / "s.csv",
                           "--tornado", tmp_path / "s.png")
    assert code == 0
    section = json.loads(out)
    written = json.loads((ran[1] / "results.json").read_text())["sensitivity"]
    assert section["of"] == written["of"] and len(section["points"]) == len(written["points"])
    for mine, theirs in zip(section["points"], written["points"]):
        for output, o in mine["outputs"].items():
            for parameter, value in o["derivative"].items():
                assert value == pytest.approx(theirs["outputs"][output]["derivative"][parameter], rel=1e-9, abs=1e-12)
    assert (tmp_path / "s.csv").read_text() == (ran[1] / "sensitivity.csv").read_text()
    assert (tmp_path / "s.png").read_bytes()[:8] == PNG_SIGNATURE
    # --of overrides the scenario's outputs, and a flag's bad name is reported as the flag
    code, out, _ = run_cli(capsys, "sensitivity", path, "--of", "ex1:arm:stick_cyl.effort", "--wrt", "ex1:gravity.z")
    assert code == 0 and "ex1:arm:stick_cyl.effort = " in out and "ex1:gravity.z" in out and "boom_cyl.effort" not in out
    code, _, err = run_cli(capsys, "sensitivity", path, "--of", "ex1:arm:stick_cyl.efort", "--set", "ex1:arm:boom_cyl=2")
    assert code == 2 and "--of ex1:arm:stick_cyl.efort" in err and "--set" in err and "Traceback" not in err


def test_the_command_on_a_scenario_without_outputs_exits_2(tmp_path, capsys):
    document = excavator(model_path("excavator_hydraulic"))
    del document["analysis"]
    code, _, err = run_cli(capsys, "sensitivity", write_scenario(tmp_path, document))
    assert code == 2 and "--of" in err and "analysis.sensitivity" in err


def test_a_long_run_shows_twelve_steps_first_and_last_ranked_by_the_largest_change():
    from shiftsim.output.report_sections import sensitivity_tables

    points = [{"step": k, "parameters": {}, "machine": "m", "mode": "adjoint", "parameter_values": {"a": 1.0, "b": 1.0},
               "outputs": {"m:y": {"value": 1.0, "reason": None, "derivative": {"a": 1.0, "b": 1.0},
                                   "change_per_percent": {"a": 0.01 * k, "b": 0.1}}}} for k in range(30)]
    (title, (headers, rows)), = sensitivity_tables({"points": points, "top": 5, "normalized": False}).items()
    assert headers[1] == "step 0" and headers[-1] == "step 29" and len(headers) == 13 and "12 of 30 steps" in title
    assert [row[0] for row in rows] == ["a", "b"]  # a reaches 0.29, b stays at 0.1


def test_printed_elasticity_of_a_zero_output_is_nan_not_infinite(capsys):
    """The car stands symmetric: its centre of pressure's y is exactly 0 at some steps and round-off (about 5e-16 m)
    at the others, while a 1 % change of a tyre's radius moves it by about 0.5 mm. No relative change of such a
    value exists: the table says nan at every step, as ``Sensitivities.elasticity`` does, not +-inf or 1e14; and the
    value itself prints as 0 at every step (round-off by the same rule, said once below the table), while --json
    keeps the raw values."""
    arguments = ["sensitivity", str(SCENARIOS / "vehicle_on_tyres.json"), "--of", "car1:cop.y", "--wrt", "tyre"]
    status = main(arguments)
    printed = capsys.readouterr().out
    steps = printed.split("step ")[1:]
    assert status == 0 and len(steps) == 5 and all("car1:cop.y = 0\n" in step for step in steps)
    rows = [line.split() for line in printed.splitlines() if "elasticity" in line]
    assert len(rows) >= 40 and all(row[-1] == "nan" for row in rows)
    assert main([*arguments, "--json"]) == 0
    raw = [p["outputs"]["car1:cop.y"]["value"] for p in json.loads(capsys.readouterr().out)["points"]]
    zeroed = sum(value != 0 for value in raw)
    assert 0 < zeroed and max(abs(value) for value in raw) < 1e-12  # round-off at some steps, printed as 0
    assert printed.strip().endswith(f"0: round-off ({zeroed} output values at most 1e-9 of the output's largest change "
                                    "p dy/dp over the parameters, elasticities nan; --json and --csv keep the raw "
                                    "values)")


def test_a_value_clear_of_round_off_prints_as_it_is():
    """The rule zeroes only what is round-off: a value of 1e-8 with a largest change of 1 per unit prints as
    it is, 1e-10 as 0 (with the note), and without any derivative (a reason) a value prints raw."""
    from shiftsim.commands.sensitivity import _value_text

    assert _value_text(1e-8, np.array([1.0, 2.0]), np.array([0.5, -0.1])) == ("1e-08", False)
    assert _value_text(-1e-10, np.array([1.0, 2.0]), np.array([0.5, -0.1])) == ("0", True)
    assert _value_text(-1e-10, np.array([1.0]), np.array([np.nan])) == ("-1e-10", False)
    assert _value_text(-0.0, np.array([1.0]), np.array([1.0])) == ("0", False)
