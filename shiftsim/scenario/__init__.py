"""Scenarios: machines placed in a world, loads, sweeps; run headless into results files and plots.

``load_scenario(path)`` reads and validates a scenario file (``spec``), loading
its machines (``loading``: model files of every format, attachments; ``machines``:
what a machine's names set; ``mfk``, ``mdx``: the names MFK machines and Mdx
platforms bring); ``execute`` solves its steps on an executor (``runner``,
``executors``) and checks collisions when asked (``shiftsim.collision``);
``write_results`` writes results.json, the tidy CSV and the plots (``outputs``, ``plots``).
The format is documented in docs/scenarios.md and ``shiftsim/schemas/scenario.schema.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..jsonio import dumps
from .executors import DaskExecutor, Executor, LocalExecutor
from .outputs import RESULTS_CSV, RESULTS_JSON, check_folder, csv_bytes, default_folder, results_document, write_files
from .runner import StepCallback, StepResult, run_chain
from .spec import Scenario, build_scenario, load_scenario


def execute(scenario: Scenario, executor: Executor, on_step: StepCallback | None = None,
            on_warning: Callable[[str], None] | None = None) -> list[StepResult]:
    """Solve every step of the scenario (chains on the executor); results sorted by step index.

    A scenario with ``collision`` then gets each step's ``collisions`` from the solved poses
    (:func:`shiftsim.collision.scenario.attach_collisions`, all steps in one batch); the collision
    world's warnings (machines without shapes, ...) go to ``on_warning``.
    """
    steps = executor.run(scenario, scenario.sweep.chains(), on_step)
    if "collision" in (scenario.document or {}):
        from ..collision.scenario import attach_collisions

        for warning in attach_collisions(scenario, steps):
            if on_warning is not None:
                on_warning(warning)
    return steps


def write_results(scenario: Scenario, steps: list[StepResult], folder: Path) -> list[str]:
    """Render and write every output file into ``folder`` as one atomic set; return the file names written."""
    from .plots import render

    files = {RESULTS_JSON: dumps(results_document(scenario, steps))}
    if scenario.outputs.csv:
        files[RESULTS_CSV] = csv_bytes(scenario, steps)
    files.update(render(scenario, steps))
    write_files(folder, files)
    return list(files)


__all__ = ["Scenario", "StepResult", "load_scenario", "build_scenario", "execute", "write_results", "run_chain",
           "check_folder", "default_folder", "LocalExecutor", "DaskExecutor"]
