"""A values part as the store writes it (shiftsim.output.store): the name columns reach the Parquet file as dictionary
pages from dictionary-coded arrays, yet every reader sees plain strings (pyarrow's file and dataset readers, pandas),
the numbers are stored plain, only they may be null, the catalog is in the footer, and the rows are those fed in (the
oracle: the rows themselves)."""

from __future__ import annotations

import numpy as np
import pytest
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from shiftsim.output.store import StoreWriter, open_store


def _fed(tmp_path):
    """Two layouts of names (a step whose names differ in the middle), three parts, a null value."""
    rng = np.random.default_rng(3)
    layout_a = (("j1", "j1", "f1", "f1", "f1"), ("effort", "position", "deflection", "deflection", "deflection"),
                ("", "", "x", "y", "z"), ("N m", "rad", "m", "m", "m"))
    layout_b = (("j1", "j2"), ("effort", "effort"), ("", ""), ("N m", "N"))
    fed = []
    with StoreWriter(tmp_path / "store", ["load"], rows_per_part=12) as writer:
        for step in range(7):
            layout = layout_b if step == 3 else layout_a
            values = rng.normal(size=len(layout[0]))
            nulls = np.zeros(len(values), bool)
            nulls[0] = step == 5
            writer.add_values([step, 0.1 * step, "converged", 3, "stable", 1e-9, True], layout, values,
                              nulls if nulls.any() else None)
            fed += [(step, *names, None if null else float(value))
                    for *names, value, null in zip(*layout, values, nulls)]
    return fed


def test_values_parts_read_back_as_plain_strings_with_their_catalog(tmp_path):
    fed = _fed(tmp_path)
    parts = sorted((tmp_path / "store" / "values").glob("part-*.parquet"))
    assert len(parts) == 3
    for part in parts:
        schema = pq.read_schema(part)
        assert [str(t) for t in schema.types] == ["int64", "string", "string", "string", "double", "string"]
        assert b"shiftsim.catalog" in schema.metadata
        columns = pq.ParquetFile(part).metadata.row_group(0)
        encodings = {columns.column(k).path_in_schema: columns.column(k).encodings for k in range(6)}
        assert all("RLE_DICTIONARY" in encodings[name] or "PLAIN_DICTIONARY" in encodings[name]
                   for name in ("entity", "quantity", "component", "unit"))
        assert not any("DICTIONARY" in e for e in encodings["value"])
        assert columns.column(4).compression == "UNCOMPRESSED"
        # the step column plain and compressed (not dictionary-coded), with statistics: its rows' first and last step
        assert not any("DICTIONARY" in e for e in encodings["step"]) and columns.column(0).compression == "SNAPPY"
        steps = pq.ParquetFile(part).read_row_group(0, columns=["step"]).column("step").to_pylist()
        assert (columns.column(0).statistics.min, columns.column(0).statistics.max) == (steps[0], steps[-1])
        layout = pq.ParquetFile(part).schema  # only the numbers may be null: no definition levels for the others
        assert [layout.column(k).max_definition_level for k in range(6)] == [0, 0, 0, 0, 1, 0]
    table = ds.dataset(tmp_path / "store" / "values", format="parquet").to_table().sort_by("step")
    assert table.schema.field("entity").type == pa.string()
    got = list(zip(*(table.column(name).to_pylist() for name in ("step", "entity", "quantity", "component", "unit",
                                                                  "value"))))
    assert got == fed
    frame = pd.read_parquet(tmp_path / "store" / "values")
    assert not isinstance(frame["entity"].dtype, pd.CategoricalDtype)
    assert sorted(frame["entity"].unique()) == ["f1", "j1", "j2"] and frame["value"].isna().sum() == 1
    store = open_store(tmp_path / "store")
    assert store.catalog() == {("j1", "effort"): [""], ("j1", "position"): [""], ("f1", "deflection"): ["x", "y", "z"],
                               ("j2", "effort"): [""]}
    assert store.select(entity="j2").column("step").to_pylist() == [3]


def _feed(writer, steps=9, width=40):
    rng = np.random.default_rng(5)
    layout = (tuple(f"e{k // 3}" for k in range(width)), ("q",) * width, tuple(str(k % 3) for k in range(width)),
              ("m",) * width)
    for step in range(steps):
        writer.add_values([step, float(step), "converged", 2, "stable", 1e-10, True], layout, rng.normal(size=width))


def test_a_writer_on_its_own_thread_writes_the_parts_one_writing_in_the_caller_does(tmp_path):
    """The same steps through a background writer and a synchronous one: the same part files' rows and catalogs, and
    every part in place once the writer is closed."""
    for background in (False, True):
        with StoreWriter(tmp_path / str(background), ["load"], rows_per_part=100, background=background) as writer:
            _feed(writer)
    parts = {background: sorted((tmp_path / str(background) / "values").glob("part-*.parquet"))
             for background in (False, True)}
    assert len(parts[True]) == len(parts[False]) == 3 and not list(tmp_path.rglob(".*.partial"))
    for ours, theirs in zip(parts[True], parts[False]):
        assert pq.read_table(ours).equals(pq.read_table(theirs))
        assert pq.read_schema(ours).metadata == pq.read_schema(theirs).metadata
    stores = [open_store(tmp_path / str(background)) for background in (False, True)]
    assert stores[0].step_table().equals(stores[1].step_table())


def test_an_abandoned_background_writer_leaves_nothing_half_written(tmp_path):
    """abandon() drops the buffer and waits for the part being written: afterwards nothing is written, and the parts
    there are whole (each a readable file, values before steps)."""
    writer = StoreWriter(tmp_path / "store", ["load"], rows_per_part=100, background=True)
    _feed(writer, steps=7)  # two batches handed over, a few steps buffered
    writer.abandon()
    before = sorted(path.name for path in (tmp_path / "store").rglob("*"))
    writer.close()  # closed already: writes nothing
    assert sorted(path.name for path in (tmp_path / "store").rglob("*")) == before
    assert not any(name.endswith(".partial") for name in before)
    store = open_store(tmp_path / "store")
    assert store.step_table().column("step").to_pylist() == list(range(6))  # the two batches, not the buffer


def test_steps_handed_over_as_columns_read_back_as_fed_among_single_steps(tmp_path):
    """Blocks of steps as columns (``add_steps``: a (k, V) array of values, the steps table's columns) between single
    steps, two layouts, parts cut in the middle of the buffer, on the writer's thread: every row reads back as fed (the
    oracle: the rows themselves), the steps table too, and the catalog names each layout's components in order."""
    rng = np.random.default_rng(11)
    layout_a = (("a",) * 4, ("force", "force", "force", "angle"), ("x", "y", "z", ""), ("N", "N", "N", "rad"))
    layout_b = (("b", "b"), ("length", "length"), ("0", "1"), ("m", "m"))
    fed, steps_fed, step = [], [], 0
    with StoreWriter(tmp_path / "store", ["load"], rows_per_part=12, background=True) as writer:
        for count, layout in ((5, layout_a), (1, layout_b), (7, layout_a), (3, layout_b), (1, layout_a)):
            values = rng.normal(size=(count, len(layout[0])))
            numbers = np.arange(step, step + count)
            rows = [numbers, 0.5 * numbers, np.full(count, "converged"), np.full(count, 4), np.full(count, "stable"),
                    rng.random(count), np.ones(count, bool)]
            if count == 1:
                writer.add_values([int(numbers[0]), 0.5 * numbers[0], "converged", 4, "stable", float(rows[5][0]), True],
                                  layout, values[0])
            else:
                writer.add_steps(rows, layout, values)
            fed += [(int(s), *names, float(v)) for s, row in zip(numbers, values) for *names, v in zip(*layout, row)]
            steps_fed += [(int(s), 0.5 * s, "converged", 4, "stable", float(r), True) for s, r in zip(numbers, rows[5])]
            step += count
    assert len(list((tmp_path / "store" / "values").glob("part-*.parquet"))) > 2
    store = open_store(tmp_path / "store")
    table = store.select()
    assert list(zip(*(table.column(name).to_pylist() for name in ("step", "entity", "quantity", "component", "unit",
                                                                  "value")))) == fed
    assert [tuple(row.values()) for row in store.step_table().to_pylist()] == steps_fed
    assert store.catalog() == {("a", "force"): ["x", "y", "z"], ("a", "angle"): [""], ("b", "length"): ["0", "1"]}


def test_columns_that_do_not_fit_are_refused_with_what_was_expected(tmp_path):
    layout = (("a", "a"), ("q", "q"), ("0", "1"), ("m", "m"))
    columns = [np.arange(3), np.zeros(3), np.full(3, "converged"), np.ones(3), np.full(3, "stable"), np.zeros(3),
               np.ones(3, bool)]
    with StoreWriter(tmp_path / "store", ["load"]) as writer:
        with pytest.raises(ValueError, match="has 7 columns .*got 6"):
            writer.add_steps(columns[:6], layout, np.zeros((3, 2)))
        with pytest.raises(ValueError, match=r"3 steps of 2 values: got columns of lengths \[3, 3, 3, 3, 3, 3, 3\] "
                                             r"and values of shape \(3, 3\)"):
            writer.add_steps(columns, layout, np.zeros((3, 3)))
        assert writer.buffered == 0
