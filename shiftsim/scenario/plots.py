"""PNG plots of a run, drawn with matplotlib's Agg canvas (no pyplot, no display needed).

* ``deflection.png``: deflection magnitude of the tracked frames (mm) against the swept parameter;
* ``efforts.png``: joint efforts against the swept parameter, forces (prismatic
  coordinates) and torques (revolute) in separate panels;
* ``pose.png``: side (x-z) and top (x-y) views of every machine in the world at
  the first, last and worst (``digest.worst_step``) converged steps, the
  unloaded reference dashed underneath; deflections are exaggerated by a
  stated factor when they would not show at true scale;
* ``convergence.png``: Newton iterations and final residual per step;
* ``actuators.png`` (scenarios with an Mdx platform): per platform, the six
  actuator forces and leg lengths against the swept parameter, the actuator
  length range as dashed lines and legs outside it marked;
* ``collisions.png`` (scenarios with ``collision``): drawn by
  :func:`shiftsim.collision.plot.collisions_plot`, the distance of every
  machine pair against the swept parameter with the margin line.

The x axis is the first parameter of a line sweep, the last (chain) parameter
of a grid with one curve per combination of the others, or the step index
without a sweep. Failed steps leave gaps and are marked by red dotted lines.
Figure sizes in inches are :data:`FIGURE_SIZES`; pixels are inches x dpi.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from ..spec import FIXED
from .digest import FORCE, NO_DEFLECTION, TORQUE, deflections, efforts, step_text, worst_step
from .machines import Machine
from .runner import StepResult, machine_values
from .spec import Scenario
from .sweep import Parameter

FIGURE_SIZES = {"deflection": (9.0, 6.0), "efforts": (9.0, 7.0), "pose": (14.0, 8.0), "convergence": (9.0, 6.0),
                "actuators": (10.0, 8.0), "collisions": (9.0, 6.0)}
MAX_SERIES = 10


def unit_text(parameter: Parameter) -> str:
    """What a swept value is measured in, for axis labels."""
    if parameter.kind == "load":
        return "load factor, -"
    if parameter.kind == "pose" and parameter.unit == "-":
        return "normalized, -"
    if parameter.kind == "geometry":
        return "MFK value, in the configuration's units"
    return parameter.unit
FAILED_COLOUR = "tab:red"


@dataclass(frozen=True)
class _Axis:
    """The x axis of the sweep plots: label, value of a step, and the curves (legend suffix, steps in order)."""

    label: str
    x: Callable[[StepResult], float]
    groups: list[tuple[str, list[StepResult]]]


def _axis(scenario: Scenario, steps: list[StepResult]) -> _Axis:
    parameters = scenario.sweep.parameters
    if not parameters:
        return _Axis("step", lambda s: float(s.index), [("", steps)])
    if scenario.sweep.mode == "line":
        p = parameters[0]
        others = f" (with {', '.join(q.name for q in parameters[1:])})" if len(parameters) > 1 else ""
        return _Axis(f"{p.name} ({unit_text(p)}){others}", lambda s: s.parameters[p.name], [("", steps)])
    p = parameters[-1]
    groups: dict[tuple, list[StepResult]] = {}
    for step in steps:
        key = tuple((q.name, step.parameters[q.name]) for q in parameters[:-1])
        groups.setdefault(key, []).append(step)
    named = [(", " + ", ".join(f"{n} = {v:.4g}" for n, v in key), group) for key, group in groups.items()]
    return _Axis(f"{p.name} ({unit_text(p)})", lambda s: s.parameters[p.name], named)


def _figure(name: str, dpi: int) -> Figure:
    figure = Figure(figsize=FIGURE_SIZES[name], dpi=dpi, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "v", "D")


def _style(entity: int, group: int) -> dict:
    """One colour per entity (frame, joint), one line style and marker per curve group of a grid."""
    return dict(color=f"C{entity % 10}", linestyle=LINE_STYLES[group % len(LINE_STYLES)],
                marker=MARKERS[group % len(MARKERS)], markersize=3)


def _legend(ax) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best")


def _mark_failures(ax, axis: _Axis, steps: list[StepResult]) -> None:
    failed = [axis.x(s) for s in steps if not s.converged]
    for k, x in enumerate(failed):
        ax.axvline(x, color=FAILED_COLOUR, linestyle=":", linewidth=1.2, label="failed step" if k == 0 else None)


def _largest(peaks: dict[str, float], count: int) -> list[str]:
    """Names of the ``count`` largest peaks, in their original order."""
    keep = set(sorted(peaks, key=lambda n: -peaks[n])[:count])
    return [n for n in peaks if n in keep]


def deflection_plot(scenario: Scenario, steps: list[StepResult], dpi: int) -> bytes:
    axis = _axis(scenario, steps)
    values = [deflections(s) for s in steps]
    peaks: dict[str, float] = {}
    for row in values:
        for name, value in row.items():
            peaks[name] = max(peaks.get(name, 0.0), value)
    shown = _largest(peaks, max(1, MAX_SERIES // len(axis.groups)))
    figure = _figure("deflection", dpi)
    ax = figure.add_subplot()
    by_index = {s.index: row for s, row in zip(steps, values)}
    for g, (suffix, group) in enumerate(axis.groups):
        xs = [axis.x(s) for s in group]
        for k, name in enumerate(shown):
            ys = [by_index[s.index].get(name, math.nan) * 1e3 for s in group]
            ax.plot(xs, ys, **_style(k, g), label=f"{name}{suffix}")
    _mark_failures(ax, axis, steps)
    largest = max(peaks.values(), default=0.0)
    if largest < NO_DEFLECTION:
        ax.set_ylim(0.0, 1.0)
        ax.text(0.5, 0.5, "no measurable deflection (< 1 nm): the tracked frames do not move under the loads",
                transform=ax.transAxes, ha="center", va="center", fontsize=9, color="dimgray")
    more = f" ({len(shown)} largest of {len(peaks)})" if len(shown) < len(peaks) else ""
    ax.set_title(f"{scenario.name}: deflection of the tracked frames{more}")
    ax.set_xlabel(axis.label)
    ax.set_ylabel("deflection magnitude |d| (mm)")
    ax.grid(True, alpha=0.3)
    _legend(ax)
    return _png(figure)


def efforts_plot(scenario: Scenario, steps: list[StepResult], dpi: int) -> bytes:
    """Efforts per kind; a joint whose peak effort is below 1e-9 of the largest effort of the run (N and N m
    compared as if at a 1 m lever) carries nothing and is left out, as is a panel left empty."""
    axis = _axis(scenario, steps)
    per_step = {s.index: {kind: dict(entries) for kind, entries in efforts(scenario, s).items()} for s in steps}
    peaks: dict[str, dict[str, float]] = {FORCE: {}, TORQUE: {}}
    for s in steps:
        for kind, entries in per_step[s.index].items():
            for name, value in entries.items():
                peaks[kind][name] = max(peaks[kind].get(name, 0.0), abs(value))
    level = max((p for kind in peaks.values() for p in kind.values()), default=0.0)
    carrying = {kind: {n: p for n, p in found.items() if p > 1e-9 * level} for kind, found in peaks.items()}
    kinds = [k for k in (FORCE, TORQUE) if carrying[k]]
    figure = _figure("efforts", dpi)
    axes = figure.subplots(max(1, len(kinds)), 1, sharex=True, squeeze=False)[:, 0]
    for ax, kind in zip(axes, kinds):
        shown = _largest(carrying[kind], max(1, MAX_SERIES // len(axis.groups)))
        scale, prefix = (1e-3, "k") if max(carrying[kind].values()) >= 1e4 else (1.0, "")
        for g, (suffix, group) in enumerate(axis.groups):
            xs = [axis.x(s) for s in group]
            for k, name in enumerate(shown):
                ys = [per_step[s.index][kind].get(name, math.nan) * scale for s in group]
                ax.plot(xs, ys, **_style(k, g), label=f"{name}{suffix}")
        _mark_failures(ax, axis, steps)
        unit = f"{prefix}N" if kind == FORCE else f"{prefix}N m"
        notes = [f"{len(shown)} largest of {len(carrying[kind])}"] if len(shown) < len(carrying[kind]) else []
        idle = len(peaks[kind]) - len(carrying[kind])
        if idle:
            notes.append(f"{idle} carrying no {kind} left out")
        more = f" ({'; '.join(notes)})" if notes else ""
        ax.set_ylabel(f"{kind} ({unit})")
        ax.set_title(f"joint {kind}s{more}: positive pushes the child toward +q", fontsize=10)
        ax.axhline(0.0, color="black", linewidth=0.6)
        ax.grid(True, alpha=0.3)
        _legend(ax)
    if not kinds:
        axes[0].text(0.5, 0.5, "no tracked joint carries an effort", transform=axes[0].transAxes,
                     ha="center", va="center")
    axes[-1].set_xlabel(axis.label)
    figure.suptitle(f"{scenario.name}: joint efforts")
    return _png(figure)


@dataclass(frozen=True)
class _Skeleton:
    """Index pairs of frames drawn as lines (bodies and prismatic joints), joint frames, ground attachments."""

    lines: np.ndarray
    joints: np.ndarray
    fixed: np.ndarray


def _skeleton(machine: Machine) -> _Skeleton:
    """Each body as lines from its origin to its other frames; joints as lines from parent to child frame."""
    model = machine.model
    by_length = sorted(model.body_names, key=len, reverse=True)  # frame names may hold ':' (attached ground frames)
    body_of = [next(b for b in by_length if name.startswith(b + ":")) for name in model.frame_names]
    origin = {model.body_names[b]: model.body_origin_frame[b] for b in range(len(model.body_names))}
    lines = [(origin[body], f) for f, body in enumerate(body_of) if body != FIXED and f != origin[body]]
    lines += [(j.parent_frame, j.child_frame) for j in model.joints]
    joints = [j.child_frame for j in model.joints]
    fixed = sorted({f for j in model.joints for f in (j.parent_frame, j.child_frame) if body_of[f] == FIXED})
    return _Skeleton(np.array(lines, dtype=int).reshape(-1, 2), np.array(joints, dtype=int), np.array(fixed, dtype=int))


def _exaggeration(deflection: float, size: float) -> float:
    """A power of ten (>= 1) that makes the largest deflection about 5 % of the machine size; 1 if none."""
    if deflection <= 1e-9 * size:
        return 1.0
    ratio = 0.05 * size / deflection
    return 10.0 ** math.floor(math.log10(ratio)) if ratio >= 10.0 else 1.0


def _frame_paths(axis: _Axis, count: int = MAX_SERIES) -> list[np.ndarray]:
    """World positions (n, 3) of up to ``count`` tracked frames along each curve group's converged steps."""
    paths = []
    for _, group in axis.groups:
        steps = [s for s in group if s.converged]
        names = list(dict.fromkeys(name for s in steps for name in s.frames))[:count]
        paths += [np.array([s.frames[n]["position"] for s in steps if n in s.frames]) for n in names]
    return [p for p in paths if len(p) > 1]


def pose_plot(scenario: Scenario, steps: list[StepResult], dpi: int) -> bytes:
    converged = [s for s in steps if s.converged]
    chosen: dict[int, list[str]] = {}
    if converged:
        for role, step in (("first", converged[0]), ("last", converged[-1]), ("worst", worst_step(scenario, steps))):
            chosen.setdefault(step.index, []).append(role)
    by_index = {s.index: s for s in steps}
    figure = _figure("pose", dpi)
    columns = max(1, len(chosen))
    axes = figure.subplots(2, columns, squeeze=False)
    skeletons = {m.id: _skeleton(m) for m in scenario.machines}
    paths = _frame_paths(_axis(scenario, steps))
    for column, (index, roles) in enumerate(chosen.items()):
        step = by_index[index]
        loaded, reference = {}, {}
        for machine in scenario.machines:
            if machine.id in step.q:
                setup = machine.setup(machine_values(scenario, machine, step.parameters))
                loaded[machine.id] = machine.world_poses(step.q[machine.id], setup).frames[:, :3, 3]
                reference[machine.id] = machine.world_poses(step.q_reference[machine.id], setup).frames[:, :3, 3]
        points = np.concatenate(list(reference.values()))
        size = max(float(np.ptp(points, axis=0).max()), 1e-3)
        largest = max(float(np.abs(loaded[k] - reference[k]).max()) for k in loaded)
        factor = _exaggeration(largest, size)
        scaled = {k: reference[k] + factor * (loaded[k] - reference[k]) for k in loaded}
        scale_text = f"deflection x{factor:g}" if factor > 1 else "true scale"
        for row, (vertical, label) in enumerate(((2, "z (m)"), (1, "y (m)"))):
            ax = axes[row, column]
            for k, machine_id in enumerate(loaded):
                bones = skeletons[machine_id]
                for positions, style in ((reference[machine_id], dict(colors="gray", linestyles="--", linewidths=1.0)),
                                         (scaled[machine_id], dict(colors=f"C{k}", linewidths=2.0))):
                    ax.add_collection(LineCollection(positions[bones.lines][:, :, [0, vertical]], **style))
                joints = scaled[machine_id][bones.joints]
                ax.plot(joints[:, 0], joints[:, vertical], "o", color=f"C{k}", markersize=3)
                fixed = reference[machine_id][bones.fixed]
                ax.plot(fixed[:, 0], fixed[:, vertical], "^", color="black", markersize=6)
                ax.plot([], [], color=f"C{k}", linewidth=2.0, label=f"{machine_id} loaded ({scale_text})")
            for path in paths:
                ax.plot(path[:, 0], path[:, vertical], ":", color="tab:purple", linewidth=1.0)
            if paths:
                ax.plot([], [], ":", color="tab:purple", label="tracked frames over the sweep")
            ax.plot([], [], color="gray", linestyle="--", label="unloaded reference")
            ax.plot([], [], "^", color="black", label="ground attachments")
            ax.autoscale_view()
            ax.set_aspect("equal", adjustable="datalim")
            ax.set_xlabel("x (m)")
            ax.set_ylabel(label)
            ax.grid(True, alpha=0.3)
            view = "side view (x-z)" if row == 0 else "top view (x-y)"
            ax.set_title(f"{' = '.join(roles)}: {step_text(scenario, step)}\n{view}", fontsize=9)
            _legend(ax)
    if not chosen:
        axes[0, 0].text(0.5, 0.5, "no converged step to draw", transform=axes[0, 0].transAxes, ha="center")
    figure.suptitle(f"{scenario.name}: poses in the world frame (z up) at the first, last and worst steps "
                    "(worst: largest deflection, else largest effort)")
    return _png(figure)


def convergence_plot(scenario: Scenario, steps: list[StepResult], dpi: int) -> bytes:
    figure = _figure("convergence", dpi)
    top, bottom = figure.subplots(2, 1, sharex=True)
    index = np.array([s.index for s in steps])
    ok = np.array([s.converged for s in steps])
    iterations = np.array([s.iterations for s in steps])
    failed_label = "failed" if np.any(~ok) else None
    top.bar(index[ok], iterations[ok], color="tab:blue", label="converged")
    top.bar(index[~ok], iterations[~ok], color=FAILED_COLOUR, label=failed_label)
    top.set_ylabel("Newton iterations")
    top.set_title("Newton iterations of the loaded solve per step (summed over machines)", fontsize=10)
    _legend(top)
    top.grid(True, axis="y", alpha=0.3)
    residual = np.array([math.nan if s.residual is None else max(s.residual, 1e-300) for s in steps])
    bottom.semilogy(index[ok], residual[ok], "o", color="tab:blue", label="converged")
    bottom.semilogy(index[~ok], residual[~ok], "x", color=FAILED_COLOUR, markersize=8, label=failed_label)
    bottom.set_ylabel("final residual (scaled, -)")
    bottom.set_xlabel("step")
    bottom.set_title("residual: force balance relative to the largest force, and loop closure (m, rad)", fontsize=10)
    _legend(bottom)
    bottom.grid(True, alpha=0.3)
    figure.suptitle(f"{scenario.name}: solver convergence")
    return _png(figure)


def actuators_plot(scenario: Scenario, steps: list[StepResult], dpi: int) -> bytes:
    """Actuator forces and leg lengths of every Mdx platform against the swept parameter, with the length range."""
    axis = _axis(scenario, steps)
    platforms = [m for m in scenario.machines if m.vocabulary.kind == "mdx"]
    figure = _figure("actuators", dpi)
    axes = figure.subplots(2, len(platforms), sharex=True, squeeze=False)
    for column, machine in enumerate(platforms):
        forces_ax, lengths_ax = axes[0, column], axes[1, column]
        legs = machine.vocabulary.legs
        for g, (suffix, group) in enumerate(axis.groups):
            xs = [axis.x(s) for s in group]
            records = [s.actuators.get(machine.id) for s in group]
            for k, leg in enumerate(legs):
                forces = [r["forces"][k] if r else math.nan for r in records]
                lengths = [r["lengths"][k] * 1e3 if r else math.nan for r in records]
                forces_ax.plot(xs, forces, **_style(k, g), label=f"{machine.name(leg)}{suffix}")
                lengths_ax.plot(xs, lengths, **_style(k, g), label=f"{machine.name(leg)}{suffix}")
        outside = [(axis.x(s), length * 1e3) for s in steps if machine.id in s.actuators
                   for length, ok in zip(s.actuators[machine.id]["lengths"], s.actuators[machine.id]["in_range"])
                   if not ok]
        if outside:
            lengths_ax.plot(*zip(*outside), "x", color=FAILED_COLOUR, markersize=9, label="outside actuatorLen")
        low, high = machine.vocabulary.limits
        for value, end in ((low, "shortest"), (high, "longest")):
            lengths_ax.axhline(value * 1e3, color="black", linestyle="--", linewidth=1.0,
                               label=f"actuatorLen {end}: {value * 1e3:g} mm")
        for ax in (forces_ax, lengths_ax):
            _mark_failures(ax, axis, steps)
            ax.grid(True, alpha=0.3)
            _legend(ax)
        forces_ax.axhline(0.0, color="black", linewidth=0.6)
        forces_ax.set_ylabel("actuator force (N), + pushes the platform")
        forces_ax.set_title(f"{machine.id}: actuator forces", fontsize=10)
        lengths_ax.set_ylabel("leg length (mm)")
        lengths_ax.set_title(f"{machine.id}: leg lengths and the actuator range", fontsize=10)
        lengths_ax.set_xlabel(axis.label)
    figure.suptitle(f"{scenario.name}: motion platform actuators")
    return _png(figure)


def collisions_plot(scenario: Scenario, steps: list[StepResult], dpi: int) -> bytes:
    from ..collision.plot import collisions_plot as plot

    return plot(scenario, steps, dpi)


PLOTTERS = {"deflection": deflection_plot, "efforts": efforts_plot, "pose": pose_plot, "convergence": convergence_plot,
            "actuators": actuators_plot, "collisions": collisions_plot}


def render(scenario: Scenario, steps: list[StepResult]) -> dict[str, bytes]:
    """PNG bytes of every plot the scenario asks for, keyed by file name."""
    return {f"{name}.png": PLOTTERS[name](scenario, steps, scenario.outputs.dpi) for name in scenario.outputs.plots}
