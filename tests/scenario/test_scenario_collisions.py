"""Collisions in runs: every step's machine pairs, the first colliding step in the summary, collisions.png.

Two MFK excavators side by side, facing north; ex2 is moved east by sweeping its transform interface's
easting. Their tracks (3.0 m wide boxes, the widest part of the machines, at ground level) are then the
closest shapes, a gap of easting - 3.0 m apart.
"""

from __future__ import annotations

import csv
import io
import json

import jsonschema
import pytest
from helpers.scenario import REPO, png_size, run_cli, write_scenario

from shiftsim.plots.registry import FIGURE_SIZES
from shiftsim.scenario.schema import load_schema

EXCAVATOR = str(REPO / "models" / "mfk" / "excavator.json")
EASTINGS = [4.0, 3.7, 3.5, 3.2]
TRACK_WIDTH = 3.0


def _document(collision: dict, **outputs) -> dict:
    return {"name": "side_by_side",
            "machines": [{"id": "ex1", "model": EXCAVATOR}, {"id": "ex2", "model": EXCAVATOR}],
            "sweep": {"parameters": {"ex2:topcon.transform.local_position.easting": EASTINGS}},
            "track": {"frames": ["ex1:c0:bucket:bucket_r"], "joints": ["ex1:c1:boom.ry"]},
            "collision": collision, "outputs": {"csv": True, "plots": [], **outputs}}


@pytest.mark.slow
def test_each_step_reports_the_pair_and_the_summary_names_the_first_collision(tmp_path, capsys):
    path = write_scenario(tmp_path, _document({"margin": 0.6}, plots=["collisions"], dpi=30))
    code, out, err = run_cli(capsys, "run", path, "-o", tmp_path / "out")
    assert code == 0, err  # collisions do not fail a run: every step converged
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    jsonschema.Draft202012Validator(load_schema("results")).validate(results)
    for step, easting in zip(results["steps"], EASTINGS):
        (pair,) = step["collisions"]
        assert (pair["a"], pair["b"]) == ("ex1", "ex2")
        assert pair["distance"] == pytest.approx(easting - TRACK_WIDTH, abs=1e-4)
        assert pair["in_collision"] == (easting - TRACK_WIDTH < 0.6)
        assert pair["closest"] == ["ex1:c1:tracks:tracks", "ex2:c1:tracks:tracks"]
    assert "within margin (0.6 m) first at step 2 (ex2:topcon.transform.local_position.easting = 3.5 m)" in out
    width, height = FIGURE_SIZES["collisions"]
    assert png_size(tmp_path / "out" / "collisions.png") == (round(width * 30), round(height * 30))
    rows = list(csv.reader(io.StringIO((tmp_path / "out" / "results.csv").read_text())))
    table = {(r[0], r[1], r[2]): r[4] for r in rows[1:]}  # step, entity, quantity: value
    assert float(table[("3", "ex1|ex2", "distance")]) == results["steps"][3]["collisions"][0]["distance"]
    assert table[("1", "ex1|ex2", "in_collision")] == "0" and table[("2", "ex1|ex2", "in_collision")] == "1"


@pytest.mark.slow
def test_default_margin_is_zero_and_plots_apply_only_with_collision(tmp_path, capsys):
    document = _document({}, dpi=20)
    del document["outputs"]["plots"]
    code, out, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out", "--force")
    assert code == 0, err
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert not any(step["collisions"][0]["in_collision"] for step in results["steps"])  # 0.2 m apart at the closest
    assert "no collision; least distance at step 3" in out
    assert (tmp_path / "out" / "collisions.png").is_file()  # drawn by default with collision

    plain = _document({}, plots=["collisions"])
    del plain["collision"]
    code, _, err = run_cli(capsys, "run", write_scenario(tmp_path, plain, "plain.json"), "-o", tmp_path / "plain")
    assert code == 2 and "outputs.plots[0]: 'collisions' cannot be drawn: the scenario has no 'collision'" in err
    code, _, err = run_cli(capsys, "run", write_scenario(tmp_path, _document({"margin": -1, "slef": True}), "bad.json"),
                           "-o", tmp_path / "bad")
    assert code == 2
    assert "collision.margin: -1 is out of range (expected a value >= 0)" in err
    assert "collision.slef: unknown key 'slef' (expected one of self" in err
