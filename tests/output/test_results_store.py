"""The columnar results store (shiftsim.output.store) against today's tidy tables.

The oracle is today's writer: results.csv and steps.csv as ``csv_bytes(tidy_rows(document))`` and
``csv_bytes(step_rows(document))`` (shiftsim.output.writers) write them, parsed back with the csv module. The store is fed
one step at a time (as a run streams them) and must give back every row, value for value and in
the same order, through pyarrow and through pandas: the store holds SI (angles in rad), so its rows
are shown as the CSV shows them (angles times the scenario's factor, as the writer multiplies) before
they are compared; the rows only the store holds (pin reactions, coordinates) are checked against
results.json's numbers.
"""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import orjson
import pandas as pd
import pyarrow.parquet as pq
import pytest
from helpers.scenario import SCENARIOS

from shiftsim.errors import InputError
from shiftsim.jsonio import dumps
import pyarrow as pa
import pyarrow.compute as pc

from shiftsim.output import writers
from shiftsim.output.store import VALUE_COLUMNS, StoreError, StoreWriter, open_store, rows_tables
from shiftsim.scenario import LocalExecutor, execute, load_scenario, run_chain
from shiftsim.scenario.definition import angle_factor
from shiftsim.output.writers import (STORE_ONLY, csv_bytes, results_document, step_rows, store_step_row,
                                     store_value_rows, tidy_rows)

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


def store_step(document, step):
    """A step's steps row and values rows, as a run hands them to the store."""
    return store_step_row(step, document["parameters"]), store_value_rows(step, document["units"]["joints"])


def stream(document, folder, order=None, **options):
    """Feed the document's steps (in ``order``, default as they are) into a store at ``folder``."""
    steps = document["steps"] if order is None else [document["steps"][i] for i in order]
    with StoreWriter(folder, document["parameters"], **options) as writer:
        for step in steps:
            writer.add(*store_step(document, step))
    return writer


def as_csv_values(table, document):
    """The store's values rows as results.csv shows them: its own quantities left out, angles in the
    document's angle_unit (the value times the factor, as the writer computes it)."""
    table = table.filter(pc.invert(pc.is_in(table.column("quantity"), value_set=pa.array(STORE_ONLY))))
    factor, unit = angle_factor(document["angle_unit"]), document["angle_unit"]
    return [[*row[:4], row[4] * factor if row[5] == "rad" and row[4] is not None else row[4],
             unit if row[5] == "rad" else row[5]] for row in (list(r.values()) for r in table.to_pylist())]


def as_csv_steps(table, document):
    """The store's steps rows as steps.csv shows them (swept angles in the document's angle_unit)."""
    factor = angle_factor(document["angle_unit"])
    units = document["units"]["parameters"]
    return [[row["step"], *(row[name] * (factor if units[name] == "rad" else 1.0) for name in document["parameters"]),
             row["status"], row["iterations"], row["stability"]] for row in table.to_pylist()]


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


def assert_rows_match(csv_rows, stored):
    """CSV rows (text) and rows of stored values (lists, or a table's rows)."""
    stored = [list(row.values()) for row in stored.to_pylist()] if isinstance(stored, pa.Table) else stored
    assert len(stored) == len(csv_rows) > 0
    for text_row, row in zip(csv_rows, stored):
        assert all(same_cell(t, v) for t, v in zip(text_row, row, strict=True)), (text_row, row)


def assert_store_only_rows(table, document):
    """The store's own rows: every pin reaction of results.json, then every pair's closest points and every
    contact's point (what the plots draw), in order, and nothing else."""
    rows = table.filter(pc.is_in(table.column("quantity"), value_set=pa.array(STORE_ONLY))).to_pylist()
    expected = []
    for step in document["steps"]:
        i = step["index"]
        expected += [[i, name, quantity, axis, value, unit] for name, reaction in step.get("pin_reactions", {}).items()
                     for quantity, key, unit in (("pin_force", "force_joint", "N"), ("pin_moment", "moment_joint", "N m"))
                     for axis, value in zip("xyz", reaction[key])]
        expected += [[i, f"{pair['a']}|{pair['b']}", "closest_points", side + axis, value, "m"]
                     for pair in step.get("collisions") or [] for side, point in zip("ab", pair.get("points") or [])
                     for axis, value in zip("xyz", point)]
        expected += [[i, contact, "contact_point", axis, value, "m"] for ground in step.get("ground", {}).values()
                     for contact, point in ground.get("contact_points", {}).items() for axis, value in zip("xyz", point)]
    assert [list(row.values()) for row in rows] == expected


@pytest.mark.slow
def test_store_round_trips_results_csv_and_steps_csv(document, tmp_path):
    stream(document, tmp_path / "store")
    store = open_store(tmp_path / "store")
    values_csv = csv_table(tidy_rows(document))
    steps_csv = csv_table(step_rows(document))
    assert tuple(values_csv[0]) == VALUE_COLUMNS and store.values.schema.names == values_csv[0]
    assert store.steps.schema.names == [*steps_csv[0], "residual", "stable"]
    assert store.parameters == document["parameters"]
    assert_rows_match(values_csv[1:], as_csv_values(store.select(), document))
    assert_rows_match(steps_csv[1:], as_csv_steps(store.step_table(), document))
    assert_store_only_rows(store.select(), document)
    steps = store.step_table().to_pylist()
    assert [(s["residual"], s["stable"]) for s in steps] == [(s["residual"], s["stable"]) for s in document["steps"]]
    # pandas reads the datasets directly, with the same numbers (SI: results.json's)
    frame = pd.read_parquet(tmp_path / "store" / "values")
    assert list(frame.columns) == list(VALUE_COLUMNS) and len(frame) == store.values.count_rows()
    assert frame["value"].tolist() == pytest.approx(store.select().column("value").to_pylist(), rel=0, abs=0,
                                                    nan_ok=True)


@pytest.mark.parametrize("angle_unit", ["rad", "deg"])
def test_the_csvs_written_from_the_store_are_the_writers_bytes(document, angle_unit, tmp_path, monkeypatch):
    """results.csv and steps.csv streamed from the store a few steps at a time (write_store_csvs) are byte for byte
    today's csv_bytes(tidy_rows(document)) and csv_bytes(step_rows(document)), with the steps fed in reverse order
    into parts of 97 values (so each range of steps gathers rows of several parts, out of order)."""
    document = {**document, "angle_unit": angle_unit}
    monkeypatch.setattr(writers, "CSV_BATCH_VALUES", 50)
    stream(document, tmp_path / "store", order=range(len(document["steps"]) - 1, -1, -1), rows_per_part=97)
    writers.write_store_csvs(open_store(tmp_path / "store"), document, tmp_path / "results.csv",
                             tmp_path / "steps.csv")
    assert (tmp_path / "results.csv").read_bytes() == csv_bytes(tidy_rows(document))
    assert (tmp_path / "steps.csv").read_bytes() == csv_bytes(step_rows(document))


HOSTILE_TEXTS = ("=HYPERLINK(\"x\")", "a,b", 'say "hi"', "two\nlines", "cr\rhere", "-", "-1", "+x", "@me", "",
                 " spaced ", "tab\tin", "ü")


@pytest.mark.parametrize("angle_unit", ["rad", "deg"])
def test_the_columnwise_csv_writes_every_cell_as_the_csv_module_does(angle_unit, tmp_path):
    """Names that need quoting or a formula guard, nulls, NaN, infinities, -0.0, tiny and huge floats, flags and
    angles, written by write_store_csvs, against the csv module writing the same rows one at a time (each text through
    csv_text, angles times the factor, flags as int; the rows as the old row-by-row writer made them)."""
    numbers = [0.1, -0.0, 1e-5, 1e16, 123456789.123456, math.nan, math.inf, -math.inf, 5e-324, None, 2.0, 1.0]
    units = ["m", "rad", "N m", "-", *HOSTILE_TEXTS]
    rows, k = [], 0
    for step in (3, 0, 7):  # stored out of order: written by step
        for text in HOSTILE_TEXTS:
            value = numbers[k % len(numbers)]
            rows.append([step, text, "effort", HOSTILE_TEXTS[-1 - k % len(HOSTILE_TEXTS)], value, units[k % len(units)]])
            k += 1
        rows.append([step, "a|b", "in_collision", "", 1.0 if step else 0.0, "-"])
        rows.append([step, "a|b", "distance", "", None, "m"])
        rows.append([step, "ex1:coordinates", "coordinates", "0", 0.5, "-"])  # the store's own: not in results.csv
    steps = [[step, float(step), "converged", 3, "stable", 1e-9, True] for step in (3, 0, 7)]
    tables = rows_tables(["load"], steps, rows)
    for name, table in zip(("steps.parquet", "values.parquet"), tables):
        pq.write_table(table, tmp_path / name)
    document = {"parameters": ["load"], "angle_unit": angle_unit, "units": {"parameters": {"load": "-"}}}
    writers.write_store_csvs(open_store(tmp_path), document, tmp_path / "results.csv", tmp_path / "steps.csv")

    factor = angle_factor(angle_unit)
    expected = io.StringIO()
    oracle = csv.writer(expected, lineterminator="\n")
    oracle.writerow(VALUE_COLUMNS)
    for step, entity, quantity, component, value, unit in sorted(rows, key=lambda row: row[0]):
        if quantity in STORE_ONLY:
            continue
        if unit == "rad":
            value, unit = None if value is None else value * factor, angle_unit
        elif quantity == "in_collision":
            value = int(value)
        oracle.writerow([step, *map(writers.csv_text, (entity, quantity, component)), value, writers.csv_text(unit)])
    assert (tmp_path / "results.csv").read_bytes() == expected.getvalue().encode("utf-8")


def test_float_texts_are_repr_of_every_kind_of_double():
    """The column-wise float formatting against Python's repr: random bit patterns (every exponent, subnormals, NaN
    payloads, infinities), decimals with few digits, whole numbers, powers of ten across repr's notation switches."""
    rng = np.random.default_rng(27)
    bits = rng.integers(0, 2 ** 64, 100_000, dtype=np.uint64, endpoint=False)
    numbers = np.concatenate([
        bits.view(np.float64), rng.uniform(-1e4, 1e4, 20_000),
        *(np.round(rng.uniform(-1e3, 1e3, 5_000), digits) for digits in range(8)),
        np.arange(-2000.0, 2000.0), 10.0 ** np.arange(-330, 309), -(10.0 ** rng.uniform(-8, 20, 20_000)),
        [0.0, -0.0, math.nan, -math.nan, math.inf, -math.inf, 1e-4, 9.999999999999999e-05, 1e16, 9999999999999998.0,
         5e-324, 1.7976931348623157e308, 0.1 + 0.2]])
    assert writers.float_texts(numbers).to_pylist() == list(map(repr, numbers.tolist()))


@pytest.mark.slow
def test_single_files_of_a_finished_run_read_as_the_streamed_store(document, tmp_path):
    rows = [store_step(document, step) for step in document["steps"]]
    tables = rows_tables(document["parameters"], [step_row for step_row, _ in rows],
                         [row for _, value_rows in rows for row in value_rows])
    for name, table in zip(("steps.parquet", "values.parquet"), tables):  # one file per table
        pq.write_table(table, tmp_path / name)
    store = open_store(tmp_path)
    assert_rows_match(csv_table(tidy_rows(document))[1:], as_csv_values(store.select(), document))
    assert_rows_match(csv_table(step_rows(document))[1:], as_csv_steps(store.step_table(), document))
    assert len(pd.read_parquet(tmp_path / "values.parquet")) == store.values.count_rows()


@pytest.mark.slow
def test_selection_by_entity_and_quantity_equals_filtering_the_csv(document, tmp_path):
    stream(document, tmp_path / "store")
    store = open_store(tmp_path / "store")
    rows = csv_table(tidy_rows(document))[1:]
    entities = sorted({r[1] for r in rows})
    assert set(entities) <= set(store.entities())
    assert {(r[1], r[2]) for r in rows} <= set(store.catalog()) and len(store.catalog()) == len(
        store.select(columns=["entity", "quantity"]).group_by(["entity", "quantity"]).aggregate([]))
    entity, quantity = rows[len(rows) // 2][1], rows[len(rows) // 2][2]
    assert_rows_match([r for r in rows if r[1] == entity and r[2] == quantity],
                      as_csv_values(store.select(entity, quantity), document))
    picked = entities[::2]
    assert_rows_match([r for r in rows if r[1] in picked], as_csv_values(store.select(entity=picked), document))
    last = document["steps"][-1]["index"]
    got = store.select(steps=[last], quantity="effort", columns=["entity", "value"])
    assert got.column_names == ["entity", "value"]
    in_si = {r[1]: r[4] for r in as_csv_values(store.select(steps=[last], quantity="effort"), document)}
    assert_rows_match([[r[1], r[4]] for r in rows if r[0] == str(last) and r[2] == "effort"],
                      [[entity, in_si[entity]] for entity in got.column("entity").to_pylist()])


def long_document():
    scenario = load_scenario(SCENARIOS / "excavator_lift.json")
    return orjson.loads(dumps(results_document(scenario, execute(scenario, LocalExecutor(1)))))


@pytest.fixture(scope="module")
def lift():
    return long_document()


def test_parts_bound_memory_and_are_readable_before_the_writer_closes(lift, tmp_path):
    per_step = len(store_step(lift, lift["steps"][0])[1])
    limit = 2 * per_step + 1  # a part every three steps
    writer = StoreWriter(tmp_path / "store", lift["parameters"], rows_per_part=limit)
    seen_parts = []
    for step in lift["steps"]:
        writer.add(*store_step(lift, step))
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
                writer.add(*store_step(lift, step))
    store = open_store(tmp_path / "store")
    part = {**lift, "steps": lift["steps"][:finished]}
    assert_rows_match(csv_table(tidy_rows(part))[1:], as_csv_values(store.select(), part))
    assert_rows_match(csv_table(step_rows(part))[1:], as_csv_steps(store.step_table(), part))


def test_two_writers_into_one_store_read_as_one_process(lift, tmp_path):
    """As two processes of a --jobs 2 run: odd and even steps from different writers."""
    n = len(lift["steps"])
    stream(lift, tmp_path / "store", order=range(1, n, 2), writer="w1", rows_per_part=50)
    stream(lift, tmp_path / "store", order=range(0, n, 2), writer="w0", rows_per_part=50)
    store = open_store(tmp_path / "store")
    assert_rows_match(csv_table(tidy_rows(lift))[1:], as_csv_values(store.select(), lift))
    assert_rows_match(csv_table(step_rows(lift))[1:], as_csv_steps(store.step_table(), lift))
    stream(lift, tmp_path / "whole")  # one writer: the same catalog (entities, quantities, components)
    assert store.catalog() == open_store(tmp_path / "whole").catalog()


def test_an_empty_run_leaves_a_store_with_its_columns(tmp_path):
    StoreWriter(tmp_path / "store", ["load"]).close()
    store = open_store(tmp_path / "store")
    assert store.step_table().num_rows == 0 and store.select().num_rows == 0
    assert store.parameters == ["load"]
    assert store.steps.schema.names[-5:] == ["status", "iterations", "stability", "residual", "stable"]


def test_bad_use_gets_clear_errors(lift, tmp_path):
    with pytest.raises(InputError, match=r"is not a results store: no steps/ or steps.parquet or values/ or values.parquet"):
        open_store(tmp_path / "nothing")
    stream(lift, tmp_path / "store")
    with pytest.raises(StoreError, match="writer '0' already has part files"):
        StoreWriter(tmp_path / "store", lift["parameters"])
    with pytest.raises(ValueError, match="differ from step/status"):
        StoreWriter(tmp_path / "other", ["status"])
    writer = StoreWriter(tmp_path / "other", ["a"])
    with pytest.raises(ValueError, match="a steps row has 7 columns"):
        writer.add([0, 1.0, "converged", 3], [])
    (tmp_path / "broken" / "steps").mkdir(parents=True)
    (tmp_path / "broken" / "values").mkdir()
    (tmp_path / "broken" / "values" / "part-0-00000.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError, match="a part file cannot be read"):
        open_store(tmp_path / "broken")
    (tmp_path / "older").mkdir()  # a steps table without residual and stable
    pq.write_table(pa.table({"step": [0], "status": ["converged"], "iterations": [1], "stability": ["stable"]}),
                   tmp_path / "older" / "steps.parquet")
    pq.write_table(pa.table({name: pa.array([], type) for name, type in zip(
        VALUE_COLUMNS, [pa.int64(), pa.string(), pa.string(), pa.string(), pa.float64(), pa.string()])}),
        tmp_path / "older" / "values.parquet")
    with pytest.raises(InputError, match=r"older/steps.*columns.*residual, stable"):
        open_store(tmp_path / "older")


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_results_folder_holds_the_store_with_the_csv_values(tmp_path, jobs):
    """shiftsim's results folder: steps.parquet and values.parquet beside results.csv, the same rows
    whatever the number of processes."""
    from shiftsim import run_scenario

    run_scenario(SCENARIOS / "four_bar_drive.json", jobs=jobs, output=tmp_path / "out")
    store = open_store(tmp_path / "out")
    document = orjson.loads((tmp_path / "out" / "results.json").read_bytes())
    with open(tmp_path / "out" / "results.csv", newline="") as values, open(tmp_path / "out" / "steps.csv",
                                                                              newline="") as steps:
        assert_rows_match(list(csv.reader(values))[1:], as_csv_values(store.select(), document))
        assert_rows_match(list(csv.reader(steps))[1:], as_csv_steps(store.step_table(), document))


def cut_sweep(document, line_steps=3, grid_steps=2):
    """A copy of a shipped scenario with a short sweep (lists cut, ranges fewer steps) and no analysis."""
    document = {key: value for key, value in document.items() if key != "analysis"}
    sweep = document["sweep"] = dict(document["sweep"])
    steps = grid_steps if sweep.get("mode") == "grid" else line_steps
    sweep["parameters"] = {name: ({**values, "steps": min(values["steps"], steps)} if isinstance(values, dict)
                                  else values[:steps]) for name, values in sweep["parameters"].items()}
    document["outputs"] = {**document.get("outputs", {}), "csv": True, "plots": []}
    return document


@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPED)
def test_a_streamed_run_of_every_shipped_scenario_stores_its_csv_and_json_values(name, tmp_path):
    """Each shipped scenario cut to 2-3 steps, run as shiftsim run runs it (steps streamed into the store while
    solving, collisions checked before): the folder's store holds results.csv and steps.csv value for value,
    its pin reactions are results.json's, and it holds the machines' coordinates."""
    from shiftsim.output.write import ResultsStream, write_results
    from shiftsim.scenario import build_scenario, run

    path = SCENARIOS / f"{name}.json"
    scenario = build_scenario(path, cut_sweep(orjson.loads(path.read_bytes())))  # model paths from its folder
    with ResultsStream(tmp_path / "out", scenario) as stream:
        write_results(run(scenario, LocalExecutor(1), stream.add), tmp_path / "out", stream=stream)
    document = orjson.loads((tmp_path / "out" / "results.json").read_bytes())
    store = open_store(tmp_path / "out")
    with open(tmp_path / "out" / "results.csv", newline="") as values, open(tmp_path / "out" / "steps.csv",
                                                                              newline="") as steps:
        assert_rows_match(list(csv.reader(values))[1:], as_csv_values(store.select(), document))
        assert_rows_match(list(csv.reader(steps))[1:], as_csv_steps(store.step_table(), document))
    pins = store.select(quantity=["pin_force", "pin_moment"])
    expected = [[step["index"], joint, quantity, axis, value, unit] for step in document["steps"]
                for joint, reaction in step.get("pin_reactions", {}).items()
                for quantity, key, unit in (("pin_force", "force_joint", "N"), ("pin_moment", "moment_joint", "N m"))
                for axis, value in zip("xyz", reaction[key])]
    assert [list(row.values()) for row in pins.to_pylist()] == expected
    assert store.select(quantity="coordinates").num_rows > 0
