"""Collision checks of a scenario: its ``collision`` settings, posing its steps, and per-step pair results.

A scenario checks collisions when it holds (see docs/collision.md)::

    "collision": {"margin": 0.05, "self": false}

``margin`` (m, >= 0, default 0): a pair's ``in_collision`` flag is set when its
signed distance is below it (the shapes are *in collision* when the distance is
<= 0, *within margin* when it is between 0 and the margin: the summary keeps them apart); ``self`` (default false): also check each machine
against itself, skipping adjacent bodies (see ``world``).

A machine at a step is what its vocabulary makes of the step's swept values
(``Machine.setup``: the model, the placement, the prescribed joints — an MFK
placement value moves it, a geometry value changes its model and shapes).
Steps are posed in one of two ways:

* :func:`check` (``shiftsim collide``): kinematics only — each machine at its
  start state with the step's prescribed joints (couplings applied; loops
  closed by ``kinematics.assemble`` keeping the held and prescribed joints,
  continuing along the sweep's chains as the solver does), no equilibrium;
* :func:`attach_collisions` (``shiftsim run``): each machine's solved
  equilibrium at the step (``StepResult.q``), so deflections count.

Steps with the same models share one collision world and one batched query.
The collision package knows models and poses only; this module is what a
scenario makes of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..collision.queries import any_collision, closest_pair, pair_results, pair_text
from ..collision.shapes import body_poses
from ..collision.world import CollisionWorld
from ..errors import InputError, SolveError
from ..kinematics import assemble
from ..model import Model
from .runner import StepResult, machine_values
from .definition import Scenario


@dataclass(frozen=True)
class Settings:
    """A scenario's ``collision`` section: ``margin`` (m, >= 0) and whether machines are checked against themselves."""

    margin: float = 0.0
    self_collision: bool = False


@dataclass(frozen=True)
class StepCollisions:
    """One step's pair results (``collisions``, as :mod:`shiftsim.collision.queries` describes) and the machines not posed."""

    index: int
    parameters: dict[str, float]
    collisions: list[dict[str, Any]]
    failures: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The step object ``shiftsim collide --json`` prints."""
        out = {"index": self.index, "parameters": self.parameters, "pairs": self.collisions}
        if self.failures:
            out["failures"] = self.failures
        return out


@dataclass(frozen=True)
class _Posed:
    """A machine at a step: its model, world <- model (4x4) and coordinates."""

    model: Model
    placement: np.ndarray
    q: np.ndarray


def checks_collisions(scenario: Scenario) -> bool:
    """Whether the scenario has a ``collision`` section."""
    return "collision" in (scenario.document or {})


def collision_settings(scenario: Scenario) -> Settings:
    """The scenario's ``collision`` section (already checked by the scenario schema); defaults without one."""
    section = (scenario.document or {}).get("collision") or {}
    return Settings(float(section.get("margin", 0.0)), bool(section.get("self", False)))


def _step_parameters(scenario: Scenario) -> list[dict[str, float]]:
    return [{p.name: float(v) for p, v in zip(scenario.sweep.parameters, row)} for row in scenario.sweep.table()]


# ---------------------------------------------------------------------- posing
def _kinematic_poses(scenario: Scenario) -> tuple[list[dict[str, _Posed]], dict[int, list[dict[str, str]]]]:
    """Every machine at every step by kinematics only, and the machines that could not be posed per step."""
    parameters = _step_parameters(scenario)
    posed: list[dict[str, _Posed]] = [{} for _ in parameters]
    failures: dict[int, list[dict[str, str]]] = {}
    for machine in scenario.machines:
        held = {c for name in [*machine.held, *machine.vocabulary.start_joints()]
                for c in machine.model.coordinates_of(name)}
        for chain in scenario.sweep.chains():
            current = machine.q_start
            for index in chain:
                try:
                    setup = machine.setup(machine_values(scenario, machine, parameters[index]))
                    current = _pose(setup.model, current, setup.joints, held)
                except (InputError, SolveError) as error:
                    failures.setdefault(index, []).append({"machine": machine.id, "message": str(error)})
                    continue
                posed[index][machine.id] = _Posed(setup.model, setup.placement.matrix, current)
    return posed, failures


def _pose(model: Model, start: np.ndarray, joints: dict[str, float], held: set[int]) -> np.ndarray:
    """Coordinates with ``joints`` (name -> value) set, couplings applied and loops closed from ``start``
    keeping the held and set coordinates. Raises SolveError when the loops cannot close."""
    q = np.array(start, float)
    kept = set(held)
    for name, value in joints.items():
        coordinates = list(model.coordinates_of(name))
        q[coordinates] = value
        kept.update(coordinates)
    return assemble(model, q, held=sorted(kept)).q


def _query(scenario: Scenario, posed: list[dict[str, _Posed]], margin: float,
           self_collision: bool) -> tuple[list[list[dict[str, Any]]], list[str]]:
    """Pair results per configuration (machines missing from ``posed[k]`` are left out with their pairs),
    one world per distinct set of models, and the worlds' warnings."""
    machines = scenario.machines
    results: list[list[dict[str, Any]]] = [[] for _ in posed]
    groups: dict[tuple, list[int]] = {}
    for k, step in enumerate(posed):
        groups.setdefault(tuple(id(step[m.id].model) if m.id in step else None for m in machines), []).append(k)
    warnings: list[str] = []
    for rows in groups.values():
        models = [next((posed[k][m.id].model for k in rows if m.id in posed[k]), m.model) for m in machines]
        with CollisionWorld([(m.id, model) for m, model in zip(machines, models)], self_collision) as world:
            poses = []
            for m, model in zip(machines, models):
                entries = [posed[k].get(m.id) for k in rows]
                q = np.array([e.q if e else m.q_start for e in entries]).reshape(len(rows), model.nq)
                placement = np.array([e.placement if e else np.eye(4) for e in entries])
                poses.append(placement[:, None] @ body_poses(model, q))
            distances = world.query(poses)
            for row, k in enumerate(rows):
                present = [i for i, m in enumerate(machines) if m.id in posed[k]]
                results[k] = pair_results(world, distances, row, margin, present)
            warnings += [w for w in world.warnings if w not in warnings]
    return results, warnings


def check(scenario: Scenario) -> tuple[list[StepCollisions], list[str]]:
    """Pair results at every step, posed by kinematics only (``shiftsim collide``), and the collision
    world's warnings (shapes without volume, machines without shapes). Without a ``collision`` section
    the defaults apply (margin 0, no self-collision)."""
    found = collision_settings(scenario)
    posed, failures = _kinematic_poses(scenario)
    results, warnings = _query(scenario, posed, found.margin, found.self_collision)
    return [StepCollisions(index, values, pairs, failures.get(index, []))
            for index, (values, pairs) in enumerate(zip(_step_parameters(scenario), results))], warnings


def attach_collisions(scenario: Scenario, steps: Sequence[StepResult]) -> list[str]:
    """Set ``step.collisions`` of a run's steps from each machine's solved equilibrium (``StepResult.q``;
    a machine whose solve failed at a step is left out with its pairs). Does nothing when the scenario has
    no ``collision`` section. Returns the collision world's warnings."""
    if not checks_collisions(scenario) or not steps:
        return []
    found = collision_settings(scenario)
    posed = []
    for step in steps:
        at_step = {}
        for machine in scenario.machines:
            if machine.id in step.q:
                setup = machine.setup(machine_values(scenario, machine, step.parameters))
                at_step[machine.id] = _Posed(setup.model, setup.placement.matrix, step.q[machine.id])
        posed.append(at_step)
    results, warnings = _query(scenario, posed, found.margin, found.self_collision)
    for step, pairs in zip(steps, results):
        step.collisions = pairs
    return warnings


# ---------------------------------------------------------------------- summary
def step_label(scenario: Scenario, step: Any) -> str:
    """``step 12 (ex1:c1:tracks.rz = 0.3142 rad)`` of a step with ``index`` and ``parameters``."""
    units = {p.name: ("" if p.unit == "-" else f" {p.unit}") for p in scenario.sweep.parameters}
    values = ", ".join(f"{name} = {value:.4g}{units.get(name, '')}" for name, value in step.parameters.items())
    return f"step {step.index}" + (f" ({values})" if values else "")


def summary_line(scenario: Scenario, steps: Sequence[Any], margin: float) -> str:
    """What the pair distances amount to, in words that keep contact and clearance apart: the first step
    *in collision* (shapes touch or overlap, distance <= 0) and the first step *within margin*
    (0 < distance < margin), each with its closest pair; or the least distance met when neither occurs.
    ``steps`` have ``index``, ``parameters`` and ``collisions`` (StepResult or StepCollisions)."""
    ordered = sorted((s for s in steps if s.collisions), key=lambda s: s.index)
    if not ordered:
        return "no collision checked: no pair of machines with collision shapes"
    parts = []
    for words, test in ((f"within margin ({margin:g} m)", lambda d: 0.0 < d < margin),
                        ("in collision", lambda d: d <= 0.0)):
        for step in ordered:
            hits = [pair for pair in step.collisions if test(pair["distance"])]
            if hits:
                parts.append(f"{words} first at {step_label(scenario, step)}: {pair_text(closest_pair(hits))}")
                break
    if len(parts) == 1 and parts[0].startswith("within"):
        parts.append("no contact")
    if parts:
        return "; ".join(parts)
    step = min(ordered, key=lambda s: closest_pair(s.collisions)["distance"])
    band = f", none within margin ({margin:g} m)" if margin > 0 else ""
    return f"no collision{band}; least distance at {step_label(scenario, step)}: {pair_text(closest_pair(step.collisions))}"


def collision_summary(scenario: Scenario, steps: Sequence[StepResult]) -> str | None:
    """The run summary's collision line (None when the scenario has no ``collision`` section)."""
    return summary_line(scenario, steps, collision_settings(scenario).margin) if checks_collisions(scenario) else None


def collided(steps: Sequence[Any]) -> bool:
    return any(any_collision(step.collisions or []) for step in steps)
