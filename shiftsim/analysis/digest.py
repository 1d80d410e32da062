"""What a run's results amount to: peaks per quantity and entity, the worst step, and how to label numbers.

Shared by the end-of-run summary, the plots and the report. Efforts are split by
what they are: coordinates of prismatic motion carry forces (N), revolute ones
torques (N m). A joint's *pin load* is the magnitude of the force its parent side
exerts on its child side (N, the force part of ``wrench_world``), loop-closing
joints included. Numbers are printed by :func:`number`, which never prints ``-0``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from ..loads import CARRIES_NOTHING
from ..model import PRISMATIC
from ..scenario.definition import Scenario, angle_unit_of
from ..scenario.run import Run
from ..scenario.runner import StepResult
from ..scenario.sweep import Parameter

FORCE, TORQUE = "force", "torque"
NO_DEFLECTION = 1e-9  # m: deflections below this are rounding noise of rigid structures


@dataclass(frozen=True)
class Peak:
    """The largest magnitude of a quantity: its signed value, where (entity) and when (step)."""

    value: float
    entity: str
    step: StepResult


def number(value: float, digits: int = 4) -> str:
    """``value`` to ``digits`` significant digits; a value that rounds to zero prints ``0``, never ``-0``."""
    text = f"{value:.{digits}g}"
    return text[1:] if text.startswith("-") and float(text) == 0.0 else text


def effort_kinds(scenario: Scenario) -> dict[str, tuple[str, ...]]:
    """Per joint (scenario name): ``force`` or ``torque`` for each of its coordinates."""
    kinds = {}
    for machine in scenario.machines:
        model = machine.model
        for joint in model.joints:
            kinds[machine.name(joint.name)] = tuple(
                FORCE if model.node_kind[model.coordinate_node[c]] == PRISMATIC else TORQUE for c in joint.coordinates)
    return kinds


def efforts(scenario: Scenario, step: StepResult,
            kinds: dict[str, tuple[str, ...]] | None = None) -> dict[str, list[tuple[str, float]]]:
    """The step's tracked efforts by kind: ``{force: [(label, N)], torque: [(label, N m)]}``.

    A multi-coordinate joint gives one entry per coordinate, labelled ``name[i]``. ``kinds``:
    :func:`effort_kinds` of the scenario, when the caller has it (it is the same at every step).
    """
    kinds = effort_kinds(scenario) if kinds is None else kinds
    out: dict[str, list[tuple[str, float]]] = {FORCE: [], TORQUE: []}
    for name, joint in step.joints.items():
        values = joint["effort"] if isinstance(joint["effort"], list) else [joint["effort"]]
        for i, (kind, value) in enumerate(zip(kinds[name], values)):
            out[kind].append((name if len(values) == 1 else f"{name}[{i}]", float(value)))
    return out


def deflections(step: StepResult) -> dict[str, float]:
    """Magnitude of every tracked frame's deflection at a step (m)."""
    return {name: float(np.linalg.norm(frame["deflection"])) for name, frame in step.frames.items()}


def pin_forces(step: StepResult) -> dict[str, np.ndarray]:
    """Every tracked joint's reaction force at a step, world axes (3,), N: the parent side on the child side."""
    return {name: np.asarray(joint["wrench_world"][:3], float) for name, joint in step.joints.items()}


def _peaks(entries: Iterable[tuple[str, float, StepResult]],
           best: dict[str, Peak] | None = None) -> dict[str, Peak]:
    """Per entity, the entry of largest magnitude (first on ties), in order of first appearance: a running
    maximum over ``entries`` (consumed one at a time, never held), kept in ``best`` when given."""
    best = {} if best is None else best
    for entity, value, step in entries:
        if entity not in best or abs(value) > abs(best[entity].value):
            best[entity] = Peak(value, entity, step)
    return best


def deflection_peaks(steps: Iterable[StepResult]) -> dict[str, Peak]:
    """Per tracked frame, its largest deflection magnitude (m) and where."""
    return _peaks((name, value, s) for s in steps for name, value in deflections(s).items())


def effort_peaks(scenario: Scenario, steps: Iterable[StepResult]) -> dict[str, dict[str, Peak]]:
    """Per kind (force, torque) and tracked joint coordinate, its largest |effort| (signed value, N or N m)."""
    kinds = effort_kinds(scenario)
    found: dict[str, dict[str, Peak]] = {FORCE: {}, TORQUE: {}}
    for s in steps:
        for kind, entries in efforts(scenario, s, kinds).items():
            _peaks(((label, value, s) for label, value in entries), found[kind])
    return {kind: peaks for kind, peaks in found.items() if peaks}


def pin_load_peaks(steps: Iterable[StepResult]) -> dict[str, Peak]:
    """Per tracked joint, its largest pin load (force magnitude, N) and where."""
    return _peaks((name, float(np.linalg.norm(f)), s) for s in steps for name, f in pin_forces(s).items())


def force_level(scenario: Scenario, steps: Sequence[StepResult]) -> float:
    """The run's force scale: its largest tracked effort or pin load (N; N m as if at a 1 m lever). An effort below
    :data:`CARRIES_NOTHING` of it is round-off, even when every effort is as small (a joint nothing turns)."""
    efforts_ = [abs(p.value) for found in effort_peaks(scenario, steps).values() for p in found.values()]
    return max([*efforts_, *(p.value for p in pin_load_peaks(steps).values())], default=0.0)


def closest_approaches(steps: Sequence[StepResult]) -> dict[str, tuple[dict[str, Any], StepResult]]:
    """Per machine pair (``a - b``), its pair result (``distance`` m, ``in_collision``, ``closest``, ``points``)
    at the step of least distance, and that step; empty without collision checks."""
    best: dict[str, tuple[dict[str, Any], StepResult]] = {}
    for step in steps:
        for pair in step.collisions or []:
            key = f"{pair['a']} - {pair['b']}"
            if key not in best or pair["distance"] < best[key][0]["distance"]:
                best[key] = (pair, step)
    return best


def peak_deflection(steps: Sequence[StepResult]) -> Peak | None:
    peaks = deflection_peaks(steps)
    return max(peaks.values(), key=lambda p: p.value, default=None)


def peak_efforts(scenario: Scenario, steps: Sequence[StepResult]) -> dict[str, Peak]:
    """Largest |effort| of each kind over every step and tracked joint."""
    return {kind: max(found.values(), key=lambda p: abs(p.value))
            for kind, found in effort_peaks(scenario, steps).items()}


def closest_step(steps: Sequence[StepResult]) -> StepResult | None:
    """The converged step where two machines come closest (collision scenarios), else None."""
    found = closest_approaches([s for s in steps if s.converged])
    return min(found.values(), key=lambda item: item[0]["distance"])[1] if found else None


def worst_step(scenario: Scenario, steps: Sequence[StepResult]) -> StepResult | None:
    """The converged step with the largest tracked deflection; when nothing deflects measurably
    (under :data:`NO_DEFLECTION`), the one with the largest tracked force, else torque. First on ties."""
    converged = [s for s in steps if s.converged]
    peak = peak_deflection(converged)
    if peak is not None and peak.value >= NO_DEFLECTION:
        return peak.step
    loads = peak_efforts(scenario, converged)
    for kind in (FORCE, TORQUE):
        if kind in loads:
            return loads[kind].step
    return converged[0] if converged else None


def carrying(peaks: dict[str, dict[str, Peak]], level: float | None = None) -> dict[str, dict[str, Peak]]:
    """The peaks above :data:`CARRIES_NOTHING` of ``level`` (default: the largest of all kinds; N and N m compared as
    if at a 1 m lever)."""
    if level is None:
        level = max((abs(p.value) for found in peaks.values() for p in found.values()), default=0.0)
    return {kind: {n: p for n, p in found.items() if abs(p.value) > CARRIES_NOTHING * level}
            for kind, found in peaks.items()}


def shown_value(scenario: Scenario, parameter: Parameter, value: float) -> tuple[float, str]:
    """A swept value as people read it, and its unit: angles in the scenario's ``angle_unit``."""
    if parameter.unit == "rad":
        return float(scenario.angle(value)), angle_unit_of(parameter.unit, scenario.angle_unit)
    return value, parameter.unit


def parameter_text(scenario: Scenario, step: StepResult) -> str:
    """``name = value unit, ...`` of a step's swept values ('' without a sweep); angles in the scenario's unit."""
    parts = []
    for p in scenario.sweep.parameters:
        value, unit = shown_value(scenario, p, step.parameters[p.name])
        parts.append(f"{p.name} = {number(value)}{'' if unit in ('-', '') else ' ' + unit}")
    return ", ".join(parts)


def step_text(scenario: Scenario, step: StepResult) -> str:
    values = parameter_text(scenario, step)
    return f"step {step.index}" + (f" ({values})" if values else "")


def force_unit(value: float, kind: str) -> tuple[float, str]:
    """The scale and unit an effort of this size reads best in: (1e-3, kN) from 10 kN on, else (1, N); N m alike."""
    unit = "N" if kind == FORCE else "N m"
    return (1e-3, f"k{unit}") if abs(value) >= 1e4 else (1.0, unit)


def force_text(value: float, kind: str) -> str:
    """An effort with a readable unit: N or kN, N m or kN m."""
    scale, unit = force_unit(value, kind)
    return f"{number(value * scale)} {unit}"


def least_margins(steps: Sequence[StepResult]) -> dict[str, tuple[float, list[str], StepResult]]:
    """Per standing machine (id): its smallest tipping margin over the steps (m), the tipping edge and the step."""
    least: dict[str, tuple[float, list[str], StepResult]] = {}
    for step in steps:
        for machine_id, record in step.ground.items():
            margin = record["tipping_margin"]
            if margin is not None and (machine_id not in least or margin < least[machine_id][0]):
                least[machine_id] = (margin, record["tipping_edge"], step)
    return least


def result_lines(scenario: Scenario, steps: list[StepResult]) -> list[str]:
    """What the run found: peak deflection, forces and torques, actuators, the least tipping margin of each
    machine standing on the ground, collisions, failed steps."""
    lines = []
    deflection = peak_deflection(steps)
    if deflection is not None and deflection.value < NO_DEFLECTION:
        lines.append("  peak deflection  none measurable (< 1 nm) at the tracked frames")
    elif deflection is not None:
        lines.append(f"  peak deflection  {number(deflection.value * 1e3)} mm at {deflection.entity}, "
                     f"{step_text(scenario, deflection.step)}")
    found = peak_efforts(scenario, steps)
    # round-off is not a peak: an effort below CARRIES_NOTHING of the run's force level (pin loads included)
    carried = carrying({kind: {peak.entity: peak} for kind, peak in found.items()}, force_level(scenario, steps))
    for kind, peak in found.items():
        if carried[kind]:
            lines.append(f"  peak {kind:11s} {force_text(peak.value, kind)} at {peak.entity}, "
                         f"{step_text(scenario, peak.step)}")
    if found and not any(carried.values()):
        lines.append("  peak effort      none: every tracked joint's effort is 0 or round-off")
    lines += actuator_lines(scenario, steps)
    for machine_id, (margin, edge, step) in least_margins(steps).items():
        lines.append(f"  least margin    {number(margin)} m to tipping, {machine_id} over {' - '.join(edge)}, "
                     f"{step_text(scenario, step)}")
    if "collision" in (scenario.document or {}):
        from ..scenario.collisions import collision_summary

        lines.append(f"  collisions      {collision_summary(scenario, steps)}")
    failed = [s for s in steps if not s.converged]
    shown = 5
    for step in failed[:shown]:
        reasons = "; ".join(f"{f['machine']}: {f['message']}" for f in step.failures)
        lines.append(f"  FAILED {step_text(scenario, step)}: {_clip(reasons, 160)}")
    if len(failed) > shown:
        lines.append(f"  ... and {len(failed) - shown} more failed steps (see results.json)")
    return lines


def count_line(scenario: Scenario, steps: list[StepResult]) -> str:
    failed = sum(not s.converged for s in steps)
    count = f"{len(steps)} step" + ("s" if len(steps) != 1 else "")
    return f"{scenario.name}: {count}, {len(steps) - failed} converged, {failed} failed"


def capacity_lines(document: dict[str, Any] | None) -> list[str]:
    """The summary's capacity line from a run's capacity document (None: the scenario has no capacity analysis, or
    the run was stopped): the smallest rated load over the lift points and where, or why there is none."""
    if document is None:
        return []
    if "error" in document:
        return [f"  capacity        not computed: {document['error']}"]
    invalid = [p for p in document["points"] if not p["valid"]]
    lines = [f"  capacity        {document['load']}: lift point INVALID, no rating (step {p['step']}: "
             f"{'; '.join(p['invalid'])})" for p in invalid[:3]]
    if len(invalid) > 3:
        lines.append(f"                  ... and {len(invalid) - 3} more invalid lift points (capacity.csv)")
    rated = [p for p in document["points"] if p["rated_mass"] is not None]
    if not rated:
        return [f"  capacity        {document['load']}: no lift point has a rated load", *lines]
    least = min(rated, key=lambda p: p["rated_mass"])
    return [f"  capacity        {document['load']}: rated {least['rated_mass'] / 1000:.3g} t at least (step "
            f"{least['step']}: radius {least['radius']:.2f} m, height {least['height']:.2f} m, {least['governs']} "
            f"governs) over {len(document['points'])} lift points; capacity.csv", *lines]


def summary_lines(run: Run, folder: str, files: list[str], how: str, skipped: dict[str, str]) -> list[str]:
    """The one-screen report printed at the end of ``shiftsim run``; ``skipped``: the plots not drawn, file name ->
    why (:func:`shiftsim.plots.registry.skipped_plots`)."""
    scenario, steps = run.scenario, run.steps
    lines = [f"{count_line(scenario, steps)} ({how})", *result_lines(scenario, steps), *capacity_lines(run.capacity)]
    for name, reason in skipped.items():
        lines.append(f"  not plotted     {name}: {reason}")
    lines.append(f"  outputs in {folder}: {', '.join(files)}")
    return lines


def actuator_lines(scenario: Scenario, steps: list[StepResult]) -> list[str]:
    """Per Mdx platform: its largest actuator force, and the steps with legs outside the actuator range."""
    lines = []
    for machine in scenario.machines:
        if machine.vocabulary.kind != "mdx":
            continue
        solved = [s for s in steps if machine.id in s.actuators]
        if not solved:
            continue
        legs = machine.vocabulary.legs
        value, leg, step = max(((f, legs[k], s) for s in solved for k, f in enumerate(s.actuators[machine.id]["forces"])),
                               key=lambda item: abs(item[0]))
        low, high = (1e3 * v for v in machine.vocabulary.limits)
        outside = [s for s in solved if not all(s.actuators[machine.id]["in_range"])]
        reach = (f"legs outside actuatorLen [{number(low)}, {number(high)}] mm at {len(outside)} of {len(solved)} steps "
                 f"(first: {step_text(scenario, outside[0])})" if outside
                 else f"all legs within actuatorLen [{number(low)}, {number(high)}] mm")
        lines.append(f"  actuators       {machine.id}: peak {force_text(value, FORCE)} at {machine.name(leg)}, "
                     f"{step_text(scenario, step)}; {reach}")
    return lines


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."
