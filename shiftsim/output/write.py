"""Writing a run's results folder as one set: the columnar store (:mod:`shiftsim.output.store`, streamed
while the run solves), results.json, the CSV tables, the plots and report.html.

A :class:`ResultsStream` is opened for the output folder before the run solves: each step handed to it
goes into the store's part files in a staging folder (:func:`~shiftsim.output.writers.open_staging`) as it
is solved, a part at a time, so what a run has solved is on disk while it runs. :func:`write_results`
then writes the other files from the :class:`~shiftsim.scenario.run.Run` (its steps and its capacity
document) into the same staging folder and swaps the whole set in; nothing is solved here.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..analysis.digest import RunDigest
from ..errors import PlotError
from ..jsonio import dumps
from ..scenario.run import Run
from ..typed import ECHO_LIMIT
from .provenance import run_metadata
from .results import RunResults
from ..scenario.definition import Scenario
from ..scenario.chain import BlockStep, StepBlock
from ..scenario.runner import StepResult
from .store import ROWS_PER_PART, Layout, ResultsStore, StoreWriter, remove_parts
from .writers import (CAPACITY_CSV, OUTPUT_FOLDERS, REPORT_HTML, RESULTS_CSV, RESULTS_JSON, SENSITIVITY_CSV, STEPS_CSV,
                      capacity_rows, csv_bytes, joint_units, open_staging, remove_created,
                      keeps_steps, results_document, step_status_row, store_rows, write_files, write_store_csvs,
                      writes_csv)


class ResultsStream:
    """The columnar store of a run's results folder, written while the run solves (see the module docstring).

    Opened before the run (creating ``folder`` and a staging folder in it); :meth:`add` each solved step (a
    part file is written once ``rows_per_part`` values are held); :func:`write_results` finishes the set.
    :meth:`discard` removes what was staged (a run that failed). Use as a context manager to discard on an
    error that ends the run before it is written.

    ``staging``: the staging folder of a run opened elsewhere (by another :class:`ResultsStream`), into which this
    stream writes its own part files under the store writer name ``writer`` (a worker's share of the run:
    :mod:`shiftsim.output.partitions`); :meth:`discard` then removes those part files only.
    """

    def __init__(self, folder: Path, scenario: Scenario, rows_per_part: int = ROWS_PER_PART, writer: str = "0",
                 staging: Path | None = None):
        self.folder = folder
        self.parameters = scenario.sweep.names
        self._joint_units = joint_units(scenario)
        self._name = writer
        self.staging, self.created = open_staging(folder) if staging is None else (staging, None)
        try:
            self.writer = StoreWriter(self.staging, self.parameters, writer=writer, rows_per_part=rows_per_part,
                                      background=True)
        except BaseException:
            self._remove()
            raise
        self.added = np.zeros(scenario.sweep.size, dtype=bool)  # by step index
        self._block: Any = None  # the block whose value names are self._layout (block-path steps)
        self._layout: Layout = ((), (), (), ())
        self._layouts: dict[tuple, Layout] = {}  # the names of blocks' values by their items (StepBlock.items)

    def add(self, step: StepResult) -> None:
        """Stream one solved step into the store. A step of the block path (:class:`~shiftsim.scenario.chain.BlockStep`)
        gives its numbers as a row of its block's array; their names are taken from the step's rows once per kind of
        block (its items: the same names, checked against the numbers of the first block of that kind)."""
        values = step.store_values() if isinstance(step, BlockStep) else None
        if values is None:
            self.writer.add(*store_rows(step, self.parameters, self._joint_units))
        else:
            if step.block is not self._block:
                items = step.block.items
                if items not in self._layouts:
                    self._layouts[items] = self._block_layout(step, values)
                self._block, self._layout = step.block, self._layouts[items]
            self.writer.add_values(step_status_row(step, self.parameters), self._layout, values)
        self.added[step.index] = True

    def add_rows(self, block: StepBlock, start: int, stop: int) -> None:
        """Stream rows ``start`` to ``stop - 1`` of a block of the block path (steps carrying nothing beyond what the
        block computed: :func:`~shiftsim.scenario.chain.block_runs`) in one go, as columns of the block's arrays."""
        layout = self._layouts.get(block.items)
        if layout is None:
            layout = self._layouts[block.items] = self._block_layout(BlockStep(block, start), block.values[start])
        rows = slice(start, stop)
        stability = block.stability[rows]
        columns = [block.indices[rows], *block.table[rows].T, np.full(stop - start, BlockStep.status),
                   block.iterations[rows], stability, block.residual[rows], stability == "stable"]
        self.writer.add_steps(columns, layout, block.values[rows])
        self.added[block.indices[rows]] = True

    def _block_layout(self, step: BlockStep, values: np.ndarray) -> Layout:
        """The names of a block's values, from its first step's rows (which must hold the same numbers)."""
        step_row, value_rows = store_rows(step, self.parameters, self._joint_units)
        numbers = np.array([row[4] for row in value_rows], dtype=float)
        if len(numbers) != len(values) or not np.allclose(numbers, values, rtol=1e-12, atol=0.0):
            raise RuntimeError(f"step {step.index}: the block's values and its rows disagree (a shiftsim bug)")
        return tuple(tuple(column) for column in list(zip(*value_rows))[1:4]) + (tuple(row[5] for row in value_rows),)

    def discard(self) -> None:
        """Remove what was staged (the writer's thread done first, so nothing lands in the folder afterwards)."""
        self.writer.abandon()
        self._remove()

    def _remove(self) -> None:
        if self.created is None:  # a share of a run opened elsewhere: its own part files only
            remove_parts(self.staging, self._name)
            return
        shutil.rmtree(self.staging, ignore_errors=True)
        remove_created(self.created)

    def __enter__(self) -> ResultsStream:
        return self

    def __exit__(self, kind: Any, *_: Any) -> None:
        if kind is not None:
            self.discard()


def write_results(run: Run, folder: Path, csv: bool | None = None, stream: ResultsStream | None = None,
                  digest: RunDigest | None = None) -> Written:
    """Render and write every output file of ``run`` into ``folder`` as one set; return the file names written and
    the plots left out.

    ``csv``: write results.csv and steps.csv (True), not (False), or as the scenario's ``outputs.csv`` says
    (None; by default only for runs of up to :data:`~shiftsim.output.writers.CSV_STEP_LIMIT` steps).

    A stopped run (``run.interrupted``) is marked partial (results.json ``partial``, ``steps_planned``,
    ``interrupted``). A run with a capacity document gets it in results.json ``capacity``, capacity.csv (with the
    other tables) and capacity.png (with the plots), unless the analysis could not be solved. A run with a
    sensitivity section gets it in results.json ``sensitivity``, sensitivity.csv and sensitivity.png (its tornado
    charts).

    ``stream``: the :class:`ResultsStream` the run's steps were streamed into (all of ``run.steps``, or all the run
    solved for a run that did not hold them, but those a stop left in ``run.steps``); without one, the steps are put
    into a store here. Either way the store's folders join the set. ``digest``: the
    :class:`~shiftsim.analysis.digest.RunDigest` the streamed steps were reduced into (by default, ``run.steps``'s);
    the steps written here join it.
    """
    if stream is None:
        with ResultsStream(folder, run.scenario) as stream:
            for step in run.steps:
                stream.add(step)
            return write_results(run, folder, csv, stream)
    try:
        digest = finish_stream(run, stream, digest)
        return _write_set(run, folder, csv, stream, digest)
    except BaseException:
        stream.discard()
        raise


def finish_stream(run: Run, stream: ResultsStream, digest: RunDigest | None = None) -> RunDigest:
    """Close ``stream`` after ``run``: the steps a signal cut short on their way to it (the last one before the signal,
    held in ``run.steps``) added first, to it and to ``digest``; return the run's digest (``digest``, or by default
    that of ``run.steps``, every step of which was streamed)."""
    held = digest is None  # the digest of run.steps, or of the streamed steps (those added here join it)
    digest = RunDigest.of(run.scenario, run.steps) if held else digest
    for step in run.steps:
        if not stream.added[step.index]:
            stream.add(step)
            if not held:
                digest.add(step)
    stream.writer.close()
    return digest


class Written(NamedTuple):
    """What :func:`write_results` wrote: ``files`` (names, the store's folders first) and ``skipped`` (the plots
    that would show nothing, file name -> why)."""

    files: list[str]
    skipped: dict[str, str]


def _write_set(run: Run, folder: Path, csv: bool | None, stream: ResultsStream, digest: RunDigest) -> Written:
    """Every file of ``run`` but the store, written into ``stream``'s staging folder and swapped in with it (the plots'
    and the report's modules imported here: a run loads matplotlib only once it has solved, and only to draw)."""
    from ..plots.registry import analysis_charts, chosen_plots, render
    from ..sensitivity.document import csv_rows as sensitivity_rows
    from .report import report_html

    scenario, steps, capacity = run.scenario, run.steps, run.capacity
    interrupted = run.interrupted.name if run.interrupted else None
    with_steps = keeps_steps(run.solved) and len(steps) == run.solved  # a run that held its steps
    document = results_document(scenario, steps, run.planned, interrupted, capacity, run.sensitivity,
                                with_steps=with_steps, digest=digest, as_json=True)
    document["metadata"] = run_metadata(scenario)  # provenance, rendered by the report (output/provenance.py)
    files = {RESULTS_JSON: dumps(document)}
    solved_capacity = capacity is not None and "error" not in capacity
    asked = scenario.outputs.csv if csv is None else csv
    store, staged = ResultsStore(stream.staging), []
    if writes_csv(asked, run.solved):  # streamed from the store into the staging folder, a few steps at a time
        write_store_csvs(store, document, stream.staging / RESULTS_CSV, stream.staging / STEPS_CSV)
        staged = [RESULTS_CSV, STEPS_CSV]
    if solved_capacity and asked is not False:  # one row per lift point: small whatever the sweep's length
        files[CAPACITY_CSV] = csv_bytes(capacity_rows(capacity))
    if run.sensitivity is not None and asked is not False:  # one row per step, output and parameter
        files[SENSITIVITY_CSV] = csv_bytes(sensitivity_rows(run.sensitivity))
    results = RunResults.open(document, store)  # the results as the folder holds them, as `shiftsim plot` reads them
    try:  # a plot that cannot be drawn must not lose the solved results: they are written, then it is reported
        plots, skipped = {}, {}
        if chosen_plots(scenario):  # plots: [] draws none (and reads no step back)
            plots, skipped = render(scenario, results, ranking=digest)
            plots.update(analysis_charts(document, scenario.outputs.dpi))
        plot_failure = None
    except Exception as error:  # matplotlib's errors have no common base
        plots, skipped, plot_failure = {}, {}, error
    files.update(plots)
    files[REPORT_HTML] = report_html(scenario, document, files, results, digest, skipped)
    write_files(folder, files, stream.staging, stream.created, staged)
    written = [RESULTS_JSON, *staged, *(name for name in files if name != RESULTS_JSON)]
    if plot_failure is not None:
        cause = " ".join(f"{type(plot_failure).__name__}: {plot_failure}".split())[:ECHO_LIMIT]
        raise PlotError(f"{folder}/: {', '.join(written)} written without plots: a plot could not be drawn ({cause})")
    return Written([*(f"{name}/" for name in OUTPUT_FOLDERS), *written], skipped)


__all__ = ["ResultsStream", "Written", "finish_stream", "write_results"]
