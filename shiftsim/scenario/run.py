"""Running a scenario: the one :func:`run` that ``shiftsim run`` and :func:`shiftsim.run_scenario` share.

A run checks that the scenario fits (its sweep's step count, and the memory of
one solve per machine times the local processes solving at once), solves every
step on an executor, computes what spans the steps (collisions), and runs the
scenario's ``analysis.capacity`` and ``analysis.sensitivity`` (not for a run stopped by a signal). What it
makes is a :class:`Run`; writing it is :mod:`shiftsim.output`'s job, which
never solves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..interrupts import Interrupted
from ..solve_memory import check_solve_memory
from .capacity_analysis import analysis_spec, run_analysis
from .definition import Scenario
from .executors import Executor, LocalExecutor
from .runner import StepCallback, StepResult
from .sensitivity_analysis import run_analysis as run_sensitivity
from .sensitivity_analysis import sensitivity_spec
from .sweep import check_size

WarningCallback = Callable[[str], None]


@dataclass(frozen=True)
class Run:
    """What running a scenario made.

    ``steps``: the solved steps sorted by index (all of them, or those solved before ``interrupted``, the
    signal that stopped the run); ``capacity``: the ``analysis.capacity`` document (None without one, or for a
    stopped run; ``{"load": ..., "error": message}`` when the analysis could not be solved); ``sensitivity``: the
    ``analysis.sensitivity`` section (:mod:`.sensitivity_analysis`; None without one, or for a stopped run).
    """

    scenario: Scenario
    steps: list[StepResult]
    capacity: dict[str, Any] | None = None
    interrupted: Interrupted | None = None
    sensitivity: dict[str, Any] | None = None

    @property
    def planned(self) -> int | None:
        """The number of steps the sweep has, for a stopped run (None for a complete one)."""
        return len(self.scenario.sweep.table()) if self.interrupted else None


def check_fits(scenario: Scenario, executor: Executor) -> None:
    """Refuse a scenario this machine cannot run before anything is solved: too many steps (InputError), or
    a machine whose solve, once per local process, needs more memory than there is (exit 1)."""
    check_size(scenario.sweep, str(scenario.source))
    copies = executor.jobs if isinstance(executor, LocalExecutor) else 1  # a cluster's workers have their own
    for machine in scenario.machines:
        check_solve_memory(machine.model, f"{scenario.source}: machine {machine.id!r}", copies=copies)


def execute(scenario: Scenario, executor: Executor, on_step: StepCallback | None = None,
            on_warning: WarningCallback | None = None) -> list[StepResult]:
    """Solve every step of the scenario (chains on the executor); results sorted by step index,
    finished by :func:`finish`. A bad ``analysis.capacity`` or ``analysis.sensitivity`` is refused before any step is
    solved."""
    analysis_spec(scenario)
    sensitivity_spec(scenario)
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


def run(scenario: Scenario, executor: Executor, on_step: StepCallback | None = None,
        on_warning: WarningCallback | None = None) -> Run:
    """Check that the scenario fits (:func:`check_fits`), solve its steps (:func:`execute`) and run its capacity
    analysis. An :class:`~shiftsim.interrupts.Interrupted` raised while solving (under
    :func:`~shiftsim.interrupts.signals_raise`) ends the run with the steps solved so far and no capacity."""
    check_fits(scenario, executor)
    solved: list[StepResult] = []

    def on_solved(step: StepResult) -> None:
        solved.append(step)
        if on_step is not None:
            on_step(step)

    try:
        steps = execute(scenario, executor, on_solved, on_warning)
    except Interrupted as stop:
        return Run(scenario, finish(scenario, solved, on_warning), None, stop)
    return Run(scenario, steps, run_analysis(scenario), sensitivity=run_sensitivity(scenario, steps))


__all__ = ["Run", "WarningCallback", "check_fits", "execute", "finish", "run"]
