"""The columnar results store: a run's steps streamed to Apache Parquet as they are solved.

A store is a folder of two Parquet datasets, each a set of part files::

    FOLDER/steps/part-<writer>-<nnnnn>.parquet    one row per step
    FOLDER/values/part-<writer>-<nnnnn>.parquet   one row per number

or two single files ``FOLDER/steps.parquet`` and ``FOLDER/values.parquet`` with the same columns
(read alike).

``steps``: ``step`` (int64), one float64 column per swept parameter (by its name, SI as results.json),
``status`` (string), ``iterations`` (int64), ``stability`` (string), ``residual`` (float64, null
without a solve), ``stable`` (bool). ``values`` has the columns of the tidy results.csv: ``step``
(int64), ``entity``, ``quantity``, ``component`` (strings), ``value`` (float64; null where
results.csv has no number), ``unit`` (string), with results.csv's rows in SI units (angles in rad,
whatever the scenario's ``angle_unit``), then the rows only the store holds (pin reactions and
solved coordinates, :data:`shiftsim.output.writers.STORE_ONLY`). pandas
(``read_parquet(FOLDER / "values")``), polars, DuckDB (``read_parquet('FOLDER/values/*.parquet')``)
and pyarrow read either dataset directly.

Each values part carries in its schema metadata (``shiftsim.catalog``) the catalog of what the store
holds up to it: every (entity, quantity) with its components, in the order first written; reading the
catalog reads the part files' footers, no values.

Writing (:class:`StoreWriter`): steps are buffered column by column and written as one part file
per table once ``rows_per_part`` values are held, so memory is bounded however long the sweep. A
part appears under its final name only when it is complete (written under a hidden ``.``-name,
which dataset readers skip, then renamed), and the values part of a batch of steps is in place
before its steps part: a step listed in ``steps`` always has all its values. Closing the writer
(also on an exception or an interrupt inside ``with``) writes what is buffered, so an interrupted
run keeps every step it finished. Several writers (processes, Dask workers) may write into one
store at once, each under its own ``writer`` name.

Reading (:class:`ResultsStore`): opening lists the part files and reads their schemas, no values;
:meth:`ResultsStore.select` filters by entity, quantity, component and step while it reads the part files
(:mod:`pyarrow.parquet`), a row group at a time, so memory holds the selection, not the store; a selection of steps
skips whole row groups by their step statistics (rows are written in step order), the other selectors read their
columns. Neither writing nor reading goes through :mod:`pyarrow.dataset` or pyarrow's own conversions to and from
numpy and Python (both import pandas): :mod:`shiftsim.output.arrow_arrays` builds and reads the arrays.
"""

from __future__ import annotations

import json
import os
import re
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError, Problem, ShiftsimError
from .arrow_arrays import arrow_array, numpy_array

STEPS, VALUES = "steps", "values"
VALUE_COLUMNS = ("step", "entity", "quantity", "component", "value", "unit")
STATUS_COLUMNS = ("status", "iterations", "stability", "residual", "stable")
VALUES_SCHEMA = pa.schema([("step", pa.int64()), ("entity", pa.string()), ("quantity", pa.string()),
                           ("component", pa.string()), ("value", pa.float64()), ("unit", pa.string())])
_CODED_VALUES = pa.schema([  # a values part as StoreWriter hands it to Parquet: the names coded, every column but the
    # numbers required (no definition levels to write for them); read back, the part has VALUES_SCHEMA's types
    pa.field("step", pa.int64(), nullable=False),
    *(pa.field(name, pa.dictionary(pa.int32(), pa.string()), nullable=False) for name in ("entity", "quantity",
                                                                                         "component")),
    pa.field("value", pa.float64()), pa.field("unit", pa.dictionary(pa.int32(), pa.string()), nullable=False)])
ROWS_PER_PART = 1_048_576  # values held before a part is written: 8 MB of numbers (and 8 MB of step numbers written)
# (a part's fixed costs, its two files' writers, footers and syncs, spread over about 3,000 excavator steps)
ROWS_PER_GROUP = 65_536  # a part's row groups: the unit a filtered read skips or reads
NAME_COLUMNS = ("entity", "quantity", "component", "unit")
VALUES_WRITING = {  # a values part: the name columns dictionary-coded (they arrive coded, see
    # StoreWriter._values_table), the step column plain and Snappy-compressed (a step's number repeated for each of its
    # values: compressed to about a dictionary's size for less work than dictionary-coding it), the numbers plain and
    # uncompressed (compressing them costs more than all the rest); statistics of the step column only (selections by
    # step skip row groups by them); no Arrow schema in the footer, so the name columns read back as the strings they
    # are; a row group's values handed to the encoders at once (the same file as in batches of 1,024, for less work)
    "use_dictionary": list(NAME_COLUMNS), "compression": {"step": "snappy", "value": "none",
                                                          **{name: "snappy" for name in NAME_COLUMNS}},
    "write_statistics": ["step"], "store_schema": False, "write_batch_size": ROWS_PER_GROUP}
STEPS_WRITING = {  # a steps part: the texts (status, stability) dictionary-coded, the numbers plain; Snappy
    "use_dictionary": ["status", "stability"], "compression": "snappy", "write_statistics": ["step"]}
WRITER_NAME = re.compile(r"[A-Za-z0-9_]+")
CATALOG_KEY = b"shiftsim.catalog"
Key = tuple[str, str]  # (entity, quantity)
Layout = tuple[tuple[str, ...], ...]  # a step's value names: (entities, quantities, components, units), one per value
Catalog = dict[Key, list[str]]  # (entity, quantity) -> its components, in order


class StoreError(ShiftsimError):
    """The store could not be written (exit code 1)."""

    exit_code = 1


def steps_schema(parameters: Sequence[str]) -> pa.Schema:
    """The ``steps`` table's schema for a sweep of ``parameters`` (names, in order)."""
    clashes = sorted(set(parameters) & {"step", *STATUS_COLUMNS})
    if clashes or len(set(parameters)) != len(parameters):
        raise ValueError(f"swept parameter names must be unique and differ from step/{'/'.join(STATUS_COLUMNS)}: "
                         f"{list(parameters)}")
    return pa.schema([("step", pa.int64()), *((name, pa.float64()) for name in parameters),
                      ("status", pa.string()), ("iterations", pa.int64()), ("stability", pa.string()),
                      ("residual", pa.float64()), ("stable", pa.bool_())])


def extend_catalog(catalog: Catalog, value_rows: Iterable[Sequence[Any]]) -> None:
    """Add to ``catalog`` the (entity, quantity) pairs of ``value_rows`` (one step's or several's) not in it yet,
    with their components in the row order of the first step that has them."""
    fresh: dict[Key, tuple[Any, list[str]]] = {}  # key -> (its first step, components)
    for row in value_rows:
        key = (row[1], row[2])
        if key in catalog:
            continue
        step, components = fresh.setdefault(key, (row[0], []))
        if row[0] == step:
            components.append(row[3])
    catalog.update({key: components for key, (_, components) in fresh.items()})


def _catalog_text(catalog: Catalog) -> bytes:
    return json.dumps([[entity, quantity, components] for (entity, quantity), components in catalog.items()]).encode()


def _with_catalog(table: pa.Table, catalog: Catalog) -> pa.Table:
    return table.replace_schema_metadata({CATALOG_KEY: _catalog_text(catalog)})


def read_catalog(schema: pa.Schema) -> Catalog:
    """The catalog a values part's schema carries (empty for a part without one)."""
    entries = json.loads((schema.metadata or {}).get(CATALOG_KEY, b"[]"))
    return {(entity, quantity): list(components) for entity, quantity, components in entries}


def columns_table(columns: Sequence[Sequence[Any]], schema: pa.Schema) -> pa.Table:
    """A table of ``schema`` from its columns (Python values, None for null; or numpy arrays)."""
    return pa.Table.from_arrays([arrow_array(column, field.type) for column, field in zip(columns, schema)],
                                schema=schema)


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of ``schema`` without rows."""
    return pa.Table.from_batches([], schema=schema)


def rows_tables(parameters: Sequence[str], step_rows: Iterable[Sequence[Any]],
                value_rows: Iterable[Sequence[Any]]) -> tuple[pa.Table, pa.Table]:
    """The ``steps`` and ``values`` tables (values with its catalog) of steps rows and values rows, in memory."""
    step_rows, value_rows = list(step_rows), list(value_rows)
    catalog: Catalog = {}
    extend_catalog(catalog, value_rows)
    schema = steps_schema(parameters)
    steps = columns_table(list(zip(*step_rows)) if step_rows else [[] for _ in schema], schema)
    values = columns_table(list(zip(*value_rows)) if value_rows else [[] for _ in VALUES_SCHEMA], VALUES_SCHEMA)
    return steps, _with_catalog(values, catalog)


class StoreWriter:
    """Streams steps into the store at ``folder``, one bounded batch at a time.

    ``parameters``: the swept parameters' names (the ``steps`` table's columns between ``step`` and
    ``status``). ``writer``: this writer's name in its part files (letters, digits, ``_``); writers
    writing into one store at once need different names. ``rows_per_part``: values buffered before
    a part file is written. A writer whose name already has parts in ``folder`` is refused
    (nothing is overwritten). ``background``: build and write the part files on a thread of their own (numpy,
    pyarrow and the file system calls let the caller go on solving meanwhile): a batch's parts are then in place at
    the latest when the next batch is handed over or the writer closes, and at most one batch is being written
    while the next fills; an error writing them is raised there.

    Steps are held as they were handed over (a step's row, or a block of steps as columns and a (k, V) array of
    values) and their value names as a *layout* (entity, quantity, component and unit tuples) coded once: each name
    gets a writer-wide 32-bit code when first seen, each layout its four code arrays, so a part's name columns are
    the layouts' codes repeated, not names looked up per value.
    """

    def __init__(self, folder: str | Path, parameters: Sequence[str], writer: str = "0",
                 rows_per_part: int = ROWS_PER_PART, background: bool = False):
        if not WRITER_NAME.fullmatch(writer):
            raise ValueError(f"writer name {writer!r}: expected letters, digits and _ only")
        if rows_per_part < 1:
            raise ValueError(f"rows_per_part {rows_per_part}: expected 1 or more")
        self.folder = Path(folder)
        self.writer = writer
        self.rows_per_part = rows_per_part
        self._steps_schema = steps_schema(parameters)
        self._width = len(self._steps_schema)
        self._parts = 0
        self._closed = False
        try:
            for table in (STEPS, VALUES):
                (self.folder / table).mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(f"{self.folder}: cannot create the results store: {error.strerror or error}") from None
        taken = sorted(self.folder.glob(f"*/part-{writer}-*.parquet"))
        if taken:
            raise StoreError(f"{self.folder}: writer {writer!r} already has part files ({taken[0].name} ...); "
                             f"expected a new store or another writer name")
        self._names: list[dict[str, int]] = [{}, {}, {}, {}]  # entity, quantity, component, unit -> code
        self._last: tuple[Layout, int] | None = None  # the layout handed over last and its number
        self._layouts: dict[int, tuple[Layout, tuple[np.ndarray, ...]]] = {}  # the buffer's layouts: number -> names,
        self._numbered = 0                                                     # codes (4 (V,) int32)
        self._step_pieces: list[list[Sequence[Any]] | tuple] = []  # rows (a list of steps rows) or columns (a tuple)
        self._chunks: list[tuple[int, Any, np.ndarray, np.ndarray | None]] = []  # (layout, step numbers, (k, V)
        self._buffered = 0                                                       # values, nulls or None), in order
        self._catalog: Catalog = {}  # the catalog up to the parts written (kept by whoever builds the parts)
        self._repeated: dict[int, tuple[int, list[pa.Array]] | None] = {}  # likewise: a layout's codes repeated
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="shiftsim-store") if background else None
        self._writing: Future | None = None  # the batch being written on the thread

    @property
    def buffered(self) -> int:
        """Values held in memory, not yet in a part file."""
        return self._buffered

    def add(self, step_row: Sequence[Any], value_rows: Sequence[Sequence[Any]]) -> None:
        """One finished step: ``step_row`` (``step, *parameters, status, iterations, stability, residual,
        stable``) and its ``value_rows`` (``step, entity, quantity, component, value, unit``). Writes a
        part once ``rows_per_part`` values are held.

        The rows' names (entity, quantity, component, unit) are kept once per layout: a step whose names are
        those of the step before adds only its values (the usual case: every converged step of a sweep
        reports the same things)."""
        if value_rows:
            _, entity, quantity, component, values, unit = zip(*value_rows)
            layout = (entity, quantity, component, unit)
        else:
            layout, values = ((), (), (), ()), ()
        nulls = np.fromiter((v is None for v in values), bool, len(values))
        numbers = np.fromiter((np.nan if v is None else v for v in values), float, len(values))
        self.add_values(step_row, layout, numbers, nulls if nulls.any() else None)

    def add_values(self, step_row: Sequence[Any], layout: Layout, values: np.ndarray,
                   nulls: np.ndarray | None = None) -> None:
        """One finished step as columns: ``step_row`` as in :meth:`add`, the names of its values ``layout`` (entity,
        quantity, component and unit tuples, one entry per value: pass the same tuple object for every step that has
        them) and ``values`` (V,) float64, null where ``nulls`` (V,) is True."""
        self._check_open()
        if len(step_row) != self._width:
            raise ValueError(f"a steps row has {len(self._steps_schema)} columns "
                             f"({', '.join(self._steps_schema.names)}), got {list(step_row)}")
        if len(values) != len(layout[0]):
            raise ValueError(f"step {step_row[0]}: {len(values)} values for {len(layout[0])} names")
        number = self._number(layout)
        values = np.asarray(values, dtype=float).reshape(1, -1)
        rows = self._step_pieces[-1] if self._step_pieces and isinstance(self._step_pieces[-1], list) else None
        held = len(self._chunks), len(self._step_pieces), len(rows) if rows is not None else 0
        try:  # all of the step or none of it, even when a signal's exception lands in between
            self._chunks.append((number, (step_row[0],), values, None if nulls is None else nulls.reshape(1, -1)))
            if rows is None:
                self._step_pieces.append([step_row])
            else:
                rows.append(step_row)
        except BaseException:
            self._undo(*held, rows)
            raise
        self._held(values.size)

    def add_steps(self, columns: Sequence[np.ndarray], layout: Layout, values: np.ndarray) -> None:
        """k finished steps whose values have the same names, as columns: ``columns`` the steps table's columns
        (``step``, the parameters, ``status``, ``iterations``, ``stability``, ``residual``, ``stable``), each (k,);
        ``layout`` as in :meth:`add_values`; ``values`` (k, V) float64, none null. The arrays are kept as they are
        until the part is written (pass arrays that do not change)."""
        self._check_open()
        if len(columns) != self._width:
            raise ValueError(f"a steps table has {self._width} columns ({', '.join(self._steps_schema.names)}), "
                             f"got {len(columns)}")
        steps = len(columns[0])
        if any(len(column) != steps for column in columns) or values.shape != (steps, len(layout[0])):
            raise ValueError(f"{steps} steps of {len(layout[0])} values: got columns of lengths "
                             f"{[len(column) for column in columns]} and values of shape {values.shape}")
        number = self._number(layout)
        held = len(self._chunks), len(self._step_pieces), 0
        try:  # all of the steps or none of them
            self._chunks.append((number, columns[0], values, None))
            self._step_pieces.append(tuple(columns))
        except BaseException:
            self._undo(*held, None)
            raise
        self._held(values.size)

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self.folder}: the store writer is closed")

    def _number(self, layout: Layout) -> int:
        """The buffer's number of ``layout`` (the last one handed over, when these are its names: compared by
        identity first), its names coded when it is new."""
        if self._last is not None and (layout is self._last[0] or layout == self._last[0]):
            number = self._last[1]
        else:
            number, self._numbered = self._numbered, self._numbered + 1
            codes = tuple(np.fromiter((names.setdefault(name, len(names)) for name in column), np.int32, len(column))
                          for names, column in zip(self._names, layout))
            self._layouts[number] = (layout, codes)
        self._last = (layout, number)
        return number

    def _undo(self, chunks: int, pieces: int, rows_held: int, rows: list | None) -> None:
        """Back to a buffer of ``chunks`` chunks and ``pieces`` steps pieces (``rows``, the last, of ``rows_held``
        rows): what a step half handed over added is removed."""
        del self._chunks[chunks:], self._step_pieces[pieces:]
        if rows is not None:
            del rows[rows_held:]

    def _held(self, count: int) -> None:
        self._buffered += count
        if self._buffered >= self.rows_per_part:
            self.flush()

    def flush(self) -> None:
        """Write the buffered steps as one part per table (values first), then empty the buffer (in the background:
        hand them to the writing thread once it has written the batch before; the tables are built there)."""
        if not self._chunks:
            return
        used = {number for number, *_ in self._chunks}
        batch = (self._parts, self._chunks, {n: self._layouts[n] for n in used}, [list(n) for n in self._names],
                 self._step_pieces)
        self._written()
        if self._thread is None:  # emptied once written: an interrupt in between leaves the batch to close()
            self._build_and_write(*batch)
        else:
            self._writing = self._thread.submit(self._build_and_write, *batch)
        self._parts += 1
        self._chunks, self._step_pieces, self._buffered = [], [], 0
        self._layouts = {} if self._last is None else {self._last[1]: self._layouts[self._last[1]]}

    def _build_and_write(self, part: int, chunks: list, layouts: dict, names: list[list[str]], pieces: list) -> None:
        """Build a batch's two tables from its chunks and write them (see :meth:`_values_table`)."""
        values, catalog = self._values_table(chunks, layouts, names)
        self._write_batch(part, values, _catalog_text(catalog), self._steps_table(pieces))

    def _values_table(self, chunks: list, layouts: dict, names: list[list[str]]) -> tuple[pa.Table, Catalog]:
        """The ``values`` table of ``chunks`` (layout number, step numbers (k,), values (k, V), nulls) and the catalog
        up to them: a record batch per chunk (its numbers not copied), the name columns dictionary-coded (each distinct
        name once in ``names``, the writer's, a 32-bit code per value: a layout's codes repeated for its k steps, kept
        from part to part while the layout is in use; written as the Parquet dictionary pages they become anyway,
        read back as strings)."""
        dictionaries = [arrow_array(column, pa.string()) for column in names]
        repeated = {number: self._repeated.get(number) for number in layouts}  # layout -> (steps, 4 code arrays)
        batches = []
        for number, steps, values, nulls in chunks:
            count, width = values.shape
            if repeated[number] is None or repeated[number][0] < count:
                repeated[number] = (count, [arrow_array(np.tile(codes, count), pa.int32())
                                            for codes in layouts[number][1]])
            codes = [pa.DictionaryArray.from_arrays(column.slice(0, count * width), dictionary, safe=False)
                     for column, dictionary in zip(repeated[number][1], dictionaries)]
            numbers = arrow_array(values.reshape(-1), pa.float64(), None if nulls is None else nulls.reshape(-1))
            batches.append(pa.RecordBatch.from_arrays(
                [arrow_array(np.repeat(np.asarray(steps, np.int64), width), pa.int64()), *codes[:3], numbers, codes[3]],
                schema=_CODED_VALUES))
        self._repeated = repeated  # the layouts of this part only: memory does not grow with the layouts of a run
        order = list(dict.fromkeys(number for number, *_ in chunks))  # the layouts as first written
        extend_catalog(self._catalog, ((number, *row) for number in order for row in zip(*layouts[number][0][:3])))
        return pa.Table.from_batches(batches, schema=_CODED_VALUES), self._catalog

    def _steps_table(self, pieces: list) -> pa.Table:
        """The ``steps`` table of ``pieces`` (lists of rows, or tuples of columns), in order: each column's pieces
        joined in numpy (Python values with a None among them as objects), then made one Arrow array."""
        columns: list[list[np.ndarray]] = [[] for _ in range(self._width)]
        for piece in pieces:
            for column, values in zip(columns, zip(*piece) if isinstance(piece, list) else piece):
                column.append(np.asarray(values))
        return pa.Table.from_arrays([arrow_array(np.concatenate(parts), field.type)
                                     for parts, field in zip(columns, self._steps_schema)], schema=self._steps_schema)

    def _written(self) -> None:
        """Wait for the batch on the writing thread (none: nothing to wait for); raise what stopped it."""
        writing, self._writing = self._writing, None
        if writing is not None:
            writing.result()

    def close(self) -> None:
        """Write what is buffered (and wait for the writing thread). A writer that wrote nothing leaves one empty
        part per table, so the store has its columns whatever ran."""
        if self._closed:
            return
        if self._parts == 0 and not self._chunks:
            self._write_batch(0, empty_table(VALUES_SCHEMA), _catalog_text({}), empty_table(self._steps_schema))
        try:
            self.flush()
            self._written()
        finally:
            if self._thread is not None:
                self._thread.shutdown(wait=True)
        self._closed = True

    def abandon(self) -> None:
        """Write nothing more: drop what is buffered and wait for the part being written, whatever became of it (a
        store about to be removed; its folder is not written into afterwards)."""
        self._chunks, self._step_pieces, self._buffered = [], [], 0
        if self._thread is not None:
            self._thread.shutdown(wait=True)
        self._writing, self._closed = None, True

    def _write_batch(self, part: int, values: pa.Table, catalog: bytes, steps: pa.Table) -> None:
        """One batch's parts: the values part (``catalog`` in its footer), then the steps part."""
        self._write_part(VALUES, part, values, catalog)
        self._write_part(STEPS, part, steps)

    def _write_part(self, table_name: str, part: int, table: pa.Table, catalog: bytes | None = None) -> None:
        """Write part number ``part`` of ``table_name`` (a values part with its ``catalog`` in its footer), synced,
        then named."""
        name = f"part-{self.writer}-{part:05d}.parquet"
        staged = self.folder / table_name / f".{name}.partial"
        try:
            if catalog is None:
                pq.write_table(table, staged, row_group_size=ROWS_PER_GROUP, **STEPS_WRITING)
            else:
                with pq.ParquetWriter(staged, table.schema, **VALUES_WRITING) as writer:
                    writer.write_table(table, row_group_size=ROWS_PER_GROUP)
                    writer.add_key_value_metadata({CATALOG_KEY: catalog})
            handle = os.open(staged, os.O_RDONLY)
            try:
                os.fsync(handle)  # on disk before it is named: a part under its final name is whole
            finally:
                os.close(handle)
            os.replace(staged, staged.with_name(name))
        except OSError as error:
            staged.unlink(missing_ok=True)
            raise StoreError(f"cannot write the results store's part {staged.with_name(name)}: "
                             f"{error.strerror or error}") from None

    def __enter__(self) -> StoreWriter:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


def remove_parts(folder: str | Path, writer: str) -> None:
    """Remove the part files writer ``writer`` wrote into the store at ``folder`` (those under their final names and
    any left half written), as if it had never written."""
    for table in (STEPS, VALUES):
        for pattern in (f"part-{writer}-*.parquet", f".part-{writer}-*.parquet.partial"):
            for path in (Path(folder) / table).glob(pattern):
                path.unlink(missing_ok=True)


class ResultsStore:
    """A results store opened lazily: the part files are listed and their schemas read, no values.

    Reading goes through the part files themselves (:mod:`pyarrow.parquet`, a row group at a time). ``steps`` and
    ``values`` are the two tables as :class:`pyarrow.dataset.Dataset` objects, for queries of your own
    (``store.values.to_table(filter=...)``, ``store.values.to_batches()``; :mod:`pyarrow.dataset` is imported when
    one is first asked for). ``folder`` is None for a store held in memory (:meth:`from_tables`).
    """

    def __init__(self, folder: str | Path):
        self.folder: Path | None = Path(folder)
        sources = {table: next((path for path in (self.folder / table, self.folder / f"{table}.parquet")
                                if path.exists()), None) for table in (STEPS, VALUES)}
        missing = [table for table, path in sources.items() if path is None]
        if missing:
            raise InputError([Problem(str(self.folder), "", "is not a results store: no "
                                      + " or ".join(f"{t}/ or {t}.parquet" for t in missing),
                                      "steps and values Parquet datasets (folders of parts, or single files) "
                                      "written by shiftsim")])
        self._files = {table: _part_files(source) for table, source in sources.items()}
        self._tables: dict[str, pa.Table] | None = None
        try:
            schemas = {table: [pq.read_schema(path) for path in files] for table, files in self._files.items()}
        except (pa.ArrowInvalid, OSError, ValueError) as error:
            raise InputError([Problem(str(self.folder), "", f"a part file cannot be read: {error}",
                                      "Parquet part files written by shiftsim")]) from None
        self._schemas = {table: _dataset_schema(found) for table, found in schemas.items()}
        catalog: Catalog = {}
        for schema in schemas[VALUES]:
            catalog.update({key: components for key, components in read_catalog(schema).items()
                            if key not in catalog})
        self._catalog = catalog
        self._check_columns()

    @classmethod
    def from_tables(cls, steps: pa.Table, values: pa.Table) -> ResultsStore:
        """A store over two tables in memory (:func:`rows_tables`), read as a store on disk is."""
        store = cls.__new__(cls)
        store.folder = None
        store._files = {STEPS: [], VALUES: []}
        store._tables = {STEPS: steps, VALUES: values}
        store._schemas = {STEPS: steps.schema, VALUES: values.schema}
        store._catalog = read_catalog(values.schema)
        store._check_columns()
        return store

    @cached_property
    def steps(self) -> Any:
        """The ``steps`` table as a :class:`pyarrow.dataset.Dataset`."""
        return self._dataset(STEPS)

    @cached_property
    def values(self) -> Any:
        """The ``values`` table as a :class:`pyarrow.dataset.Dataset`."""
        return self._dataset(VALUES)

    def _dataset(self, table: str) -> Any:
        import pyarrow.dataset as ds

        if self._tables is not None:
            return ds.dataset(self._tables[table])
        return ds.dataset(self._files[table], schema=self._schemas[table], format="parquet")

    def held(self) -> ResultsStore:
        """This store read whole into memory (:meth:`from_tables`, the catalog kept): its part files may go after."""
        return ResultsStore.from_tables(self.step_table(), _with_catalog(self.select(), self._catalog))

    def _check_columns(self) -> None:
        def where(table: str) -> str:
            return str(self.folder / table) if self.folder is not None else table

        if self._schemas[VALUES].names != list(VALUE_COLUMNS):
            raise InputError([Problem(where(VALUES), "columns", f"are {self._schemas[VALUES].names}",
                                      f"{list(VALUE_COLUMNS)}")])
        if self._schemas[STEPS].names[-len(STATUS_COLUMNS):] != list(STATUS_COLUMNS):
            raise InputError([Problem(where(STEPS), "columns", f"are {self._schemas[STEPS].names}",
                                      f"step, the swept parameters, {', '.join(STATUS_COLUMNS)}")])

    @property
    def parameters(self) -> list[str]:
        """The swept parameters' names, from the steps table's columns."""
        return self._schemas[STEPS].names[1:-len(STATUS_COLUMNS)]

    def catalog(self) -> Catalog:
        """Every (entity, quantity) the store holds, with its components in order, first written first (read from
        the part files' footers when the store was opened)."""
        return {key: list(components) for key, components in self._catalog.items()}

    def count_values(self) -> int:
        """The rows of the ``values`` table (from the part files' footers)."""
        if self._tables is not None:
            return self._tables[VALUES].num_rows
        return sum(pq.read_metadata(path).num_rows for path in self._files[VALUES])

    def step_table(self) -> pa.Table:
        """Every step's row, ordered by step."""
        return _by_step(self._scan(STEPS, None, {}))

    def select(self, entity: str | Sequence[str] | None = None, quantity: str | Sequence[str] | None = None,
               component: str | Sequence[str] | None = None, steps: Sequence[int] | None = None,
               columns: Sequence[str] | None = None, coded: bool = False) -> pa.Table:
        """The values rows matching every given selector (one name or several; ``None``: all),
        ordered by step and, within a step, as they were written. ``columns``: those only. ``coded``: the name
        columns as Arrow dictionaries (each name decoded once per row group; a store in memory gives them as held)."""
        wanted = {name: [chosen] if isinstance(chosen, str) else chosen
                  for name, chosen in (("entity", entity), ("quantity", quantity), ("component", component),
                                       ("step", steps)) if chosen is not None}
        wanted_columns = None if columns is None else list(dict.fromkeys(["step", *columns]))
        table = _by_step(self._scan(VALUES, wanted_columns, wanted, coded))
        return table if columns is None else table.select(list(columns))

    def _scan(self, table: str, columns: list[str] | None, wanted: dict[str, Any], coded: bool = False) -> pa.Table:
        """The rows of ``table`` whose columns hold one of the ``wanted`` values (column name -> values), in the order
        stored, with ``columns`` (None: all), read a row group at a time; row groups whose ``step`` statistics leave
        out every wanted step are skipped."""
        schema = self._schemas[table]
        read = None if columns is None else list(dict.fromkeys([*columns, *wanted]))
        sets = {name: arrow_array(np.asarray(values, np.int64) if name == "step" else list(values),
                                  schema.field(name).type) for name, values in wanted.items()}
        if self._tables is not None:
            pieces = [self._tables[table]]
        else:
            steps = np.unique(np.asarray(wanted["step"], np.int64)) if "step" in wanted else None
            dictionaries = [name for name in NAME_COLUMNS if coded and name in (read or schema.names)]
            pieces = []
            for path in self._files[table]:
                with pq.ParquetFile(path, read_dictionary=dictionaries) as part:
                    for group in _row_groups(part, steps):
                        pieces.append(_as_schema(part.read_row_group(group, columns=read), schema))
        found = [piece if not sets else piece.filter(_matches(piece, sets)) for piece in pieces]
        found = [piece if columns is None else piece.select(columns) for piece in found]
        if not found:
            return empty_table(schema if columns is None else pa.schema([schema.field(name) for name in columns]))
        return pa.concat_tables(found) if len(found) > 1 else found[0]

    def entities(self) -> list[str]:
        """Every entity with values, sorted (from the catalog)."""
        return sorted({entity for entity, _ in self._catalog})


def _part_files(source: Path) -> list[Path]:
    """A table's part files: ``source`` itself, or the files in the folder ``source`` by name, those whose names start
    with ``.`` or ``_`` left out (parts being written), as Parquet dataset readers list them."""
    if not source.is_dir():
        return [source]
    return sorted(path for path in source.iterdir() if path.is_file() and not path.name.startswith((".", "_")))


def _dataset_schema(schemas: list[pa.Schema]) -> pa.Schema:
    """A table's schema: its first part's (as a Parquet dataset takes it), the store's catalog left out."""
    return schemas[0].remove_metadata() if schemas else pa.schema([])


def _as_schema(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` (a part's rows) with the fields of ``schema`` (the table's: a part may differ in nullability, or have
    no Arrow schema), its name columns kept dictionary-coded where they were read so."""
    fields = [schema.field(name) for name in table.column_names]
    fields = [field.with_type(column.type) if pa.types.is_dictionary(column.type) else field
              for field, column in zip(fields, table.columns)]
    target = pa.schema(fields)
    return table.replace_schema_metadata() if table.schema.remove_metadata().equals(target) else table.cast(target)


def _by_step(table: pa.Table) -> pa.Table:
    """``table`` ordered by its ``step`` column, rows of one step in their order (a stable sort; none needed for the
    rows of one writer, written in step order)."""
    step = numpy_array(table.column("step"))
    return table if bool(np.all(step[1:] >= step[:-1])) else table.sort_by("step")


def _row_groups(part: pq.ParquetFile, steps: np.ndarray | None) -> list[int]:
    """The row groups of ``part`` that may hold one of ``steps`` (sorted; None: every row group), by their ``step``
    column's statistics (a row group without them is read)."""
    groups = range(part.metadata.num_row_groups)
    if steps is None:
        return list(groups)
    column = part.schema_arrow.get_field_index("step")
    kept = []
    for group in groups:
        statistics = part.metadata.row_group(group).column(column).statistics
        if statistics is None or not statistics.has_min_max:
            kept.append(group)
        elif np.searchsorted(steps, statistics.min) < np.searchsorted(steps, statistics.max, side="right"):
            kept.append(group)
    return kept


def _matches(table: pa.Table, sets: dict[str, pa.Array]) -> pa.Array:
    """The rows of ``table`` whose every column named in ``sets`` holds one of its values (a null matches none)."""
    import pyarrow.compute as pc

    mask = None
    for name, values in sets.items():
        term = pc.is_in(table.column(name), value_set=values)
        mask = term if mask is None else pc.and_(mask, term)
    return mask


def open_store(folder: str | Path) -> ResultsStore:
    """The store at ``folder``, opened lazily (:class:`ResultsStore`)."""
    return ResultsStore(folder)


__all__ = ["Catalog", "ResultsStore", "StoreError", "StoreWriter", "VALUE_COLUMNS", "columns_table", "empty_table",
           "open_store", "read_catalog", "remove_parts", "rows_tables", "steps_schema"]
