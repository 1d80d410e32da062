"""Scenarios: machines placed in a world, loads, sweeps; built and run headless.

``load_scenario(path)`` reads and validates a scenario file (``definition``), loading
its machines (``loading``: model files of every format, attachments; ``machines``:
what a machine's names set; ``mfk``, ``mdx``: the names MFK machines and Mdx
platforms bring; ``ground``: machines standing on the ground); ``run`` checks that it
fits, solves its steps on an executor (``runner``, ``executors``), checks collisions
when asked (``collisions``, over :mod:`shiftsim.collision`) and runs its
``analysis.capacity`` (``capacity_analysis``). What it makes is a :class:`~.run.Run`;
:mod:`shiftsim.output` writes it, :mod:`shiftsim.plots` draws it and
:mod:`shiftsim.analysis` puts its numbers into words.
The format is documented in docs/scenarios.md and ``shiftsim/schemas/scenario.schema.json``.
"""

from __future__ import annotations

from .definition import Scenario, build_scenario, load_scenario
from .executors import DaskExecutor, Executor, LocalExecutor
from .run import Run, WarningCallback, execute, run
from .chain import run_chain
from .runner import StepCallback, StepResult

__all__ = ["Scenario", "StepResult", "Run", "load_scenario", "build_scenario", "run", "execute",
           "run_chain", "LocalExecutor", "DaskExecutor"]
