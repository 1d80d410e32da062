"""What a run's results amount to: peak deflection and efforts, the worst step, and how to label them.

Shared by the end-of-run summary and the plots. Efforts are split by what
they are: coordinates of prismatic motion carry forces (N), revolute ones
torques (N m).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import PRISMATIC
from .runner import StepResult
from .spec import Scenario

FORCE, TORQUE = "force", "torque"
NO_DEFLECTION = 1e-9  # m: deflections below this are rounding noise of rigid structures


@dataclass(frozen=True)
class Peak:
    """The largest magnitude of a quantity: its signed value, where (entity) and when (step)."""

    value: float
    entity: str
    step: StepResult


def effort_kinds(scenario: Scenario) -> dict[str, tuple[str, ...]]:
    """Per joint (scenario name): ``force`` or ``torque`` for each of its coordinates."""
    kinds = {}
    for machine in scenario.machines:
        model = machine.model
        for joint in model.joints:
            kinds[machine.name(joint.name)] = tuple(
                FORCE if model.node_kind[model.coordinate_node[c]] == PRISMATIC else TORQUE for c in joint.coordinates)
    return kinds


def efforts(scenario: Scenario, step: StepResult) -> dict[str, list[tuple[str, float]]]:
    """The step's tracked efforts by kind: ``{force: [(label, N)], torque: [(label, N m)]}``.

    A multi-coordinate joint gives one entry per coordinate, labelled ``name[i]``.
    """
    kinds = effort_kinds(scenario)
    out: dict[str, list[tuple[str, float]]] = {FORCE: [], TORQUE: []}
    for name, joint in step.joints.items():
        values = joint["effort"] if isinstance(joint["effort"], list) else [joint["effort"]]
        for i, (kind, value) in enumerate(zip(kinds[name], values)):
            out[kind].append((name if len(values) == 1 else f"{name}[{i}]", float(value)))
    return out


def deflections(step: StepResult) -> dict[str, float]:
    """Magnitude of every tracked frame's deflection at a step (m)."""
    return {name: float(np.linalg.norm(frame["deflection"])) for name, frame in step.frames.items()}


def peak_deflection(steps: list[StepResult]) -> Peak | None:
    best = None
    for step in steps:
        for name, value in deflections(step).items():
            if best is None or value > best.value:
                best = Peak(value, name, step)
    return best


def peak_efforts(scenario: Scenario, steps: list[StepResult]) -> dict[str, Peak]:
    """Largest |effort| of each kind over every step and tracked joint."""
    best: dict[str, Peak] = {}
    for step in steps:
        for kind, entries in efforts(scenario, step).items():
            for label, value in entries:
                if kind not in best or abs(value) > abs(best[kind].value):
                    best[kind] = Peak(value, label, step)
    return best


def worst_step(scenario: Scenario, steps: list[StepResult]) -> StepResult | None:
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


def parameter_text(scenario: Scenario, step: StepResult) -> str:
    """``name = value unit, ...`` of a step's swept values ('' without a sweep)."""
    return ", ".join(f"{p.name} = {step.parameters[p.name]:.4g}{'' if p.unit in ('-', '') else ' ' + p.unit}"
                     for p in scenario.sweep.parameters)


def step_text(scenario: Scenario, step: StepResult) -> str:
    values = parameter_text(scenario, step)
    return f"step {step.index}" + (f" ({values})" if values else "")


def force_text(value: float, kind: str) -> str:
    """An effort with a readable unit: N or kN, N m or kN m."""
    unit = "N" if kind == FORCE else "N m"
    return f"{value / 1e3:.4g} k{unit}" if abs(value) >= 1e4 else f"{value:.4g} {unit}"


def summary_lines(scenario: Scenario, steps: list[StepResult], folder: str, files: list[str], how: str) -> list[str]:
    """The one-screen report printed at the end of ``shiftsim run``."""
    failed = [s for s in steps if not s.converged]
    count = f"{len(steps)} step" + ("s" if len(steps) != 1 else "")
    lines = [f"{scenario.name}: {count}, {len(steps) - len(failed)} converged, {len(failed)} failed ({how})"]
    deflection = peak_deflection(steps)
    if deflection is not None and deflection.value < NO_DEFLECTION:
        lines.append("  peak deflection  none measurable (< 1 nm) at the tracked frames")
    elif deflection is not None:
        lines.append(f"  peak deflection  {deflection.value * 1e3:.4g} mm at {deflection.entity}, "
                     f"{step_text(scenario, deflection.step)}")
    for kind, peak in peak_efforts(scenario, steps).items():
        lines.append(f"  peak {kind:11s} {force_text(peak.value, kind)} at {peak.entity}, {step_text(scenario, peak.step)}")
    lines += actuator_lines(scenario, steps)
    if "collision" in (scenario.document or {}):
        from .collisions import collision_summary

        lines.append(f"  collisions      {collision_summary(scenario, steps)}")
    shown = 5
    for step in failed[:shown]:
        reasons = "; ".join(f"{f['machine']}: {f['message']}" for f in step.failures)
        lines.append(f"  FAILED {step_text(scenario, step)}: {_clip(reasons, 160)}")
    if len(failed) > shown:
        lines.append(f"  ... and {len(failed) - shown} more failed steps (see results.json)")
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
        reach = (f"legs outside actuatorLen [{low:g}, {high:g}] mm at {len(outside)} of {len(solved)} steps "
                 f"(first: {step_text(scenario, outside[0])})" if outside
                 else f"all legs within actuatorLen [{low:g}, {high:g}] mm")
        lines.append(f"  actuators       {machine.id}: peak {force_text(value, FORCE)} at {machine.name(leg)}, "
                     f"{step_text(scenario, step)}; {reach}")
    return lines


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."
