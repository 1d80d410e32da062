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
from .capacity_analysis import analysis_spec, chart_analysis
from .definition import Scenario
from .executors import Executor, LocalExecutor
from .runner import StepCallback, StepResult
from .sensitivity_analysis import run_analysis as run_sensitivity
from .sensitivity_analysis import sensitivity_spec
from .sweep import check_size

WarningCallback = Callable[[str], None]
COLLISION_BATCH = 256  # solved steps whose collisions are checked at once (pybullet queries in one batch)


@dataclass(frozen=True)
class Run:
    """What running a scenario made.

    ``steps``: the solved steps sorted by index (all of them, or those solved before ``interrupted``, the
    signal that stopped the run), when the run held them (:func:`run`'s ``keep_steps``); a run that did not holds
    only the steps a stop left unwritten, and ``solved`` and ``failed`` count them all; ``capacity``: the
    ``analysis.capacity`` document (None without one, or for a stopped run; ``{"load": ..., "error": message}`` when
    the analysis could not be solved); ``sensitivity``: the ``analysis.sensitivity`` section
    (:mod:`.sensitivity_analysis`; None without one, or for a stopped run); ``solved``: the steps solved;
    ``failed``: the indices of those that did not converge, increasing.
    """

    scenario: Scenario
    steps: list[StepResult]
    capacity: dict[str, Any] | None = None
    interrupted: Interrupted | None = None
    sensitivity: dict[str, Any] | None = None
    solved: int = -1  # -1: len(steps)
    failed: tuple[int, ...] | None = None  # None: those of steps

    def __post_init__(self) -> None:
        if self.solved < 0:
            object.__setattr__(self, "solved", len(self.steps))
        if self.failed is None:
            object.__setattr__(self, "failed", tuple(step.index for step in self.steps if not step.converged))

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
    solved poses (:func:`attach_collisions`, the steps without them in one batch)."""
    attach_collisions(scenario, steps, on_warning)
    return sorted(steps, key=lambda step: step.index)


def attach_collisions(scenario: Scenario, steps: list[StepResult], on_warning: WarningCallback | None = None,
                      warned: set[str] | None = None) -> None:
    """Check the collisions of those ``steps`` that have none yet, in one batch
    (:func:`shiftsim.scenario.collisions.attach_collisions`; nothing without a ``collision`` section); the
    collision world's warnings (machines without shapes, ...) go to ``on_warning``, each once if ``warned``
    (the warnings given so far) is kept between batches."""
    unchecked = [step for step in steps if step.collisions is None]
    if not unchecked or "collision" not in (scenario.document or {}):
        return
    from .collisions import attach_collisions as attach

    for warning in attach(scenario, unchecked):
        if on_warning is not None and (warned is None or warning not in warned):
            on_warning(warning)
        if warned is not None:
            warned.add(warning)


def run(scenario: Scenario, executor: Executor, on_step: StepCallback | None = None,
        on_warning: WarningCallback | None = None, keep_steps: bool = True) -> Run:
    """Check that the scenario fits (:func:`check_fits`), solve its steps (:func:`execute`) and run its capacity
    analysis. An :class:`~shiftsim.interrupts.Interrupted` raised while solving (under
    :func:`~shiftsim.interrupts.signals_raise`) ends the run with the steps solved so far and no capacity.

    ``on_step`` gets every step once it is complete: a scenario that checks collisions has them checked in
    batches of :data:`COLLISION_BATCH` solved steps before the batch goes on. ``keep_steps=False``: the run does
    not hold the steps it has handed to ``on_step`` (which writes and reduces them), so its memory does not grow
    with the sweep; it counts them (``Run.solved``, ``Run.failed``). A scenario with ``analysis.sensitivity`` holds
    them all the same (the analysis starts from each step's equilibrium)."""
    check_fits(scenario, executor)
    keep_steps = keep_steps or sensitivity_spec(scenario) is not None
    solved: list[StepResult] = []  # handed on and held
    pending: list[StepResult] = []  # solved, their collisions not checked yet
    count, failed = 0, []
    warned: set[str] = set()
    batch = COLLISION_BATCH if "collision" in (scenario.document or {}) else 1

    def hand_on() -> None:
        nonlocal count
        attach_collisions(scenario, pending, on_warning, warned)
        while pending:
            step = pending.pop(0)
            count += 1
            if not step.converged:
                failed.append(step.index)
            if keep_steps:
                solved.append(step)
            if on_step is not None:
                on_step(step)

    def on_solved(step: StepResult) -> None:
        pending.append(step)
        if len(pending) >= batch:
            hand_on()

    analysis_spec(scenario)  # refused before any step is solved, as by execute
    sensitivity_spec(scenario)
    try:
        executor.run(scenario, scenario.sweep.chains(), on_solved)
        hand_on()
    except Interrupted as stop:
        # solved but not handed on: held, to be written (the stream takes the steps it has not had from the run's)
        unwritten = finish(scenario, pending, on_warning)
        if keep_steps:  # counted from the steps held: the signal may have landed between a step's count and its holding
            count, failed = len(solved), [step.index for step in solved if not step.converged]
        return Run(scenario, sorted([*solved, *unwritten], key=lambda step: step.index), None, stop,
                   solved=count + len(unwritten),
                   failed=tuple(sorted([*failed, *(step.index for step in unwritten if not step.converged)])))
    steps = sorted(solved, key=lambda step: step.index)
    document, chart = chart_analysis(scenario)
    return Run(scenario, steps, document, sensitivity=run_sensitivity(scenario, steps, chart), solved=count, failed=tuple(sorted(failed)))


__all__ = ["Run", "WarningCallback", "attach_collisions", "check_fits", "execute", "finish", "run"]
