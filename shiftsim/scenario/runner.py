"""Solving a scenario's steps: continuation along chains, rates for time sweeps, failed steps.

Within a chain (see ``sweep``) each step starts from the previous step's
equilibrium, machine by machine. A machine whose solve fails (no equilibrium,
or loops that cannot close at the step's joint values) is reported in the
step's ``failures``; the step is marked failed and that machine's next step
starts again from its last good equilibrium. The other machines go on.

Several machines do not interact mechanically: each is solved on its own in
its model frame, with gravity and world-direction loads rotated into that
frame by its placement (``g_model = R^T g_world``), and its frames, bodies and
joint wrenches mapped back to the world. Names get the machine id in front.
The model, placement and prescribed joints of a machine at a step come from
its vocabulary (:meth:`Machine.setup <.machines.Machine.setup>`): a swept MFK
placement value moves the machine, a swept MFK geometry value changes its
model, an Mdx pose sets its legs. An Mdx platform's step also reports its
actuators (``actuators``: pose, leg lengths, raw values, range flags, forces).

Time sweeps: at a step, the rates of every coordinate are the difference
quotient of the machine's last two good equilibria in the chain,
``(q[j] - q[i]) / (t[j] - t[i])``; they feed dampers and friction (a lag of one
step, as rates at the unknown equilibrium are not known before it is solved).
Until a chain holds two good equilibria there is no rate and those restraints
add nothing; without a time parameter they never do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import InputError, SolveError
from ..statics import STABILITY, Load, solve
from .ground import floating_model, step_anchor, step_report, step_start
from .machines import Machine, SettingValues
from .placement import Placement
from .definition import Scenario
from .sweep import Parameter

StepCallback = Callable[["StepResult"], None]


@dataclass
class StepResult:
    """One solved step: the results.json step fields, plus each converged machine's coordinates.

    ``q``/``q_reference`` (machine id -> coordinates of the loaded and the
    unloaded equilibrium) are kept for poses drawn or checked after the run.
    ``actuators``: per Mdx machine (id) its legs at the step; ``collisions``:
    the machine pairs' closest distances when the scenario checks collisions (else None); ``ground``: per
    machine standing on the ground (id) what the ground carries (:func:`.ground.step_report`);
    ``stability``: that of its least stable machine (``stable``, ``neutral``, ``unstable``;
    ``unknown`` for a failed step); ``neutral``: per neutral machine (id) its neutral directions as joint
    combinations (``1 ex1:slew``).
    """

    index: int
    parameters: dict[str, float]
    status: str
    iterations: int
    residual: float | None
    stable: bool
    joints: dict[str, Any] = field(default_factory=dict)
    frames: dict[str, Any] = field(default_factory=dict)
    bodies: dict[str, Any] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    actuators: dict[str, dict[str, Any]] = field(default_factory=dict)
    collisions: list[dict[str, Any]] | None = None
    stability: str = "stable"
    ground: dict[str, dict[str, Any]] = field(default_factory=dict)
    neutral: dict[str, list[str]] = field(default_factory=dict)
    pin_reactions: dict[str, dict[str, Any]] = field(default_factory=dict)  # Solution.pin_reactions, every machine
    remarks: dict[str, list[str]] = field(default_factory=dict)  # per machine with remarks (indeterminate splits)
    q: dict[str, np.ndarray] = field(default_factory=dict)
    q_reference: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def converged(self) -> bool:
        return self.status == "converged"

    def as_dict(self) -> dict[str, Any]:
        """The step object of results.json."""
        out = {"index": self.index, "parameters": self.parameters, "status": self.status,
               "iterations": self.iterations, "residual": self.residual, "stable": self.stable,
               "stability": self.stability, "joints": self.joints, "frames": self.frames, "bodies": self.bodies}
        if self.actuators:
            out["actuators"] = self.actuators
        if self.collisions is not None:
            out["collisions"] = self.collisions
        if self.ground:
            out["ground"] = self.ground
        if self.neutral:
            out["neutral_directions"] = self.neutral
        if self.pin_reactions:
            out["pin_reactions"] = self.pin_reactions
        if self.remarks:
            out["remarks"] = self.remarks
        if self.failures:
            out["failures"] = self.failures
        return out


@dataclass
class _MachineChainState:
    """A machine's last good equilibrium in a chain and the (time, q) of its last two, for rates."""

    q: np.ndarray
    history: list[tuple[float, np.ndarray]] = field(default_factory=list)

    def rates(self) -> np.ndarray | None:
        if len(self.history) < 2:
            return None
        (t0, q0), (t1, q1) = self.history
        return (q1 - q0) / (t1 - t0)

    def advance(self, q: np.ndarray, time: float | None) -> None:
        self.q = q
        if time is not None:
            self.history = [*self.history[-1:], (time, q)]


def machine_values(scenario: Scenario, machine: Machine, parameters: dict[str, float]) -> SettingValues:
    """The settings of ``machine`` at a step with swept values ``parameters`` (name -> value)."""
    return {(p.kind, p.target): parameters[p.name] for p in scenario.sweep.parameters if p.machine == machine.id}


def _machine_loads(scenario: Scenario, machine: Machine, placement: Placement, factors: dict[str, float]) -> list[Load]:
    """The machine's loads in its model frame, world-direction components rotated by the placement."""
    loads = []
    for load in scenario.loads:
        if load.machine != machine.id:
            continue
        force, torque = load.force, load.torque
        if load.direction == "world":
            force, torque = placement.vector_to_model(force), placement.vector_to_model(torque)
        loads.append(Load(load.frame, tuple(force), tuple(torque), load.direction, factors.get(load.name, load.factor)))
    return loads


def _world_results(scenario: Scenario, machine: Machine, placement: Placement,
                   result: dict[str, Any]) -> tuple[dict, dict, dict]:
    """Joints, frames and bodies of a machine's solve result in world terms, names prefixed by its id."""
    joints = {}
    for name, joint in result["joints"].items():
        wrench = np.asarray(joint["wrench_world"])
        world = np.concatenate([placement.vector_to_world(wrench[:3]), placement.vector_to_world(wrench[3:])])
        joints[machine.name(name)] = {**joint, "wrench_world": world.tolist()}
    frames = {machine.name(name): {"position": placement.point_to_world(frame["position"]).tolist(),
                                   "deflection": placement.vector_to_world(frame["deflection"]).tolist()}
              for name, frame in result["frames"].items()}
    tracked_bodies = scenario.track.local("bodies", machine)
    bodies = {machine.name(name): {"position": placement.point_to_world(body["position"]).tolist(),
                                   "rotation": (placement.rotation @ np.asarray(body["rotation"])).tolist()}
              for name, body in result["bodies"].items() if tracked_bodies is None or name in tracked_bodies}
    return joints, frames, bodies


def _set_values(machine: Machine, joint_values: dict[str, float]) -> dict[str, float | list[float]]:
    """Every prescribed joint of the machine with its value: held at the start state, swept at the step's value."""
    values: dict[str, float | list[float]] = {}
    for name, value in machine.held_values().items():
        values[name] = float(value[0]) if len(value) == 1 else value.tolist()
    values.update(joint_values)
    return values


def solve_step(scenario: Scenario, index: int, row: np.ndarray, states: dict[str, _MachineChainState]) -> StepResult:
    """Solve step ``index`` (parameter values ``row``) for every machine, from ``states``; advance the states."""
    parameters: tuple[Parameter, ...] = scenario.sweep.parameters
    values = {p.name: float(v) for p, v in zip(parameters, row)}
    factors = {p.target: float(v) for p, v in zip(parameters, row) if p.kind == "load"}
    time = next((float(v) for p, v in zip(parameters, row) if p.kind == "time"), None)
    step = StepResult(index, values, "converged", 0, None, True)
    residuals = []
    for machine in scenario.machines:
        state = states[machine.id]
        try:
            setup = machine.setup(machine_values(scenario, machine, values))
        except InputError as error:
            step.failures.append({"machine": machine.id, "message": f"no valid model with this step's values: {error}"})
            continue
        placement = setup.placement
        model, fields, start = setup.model, (), state.q
        if machine.support is not None:  # standing on the ground: a free base held by its contacts
            model = floating_model(setup.model)
            set_values = _set_values(machine, setup.joints)
            anchor = step_anchor(model, machine.q_start, set_values)
            fields = (machine.support.field(model, machine, placement, anchor),)
            start = step_start(machine, model, state.q, anchor, set_values)
        try:
            solution = solve(model, set=_set_values(machine, setup.joints),
                             loads=_machine_loads(scenario, machine, placement, factors),
                             gravity=placement.vector_to_model(scenario.gravity),
                             q_start=start, rates=state.rates() if time is not None else None, fields=fields)
        except (SolveError, np.linalg.LinAlgError) as error:
            step.failures.append({"machine": machine.id, "message": machine.qualified(str(error))})
            continue
        step.iterations += solution.iterations
        residuals.append(solution.residual)
        if not solution.converged:
            failure = {"machine": machine.id,
                       "message": machine.qualified(solution.blame[0]) if solution.status == "no equilibrium" else
                       f"no equilibrium after {solution.iterations} iterations (residual {solution.residual:.3g})"}
            if solution.blame:
                failure["blame"] = [f"{machine.id}: {machine.qualified(line)}" for line in solution.blame]
            step.failures.append(failure)
            continue
        result = solution.as_dict(joints=scenario.track.local("joints", machine),
                                  frames=scenario.track.local("frames", machine))
        joints, frames, bodies = _world_results(scenario, machine, placement, result)
        step.joints.update(joints)
        step.frames.update(frames)
        step.bodies.update(bodies)
        step.pin_reactions.update({machine.name(name): row for name, row in result["pin_reactions"].items()})
        if solution.remarks:
            step.remarks[machine.id] = solution.remarks
        if setup.actuators is not None:
            step.actuators[machine.id] = {**setup.actuators, "joints": [machine.name(leg) for leg in setup.legs],
                                          "forces": [float(solution.joint_loads[leg].effort[0]) for leg in setup.legs]}
        step.stable &= solution.stable
        # a step is as stable as its least stable machine
        step.stability = max(step.stability, solution.stability, key=STABILITY.index)
        if solution.neutral:
            step.neutral[machine.id] = [_prefixed(machine, direction) for direction in solution.neutral]
        step.q[machine.id], step.q_reference[machine.id] = solution.q, solution.q_reference
        if machine.support is not None:
            step.ground[machine.id] = step_report(machine, model, solution.q, fields[0], placement)
            if step.ground[machine.id]["impossible"]:  # a spring law without end gave a place no machine can be
                step.failures.append({"machine": machine.id, "message": "physically impossible equilibrium: "
                                      + "; ".join(step.ground[machine.id]["impossible"])})
        state.advance(solution.q, time)
    step.residual = max(residuals) if residuals else None
    if step.failures:
        step.status, step.stable, step.stability = "failed", False, "unknown"
    return step


def _prefixed(machine: Machine, combination: str) -> str:
    """A joint combination ('0.707 a + 0.707 b') with the machine's scenario joint names."""
    parts = re.split(r" ([+-]) ", combination)  # [term, sign, term, ...], a term being 'coefficient name'
    terms = [" ".join((coefficient, machine.name(name))) for coefficient, name in
             (term.split(" ", 1) for term in parts[::2])]
    return " ".join(sum(([sign, term] for sign, term in zip(parts[1::2], terms[1:])), [terms[0]]))
