"""Writing a run's results folder as one set: results.json, the tables (CSV, and Parquet for
:func:`shiftsim.output.store.open_store`), the plots and report.html.

Everything written comes from the :class:`~shiftsim.scenario.run.Run` (its steps and its capacity
document); nothing is solved here.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import PlotError
from ..jsonio import dumps
from ..plots.ground import capacity_chart
from ..plots.registry import render
from ..plots.tornado import sensitivity_chart
from ..scenario.run import Run
from ..sensitivity.document import csv_rows as sensitivity_rows
from ..typed import ECHO_LIMIT
from .provenance import run_metadata
from .report import report_html
from .store import tables_bytes
from .writers import (CAPACITY_CSV, CAPACITY_PNG, REPORT_HTML, RESULTS_CSV, RESULTS_JSON, SENSITIVITY_CSV,
                      SENSITIVITY_PNG, STEPS_CSV, capacity_rows, csv_bytes, joint_units, results_document, step_rows,
                      store_rows, tidy_rows, write_files, writes_csv)


def write_results(run: Run, folder: Path, csv: bool | None = None) -> list[str]:
    """Render and write every output file of ``run`` into ``folder`` as one set; return the file names written.

    ``csv``: write results.csv and steps.csv (True), not (False), or as the scenario's ``outputs.csv`` says
    (None; by default only for runs of up to :data:`~shiftsim.output.writers.CSV_STEP_LIMIT` steps).

    A stopped run (``run.interrupted``) is marked partial (results.json ``partial``, ``steps_planned``,
    ``interrupted``). A run with a capacity document gets it in results.json ``capacity``, capacity.csv (with the
    other tables) and capacity.png (with the plots), unless the analysis could not be solved. A run with a
    sensitivity section gets it in results.json ``sensitivity``, sensitivity.csv and sensitivity.png (its tornado
    charts).
    """
    scenario, steps, capacity = run.scenario, run.steps, run.capacity
    interrupted = run.interrupted.name if run.interrupted else None
    document = results_document(scenario, steps, run.planned, interrupted, capacity, run.sensitivity)
    document["metadata"] = run_metadata(scenario)  # provenance, rendered by the report (output/provenance.py)
    files = {RESULTS_JSON: dumps(document)}
    # the columnar store (steps.parquet, values.parquet): the CSV tables' rows in SI and more, for pandas / polars / DuckDB
    units = joint_units(scenario)
    rows = [store_rows(step, document["parameters"], units) for step in steps]
    files.update(tables_bytes(document["parameters"], [step_row for step_row, _ in rows],
                              [row for _, value_rows in rows for row in value_rows]))
    solved_capacity = capacity is not None and "error" not in capacity
    asked = scenario.outputs.csv if csv is None else csv
    if writes_csv(asked, len(steps)):
        files[RESULTS_CSV] = csv_bytes(tidy_rows(document))
        files[STEPS_CSV] = csv_bytes(step_rows(document))
    if solved_capacity and asked is not False:  # one row per lift point: small whatever the sweep's length
        files[CAPACITY_CSV] = csv_bytes(capacity_rows(capacity))
    if run.sensitivity is not None and asked is not False:  # one row per step, output and parameter
        files[SENSITIVITY_CSV] = csv_bytes(sensitivity_rows(run.sensitivity))
    try:  # a plot that cannot be drawn must not lose the solved results: they are written, then it is reported
        plots = render(scenario, steps)
        if solved_capacity and scenario.outputs.plots:
            plots[CAPACITY_PNG] = capacity_chart(capacity, scenario.outputs.dpi)
        chart = sensitivity_chart(run.sensitivity, scenario.outputs.dpi) if run.sensitivity else None
        if chart is not None and scenario.outputs.plots:
            plots[SENSITIVITY_PNG] = chart
        plot_failure = None
    except Exception as error:  # matplotlib's errors have no common base
        plots, plot_failure = {}, error
    files.update(plots)
    files[REPORT_HTML] = report_html(scenario, steps, document, files)
    write_files(folder, files)
    if plot_failure is not None:
        cause = " ".join(f"{type(plot_failure).__name__}: {plot_failure}".split())[:ECHO_LIMIT]
        raise PlotError(f"{folder}/: {', '.join(files)} written without plots: a plot could not be drawn ({cause})")
    return list(files)


__all__ = ["write_results"]
