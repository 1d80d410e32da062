"""``shiftsim check`` on a scenario (validated, not run), on empty documents and on files of no known format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shiftsim.cli import main
from shiftsim.errors import ModelError
from shiftsim.formats import detect_json_format, read_model

ROOT = Path(__file__).resolve().parents[2]


def four_bar_scenario(tmp_path: Path, **changes) -> Path:
    document = json.loads((ROOT / "scenarios/four_bar_drive.json").read_text())
    document["machines"][0]["model"] = str(ROOT / "models/shift/four_bar.json")
    document.update(changes)
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(document))
    return path


def test_check_validates_a_scenario_without_running_it(tmp_path, capsys):
    path = four_bar_scenario(tmp_path)
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{path}: valid scenario 'four_bar_drive' (not run)")
    assert "machine fb" in out and "shift model" in out and "25 steps (line; parameters: fb:four_bar:crank_pin)" in out
    assert not (tmp_path / "four_bar_drive").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["scenario.json"]
    assert main(["check", "--json", str(path)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["kind"] == "scenario" and summary["sweep"]["steps"] == 25
    assert summary["machines"][0]["bodies"] == 3  # crank, coupler, rocker


def test_check_of_a_scenario_reports_unknown_names_and_bad_sweeps(tmp_path, capsys):
    path = four_bar_scenario(tmp_path, sweep={"mode": "line", "parameters": {"fb:four_bar:crank_pn": [0, 1]}},
                             track={"frames": ["fb:four_bar:nowhere"]})
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "sweep.parameters" in err and "crank_pn" in err and "crank_pin" in err  # the name and the valid one
    assert "nowhere" in err


def test_check_of_a_scenario_with_a_missing_model(tmp_path, capsys):
    path = four_bar_scenario(tmp_path, machines=[{"id": "fb", "model": "missing.json"}])
    assert main(["check", str(path)]) == 2
    assert "machines[0].model" in capsys.readouterr().err


def test_a_scenario_read_as_a_model_is_named_as_a_scenario(tmp_path):
    path = four_bar_scenario(tmp_path)
    with pytest.raises(ModelError) as error:
        read_model(path)
    assert "is a scenario (it has 'machines'" in str(error.value) and "shiftsim check SCENARIO" in str(error.value)


@pytest.mark.parametrize("document, what", [
    ({}, "is an empty object"),
    ({"name": "x", "colour": "red"}, "has no key of a known model format (its keys: 'name', 'colour')"),
    ([1, 2], "is an array of 2 items"),
    ({"model_parameters": {"version": "0.2", "gravity": [0, 0, 9.81]}}, "the shift model has no bodies"),
    ({"assemblies": []}, "the shift model has no bodies"),
])
def test_empty_or_unknown_documents_are_not_valid_models(tmp_path, capsys, document, what):
    path = tmp_path / "model.json"
    path.write_text(json.dumps(document))
    assert main(["check", str(path)]) == 2
    captured = capsys.readouterr()
    assert what in captured.err and "valid" not in captured.out


def test_mdx_geometry_without_base_radius_is_read_as_mdx_and_refused(tmp_path, capsys):
    document = json.loads((ROOT / "models/mdx/chair.json").read_text())
    del document["baseRadius"]
    assert detect_json_format(document).kind == "mdx"
    path = tmp_path / "geometry.json"
    path.write_text(json.dumps(document))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "baseRadius: is missing" in err and "read as an Mdx geometry reply (it has 'platformRadius'" in err


@pytest.mark.parametrize("document, kind", [
    ({"type": "mfk::ResourceConfiguration", "data": {}}, "mfk"), ({"components": []}, "mfk"),
    ({"result": {"baseRadius": 1}}, "mdx"), ({"reply": "geometry"}, "mdx"),
    ({"machines": [], "name": "s"}, "scenario"), ({"bodies": []}, "shift"), ({"name": "only"}, "unknown"),
    ("text", "unknown"),
])
def test_format_verdicts(document, kind):
    assert detect_json_format(document).kind == kind


def test_a_reader_error_says_which_format_was_assumed(tmp_path):
    path = tmp_path / "model.json"
    path.write_text(json.dumps({"assemblies": [{"name": "a", "bodies": [{"name": "b", "mass": "heavy"}]}]}))
    with pytest.raises(ModelError) as error:
        read_model(path)
    assert str(error.value).splitlines()[-1] == f"{path}: read as a Shift model (it has 'assemblies')"


def test_a_verdict_names_the_format_and_at_most_four_deciding_keys():
    assert str(detect_json_format({"name": "only"})) == "no known format"
    assert str(detect_json_format({"result": {"baseRadius": 1}})) == "an Mdx geometry reply (it has 'result.baseRadius')"
    shift = {key: [] for key in ("fixed", "frames", "lights", "terrain", "bodies")}
    assert str(detect_json_format(shift)) == "a Shift model (it has 'fixed', 'frames', 'lights', 'terrain', ...)"


def test_check_of_a_file_that_is_not_json_reports_the_line_and_column(tmp_path, capsys):
    path = tmp_path / "scenario.json"
    path.write_text('{"machines": [\n  {"id": 1,,}\n')
    assert main(["check", str(path)]) == 2
    assert f"{path}: line 2, column 12: not valid JSON: " in capsys.readouterr().err


def test_check_of_a_lenient_json5_scenario_validates_it_and_says_it_was_read_leniently(tmp_path, capsys):
    strict = four_bar_scenario(tmp_path)
    path = tmp_path / "scenario.json5"
    path.write_text("// a comment\n" + strict.read_text())
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{path}: valid scenario 'four_bar_drive' (not run)")
    assert f"warning: {path}: not strict JSON (comments or trailing commas); read leniently" in out


def test_an_unknown_document_is_refused_at_top_level_with_at_most_six_keys_and_the_known_formats(tmp_path):
    path = tmp_path / "model.json"
    path.write_text(json.dumps({key: 1 for key in ("name", "a", "b", "c", "d", "e", "f")}))
    with pytest.raises(ModelError) as error:
        read_model(path)
    [problem] = error.value.problems
    assert (problem.file, problem.where) == (str(path), "(top level)")
    assert problem.what == "has no key of a known model format (its keys: 'name', 'a', 'b', 'c', 'd', 'e', ...)"
    assert problem.expected == ("a Shift model (model_parameters, fixed, frames, lights, terrain, assemblies, ...), "
                                "an MFK configuration (components or the mfk::ResourceConfiguration envelope) or an "
                                "Mdx geometry reply (baseRadius, platformRadius, baseAngles, ...)")
