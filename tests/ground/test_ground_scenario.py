"""Machines capacity_scenario on the ground in scenarios: results per step, the capacity command, and bad input."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
from helpers.scenario import (
    SCENARIOS,
    capacity_scenario,
    png_size,
    run_cli,
    write_scenario,
)

from shiftsim.plots.registry import FIGURE_SIZES
from shiftsim.scenario.schema import load_schema

G = 9.81
UPPER_AND_LOWER = 13190.0 + 7000.0  # kg: excavator_hydraulic.json and undercarriage_20t.json


@pytest.mark.slow
def test_a_standing_machine_reports_what_the_ground_carries(tmp_path, capsys):
    path = write_scenario(tmp_path, capacity_scenario())
    code, out, _ = run_cli(capsys, "run", path, "-o", tmp_path / "out")
    assert code == 0
    least = min(s["ground"]["ex1"]["tipping_margin"] for s in json.loads((tmp_path / "out" / "results.json").read_text())["steps"])
    assert f"least margin    {least:.4g} m to tipping, ex1 over" in out
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    jsonschema.Draft202012Validator(load_schema("results")).validate(results)
    for step in results["steps"]:
        ground = step["ground"]["ex1"]
        forces = np.array(list(ground["contact_forces"].values()))
        reaction = np.array(ground["ground_reaction"]["force"])
        assert forces.sum(axis=0) == pytest.approx(reaction)
        # the ground carries the machine and the 1 t payload, nothing sideways
        assert reaction == pytest.approx([0.0, 0.0, UPPER_AND_LOWER * G + 9810.0], abs=1e-6 * reaction[2])
        assert set(ground["support_polygon"]) == {f"ex1:lower:carbody:track_{c}" for c in ("fl", "fr", "rl", "rr")}
        # centre of pressure: where the reaction's moment about the ground has no horizontal part
        cop = np.array(ground["centre_of_pressure"])
        moment = np.array(ground["ground_reaction"]["moment"])
        assert np.cross(cop, reaction)[:2] == pytest.approx(moment[:2], abs=1e-6 * abs(moment).max())
        # the front is out over the front edge x = 1.825: the margin is to that edge
        assert ground["tipping_margin"] == pytest.approx(1.825 - cop[0], rel=1e-6)
        assert set(ground["tipping_edge"]) == {"ex1:lower:carbody:track_fl", "ex1:lower:carbody:track_fr"}
    rows = list((tmp_path / "out" / "results.csv").read_text().splitlines())
    assert any(",ex1:lower:carbody:track_fl,contact_force,fz," in row for row in rows)
    assert any(",ex1,tipping_margin,," in row for row in rows)


@pytest.mark.slow
def test_capacity_command_reports_every_lift_point(tmp_path, capsys):
    path = write_scenario(tmp_path, capacity_scenario())
    code, out, _ = run_cli(capsys, "capacity", path, "--json", "--chart", tmp_path / "chart.png")
    assert code == 0
    document = json.loads(out)
    assert (tmp_path / "chart.png").read_bytes()[:4] == b"\x89PNG"
    assert len(document["points"]) == 2
    for point in document["points"]:
        tipping, hydraulic = point["tipping_load"], point["hydraulic_load"]
        assert point["tips_below"] > tipping > 0 and hydraulic > 0
        assert point["tips_below"] <= tipping * (1 + 1e-3) + 1e-9
        assert point["rated_load"] == pytest.approx(min(0.75 * tipping, 0.87 * hydraulic))
        assert point["governs"] == ("tipping" if 0.75 * tipping <= 0.87 * hydraulic else "hydraulic")
        assert point["rated_mass"] == pytest.approx(point["rated_load"] / G)
        assert 4.0 < point["radius"] < 9.0 and set(point["tipping_edge"]) == {"ex1:lower:carbody:track_fl",
                                                                             "ex1:lower:carbody:track_fr"}
    # a higher boom (longer cylinder) lifts the pivot
    assert document["points"][1]["height"] > document["points"][0]["height"]


def test_bad_ground_and_contacts_name_the_place(tmp_path, capsys):
    document = capacity_scenario(ground={"grid": {"x": [0.0, 0.0, 1.0], "y": [0.0, 1.0], "z": [[0.0, 0.0], [0.0, 0.0]]}})
    document["machines"][0]["contacts"] = ["lower:carbody:track_fx", {"box": "lower:carbody:pad"}]
    code, _, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 2 and "Traceback" not in err
    assert "ground.grid.x" in err and "increase strictly" in err
    assert "ground.grid.z" in err and "3 rows (one per x)" in err
    assert not (tmp_path / "out").exists()
    document = capacity_scenario()
    document["machines"][0]["contacts"] = ["lower:carbody:track_fx", {"box": "lower:carbody:pad"}]
    code, _, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 2
    assert "machines[0].contacts[0]" in err and "track_fl" in err
    assert "machines[0].contacts[1].box" in err and "track_left" in err


def test_capacity_input_errors(tmp_path, capsys):
    path = write_scenario(tmp_path, capacity_scenario())
    code, _, err = run_cli(capsys, "capacity", path, "--load", "payloda")
    assert code == 2 and "--load.load" not in err and "unknown load 'payloda'" in err and "payload" in err
    document = capacity_scenario()
    del document["machines"][0]["contacts"]
    code, _, err = run_cli(capsys, "capacity", write_scenario(tmp_path, document))
    assert code == 2 and "analysis.capacity.load" in err and "no 'contacts'" in err
    document = capacity_scenario()
    document["analysis"]["capacity"]["cylinders"]["ex1:front:arm:boom_cyl"]["rod"] = 0.2
    code, _, err = run_cli(capsys, "capacity", write_scenario(tmp_path, document))
    assert code == 2 and "cylinders.ex1:front:arm:boom_cyl.rod" in err


def test_capacity_refuses_a_group_not_swept_a_centre_off_the_machine_and_no_load(tmp_path, capsys):
    document = capacity_scenario()
    document["analysis"]["capacity"].update(group="ex1:lower:slew", centre="ex2:lower:turntable:mount")
    code, _, err = run_cli(capsys, "capacity", write_scenario(tmp_path, document))
    assert code == 2 and "Traceback" not in err
    assert "analysis.capacity.group: 'ex1:lower:slew' is not a swept parameter (expected" in err
    assert "ex1:front:arm:boom_cyl" in err  # the swept parameters are suggested
    assert "analysis.capacity.centre: 'ex2:lower:turntable:mount' is not on machine 'ex1' (expected ex1:..." in err
    document = capacity_scenario()
    del document["analysis"]
    code, _, err = run_cli(capsys, "capacity", write_scenario(tmp_path, document))
    assert code == 2 and "--load: no load named and the scenario has no analysis.capacity" in err


@pytest.mark.slow
def test_footprint_plot_only_for_standing_machines(tmp_path, capsys):
    path = write_scenario(tmp_path, capacity_scenario(outputs={"csv": False, "plots": ["footprint"], "dpi": 40}))
    code, _, _ = run_cli(capsys, "run", path, "-o", tmp_path / "out")
    assert code == 0
    width, height = png_size(tmp_path / "out" / "footprint.png")
    assert (width, height) == (round(FIGURE_SIZES["footprint"][0] * 40), round(FIGURE_SIZES["footprint"][1] * 40))
    document = capacity_scenario(outputs={"plots": ["footprint"]})
    del document["machines"][0]["contacts"]
    del document["analysis"]
    code, _, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out2")
    assert code == 2 and "outputs.plots[0]" in err and "no machine has 'contacts'" in err


def test_capacity_refuses_an_oversized_sweep_naming_the_file(tmp_path, capsys):
    document = capacity_scenario(sweep={"parameters": {"ex1:front:arm:boom_cyl": {"from": 2.0, "to": 2.4, "steps": 2_000_000}}})
    path = write_scenario(tmp_path, document)
    code, _, err = run_cli(capsys, "capacity", path)
    assert code == 2 and "Traceback" not in err
    assert f"{path}: sweep: 2,000,000 steps, more than a run can hold (expected at most 1,000,000 steps)" in err


def test_capacity_chart_never_overwrites_an_input(tmp_path, capsys):
    path = write_scenario(tmp_path, capacity_scenario())
    before = path.read_bytes()
    code, _, err = run_cli(capsys, "capacity", path, "--chart", path)
    assert code == 2 and "--chart" in err and "input file" in err and path.read_bytes() == before
    code, _, err = run_cli(capsys, "capacity", path, "--chart", tmp_path / "missing" / "chart.png")
    assert code == 2 and "folder does not exist" in err


@pytest.mark.slow
def test_an_mfk_excavator_stands_on_its_track_box_while_its_tracks_turn(tmp_path, capsys):
    """MFK track boxes work unchanged as contacts ({"box": ...}: the four bottom corners), in the MFK site frame
    (z down in the model, z up in the world); turning the tracks under the upper keeps the machine capacity_scenario."""
    document = {"name": "mfk_ground",
                "machines": [{"id": "ex1", "model": str(SCENARIOS.parent / "models" / "mfk" / "excavator.json"),
                              "contacts": [{"box": "c1:tracks:tracks"}]}],
                "sweep": {"parameters": {"ex1:c1:tracks.rz": [0.0, 0.3]}}, "outputs": {"csv": False, "plots": []}}
    code, _, _ = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 0
    steps = json.loads((tmp_path / "out" / "results.json").read_text())["steps"]
    for step in steps:
        ground = step["ground"]["ex1"]
        assert sorted(ground["contact_forces"]) == [f"ex1:c1:tracks:tracks:corner{k}" for k in range(4)]
        reaction = np.array(ground["ground_reaction"]["force"])
        assert reaction[:2] == pytest.approx([0.0, 0.0], abs=1e-6 * reaction[2]) and reaction[2] > 0
        assert ground["tipping_margin"] > 0 and len(ground["support_polygon"]) == 4
    assert steps[0]["ground"]["ex1"]["ground_reaction"]["force"][2] == pytest.approx(
        steps[1]["ground"]["ex1"]["ground_reaction"]["force"][2])  # the weight, whatever the tracks' angle
