"""The plots of quantities against the sweep: deflection, efforts, pin loads, convergence, Mdx actuators.

* ``deflection.png``: deflection magnitude of the tracked frames (mm);
* ``efforts.png``: joint efforts, forces (prismatic coordinates) and torques (revolute) in separate panels;
* ``pin_loads.png``: per tracked joint (loop-closing joints included) the magnitude of the force it transmits
  (parent side on child side), and with ``outputs.plot_options.pin_loads.components`` its world x, y, z
  components in panels below;
* ``convergence.png``: Newton iterations and final residual per step, with the solver's tolerance;
* ``actuators.png`` (scenarios with an Mdx platform): per platform, the six actuator forces and leg lengths,
  the actuator length range as dashed lines and legs outside it marked.

Series that coincide over the whole sweep (a cylinder and its oil column in series carry the same force) are
drawn once, labelled with every name. Failed steps leave gaps and are marked by red dotted lines. Only the
:func:`~.figures.series_budget` largest series are drawn (a grid: one line style per series, as many as there
are styles); the title says how many were left out.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullLocator

from ..analysis.digest import (FORCE, TORQUE, carrying, deflections, effort_kinds, efforts, force_unit, number,
                               pin_forces)
from ..scenario.definition import Scenario
from ..scenario.runner import StepResult
from ..statics import SolverOptions
from .data import Ranking, StepPeaks
from .figures import (FAILED_COLOUR, bars, figure, largest, legend, mark_failures, plot_series, png, series_budget,
                      style, sweep_axis)

AXES = "xyz"


def _left_out(shown: int, total: int, idle: int = 0, what: str = "") -> str:
    notes = [f"{shown} largest of {total}"] if shown < total else []
    if idle:
        notes.append(f"{idle} carrying no {what} left out")
    return f" ({'; '.join(notes)})" if notes else ""


def deflection_plot(scenario: Scenario, steps: list[StepResult], size: tuple[float, float], dpi: int,
                    ranking: Ranking | None = None) -> bytes:
    """Deflection magnitudes of the tracked frames, those of the largest peaks (``ranking``: the run's peaks, by default
    reduced here) drawn."""
    axis = sweep_axis(scenario, steps)
    ranking = StepPeaks.of(scenario, steps) if ranking is None else ranking
    peaks = {name: peak.value for name, peak in ranking.deflection.items()}
    shown = largest(peaks, series_budget(axis))
    values = {s.index: deflections(s) for s in steps}
    fig, axes = figure(size, dpi)
    ax = axes[0, 0]
    plot_series(ax, axis, lambda s, name: values[s.index].get(name, math.nan), shown, scale=1e3)
    mark_failures(ax, axis, steps)
    ax.set_title(f"{scenario.name}: deflection of the tracked frames{_left_out(len(shown), len(peaks))}")
    ax.set_xlabel(axis.label)
    ax.set_ylabel("deflection magnitude |d| (mm)")
    ax.grid(True, alpha=0.3)
    legend(ax)
    return png(fig)


def efforts_plot(scenario: Scenario, steps: list[StepResult], size: tuple[float, float], dpi: int,
                 ranking: Ranking | None = None) -> bytes:
    """Efforts per kind; a joint whose peak effort is below :data:`~.digest.CARRIES_NOTHING` of the run's force
    level (its largest effort or pin load, :func:`~.digest.force_level`; N and N m compared as if at a 1 m lever)
    carries nothing (round-off) and is left out, as is a panel left empty. The peaks from ``ranking`` (the run's
    peaks, by default reduced here)."""
    axis = sweep_axis(scenario, steps)
    ranking = StepPeaks.of(scenario, steps) if ranking is None else ranking
    every = ranking.effort_peaks()
    found = carrying(every, ranking.force_level())
    kinds = [k for k in (FORCE, TORQUE) if found.get(k)]
    kinds_of = effort_kinds(scenario)  # per joint, force or torque per coordinate: the same at every step
    per_step = {s.index: {kind: dict(entries) for kind, entries in efforts(scenario, s, kinds_of).items()}
                for s in steps}
    fig, axes = figure(size, dpi, max(1, len(kinds)), 1, sharex=True, top=0.8)
    for ax, kind in zip(axes[:, 0], kinds):
        peaks = {name: abs(peak.value) for name, peak in found[kind].items()}
        shown = largest(peaks, series_budget(axis))
        scale, unit = force_unit(max(peaks.values()), kind)
        plot_series(ax, axis, lambda s, name: per_step[s.index][kind].get(name, math.nan), shown, scale)
        mark_failures(ax, axis, steps)
        more = _left_out(len(shown), len(peaks), len(every[kind]) - len(peaks), kind)
        ax.set_ylabel(f"{kind} ({unit})")
        ax.set_title(f"joint {kind}s{more}: positive pushes the child toward +q", fontsize=10)
        ax.axhline(0.0, color="black", linewidth=0.6)
        ax.grid(True, alpha=0.3)
        legend(ax)
    axes[-1, 0].set_xlabel(axis.label)
    fig.suptitle(f"{scenario.name}: joint efforts")
    return png(fig)


def pin_loads_plot(scenario: Scenario, steps: list[StepResult], size: tuple[float, float], dpi: int,
                   ranking: Ranking | None = None) -> bytes:
    """Pin load magnitudes, and the world components on request; joints carrying nothing (by their peaks in
    ``ranking``, the run's peaks, by default reduced here) are left out."""
    axis = sweep_axis(scenario, steps)
    ranking = StepPeaks.of(scenario, steps) if ranking is None else ranking
    every = {name: peak.value for name, peak in ranking.pins.items()}
    level = max(every.values(), default=0.0)
    peaks = {name: value for name, value in every.items() if value > 1e-9 * level}
    shown = largest(peaks, series_budget(axis))
    forces = {s.index: pin_forces(s) for s in steps}
    options = scenario.outputs.plot_options.get("pin_loads", {})
    components = [k for k in range(3) if options.get("components")
                  and any(abs(f[name][k]) > 1e-9 * level for f in forces.values() for name in shown if name in f)]
    scale, unit = force_unit(level, FORCE)

    def value(step: StepResult, name: str, component: int | None) -> float:
        force = forces[step.index].get(name)
        if force is None:
            return math.nan
        return float(np.linalg.norm(force)) if component is None else float(force[component])

    panels = [None, *components]
    fig, axes = figure(size, dpi, len(panels), 1, sharex=True, top=0.8)
    for ax, component in zip(axes[:, 0], panels):
        plot_series(ax, axis, lambda s, name: value(s, name, component), shown, scale)
        mark_failures(ax, axis, steps)
        if component is None:
            more = _left_out(len(shown), len(peaks), len(every) - len(peaks), "force")
            ax.set_ylabel(f"pin load |F| ({unit})")
            ax.set_title(f"force each joint transmits, magnitude{more}", fontsize=10)
            ax.set_ylim(bottom=0.0)
        else:
            ax.set_ylabel(f"F{AXES[component]} ({unit})")
            ax.set_title(f"world {AXES[component]} component (parent side on child side)", fontsize=10)
            ax.axhline(0.0, color="black", linewidth=0.6)
        ax.grid(True, alpha=0.3)
        legend(ax)
    if options.get("components") and len(components) < 3:
        zero = ", ".join(f"F{AXES[k]}" for k in range(3) if k not in components)
        axes[-1, 0].text(1.0, -0.02, f"{zero} = 0 at every step: not drawn", transform=axes[-1, 0].transAxes,
                         ha="right", va="top", fontsize=7, color="dimgray")
    axes[-1, 0].set_xlabel(axis.label)
    fig.suptitle(f"{scenario.name}: pin loads of the tracked joints")
    return png(fig)


def convergence_plot(scenario: Scenario, steps: list[StepResult], size: tuple[float, float], dpi: int) -> bytes:
    """Iterations as bars coloured by the step's verdict (stable, neutral, unstable, failed; one artist per verdict,
    :func:`~.figures.bars`; a step solved in 0 iterations is a mark on the axis, not an empty bar); residuals on a log axis with the solver's tolerance; a
    residual of exactly 0 is drawn on the axis floor with its own mark."""
    fig, axes = figure(size, dpi, 2, 1, sharex=True, top=0.55)
    top, bottom = axes[:, 0]
    index = np.array([s.index for s in steps])
    ok = np.array([s.converged for s in steps])
    iterations = np.array([s.iterations for s in steps])
    stability = np.array([s.stability for s in steps])
    verdicts = [(ok & (stability == verdict), colour, f"converged, {verdict}")
                for verdict, colour in (("stable", "tab:blue"), ("neutral", "tab:green"), ("unstable", "tab:orange"))]
    for chosen, colour, label in (*verdicts, (~ok, FAILED_COLOUR, "failed")):
        drawn = chosen & (iterations > 0)
        if drawn.any():
            bars(top, index[drawn], iterations[drawn], color=colour, label=label)
        zero = chosen & (iterations == 0)
        if zero.any():
            top.plot(index[zero], iterations[zero], "o" if colour != FAILED_COLOUR else "x", color=colour,
                     clip_on=False, label=f"{label} in 0 iterations")
    top.set_ylim(bottom=0.0, top=max(1, int(iterations.max(initial=0))) * 1.1)
    top.yaxis.set_major_locator(MaxNLocator(integer=True))
    top.set_ylabel("Newton iterations (-)")
    top.set_title("Newton iterations of the loaded solve per step (summed over machines), by verdict", fontsize=10)
    legend(top)
    top.grid(True, axis="y", alpha=0.3)

    options = SolverOptions()
    tolerance = max(options.force_tolerance, options.closure_tolerance)
    residual = np.array([math.nan if s.residual is None else s.residual for s in steps])
    positive = residual[np.isfinite(residual) & (residual > 0)]
    floor = 10.0 ** math.floor(math.log10(min(positive.min(initial=tolerance), tolerance))) / 10.0
    ceiling = max(positive.max(initial=tolerance), tolerance) * 10.0
    bottom.set_yscale("log")
    bottom.set_ylim(floor, ceiling)
    bottom.yaxis.set_major_locator(LogLocator(numticks=8))
    bottom.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.0e}"))  # plain text, no mathtext
    bottom.yaxis.set_minor_locator(NullLocator())  # ticks per decade are objects drawn one by one
    bottom.axhline(tolerance, color="black", linestyle="--", linewidth=1.0,
                   label=f"solver tolerance {tolerance:g} (per coordinate; shown: the norm over all)")
    for chosen, colour, marker, label in ((ok, "tab:blue", "o", "converged"), (~ok, FAILED_COLOUR, "x", "failed")):
        drawn = chosen & (residual > 0)
        if drawn.any():
            bottom.plot(index[drawn], residual[drawn], marker, color=colour, linestyle="none", label=label)
        zero = chosen & (residual == 0)
        if zero.any():
            bottom.plot(index[zero], np.full(zero.sum(), floor), "v", color=colour, markersize=8, clip_on=False,
                        linestyle="none", label=f"{label}, residual exactly 0 (drawn at the floor)")
    unsolved = np.isnan(residual)
    if unsolved.any():
        bottom.plot(index[unsolved], np.full(unsolved.sum(), floor), "x", color=FAILED_COLOUR, clip_on=False,
                    markersize=8, linestyle="none", label="no solve reached (no residual)")
    bottom.set_ylabel("final residual (scaled, -)")
    bottom.set_xlabel("step index (-)")
    bottom.set_title("residual: force balance relative to the largest force, and loop closure (m, rad)", fontsize=10)
    legend(bottom)
    bottom.grid(True, alpha=0.3)
    fig.suptitle(f"{scenario.name}: solver convergence")
    return png(fig)


def actuators_plot(scenario: Scenario, steps: list[StepResult], size: tuple[float, float], dpi: int) -> bytes:
    """Actuator forces and leg lengths of every Mdx platform against the swept parameter, with the length range."""
    axis = sweep_axis(scenario, steps)
    platforms = [m for m in scenario.machines if m.vocabulary.kind == "mdx"]
    fig, axes = figure(size, dpi, 2, len(platforms), sharex=True, top=0.8)
    for column, machine in enumerate(platforms):
        forces_ax, lengths_ax = axes[0, column], axes[1, column]
        legs = machine.vocabulary.legs
        for g, (suffix, group) in enumerate(axis.groups):
            xs = [axis.x(s) for s in group]
            records = [s.actuators.get(machine.id) for s in group]
            for k, leg in enumerate(legs):
                forces = [r["forces"][k] if r else math.nan for r in records]
                lengths = [r["lengths"][k] * 1e3 if r else math.nan for r in records]
                forces_ax.plot(xs, forces, **style(k, g), label=f"{machine.name(leg)}{suffix}")
                lengths_ax.plot(xs, lengths, **style(k, g), label=f"{machine.name(leg)}{suffix}")
        outside = [(axis.x(s), length * 1e3) for s in steps if machine.id in s.actuators
                   for length, ok in zip(s.actuators[machine.id]["lengths"], s.actuators[machine.id]["in_range"])
                   if not ok]
        if outside:
            lengths_ax.plot(*zip(*outside), "x", color=FAILED_COLOUR, markersize=9, label="outside actuatorLen")
        low, high = machine.vocabulary.limits
        for limit, end in ((low, "shortest"), (high, "longest")):
            lengths_ax.axhline(limit * 1e3, color="black", linestyle="--", linewidth=1.0,
                               label=f"actuatorLen {end}: {number(limit * 1e3)} mm")
        for ax in (forces_ax, lengths_ax):
            mark_failures(ax, axis, steps)
            ax.grid(True, alpha=0.3)
            legend(ax)
        forces_ax.axhline(0.0, color="black", linewidth=0.6)
        forces_ax.set_ylabel("actuator force (N), + pushes the platform")
        forces_ax.set_title(f"{machine.id}: actuator forces", fontsize=10)
        lengths_ax.set_ylabel("leg length (mm)")
        lengths_ax.set_title(f"{machine.id}: leg lengths and the actuator range", fontsize=10)
        lengths_ax.set_xlabel(axis.label)
    fig.suptitle(f"{scenario.name}: motion platform actuators")
    return png(fig)
