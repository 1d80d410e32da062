"""Warnings are folded the same way in every command: a model whose ten bodies each name a missing geometry file
gives one grouped "geometry file not found" line (with its count), not ten, from model and scenario commands alike
(view included) and from run_scenario."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import shiftsim
from shiftsim.cli import main

ROOT = Path(__file__).resolve().parents[2]
MISSING = "geometry file not found"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("folding")
    model = json.loads((ROOT / "models" / "shift" / "cantilever10.json").read_text())
    for k, body in enumerate(model["bodies"]):
        body["geometry"] = [{"filename": [f"missing_{k}.obj"]}]
    (folder / "beam.json").write_text(json.dumps(model))
    scenario = {"name": "folding", "machines": [{"id": "beam", "model": "beam.json"}],
                "loads": [{"name": "tip", "frame": "beam:link10:tip", "force": [0.0, 0.0, -10.0], "direction": "world"}],
                "sweep": {"mode": "line", "parameters": {"load:tip": {"from": 0.0, "to": 1.0, "steps": 2}}}}
    (folder / "scenario.json").write_text(json.dumps(scenario))
    return folder / "beam.json", folder / "scenario.json"


def _geometry_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if MISSING in line]


@pytest.mark.slow
@pytest.mark.parametrize("command", [["check", "{model}"], ["fk", "{model}"], ["solve", "{model}"],
                                     ["check", "{scenario}"], ["collide", "{scenario}"],
                                     ["run", "{scenario}", "-o", "{out}"]])
def test_one_grouped_line_per_command(command, files, capsys, tmp_path):
    model, scenario = files
    argv = [part.format(model=model, scenario=scenario, out=tmp_path / "out") for part in command]
    main(argv)
    captured = capsys.readouterr()
    lines = _geometry_lines(captured.out + captured.err)
    assert len(lines) == 1, lines
    assert "(10 places" in lines[0]


def test_run_scenario_warns_once(files):
    _, scenario = files
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shiftsim.run_scenario(scenario)
    lines = [str(w.message) for w in caught if MISSING in str(w.message)]
    assert len(lines) == 1 and "(10 places" in lines[0]


def test_view_of_a_scenario_shows_the_grouped_line_before_it_serves(files, capsys):
    """``shiftsim view SCENARIO`` serves until Ctrl-C: the run's warnings are printed when the run ends, grouped."""
    from shiftsim.commands.view import _results

    _results(files[1])
    lines = _geometry_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "(10 places" in lines[0]
