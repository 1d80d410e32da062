"""The columnar results store (shiftsim.output.store) against today's tidy tables.

The oracle is today's writer: results.csv and steps.csv as ``csv_bytes(tidy_rows(document))`` and
``csv_bytes(step_rows(document))`` (shiftsim.output.writers) write them, parsed back with the csv module. The store is fed
one step at a time (as a run streams them) and must give back every row, value for value and in
the same order, through pyarrow and through pandas.
"""

from __future__ import annotations

import csv
import io
import math

import orjson
import pandas as pd
import pyarrow.parquet as pq
import pytest
from helpers.scenario import SCENARIOS

from shiftsim.errors import InputError
from shiftsim.jsonio import dumps
from shiftsim.output.store import VALUE_COLUMNS, StoreError, StoreWriter, open_store, tables_bytes
from shiftsim.scenario import LocalExecutor, execute, load_scenario, run_chain
from shiftsim.output.writers import csv_bytes, results_document, step_rows, tidy_rows

SHIPPED = sorted(path.stem for path in SCENARIOS.glob("*.json"))
SLOW = {"excavator_capacity": 3}  # steps of its first chain solved here (all 128 take minutes)


@pytest.fixture(scope="module", params=SHIPPED)
def document(request):
    """A shipped scenario's results.json document, as read back from its JSON text."""
    scenario = load_scenario(SCENARIOS / f"{request.param}.json")
    if request.param in SLOW:
        steps = run_chain(scenario, scenario.sweep.chains()[0][:SLOW[request.param]])
    else:
        steps = execute(scenario, LocalExecutor(1))
    return orjson.loads(dumps(results_document(scenario, steps)))


def one_step(document, step):
    """The document cut down to ``step``: what a run hands the store when that step finishes."""
    return {**{k: v for k, v in document.items() if k != "steps"}, "steps": [step]}


def stream(document, folder, order=None, **options):
    """Feed the document's steps (in ``order``, default as they are) into a store at ``folder``."""
    steps = document["steps"] if order is None else [document["steps"][i] for i in order]
    with StoreWriter(folder, document["parameters"], **options) as writer:
        for step in steps:
            cut = one_step(document, step)
            writer.add(list(step_rows(cut))[1], list(tidy_rows(cut))[1:])
    return writer


def csv_table(rows):
    """Rows as results.csv / steps.csv hold them: written by today's writer, parsed back."""
    return list(csv.reader(io.StringIO(csv_bytes(rows).decode())))


def same_cell(text, stored):
    """A CSV cell and a stored value: numbers equal exactly (CSV writes floats by repr, which
    round-trips), empty cells are nulls, text equal."""
    if stored is None:
        return text == ""
    if isinstance(stored, float) or isinstance(stored, int) and not isinstance(stored, bool):
        return float(text) == stored or (math.isnan(stored) and text == "nan")
    return text == stored


def assert_rows_match(csv_rows, table):
    stored = table.to_pylist()
    assert len(stored) == len(csv_rows) > 0
    for text_row, row in zip(csv_rows, stored):
        assert all(same_cell(t, v) for t, v in zip(text_row, row.values(), strict=True)), (text_row, row)


@pytest.mark.slow
def test_store_round_trips_results_csv_and_steps_csv(document, tmp_path):
    stream(document, tmp_path / "store")
    store = open_store(tmp_path / "store")
    values_csv = csv_table(tidy_rows(document))
    steps_csv = csv_table(step_rows(document))
    assert tuple(values_csv[0]) == VALUE_COLUMNS and store.values.schema.names == values_csv[0]
    assert store.steps.schema.names == steps_csv[0] and store.parameters == document["parameters"]
    assert_rows_match(values_csv[1:], store.select())
    assert_rows_match(steps_csv[1:], store.step_table())
    # pandas reads the datasets directly, with the same numbers
    frame = pd.read_parquet(tmp_path / "store" / "values")
    assert list(frame.columns) == list(VALUE_COLUMNS) and len(frame) == len(values_csv) - 1
    assert frame["value"].tolist() == pytest.approx([float(r[4]) if r[4] else math.nan for r in values_csv[1:]],
                                                    rel=0, abs=0, nan_ok=True)


@pytest.mark.slow
def test_single_files_of_a_finished_run_read_as_the_streamed_store(document, tmp_path):
    for name, data in tables_bytes(document["parameters"], list(step_rows(document))[1:],
                                   list(tidy_rows(document))[1:]).items():
        (tmp_path / name).write_bytes(data)
    store = open_store(tmp_path)
    assert_rows_match(csv_table(tidy_rows(document))[1:], store.select())
    assert_rows_match(csv_table(step_rows(document))[1:], store.step_table())
    assert len(pd.read_parquet(tmp_path / "values.parquet")) == store.values.count_rows()


@pytest.mark.slow
def test_selection_by_entity_and_quantity_equals_filtering_the_csv(document, tmp_path):
    stream(document, tmp_path / "store")
    store = open_store(tmp_path / "store")
    rows = csv_table(tidy_rows(document))[1:]
    entities = sorted({r[1] for r in rows})
    assert store.entities() == entities
    entity, quantity = rows[len(rows) // 2][1], rows[len(rows) // 2][2]
    assert_rows_match([r for r in rows if r[1] == entity and r[2] == quantity], store.select(entity, quantity))
    picked = entities[::2]
    assert_rows_match([r for r in rows if r[1] in picked], store.select(entity=picked))
    last = document["steps"][-1]["index"]
    got = store.select(steps=[last], columns=["entity", "value"])
    assert got.column_names == ["entity", "value"]
    assert_rows_match([[r[1], r[4]] for r in rows if r[0] == str(last)], got)


def long_document():
    scenario = load_scenario(SCENARIOS / "excavator_lift.json")
    return orjson.loads(dumps(results_document(scenario, execute(scenario, LocalExecutor(1)))))


@pytest.fixture(scope="module")
def lift():
    return long_document()


def test_parts_bound_memory_and_are_readable_before_the_writer_closes(lift, tmp_path):
    per_step = len(list(tidy_rows(one_step(lift, lift["steps"][0])))) - 1
    limit = 2 * per_step + 1  # a part every three steps
    writer = StoreWriter(tmp_path / "store", lift["parameters"], rows_per_part=limit)
    seen_parts = []
    for step in lift["steps"]:
        cut = one_step(lift, step)
        writer.add(list(step_rows(cut))[1], list(tidy_rows(cut))[1:])
        assert writer.buffered < limit
        seen_parts.append(len(list((tmp_path / "store" / "values").glob("part-*.parquet"))))
    # nothing closed yet (a run killed here): every written part is complete, and every step listed has its values
    store = open_store(tmp_path / "store")
    written = store.step_table().column("step").to_pylist()
    assert written == [s["index"] for s in lift["steps"][:len(written)]] and len(written) == 3 * (len(lift["steps"]) // 3)
    assert store.select().num_rows == per_step * len(written)
    assert seen_parts == [(i + 1) // 3 for i in range(len(lift["steps"]))]
    for part in (tmp_path / "store" / "values").glob("part-*.parquet"):
        assert pq.ParquetFile(part).metadata.num_rows == 3 * per_step
    writer.close()
    assert open_store(tmp_path / "store").step_table().num_rows == len(lift["steps"])


def test_an_interrupted_run_keeps_every_finished_step(lift, tmp_path):
    finished = 4
    with pytest.raises(KeyboardInterrupt):
        with StoreWriter(tmp_path / "store", lift["parameters"]) as writer:
            for k, step in enumerate(lift["steps"]):
                if k == finished:
                    raise KeyboardInterrupt
                cut = one_step(lift, step)
                writer.add(list(step_rows(cut))[1], list(tidy_rows(cut))[1:])
    store = open_store(tmp_path / "store")
    part = {**lift, "steps": lift["steps"][:finished]}
    assert_rows_match(csv_table(tidy_rows(part))[1:], store.select())
    assert_rows_match(csv_table(step_rows(part))[1:], store.step_table())


def test_two_writers_into_one_store_read_as_one_process(lift, tmp_path):
    """As two processes of a --jobs 2 run: odd and even steps from different writers."""
    n = len(lift["steps"])
    stream(lift, tmp_path / "store", order=range(1, n, 2), writer="w1", rows_per_part=50)
    stream(lift, tmp_path / "store", order=range(0, n, 2), writer="w0", rows_per_part=50)
    store = open_store(tmp_path / "store")
    assert_rows_match(csv_table(tidy_rows(lift))[1:], store.select())
    assert_rows_match(csv_table(step_rows(lift))[1:], store.step_table())


def test_an_empty_run_leaves_a_store_with_its_columns(tmp_path):
    StoreWriter(tmp_path / "store", ["load"]).close()
    store = open_store(tmp_path / "store")
    assert store.step_table().num_rows == 0 and store.select().num_rows == 0
    assert store.parameters == ["load"] and store.steps.schema.names[-3:] == ["status", "iterations", "stability"]


def test_bad_use_gets_clear_errors(lift, tmp_path):
    with pytest.raises(InputError, match=r"is not a results store: no steps/ or steps.parquet or values/ or values.parquet"):
        open_store(tmp_path / "nothing")
    stream(lift, tmp_path / "store")
    with pytest.raises(StoreError, match="writer '0' already has part files"):
        StoreWriter(tmp_path / "store", lift["parameters"])
    with pytest.raises(ValueError, match="differ from step/status"):
        StoreWriter(tmp_path / "other", ["status"])
    writer = StoreWriter(tmp_path / "other", ["a"])
    with pytest.raises(ValueError, match="a steps row has 5 columns"):
        writer.add([0, 1.0, "converged", 3], [])
    (tmp_path / "broken" / "steps").mkdir(parents=True)
    (tmp_path / "broken" / "values").mkdir()
    (tmp_path / "broken" / "values" / "part-0-00000.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError, match="a part file cannot be read"):
        open_store(tmp_path / "broken")


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_results_folder_holds_the_store_with_the_csv_values(tmp_path, jobs):
    """shiftsim's results folder: steps.parquet and values.parquet beside results.csv, the same rows
    whatever the number of processes."""
    from shiftsim import run_scenario

    run_scenario(SCENARIOS / "four_bar_drive.json", jobs=jobs, output=tmp_path / "out")
    store = open_store(tmp_path / "out")
    with open(tmp_path / "out" / "results.csv", newline="") as values, open(tmp_path / "out" / "steps.csv",
                                                                              newline="") as steps:
        assert_rows_match(list(csv.reader(values))[1:], store.select())
        assert_rows_match(list(csv.reader(steps))[1:], store.step_table())
