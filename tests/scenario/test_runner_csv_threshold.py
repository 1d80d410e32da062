"""results.csv and steps.csv only for small runs or on request (issue 27): a documented step limit, the scenario's
``outputs.csv`` and ``shiftsim run --csv/--no-csv``; the Parquet tables, which hold the same rows, always."""

from __future__ import annotations

import csv
import io

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from helpers.scenario import beam_scenario, run_cli, write_scenario

from shiftsim.output import writers
from shiftsim.output.store import open_store

CSV_FILES = {"results.csv", "steps.csv"}


def _written(capsys, tmp_path, document, *options):
    folder = tmp_path / "out"
    code, _, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", folder, "-q", *options)
    assert code == 0, err
    return folder, {p.name for p in folder.iterdir()}


def _without_csv_key(**changes):
    document = beam_scenario(**changes)
    del document["outputs"]["csv"]
    return document


@pytest.mark.parametrize("limit, expected", [(3, True), (2, False)])
def test_without_a_choice_the_csv_is_written_up_to_the_step_limit(tmp_path, capsys, monkeypatch, limit, expected):
    """The beam sweep has 3 steps: written at a limit of 3, not at 2; the Parquet tables either way."""
    monkeypatch.setattr(writers, "CSV_STEP_LIMIT", limit)
    _, names = _written(capsys, tmp_path, _without_csv_key())
    assert (CSV_FILES <= names) is expected and not (CSV_FILES & names and not expected)
    assert {"steps", "values", "results.json"} <= names


@pytest.mark.parametrize("scenario_csv, option, expected", [
    (True, (), True), (False, (), False), (None, ("--csv",), True), (True, ("--no-csv",), False),
    (False, ("--csv",), True)])
def test_the_scenario_and_the_command_line_choose_over_the_limit(tmp_path, capsys, monkeypatch, scenario_csv,
                                                                  option, expected):
    monkeypatch.setattr(writers, "CSV_STEP_LIMIT", 0)  # every run counts as long
    document = _without_csv_key() if scenario_csv is None else beam_scenario(outputs={"csv": scenario_csv, "plots": []})
    _, names = _written(capsys, tmp_path, document, *option)
    assert bool(CSV_FILES & names) is expected and (CSV_FILES <= names) is expected


def test_the_csv_asked_for_past_the_limit_holds_the_parquet_rows(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(writers, "CSV_STEP_LIMIT", 0)
    folder, _ = _written(capsys, tmp_path, _without_csv_key(), "--csv")
    rows = list(csv.reader(io.StringIO((folder / "results.csv").read_text())))[1:]
    store = open_store(folder)  # every row of results.csv, in SI (the beam's angles are in rad), then its own rows
    table = store.select().filter(pc.invert(pc.is_in(store.select().column("quantity"),
                                                     value_set=pa.array(writers.STORE_ONLY)))).to_pylist()
    assert len(rows) == len(table) > 0 and store.values.count_rows() > len(table)
    for row, record in zip(rows, table):
        assert int(row[0]) == record["step"] and row[1:4] == [record["entity"], record["quantity"], record["component"]]
        assert float(row[4]) == record["value"] and row[5] == record["unit"]
