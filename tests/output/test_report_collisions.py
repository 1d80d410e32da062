"""The collisions of report.html: the two excavators slewing into each other, against the closed form of their gap,
and the per-step table's choice of steps on a long synthetic run."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from helpers.report import Tables
from helpers.scenario import SCENARIOS, run_cli

from shiftsim.output.report_collisions import (DISTANCE_ROWS, RUNS_SHOWN, TRANSITIONS, PairDistances, distance_table,
                                               step_ranges)

MARGIN = 0.05  # m, the scenario's collision margin


def gap(slew: float) -> float:
    """m: the scenario's closed form of the gap between the tracks at slew angle ``slew`` (rad): ex1's track corner,
    1.7 m and 1.5 m from its centre, turning towards ex2's tracks 2.0 m away (two_excavators.json)."""
    return 2.0 - (1.7 * math.sin(slew) + 1.5 * math.cos(slew))


@pytest.mark.slow
def test_first_steps_in_margin_and_in_collision_follow_the_closed_form(tmp_path, capsys):
    """Six steps of 1 degree from 17 degrees: the report's first step within the margin and first in collision are
    the steps where the closed-form gap first drops below the margin and below zero, its distances agree with the
    closed form to 1 mm, and the shapes in collision are the two machines' tracks."""
    document = json.loads((SCENARIOS / "two_excavators.json").read_text())
    slews = np.radians(np.arange(17.0, 23.0))
    document["sweep"]["parameters"] = {"ex1:c1:tracks.rz": slews.tolist()}
    document["outputs"] = {"plots": []}
    for machine in document["machines"]:
        machine["model"] = str((SCENARIOS / machine["model"]).resolve())
    path = tmp_path / "two.json"
    path.write_text(json.dumps(document))
    code, _, err = run_cli(capsys, "run", path, "-o", tmp_path / "out")
    assert code == 0, err
    page = Tables()
    page.feed((tmp_path / "out" / "report.html").read_text())
    tables = {heading.split(" (")[0]: (headers, rows) for heading, headers, rows, _ in page.tables}
    headers, rows = tables["Machine pairs"]
    (row,) = rows
    cells = dict(zip(headers, row))
    gaps = [gap(a) for a in slews]
    assert cells["first step within margin"] == str(next(k for k, g in enumerate(gaps) if 0 < g < MARGIN))
    assert cells["first step in collision"] == str(next(k for k, g in enumerate(gaps) if g <= 0))
    assert float(cells["least distance (mm)"]) == pytest.approx(min(gaps) * 1e3, abs=1.0)
    assert cells["shapes in collision"] == "ex1:c1:tracks:tracks / ex2:c1:tracks:tracks"  # one corner, tracks only
    headers, rows = tables["Distance per step"]
    assert [int(r[0]) for r in rows] == list(range(len(slews)))
    np.testing.assert_allclose([float(r[headers.index("ex1 - ex2 (mm)")]) for r in rows], np.multiply(gaps, 1e3),
                               atol=1.0)


def _pairs(distances: np.ndarray) -> PairDistances:
    """A run of ``len(distances)`` steps numbered 0, 1, ... whose one machine pair ``a - b`` is ``distances`` apart
    (NaN: not posed)."""
    return PairDistances(np.arange(len(distances)), {"a - b": distances}, {}, lambda row: "")


def test_a_long_run_shows_a_spread_of_steps_and_every_telling_one():
    """200 steps: the table holds DISTANCE_ROWS steps spread evenly plus both sides of every change of state and the
    least distance, each with its distance and state; a step without the pair reads 'not posed'."""
    distances = np.linspace(0.5, -0.3, 200) ** 2 - 0.01  # dips below zero and comes back
    distances[5] = np.nan
    states = ["not posed" if np.isnan(d) else "in collision" if d <= 0 else "within margin" if d < MARGIN
              else "clear" for d in distances]
    changes = [k for k in range(1, 200) if states[k] != states[k - 1]]
    assert 4 <= len(changes) <= TRANSITIONS  # into and out of the margin and of collision, and the step not posed
    least = int(np.nanargmin(distances))
    note, (headers, rows) = distance_table(_pairs(distances), MARGIN)
    shown = [row[0] for row in rows]
    assert {0, 199, least, *changes, *(k - 1 for k in changes)} <= set(shown)
    assert len(shown) <= DISTANCE_ROWS + 2 * len(changes) + 1
    assert shown == sorted(shown) and f"{len(shown)} of 200 steps" in note
    for step, _, distance, state in rows:
        assert state == states[step]
        if state != "not posed":
            assert float(distance) == pytest.approx(distances[step] * 1e3, rel=6e-4)
    _, (_, rows) = distance_table(_pairs(distances[:10]), MARGIN)
    assert [row[0] for row in rows] == list(range(10)) and rows[5][2:] == ["not posed", "not posed"]


def test_step_ranges_are_runs_of_neighbouring_steps():
    index = np.array([0, 5, 10, 15, 20, 25])
    assert step_ranges(index, np.array([1, 2, 3, 5])) == "4 (5-15, 25)"
    assert step_ranges(index, np.array([], int)) == "0"
    assert step_ranges(index, np.array([0])) == "1 (0)"
    every_other = np.arange(0, 2 * (RUNS_SHOWN + 1), 2)
    assert step_ranges(np.arange(100), every_other) == (f"{RUNS_SHOWN + 1} ("
                                                        + ", ".join(map(str, every_other[:RUNS_SHOWN])) + ", ...)")
