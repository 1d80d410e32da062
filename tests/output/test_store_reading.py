"""Reading the store through its part files (ResultsStore.select, step_table, count_values) against pyarrow.dataset.

The oracle is pyarrow's dataset reader over the same folders (the readers users query the store with): every
selection gives the same rows in the same order, whatever the writers, parts and row groups; a selection of steps
reads only the row groups their statistics allow. And neither a run nor reading its store imports pandas or
pyarrow.dataset (checked in a fresh interpreter: which modules are loaded, never how long they take).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from helpers.scenario import shortened_scenario, write_scenario

from shiftsim.output import store as store_module
from shiftsim.output.store import StoreWriter, open_store

ROOT = Path(__file__).resolve().parents[2]
LAYOUT = (("j1", "j1", "f1", "f1", "f1", "j2"), ("effort", "position", "deflection", "deflection", "deflection", "effort"),
          ("", "", "x", "y", "z", ""), ("N m", "rad", "m", "m", "m", "N"))


@pytest.fixture
def written(tmp_path, monkeypatch):
    """A store of 40 steps by two writers (even and odd steps), parts of 60 values in row groups of 14 rows, one null
    value, and a third writer that wrote nothing (its empty parts list first, with nullable columns)."""
    monkeypatch.setattr(store_module, "ROWS_PER_GROUP", 14)
    rng = np.random.default_rng(11)
    folder = tmp_path / "store"
    StoreWriter(folder, ["load"], writer="0").close()
    with StoreWriter(folder, ["load"], writer="a", rows_per_part=60) as even, \
            StoreWriter(folder, ["load"], writer="b", rows_per_part=60) as odd:
        for step in range(40):
            values = rng.normal(size=len(LAYOUT[0]))
            nulls = np.arange(len(values)) == 2 if step == 17 else None
            (odd if step % 2 else even).add_values([step, 0.5 * step, "converged", 4, "stable", None, True], LAYOUT,
                                                   values, nulls)
    return folder


def dataset_rows(folder: Path, table: str, condition=None) -> pa.Table:
    return ds.dataset(folder / table, format="parquet").to_table(filter=condition).sort_by("step")


def test_selections_equal_the_dataset_readers(written):
    store = open_store(written)
    assert store.select().equals(dataset_rows(written, "values"))
    assert store.select().num_rows == store.count_values() == 40 * 6
    picked = store.select(entity="f1", quantity=["deflection"], component=["x", "z"], steps=[3, 4, 17, 38, 99])
    expected = dataset_rows(written, "values", ds.field("entity").isin(["f1"]) & ds.field("quantity").isin(
        ["deflection"]) & ds.field("component").isin(["x", "z"]) & ds.field("step").isin([3, 4, 17, 38, 99]))
    assert picked.equals(expected) and picked.num_rows == 8
    nulls = store.select(steps=[17], columns=["value"])
    assert nulls.column_names == ["value"] and nulls.column("value").null_count == 1
    assert store.select(entity="nobody").num_rows == 0 and store.select(steps=[]).num_rows == 0
    steps = store.step_table()
    assert steps.equals(dataset_rows(written, "steps")) and steps.column("step").to_pylist() == list(range(40))
    assert steps.column("residual").null_count == 40
    coded = store.select(quantity="effort", coded=True)
    assert pa.types.is_dictionary(coded.schema.field("entity").type)
    assert coded.cast(store.select().schema).equals(store.select(quantity="effort"))
    assert store.values.count_rows() == 240 and store.steps.schema.names[:2] == ["step", "load"]


def test_a_selection_of_steps_reads_only_the_row_groups_that_can_hold_them(written, monkeypatch):
    groups = sum(pq.ParquetFile(path).metadata.num_row_groups for path in (written / "values").glob("part-*"))
    read = []
    original = pq.ParquetFile.read_row_group
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", lambda self, i, **kw: read.append(i) or original(self, i, **kw))
    store = open_store(written)
    store.select()
    assert len(read) == groups > 20  # every row group of every part, once
    read.clear()
    assert store.select(steps=[7]).column("step").to_pylist() == [7] * 6
    # a row group whose step range holds 7: the odd writer's (one or two) and the even one's around it (6 and 8)
    assert 1 <= len(read) <= 3 < groups


def modules_of_a_run(argv: list[str]) -> tuple[int, set[str], int]:
    """Exit code, modules loaded and blocks of steps handed to the store (``StoreWriter.add_steps`` calls) of
    ``shiftsim *argv`` run in a fresh interpreter."""
    script = ("import sys, json\nfrom shiftsim.output import store\nblocks = []\nadd_steps = store.StoreWriter.add_steps\n"
              "def spy(self, *args):\n    blocks.append(1)\n    return add_steps(self, *args)\n"
              "store.StoreWriter.add_steps = spy\nfrom shiftsim.cli import main\ncode = main(sys.argv[1:])\n"
              "sys.stderr.write('\\nMODULES' + json.dumps([sorted(sys.modules), len(blocks)]))\nsys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=300, cwd=ROOT)
    modules, blocks = json.loads(done.stderr.rpartition("\nMODULES")[2])
    return done.returncode, set(modules), blocks


@pytest.mark.slow
@pytest.mark.parametrize("steps", [1, 6])
def test_a_run_and_reading_its_store_back_load_neither_pandas_nor_pyarrow_dataset(tmp_path, steps):
    """The excavator lift of 1 step (no plots) and of 6 steps (its deflection plot drawn) through the block path: the
    store is written, read back for results.csv, the plot and the report, and neither pandas nor pyarrow.dataset is
    loaded (pyarrow's own conversions would load pandas); the store read back with pyarrow.dataset holds every step."""
    path = shortened_scenario("excavator_lift", steps, tmp_path)
    document = json.loads(path.read_text())
    document["outputs"]["plots"] = [] if steps == 1 else ["deflection"]
    write_scenario(tmp_path, document)
    code, modules, blocks = modules_of_a_run(["run", str(path), "-o", str(tmp_path / "out"), "-q"])
    assert code == 0 and blocks >= 1  # the block path handed its steps to the store as columns
    assert "pyarrow.parquet" in modules and "shiftsim.output.report" in modules
    assert not [name for name in ("pandas", "pyarrow.dataset") if name in modules]
    rows = dataset_rows(tmp_path / "out", "values")
    csv_lines = (tmp_path / "out" / "results.csv").read_text().splitlines()
    assert rows.num_rows > len(csv_lines) - 1 > 10 * steps  # the store holds the CSV's rows and its own
    assert sorted(set(rows.column("step").to_pylist())) == list(range(steps))
    assert [path.name for path in (tmp_path / "out").glob("*.png")] == ([] if steps == 1 else ["deflection.png"])
