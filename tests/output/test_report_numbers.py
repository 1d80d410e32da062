"""Every number report.html shows is checked against results.json, for a small-sweep copy of every shipped scenario.

The report is parsed with the standard library's html.parser into its tables (each under the heading above it);
every table must be one this test knows how to check, and each of its numbers is recomputed here from results.json
(peaks by their own loops over the steps, file hashes from the files' bytes) and compared at the four significant
digits shown.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from helpers.report import Tables
from helpers.scenario import run_cli

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted((REPO / "scenarios").glob("*.json"))
ROUND_OFF = "0 (round-off)"


def shown(text: str, value: float) -> None:
    """``text`` is ``value`` at four significant digits."""
    assert float(text) == pytest.approx(value, rel=6e-4, abs=1e-12), (text, value)


def at_peak(step: str, values: list[tuple[float, int]], largest: float) -> None:
    """The step shown is one where the value reaches the peak (ties, as a crank at -pi and pi, may give several)."""
    assert abs(dict((i, v) for v, i in values)[int(step)] - largest) <= 1e-9 * abs(largest), (step, values)


def small_copy(source: Path, folder: Path) -> Path:
    """The shipped scenario with two steps (each parameter's first and last value; in a grid the later parameters
    at their first value) and no plots, beside links to the folders its
    relative paths reach (models, tests)."""
    document = json.loads(source.read_text())
    parameters = document.get("sweep", {}).get("parameters", {})
    for k, (name, values) in enumerate(parameters.items()):
        if isinstance(values, dict) and "steps" in values:
            values = [values["from"], values["to"]]
        if isinstance(values, list):  # a grid's later parameters at one value: two steps (two lift points) in all
            grid_later = k > 0 and document["sweep"].get("mode") == "grid"
            parameters[name] = values[:1] if grid_later or len(values) == 1 else [values[0], values[-1]]
    document.setdefault("outputs", {})["plots"] = []
    (folder / "scenarios").mkdir(exist_ok=True)
    for linked in ("models", "tests"):
        if not (folder / linked).exists():
            (folder / linked).symlink_to(REPO / linked)
    path = folder / "scenarios" / source.name
    path.write_text(json.dumps(document))
    return path


def check_pin_reactions(rows, results):
    peaks = {}
    for step in results["steps"]:
        for name, row in step.get("pin_reactions", {}).items():
            peak = peaks.setdefault(name, {"force": (-1.0, None), "moment": (-1.0, None)})
            for what in ("force", "moment"):
                if row[what] > peak[what][0]:
                    peak[what] = (row[what], step["index"])
    level = max(max(p["force"][0], p["moment"][0]) for p in peaks.values())
    assert [r[0] for r in rows] == list(peaks)
    for name, _, force, force_step, moment, moment_step, _ in rows:
        for text, where, (value, step) in ((force, force_step, peaks[name]["force"]),
                                           (moment, moment_step, peaks[name]["moment"])):
            if text == ROUND_OFF:
                assert value <= 1e-9 * level and where == ""
            else:
                shown(text, value)
                assert int(where) == step and value > 1e-9 * level


def check_capacity(headers, rows, classes, results):
    points = {p["step"]: p for p in results["capacity"]["points"]}
    assert len(rows) == len(points)
    names = list(next(iter(points.values()))["parameters"])
    for row, mark in zip(rows, classes):
        p = points[int(row[0])]
        for k, name in enumerate(names):
            shown(row[1 + k], p["parameters"][name])
        cells = dict(zip(headers[1 + len(names):], row[1 + len(names):]))
        shown(cells["radius (m)"], p["radius"])
        shown(cells["height (m)"], p["height"])
        for header, key, scale in (("tipping load (kN)", "tipping_load", 1e-3), ("hydraulic load (kN)", "hydraulic_load",
                                   1e-3), ("rated load (kN)", "rated_load", 1e-3), ("rated mass (kg)", "rated_mass", 1)):
            if p[key] is None:
                assert cells[header] == ""
            else:
                shown(cells[header], p[key] * scale)
        assert cells["invalid"] == "; ".join(p["invalid"])
        assert (mark == "failed") == (not p["valid"])


def check_status(headers, rows, classes, results):
    assert len(rows) == len(results["steps"])
    for row, mark, step in zip(rows, classes, results["steps"]):
        assert int(row[0]) == step["index"]
        cells = dict(zip(headers, row))
        assert int(cells["iterations"]) == step["iterations"]
        if step["residual"] is None:
            assert cells["final residual (scaled, -)"] == "no solve"
        else:
            assert float(cells["final residual (scaled, -)"]) == pytest.approx(step["residual"], rel=6e-3)
        assert (mark == "failed") == (step["status"] != "converged")
        for name in results["parameters"]:
            header = next(h for h in headers if h.startswith(name + " ("))
            unit = header[len(name) + 2:-1]
            factor = 180 / math.pi if unit == "deg" else 1.0
            shown(cells[header], step["parameters"][name] * factor)


def check_deflection(rows, results):
    for frame, peak, step, _ in rows:
        if peak.startswith("none"):
            continue
        values = [(np.linalg.norm(s["frames"][frame]["deflection"]) * 1e3, s["index"]) for s in results["steps"]
                  if frame in s.get("frames", {})]
        value, _ = max(values)
        shown(peak, value)
        at_peak(step, values, value)


def check_efforts(rows, results):
    for label, _, peak, unit, step, _ in rows:
        name, _, coordinate = label.partition("[")
        k = int(coordinate[:-1]) if coordinate else 0
        values = [(s["joints"][name]["effort"], s["index"]) for s in results["steps"] if name in s.get("joints", {})]
        values = [((v[k] if isinstance(v, list) else v), i) for v, i in values]
        value, _ = max(values, key=lambda item: abs(item[0]))
        scale = 1e-3 if unit.startswith("k") else 1.0
        if peak == ROUND_OFF:
            continue  # the round-off rule itself is tested in test_roundoff_peaks.py
        shown(peak, value * scale)
        at_peak(step, [(abs(v), i) for v, i in values], abs(value))


def check_pin_loads(headers, rows, results):
    scale = 1e-3 if "(kN)" in headers[1] else 1.0
    for name, peak, step, _ in rows:
        values = [(np.linalg.norm(s["joints"][name]["wrench_world"][:3]), s["index"]) for s in results["steps"]
                  if name in s.get("joints", {})]
        value, _ = max(values)
        shown(peak, value * scale)
        at_peak(step, values, value)


def pair_history(results) -> dict[str, list[tuple[int, float, str]]]:
    """Per machine pair ``a - b``, its (step, distance m, closest shapes ``s / t``) at every step that posed it."""
    history: dict[str, list[tuple[int, float, str]]] = {}
    for s in results["steps"]:
        for c in s.get("collisions") or []:
            history.setdefault(f"{c['a']} - {c['b']}", []).append((s["index"], c["distance"], " / ".join(c["closest"])))
    return history


def collision_state(distance: float, margin: float) -> str:
    return "in collision" if distance <= 0 else "within margin" if distance < margin else "clear"


def expand(text: str, order: list[int]) -> list[int]:
    """The steps of a ``count (a-b, c)`` cell, checked against its count; ``a-b`` means every step between in
    results.json's order."""
    if text == "0":
        return []
    count, _, runs = text.partition(" ")
    steps = []
    for run in runs.strip("()").split(", "):
        first, _, last = run.partition("-")
        steps += order[order.index(int(first)):order.index(int(last or first)) + 1]
    assert len(steps) == int(count), text
    return steps


def check_collision_pairs(headers, rows, results, margin):
    history = pair_history(results)
    order = [s["index"] for s in results["steps"]]
    assert [r[0] for r in rows] == list(history)
    for row in rows:
        cells = dict(zip(headers, row))
        found = history[row[0]]
        least = min(d for _, d, _ in found)
        shown(cells["least distance (mm)"], least * 1e3)
        at_peak(cells["step"], [(d * 1e3, i) for i, d, _ in found], least * 1e3)
        for words, header in (("within margin", "steps within margin"), ("in collision", "steps in collision")):
            steps = [i for i, d, _ in found if collision_state(d, margin) == words]
            assert expand(cells[header], order) == steps
            assert cells[f"first step {words}"] == (str(steps[0]) if steps else "none")
        touching = [shapes for _, d, shapes in found if d <= 0]
        assert cells["shapes in collision"] == ("; ".join(dict.fromkeys(touching)) or "none")
        assert cells["closest shapes at the least distance"] == dict((i, c) for i, _, c in found)[int(cells["step"])]


def check_distances(headers, rows, results, margin):
    history = {pair: {i: d for i, d, _ in found} for pair, found in pair_history(results).items()}
    if len(results["steps"]) <= 24:
        assert [int(r[0]) for r in rows] == [s["index"] for s in results["steps"]]
    for row in rows:
        cells, step = dict(zip(headers, row)), int(row[0])
        for pair, distances in history.items():
            if step in distances:
                shown(cells[f"{pair} (mm)"], distances[step] * 1e3)
                assert cells[f"{pair} state"] == collision_state(distances[step], margin)
            else:
                assert cells[f"{pair} (mm)"] == "not posed"


def check_provenance(heading, headers, rows, results):
    metadata = results["metadata"]
    if heading == "Input files":
        assert rows == [[f["path"], f["sha256"]] for f in metadata["inputs"]]
        for path, digest in rows:
            assert hashlib.sha256(Path(path).read_bytes()).hexdigest() == digest
    elif heading == "Machines":
        for row, machine in zip(rows, metadata["machines"], strict=True):
            assert json.loads(row[2]) == machine["placement"]["position"]
            assert json.loads(row[3]) == machine["placement"]["rotation"]
            held = {} if row[4] == "none" else {k: json.loads(v) for k, v in
                                                (item.split(" = ") for item in row[4].split("; "))}
            assert held == machine["held"]
    elif heading == "Loads":
        for row, load in zip(rows, metadata["loads"], strict=True):
            assert [json.loads(row[3]), json.loads(row[4]), json.loads(row[6])] == [load["force"], load["torque"],
                                                                                     load["factor"]]
    elif heading.startswith("Sweep"):
        for row, (name, parameter) in zip(rows, metadata["sweep"]["parameters"].items(), strict=True):
            values = json.loads(row[4])
            assert values == parameter["values"] and int(row[3]) == len(values)
            assert set(values) == {s["parameters"][name] for s in results["steps"]}  # the steps ran at these values
    elif heading == "Solver settings":
        assert {k: json.loads(v) for k, v in rows} == metadata["solver"]
    else:
        assert heading == "Run"
        assert dict(rows)["shiftsim"] == results["shiftsim_version"]
        assert dict(rows)["written (UTC)"] == metadata["written_utc"]
        packages = dict(item.split(" ", 1) for item in dict(rows)["packages"].split(", "))
        assert {"numpy", "scipy", "pybullet"} <= set(packages)
        assert all(importlib.metadata.version(name) == version for name, version in packages.items())


def check_sensitivity(heading, headers, rows, results):
    """A ranked table: each cell is 0.01 p dy/dp from the derivative and the parameter's value (as a % of the output
    when normalized), the rows the ``top`` parameters with the largest change over the steps, largest first."""
    section = results["sensitivity"]
    output = next(o for o in section["of"] if heading.startswith(o + " ("))
    points = {p["step"]: p for p in section["points"] if "error" not in p and output in p["outputs"]}
    steps = [int(h.removeprefix("step ")) for h in headers[1:]]

    def change(step: int, parameter: str) -> float | None:
        point = points[step]
        o = point["outputs"][output]
        derivative = o["derivative"].get(parameter)
        if derivative is None:
            return None
        value = 0.01 * point["parameter_values"][parameter] * derivative
        return 100.0 * value / o["value"] if section["normalized"] else value

    largest = {name: max((abs(c) for c in (change(k, name) for k in points) if c is not None), default=-1.0)
               for name in next(iter(points.values()))["outputs"][output]["derivative"]}
    assert [r[0] for r in rows] == sorted(largest, key=lambda n: -largest[n])[:int(section["top"])]
    for name, *cells in rows:
        for step, text in zip(steps, cells):
            expected = change(step, name)
            if expected is None:
                assert text == "-"
            else:
                shown(text, expected)


def margin(results) -> float:
    """m: the scenario's collision margin, from the scenario as read (results.json metadata)."""
    return results["metadata"]["scenario_document"]["collision"].get("margin", 0.0)


PROVENANCE = ("Run", "Input files", "Machines", "Loads", "Sweep", "Solver settings")


SENSITIVITY = {"of": ["ex1:arm:boom_cyl.effort", "ex1:arm:bucket:tip.z"], "wrt": ["mass", "load"], "top": 3}


@pytest.mark.slow
@pytest.mark.parametrize("source, analysis", [*((p, None) for p in SHIPPED),
                                              (REPO / "scenarios" / "excavator_lift.json", SENSITIVITY)],
                         ids=[*(p.stem for p in SHIPPED), "excavator_lift_sensitivity"])
def test_every_number_in_the_report_is_the_results_json_number(source, analysis, tmp_path, capsys):
    """Shipped scenarios cut to two steps, and the excavator lift with sensitivities (no shipped scenario has them)."""
    scenario = small_copy(source, tmp_path)
    if analysis is not None:
        document = json.loads(scenario.read_text())
        document["analysis"] = {"sensitivity": analysis}
        scenario.write_text(json.dumps(document))
    code, _, err = run_cli(capsys, "run", scenario, "-o", tmp_path / "out")
    assert code in (0, 1), err
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    page = Tables()
    page.feed((tmp_path / "out" / "report.html").read_text())
    seen = set()
    for heading, headers, rows, classes in page.tables:
        if heading.startswith("Pin reactions"):
            check_pin_reactions(rows, results)
        elif heading.startswith("Lift capacity"):
            check_capacity(headers, rows, classes, results)
        elif heading == "Solver status per step":
            check_status(headers, rows, classes, results)
        elif heading.startswith("Deflection of the tracked frames"):
            check_deflection(rows, results)
        elif heading.startswith("Joint efforts"):
            check_efforts(rows, results)
        elif heading.startswith("Pin loads"):
            check_pin_loads(headers, rows, results)
        elif heading == "Machine pairs":
            check_collision_pairs(headers, rows, results, margin(results))
        elif heading.startswith("Distance per step"):
            check_distances(headers, rows, results, margin(results))
        elif heading.startswith(tuple((results.get("sensitivity") or {}).get("of", ()))):
            check_sensitivity(heading, headers, rows, results)
        elif heading.startswith(PROVENANCE):
            check_provenance(heading, headers, rows, results)
        else:
            raise AssertionError(f"report table {heading!r} is not checked against results.json")
        seen.add(re.sub(r" \(.*", "", heading))
    assert {"Solver status per step", "Run", "Input files", "Machines", "Solver settings"} <= seen
    if "capacity" in results and "error" not in results["capacity"]:
        assert "Lift capacity" in seen
    if any(s.get("pin_reactions") for s in results["steps"]):
        assert "Pin reactions" in seen
    if any(s.get("collisions") for s in results["steps"]):
        assert {"Machine pairs", "Distance per step"} <= seen
    if analysis is not None:
        assert set(analysis["of"]) <= seen


@pytest.mark.parametrize("argv, recorded", [(["/venv/bin/shiftsim", "run", "s.json"], True),
                                            (["/src/shiftsim/__main__.py", "run", "s.json"], True),
                                            (["/venv/bin/pytest", "-q"], False), ([], False)])
def test_the_command_recorded_is_a_shiftsim_command_line(argv, recorded, monkeypatch):
    """metadata ``command`` is the process's argv when it is the shiftsim command (or ``python -m shiftsim``), and null
    when shiftsim was called from Python (pytest's own argv is not the run's command)."""
    from shiftsim.output.provenance import command_line

    monkeypatch.setattr("sys.argv", argv)
    assert command_line() == (argv if recorded else None)


def test_a_long_sweeps_values_are_listed_by_their_ends():
    """The provenance table lists up to 100 swept values in full, as results.json holds them; of a longer sweep the
    first and last ten, every digit, and how many are left out (the report of a 30,000-step run was 0.6 MB of them)."""
    from shiftsim.output.report_sections import swept_values

    short = np.linspace(1.9, 2.9, 100).tolist()
    assert json.loads(swept_values(short)) == short
    long = np.linspace(1.9, 2.9, 30_000).tolist()
    text = swept_values(long)
    head, tail = text.split(", ..., ")
    assert json.loads(head + "]") == long[:10]
    assert json.loads("[" + tail.split("]")[0] + "]") == long[-10:]
    assert tail.endswith("] (29980 more in results.json metadata.sweep)") and len(text) < 600
