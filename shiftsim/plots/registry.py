"""The PNG plots of a run: one record per plot kind (:class:`Plot`) in :data:`PLOTS`, and :func:`render`.

A plot kind is its name (the file is ``<name>.png``), its draw function, its figure size, when it would come out
empty (and why: such a plot is not written, the run summary and the report say why) and when it applies to a
scenario at all (asking for one that does not apply is a scenario error, checked before solving). The scenario
schema's ``outputs.plots`` enum and docs/scenarios.md list exactly these names (tested). The kinds:

* ``deflection``, ``efforts``, ``pin_loads``, ``convergence``, ``actuators``: against the sweep (:mod:`.sweep`);
* ``pose``: the machines in the world at the first, last and worst or closest steps (:mod:`.pose`);
* ``collisions``: machine pair distances (:mod:`.collisions`);
* ``footprint``: a machine standing on the ground, from above (:func:`.ground.footprint_plot`).

Every plot draws from the run's results object (:func:`.data.steps_of`), so a results folder read back can be
plotted again (``shiftsim plot``). The peaks the plots rank and leave out series by (and say why a plot is empty by)
come from the run's :class:`~shiftsim.analysis.digest.RunDigest` (reduced while it solved), or are reduced from the
steps read back (:class:`~.data.StepPeaks`), once for every plot. Everything is drawn on matplotlib's Agg canvas (no
pyplot, no display needed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..analysis.digest import CARRIES_NOTHING, NO_DEFLECTION, carrying
from ..errors import Problems, ScenarioError
from ..scenario.collisions import checks_collisions, collision_settings
from ..scenario.definition import Scenario
from ..scenario.runner import StepResult
from .data import Ranking, Results, StepPeaks, steps_of

Size = tuple[float, float]
Draw = Callable[..., bytes]  # (scenario, steps, size, dpi, ranking=None) -> PNG bytes
Reason = Callable[[Scenario, Sequence[StepResult], Ranking], "str | None"]


@dataclass(frozen=True)
class Plot:
    """One plot kind.

    ``draw(scenario, steps, size, dpi, ranking=None) -> PNG bytes`` with ``size`` (width, height) in inches (pixels
    are inches x dpi) and ``ranking`` the run's peaks (:class:`~.data.Ranking`; by default reduced from ``steps`` by
    the plots that rank series by their peaks); ``empty_when(scenario, steps, ranking)``: why the plot would show
    nothing, or None; ``applies(scenario)``: why the plot cannot be drawn for
    this scenario at all, or None; ``default``: drawn when the scenario names no plots (and it applies)."""

    name: str
    draw: Draw
    size: Size
    empty_when: Reason
    applies: Callable[[Scenario], "str | None"]
    default: bool = True


def _drawn_by(module: str, function: str, ranked: bool = False) -> Draw:
    """The draw function ``function`` of the plot module ``module``, imported when a plot is first drawn: the plot
    modules bring matplotlib, which a run loads only once it draws (its plots are chosen and checked before solving).
    ``ranked``: the function ranks series by the run's peaks, and is given them (:class:`~.data.Ranking`)."""
    def draw(scenario: Scenario, steps: list[StepResult], size: Size, dpi: int,
             ranking: Ranking | None = None) -> bytes:
        from . import collisions, ground, pose, sweep

        drawing = getattr({"collisions": collisions, "ground": ground, "pose": pose, "sweep": sweep}[module], function)
        return drawing(scenario, steps, size, dpi, ranking) if ranked else drawing(scenario, steps, size, dpi)
    draw.__name__ = draw.__qualname__ = function
    return draw


def _always(scenario: Scenario, *steps) -> None:
    return None


def _deflection_empty(scenario: Scenario, steps: Sequence[StepResult], ranking: Ranking) -> str | None:
    peak = ranking.peak_deflection()
    if peak is None:
        return "no tracked frame was solved"
    if peak.value < NO_DEFLECTION:
        return f"no tracked frame deflects measurably (largest {peak.value:.2g} m, under 1 nm)"
    return None


def _efforts_empty(scenario: Scenario, steps: Sequence[StepResult], ranking: Ranking) -> str | None:
    peaks = ranking.effort_peaks()
    if not peaks:
        return "no tracked joint was solved"
    largest = max(abs(p.value) for found in peaks.values() for p in found.values())
    if largest == 0.0:
        return "no tracked joint carries an effort (every effort is 0)"
    level = ranking.force_level()
    if not any(carrying(peaks, level).values()):
        return (f"no tracked joint carries an effort: the largest, {largest:.2g}, is round-off (under "
                f"{CARRIES_NOTHING:g} of the run's largest pin load, {level:.4g} N)")
    return None


def _pin_loads_empty(scenario: Scenario, steps: Sequence[StepResult], ranking: Ranking) -> str | None:
    peaks = ranking.pins
    if not peaks:
        return "no tracked joint was solved"
    if max(p.value for p in peaks.values()) > 0.0:
        return None
    return "no tracked joint carries a force (every pin load is 0)"


def _pose_empty(scenario: Scenario, steps: Sequence[StepResult], ranking: Ranking) -> str | None:
    return None if any(s.converged for s in steps) else "no step converged"


def _actuators_empty(scenario: Scenario, steps: Sequence[StepResult], ranking: Ranking) -> str | None:
    return None if any(s.actuators for s in steps) else "no motion platform was solved at any step"


def _collisions_empty(scenario: Scenario, steps: Sequence[StepResult], ranking: Ranking) -> str | None:
    return None if any(s.collisions for s in steps) else "no pair of machines was posed at any step"


def _footprint_empty(scenario: Scenario, steps: Sequence[StepResult], ranking: Ranking) -> str | None:
    machine = next(m for m in scenario.machines if m.support is not None)
    return None if any(machine.id in s.ground for s in steps) else f"machine {machine.id!r} converged at no step"


def _has_platform(scenario: Scenario) -> str | None:
    return None if any(m.vocabulary.kind == "mdx" for m in scenario.machines) else "the scenario has no Mdx platform"


def _checks_pairs(scenario: Scenario) -> str | None:
    if not checks_collisions(scenario):
        return "the scenario has no 'collision'"
    if len(scenario.machines) < 2 and not collision_settings(scenario).self_collision:
        return "the scenario has one machine and no 'collision.self': there is no pair to check"
    return None


def _stands(scenario: Scenario) -> str | None:
    standing = any(m.support is not None for m in scenario.machines)
    return None if standing else "no machine has 'contacts' (or tyres, with a 'ground')"


PLOTS: dict[str, Plot] = {plot.name: plot for plot in (
    Plot("deflection", _drawn_by("sweep", "deflection_plot", ranked=True), (9.0, 6.0), _deflection_empty, _always),
    Plot("efforts", _drawn_by("sweep", "efforts_plot", ranked=True), (9.0, 7.0), _efforts_empty, _always),
    Plot("pin_loads", _drawn_by("sweep", "pin_loads_plot", ranked=True), (9.0, 7.0), _pin_loads_empty, _always),
    Plot("pose", _drawn_by("pose", "pose_plot"), (14.0, 8.0), _pose_empty, _always),
    Plot("convergence", _drawn_by("sweep", "convergence_plot"), (9.0, 6.0), _always, _always),
    Plot("actuators", _drawn_by("sweep", "actuators_plot"), (10.0, 8.0), _actuators_empty, _has_platform),
    Plot("collisions", _drawn_by("collisions", "collisions_plot"), (9.0, 6.0), _collisions_empty, _checks_pairs),
    Plot("footprint", _drawn_by("ground", "footprint_plot"), (11.0, 5.5), _footprint_empty, _stands),
)}
"""Every plot kind by name, in the order plots are drawn and listed."""

FIGURE_SIZES: dict[str, Size] = {name: plot.size for name, plot in PLOTS.items()}
"""Figure size (width, height) in inches of each plot kind (read from :data:`PLOTS`)."""


def chosen_plots(scenario: Scenario) -> tuple[str, ...]:
    """The plots a run of ``scenario`` draws: its ``outputs.plots`` as written, else every default plot that applies.
    Raises :class:`~shiftsim.errors.ScenarioError` (file, ``outputs.plots[k]``, why) for a named plot that does not
    apply to the scenario."""
    asked = scenario.outputs.plots
    if asked is None:
        return tuple(name for name, plot in PLOTS.items() if plot.default and plot.applies(scenario) is None)
    problems = Problems(str(scenario.source), ScenarioError)
    for k, name in enumerate(asked):
        reason = PLOTS[name].applies(scenario)
        if reason is not None:
            problems.add(f"outputs.plots[{k}]", f"{name!r} cannot be drawn: {reason}", "plots that apply to the scenario")
    problems.raise_if_any()
    return tuple(asked)


def skipped_plots(scenario: Scenario, steps: Sequence[StepResult], only: Sequence[str] | None = None,
                  ranking: Ranking | None = None) -> dict[str, str]:
    """The plots the scenario asks for (or ``only`` these) that would show nothing, file name -> why; they are not
    written. ``ranking``: the steps' peaks (by default reduced here)."""
    ranking = StepPeaks.of(scenario, steps) if ranking is None else ranking
    skipped = {}
    for name in chosen_plots(scenario) if only is None else only:
        reason = PLOTS[name].empty_when(scenario, steps, ranking)
        if reason is not None:
            skipped[f"{name}.png"] = reason
    return skipped


def render(scenario: Scenario, results: Results, dpi: int | None = None, only: Sequence[str] | None = None,
           ranking: Ranking | None = None) -> tuple[dict[str, bytes], dict[str, str]]:
    """The plots of ``results`` (a run of ``scenario``): PNG bytes of every plot the scenario asks for (or ``only``
    these) that has something to show, keyed by file name, in that order; and the others, file name -> why
    (:func:`skipped_plots`). ``dpi``: the scenario's unless given. ``ranking``: the run's peaks (its own
    :class:`~shiftsim.analysis.digest.RunDigest`, reduced while it solved; by default reduced from the steps read
    back, :class:`~.data.StepPeaks`)."""
    steps = steps_of(scenario, results)
    ranking = StepPeaks.of(scenario, steps) if ranking is None else ranking
    names = chosen_plots(scenario) if only is None else tuple(only)
    skipped = skipped_plots(scenario, steps, names, ranking)
    dpi = scenario.outputs.dpi if dpi is None else dpi
    drawn = {f"{name}.png": PLOTS[name].draw(scenario, steps, PLOTS[name].size, dpi, ranking) for name in names
             if f"{name}.png" not in skipped}
    return drawn, skipped


def analysis_charts(summary: dict[str, Any], dpi: int) -> dict[str, bytes]:
    """The charts of a run's analyses, from its results document's summary sections: ``capacity.png`` (the
    lift-capacity chart, when the capacity analysis was solved) and ``sensitivity.png`` (tornado charts, when a step
    has sensitivities)."""
    from .ground import capacity_chart
    from .tornado import sensitivity_chart

    charts = {}
    capacity = summary.get("capacity")
    if capacity is not None and "error" not in capacity:
        charts["capacity.png"] = capacity_chart(capacity, dpi)
    chart = sensitivity_chart(summary["sensitivity"], dpi) if summary.get("sensitivity") else None
    if chart is not None:
        charts["sensitivity.png"] = chart
    return charts


__all__ = ["FIGURE_SIZES", "PLOTS", "Plot", "analysis_charts", "chosen_plots", "render", "skipped_plots"]
