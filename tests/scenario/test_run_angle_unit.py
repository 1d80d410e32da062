"""``"angle_unit": "deg"``: the tables speak degrees (units column, swept values), results.json stays in rad."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from helpers.scenario import model_path, run_cli, write_scenario

from shiftsim.scenario.definition import ANGLE_UNITS, angle_unit_of, build_scenario

CRANK = "fb:four_bar:crank_pin"


def _four_bar(**extra):
    return {"name": "fb", "machines": [{"id": "fb", "model": model_path("four_bar")}],
            "sweep": {"parameters": {CRANK: [-1.0, 0.0, 0.5]}},
            "track": {"joints": [CRANK, "fb:four_bar:rocker_pin"]}, "outputs": {"plots": []}, **extra}


def _tables(folder):
    results = json.loads((folder / "results.json").read_text())
    rows = list(csv.DictReader(io.StringIO((folder / "results.csv").read_text())))
    steps = list(csv.DictReader(io.StringIO((folder / "steps.csv").read_text())))
    return results, rows, steps


def test_degrees_in_the_tables_radians_in_results_json(tmp_path, capsys):
    assert run_cli(capsys, "run", write_scenario(tmp_path, _four_bar(), "rad.json"), "-o", tmp_path / "rad")[0] == 0
    assert run_cli(capsys, "run", write_scenario(tmp_path, _four_bar(angle_unit="deg"), "deg.json"),
                   "-o", tmp_path / "deg")[0] == 0
    rad_json, rad_rows, rad_steps = _tables(tmp_path / "rad")
    deg_json, deg_rows, deg_steps = _tables(tmp_path / "deg")
    assert rad_json["steps"] == deg_json["steps"] and deg_json["angle_unit"] == "deg"  # the file stays SI
    assert [float(s[CRANK]) for s in deg_steps] == pytest.approx([math.degrees(v) for v in (-1.0, 0.0, 0.5)])
    assert [float(s[CRANK]) for s in rad_steps] == [-1.0, 0.0, 0.5]
    assert len(rad_rows) == len(deg_rows)
    for rad, deg in zip(rad_rows, deg_rows):
        assert (rad["entity"], rad["quantity"], rad["component"]) == (deg["entity"], deg["quantity"], deg["component"])
        if rad["unit"] == "rad":  # joint positions and deflections
            assert deg["unit"] == "deg" and float(deg["value"]) == pytest.approx(math.degrees(float(rad["value"])))
        else:  # efforts (N m) and wrenches are not angles
            assert deg["unit"] == rad["unit"] and deg["value"] == rad["value"]
    assert {r["unit"] for r in deg_rows if r["quantity"] == "effort"} == {"N m"}


def test_the_helpers_for_plots_and_summary(tmp_path):
    scenario = build_scenario(tmp_path / "s.json", _four_bar(angle_unit="deg"))
    assert scenario.angle_unit == "deg" and scenario.angle(math.pi) == pytest.approx(180.0)
    assert build_scenario(tmp_path / "s.json", _four_bar()).angle(1.5) == 1.5  # radians stay the default
    assert angle_unit_of("rad", "deg") == "deg" and angle_unit_of("m", "deg") == "m"
    assert ANGLE_UNITS["deg"] == pytest.approx(180 / math.pi)


def test_an_unknown_angle_unit_is_refused(tmp_path, capsys):
    code, _, err = run_cli(capsys, "run", write_scenario(tmp_path, _four_bar(angle_unit="grad")), "-o", tmp_path / "o")
    assert code == 2 and "angle_unit" in err and "rad" in err and "deg" in err
