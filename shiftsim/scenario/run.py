"""Running a scenario: the one :func:`run` that ``shiftsim run`` and :func:`shiftsim.run_scenario` share.

A run checks that the scenario fits (its sweep's step count, and the memory of
one solve per machine times the local processes solving at once), solves every
step on an executor (each step's collisions checked where it is solved; see
``executors``), and runs the scenario's ``analysis.capacity`` and ``analysis.sensitivity`` (not for a run stopped by a signal). What it
makes is a :class:`Run`; writing it is :mod:`shiftsim.output`'s job, which
never solves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from ..interrupts import Interrupted, signals_deferred
from ..solve_memory import check_solve_memory
from .definition import Scenario
from .chain import attach_blocks
from .executors import Executor, LocalExecutor, PartResult, Route, SinkFactory, StepSink
from .runner import StepCallback, StepResult
from .sweep import check_size

WarningCallback = Callable[[str], None]
ProgressCallback = Callable[[int, int], None]  # (steps solved, of which failed) since the last call


@dataclass(frozen=True)
class Run:
    """What running a scenario made.

    ``steps``: the solved steps sorted by index (all of them, or those solved before ``interrupted``, the
    signal that stopped the run), when the run held them (:func:`run`'s ``keep_steps``; else none), ``solved`` and
    ``failed`` counting them all; ``capacity``: the
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


class Output(Protocol):
    """Where a run's steps go besides the run itself (:class:`shiftsim.output.partitions.RunOutput`: the results
    folder's store and the run's digest): ``local`` takes the steps solved in this process, ``remote`` (picklable)
    opens the sink of each part a worker solves, ``collect`` takes each part's result here, ``discard`` removes what a
    part that never ended wrote."""

    local: StepSink
    remote: SinkFactory

    def collect(self, result: PartResult) -> None: ...

    def discard(self, name: str) -> None: ...


@dataclass(frozen=True)
class _Callback:
    """A sink handing each step to a callback (in this process)."""

    on_step: StepCallback

    def add_steps(self, steps: list[StepResult]) -> None:
        for step in steps:
            self.on_step(step)

    def close(self) -> None:
        return None


class _Tally:
    """What the parts of a run handed back, collected in this process: steps solved, failed, kept (when kept)."""

    def __init__(self, scenario: Scenario, keep: bool, on_step: StepCallback | None, on_warning: WarningCallback | None,
                 output: Output | None):
        self.scenario, self.keep, self.on_step, self.on_warning, self.output = scenario, keep, on_step, on_warning, output
        self.solved, self.failed, self.kept = 0, [], []
        self.warned: set[str] = set()

    def route(self, progress: ProgressCallback | None) -> Route:
        output = self.output
        local = output.local if output is not None else None if self.on_step is None else _Callback(self.on_step)
        return Route(local, None if output is None else output.remote, self.keep, self.collect, progress,
                     None if output is None else output.discard)

    def collect(self, result: PartResult) -> None:
        """A part's result taken in whole (a signal waits: its steps are counted, held and handed to the output
        together, or not at all)."""
        with signals_deferred():
            for warning in result.warnings:
                if warning not in self.warned:
                    self.warned.add(warning)
                    if self.on_warning is not None:
                        self.on_warning(warning)
            steps = attach_blocks(self.scenario, result.kept)
            if self.output is not None:
                self.output.collect(result)
            if not result.delivered and self.on_step is not None:  # steps that came back from a worker
                for step in steps:
                    self.on_step(step)
            self.solved += result.solved
            self.failed += result.failed
            if self.keep:
                self.kept += steps

    def steps(self) -> list[StepResult]:
        return sorted(self.kept, key=lambda step: step.index)


def _analysis_specs(scenario: Scenario) -> tuple[Any, Any]:
    """The scenario's ``analysis.capacity`` and ``analysis.sensitivity`` read and checked (ScenarioError naming the
    place; None for a section it does not have): their modules are imported only for a scenario that has them."""
    sections = (scenario.document if isinstance(scenario.document, dict) else {}).get("analysis") or {}
    capacity = sensitivity = None
    if sections.get("capacity") is not None:
        from .capacity_analysis import analysis_spec

        capacity = analysis_spec(scenario)
    if sections.get("sensitivity") is not None:
        from .sensitivity_analysis import sensitivity_spec

        sensitivity = sensitivity_spec(scenario)
    return capacity, sensitivity


def _analyses(scenario: Scenario, steps: list[StepResult], capacity: Any,
              sensitivity: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The run's ``capacity`` document and ``sensitivity`` section from its steps (None each without the analysis):
    :func:`~.capacity_analysis.chart_analysis`, :func:`~.sensitivity_analysis.run_analysis`."""
    document = chart = section = None
    if capacity is not None:
        from .capacity_analysis import chart_analysis

        document, chart = chart_analysis(scenario)
    if sensitivity is not None:
        from .sensitivity_analysis import run_analysis

        section = run_analysis(scenario, steps, chart)
    return document, section


def execute(scenario: Scenario, executor: Executor, on_step: StepCallback | None = None,
            on_warning: WarningCallback | None = None) -> list[StepResult]:
    """Solve every step of the scenario (chains on the executor, each step's collisions checked when the scenario
    has a ``collision`` section); results sorted by step index. A bad ``analysis.capacity`` or
    ``analysis.sensitivity`` is refused before any step is solved."""
    _analysis_specs(scenario)
    tally = _Tally(scenario, True, on_step, on_warning, None)
    executor.run(scenario, scenario.sweep.chains(), tally.route(None))
    return tally.steps()


def run(scenario: Scenario, executor: Executor, on_step: StepCallback | None = None,
        on_warning: WarningCallback | None = None, keep_steps: bool = True, output: Output | None = None,
        progress: ProgressCallback | None = None) -> Run:
    """Check that the scenario fits (:func:`check_fits`), solve its steps (:func:`execute`) and run its capacity
    analysis. An :class:`~shiftsim.interrupts.Interrupted` raised while solving (under
    :func:`~shiftsim.interrupts.signals_raise`) ends the run with the steps solved so far (every one: workers end
    their parts with theirs) and no capacity.

    ``output``: where the steps go as they are solved, in this process or in the workers that solve them (the
    results folder's store and the digest; :mod:`shiftsim.output.partitions`); else ``on_step`` gets every step in
    this process (steps solved in workers travel back for it, a chain at a time), collisions checked; ``progress(solved, failed)``
    hears of steps solved, a batch at a time. ``keep_steps=False``: the run holds no step (its memory does not grow
    with the sweep) and counts them (``Run.solved``, ``Run.failed``). A scenario with ``analysis.sensitivity`` holds
    them all the same (the analysis starts from each step's equilibrium)."""
    if output is not None and on_step is not None:
        raise ValueError("a run takes its steps to an output or to on_step, not both")
    check_fits(scenario, executor)
    capacity, sensitivity = _analysis_specs(scenario)  # refused before any step is solved, as by execute
    keep_steps = keep_steps or sensitivity is not None
    tally = _Tally(scenario, keep_steps, on_step, on_warning, output)
    try:
        executor.run(scenario, scenario.sweep.chains(), tally.route(progress))
    except Interrupted as stop:
        return Run(scenario, tally.steps(), None, stop, solved=tally.solved, failed=tuple(sorted(tally.failed)))
    steps = tally.steps()
    document, section = _analyses(scenario, steps, capacity, sensitivity)
    return Run(scenario, steps, document, sensitivity=section, solved=tally.solved, failed=tuple(sorted(tally.failed)))


__all__ = ["Output", "Run", "WarningCallback", "check_fits", "execute", "run"]
