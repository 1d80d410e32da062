"""Scenarios: machines placed in a world, loads, sweeps; run headless into results files and plots.

``load_scenario(path)`` reads and validates a scenario file (``spec``), loading
its machines (``loading``: model files of every format, attachments; ``machines``:
what a machine's names set; ``mfk``, ``mdx``: the names MFK machines and Mdx
platforms bring; ``ground``: machines standing on the ground); ``execute`` solves
its steps on an executor (``runner``, ``executors``) and checks collisions when
asked (``collisions``, over :mod:`shiftsim.collision`); ``write_results`` writes
results.json, the tidy tables, the plots and report.html as one set (``outputs``,
``plots``, ``report``; ``digest`` for the summary), with ``analysis.capacity``
computed after the sweep (``capacity``).
The format is documented in docs/scenarios.md and ``shiftsim/schemas/scenario.schema.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..jsonio import dumps
from .executors import DaskExecutor, Executor, LocalExecutor
from ..output.writers import (CAPACITY_CSV, CAPACITY_PNG, REPORT_HTML, RESULTS_CSV, RESULTS_JSON, STEPS_CSV, check_folder,
                      csv_bytes, default_folder, results_document, step_rows, tidy_rows, write_files)
from .runner import StepCallback, StepResult, run_chain
from .definition import Scenario, build_scenario, load_scenario

WarningCallback = Callable[[str], None]


def execute(scenario: Scenario, executor: Executor, on_step: StepCallback | None = None,
            on_warning: WarningCallback | None = None) -> list[StepResult]:
    """Solve every step of the scenario (chains on the executor); results sorted by step index,
    finished by :func:`finish`. A bad ``analysis.capacity`` is refused before any step is solved."""
    from .capacity_analysis import analysis_spec

    analysis_spec(scenario)
    return finish(scenario, executor.run(scenario, scenario.sweep.chains(), on_step), on_warning)


def finish(scenario: Scenario, steps: list[StepResult], on_warning: WarningCallback | None = None) -> list[StepResult]:
    """Solved steps (all, or those solved before a run was stopped) sorted by index, with what is
    computed over steps: a scenario with ``collision`` gets each step's ``collisions`` from the
    solved poses (:func:`shiftsim.scenario.collisions.attach_collisions`, all steps in one batch);
    the collision world's warnings (machines without shapes, ...) go to ``on_warning``."""
    steps = sorted(steps, key=lambda step: step.index)
    if steps and "collision" in (scenario.document or {}):
        from .collisions import attach_collisions

        for warning in attach_collisions(scenario, steps):
            if on_warning is not None:
                on_warning(warning)
    return steps


def write_results(scenario: Scenario, steps: list[StepResult], folder: Path, interrupted: str | None = None) -> list[str]:
    """Render and write every output file into ``folder`` as one set; return the file names written.

    ``interrupted`` (a signal's name): the run was stopped and ``steps`` is what it solved; the
    results are marked partial (results.json ``partial``, ``steps_planned``, ``interrupted``).
    A scenario with ``analysis.capacity`` gets it computed after the sweep (not for a stopped run):
    results.json ``capacity``, capacity.csv (with the other tables) and capacity.png (with the plots).
    """
    from ..plots.ground import capacity_chart
    from .capacity_analysis import capacity_rows, run_analysis
    from ..plots.registry import render
    from ..output.report import report_html

    planned = len(scenario.sweep.table()) if interrupted else None
    capacity = None if interrupted else run_analysis(scenario)
    document = results_document(scenario, steps, planned, interrupted, capacity)
    files = {RESULTS_JSON: dumps(document)}
    if scenario.outputs.csv:
        files[RESULTS_CSV] = csv_bytes(tidy_rows(document))
        files[STEPS_CSV] = csv_bytes(step_rows(document))
        if capacity is not None and "error" not in capacity:
            files[CAPACITY_CSV] = csv_bytes(capacity_rows(capacity))
    files.update(render(scenario, steps))
    if capacity is not None and "error" not in capacity and scenario.outputs.plots:
        files[CAPACITY_PNG] = capacity_chart(capacity, scenario.outputs.dpi)
    files[REPORT_HTML] = report_html(scenario, steps, document, files)
    write_files(folder, files)
    return list(files)


__all__ = ["Scenario", "StepResult", "load_scenario", "build_scenario", "execute", "finish", "write_results",
           "run_chain", "check_folder", "default_folder", "LocalExecutor", "DaskExecutor"]
