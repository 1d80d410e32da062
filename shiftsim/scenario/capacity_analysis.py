"""A scenario's capacity analysis: the rated lift capacity of a standing machine at every step of the sweep.

The analysis (``analysis.capacity`` in the scenario, or ``shiftsim capacity --load``)
names a load on a machine with ``contacts``; each step of the sweep is a lift
point (the machine's joints as the step sets them). All steps are solved at
once by :func:`shiftsim.ground.rating.capacity`; the result is reported per
lift point with the load frame's radius from the slew axis (the ``centre``
frame) and height above the ground below that axis, at the unloaded standing
equilibrium. Loads in N (and the rated load also as a mass, N / |g|).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import statics as st
from ..errors import Problems, ScenarioError, SolveError, suggest
from ..forces import AppliedLoad
from ..ground.base import BASE
from ..ground.rating import Capacity, CapacityOptions, Cylinder, capacity, cylinder_limit
from ..ground.stand import Stand
from ..kinematics import forward
from ..spec import PATH_SEPARATOR
from .ground import closed_start, finite_or_none, floating_model
from .machines import Machine, resolve
from .runner import _set_values as set_values
from .runner import machine_values


@dataclass(frozen=True)
class CapacitySpec:
    """A capacity analysis of a scenario: the named load (on a standing machine), the frame on the slew axis
    radii are measured from (model name), the cylinders (model joint names), the options, and the swept
    parameter whose values make the chart's panels (None: one panel)."""

    load: str
    machine: str
    centre: str
    cylinders: tuple[Cylinder, ...]
    options: CapacityOptions
    group: str | None = None
    expected_invalid: frozenset[int] = frozenset()  # steps documented as invalid lift points (no exit 1 for them)


def read_capacity(scenario: Any, entry: dict[str, Any], where: str, problems: Problems,
                  load_where: str | None = None) -> CapacitySpec | None:
    """A :class:`CapacitySpec` from an ``analysis.capacity`` object at ``where``; ``load_where`` names where its
    load came from when not from there (``--load``)."""
    load_where = load_where or f"{where}.load"
    loads = {l.name: l for l in scenario.loads}
    load = loads.get(entry["load"])
    if load is None:
        problems.add(load_where, f"unknown load {entry['load']!r}", suggest(entry["load"], loads))
        return None
    machine = scenario.machine(load.machine)
    if machine.support is None:
        problems.add(load_where, f"load {load.name!r} is on machine {machine.id!r}, which has no 'contacts'",
                     "a load on a machine standing on the ground (give the machine 'contacts')")
        return None
    prefix = machine.id + PATH_SEPARATOR

    def local(name: str, kind: str, at: str) -> str | None:
        if not name.startswith(prefix):
            problems.add(at, f"{name!r} is not on machine {machine.id!r}", f"{prefix}... (the machine carrying the load)")
            return None
        return resolve(machine.model, kind, name[len(prefix):], machine.id, at, problems)

    centre = local(entry.get("centre", f"{prefix}{BASE}"), "frame", f"{where}.centre")
    names = [p.name for p in scenario.sweep.parameters]
    cylinders = []
    for name, limits in entry.get("cylinders", {}).items():
        at = f"{where}.cylinders.{name}"
        joint = local(name, "joint", at)
        if joint is None:
            continue
        why = _not_a_cylinder(machine, joint, name in names)
        if why:
            problems.add(at, f"joint {name!r} {why}", "a held prismatic stroke joint (in the machine's 'hold' "
                         "list or swept), whose effort is the cylinder's force")
            continue
        if limits["rod"] >= limits["bore"]:
            problems.add(f"{at}.rod", f"rod {limits['rod']} m is not smaller than bore {limits['bore']} m",
                         "a rod diameter smaller than the bore")
            continue
        cylinders.append(Cylinder(joint, float(limits["bore"]), float(limits["rod"]), float(limits["pressure"])))
    group = entry.get("group")
    if group is not None and group not in names:
        problems.add(f"{where}.group", f"{group!r} is not a swept parameter", suggest(group, names))
    defaults = CapacityOptions()
    options = replace(defaults, tipping_fraction=float(entry.get("tipping_fraction", defaults.tipping_fraction)),
                      hydraulic_fraction=float(entry.get("hydraulic_fraction", defaults.hydraulic_fraction)),
                      tolerance=float(entry.get("tolerance", defaults.tolerance)), limits=machine.support.limits)
    if centre is None or problems.items:
        return None
    return CapacitySpec(load.name, machine.id, centre, tuple(cylinders), options, group,
                        frozenset(entry.get("expected_invalid", ())))


def _not_a_cylinder(machine: Machine, joint: str, swept: bool) -> str:
    """Why the model joint ``joint`` of ``machine`` cannot be a rated cylinder (empty: it can). Its effort is the
    cylinder force only when it is a prismatic joint held at its stroke (held or swept) with no spring of its own."""
    model = machine.model
    compiled = model.joints[model.joint_index(joint)]
    if compiled.type != "prismatic":
        return f"is a {compiled.type} joint, not a stroke"
    if joint not in machine.held and not swept:
        return "is not held (nor swept): its stroke moves with the load, so its effort is no cylinder force"
    sprung = {*model.joint_springs.coordinates.tolist(), *(r.coordinate for r in model.joint_restraints)}
    if sprung & set(model.coordinates_of(joint)):
        return "carries a spring (an oil column): its force is the spring's, not a held cylinder's"
    return ""


def lift_points(scenario: Any, spec: CapacitySpec) -> tuple[Machine, Stand, np.ndarray, np.ndarray, np.ndarray]:
    """The standing machine, its stand, the assembled start of every step (B, nq), the free coordinates and
    the prescribed ones. Every step must use one model (no swept MFK geometry)."""
    machine = scenario.machine(spec.machine)
    table = scenario.sweep.table()
    starts, models, prescribed = [], set(), None
    previous = machine.q_start
    for row in table:
        values = {p.name: float(v) for p, v in zip(scenario.sweep.parameters, row)}
        setup = machine.setup(machine_values(scenario, machine, values))
        model = floating_model(setup.model)
        models.add(id(model))
        q, held = st.resolve_prescribed(model, set_values(machine, setup.joints), [])
        set_here = np.zeros(model.nq, dtype=bool)
        set_here[held] = True
        try:
            q = closed_start(model, np.where(set_here, q, previous), held, previous)
        except SolveError as error:
            raise SolveError(f"step {len(starts)} ({', '.join(f'{k} = {v:g}' for k, v in values.items())}): the joints "
                             f"cannot take these values with the springs unstretched: {error}") from None
        starts.append(q)
        previous, prescribed = q, held
    if len(models) > 1:
        raise SolveError(f"machine {machine.id!r} changes its model along the sweep; a capacity chart needs one model")
    stand = machine.support.stand(model, machine)
    return machine, stand, np.array(starts), st.free_coordinates(model, prescribed), prescribed


@dataclass(frozen=True)
class SolvedChart:
    """A capacity analysis solved: the machine, its stand, the lift points' starts (B, nq), the free coordinates,
    gravity (3,) model axes, the named load at factor 1 and the loads that stay (model axes, (B, 3) arrays), and
    the :class:`~shiftsim.ground.rating.Capacity` (what the sensitivities of the chart start from)."""

    spec: CapacitySpec
    machine: Machine
    stand: Stand
    starts: np.ndarray
    free: np.ndarray
    gravity: np.ndarray
    load: AppliedLoad
    others: tuple[AppliedLoad, ...]
    result: Capacity


def solve_chart(scenario: Any, spec: CapacitySpec) -> SolvedChart:
    """Every step of the sweep as a lift point, solved by :func:`shiftsim.ground.rating.capacity`."""
    machine, stand, starts, free, _ = lift_points(scenario, spec)
    model, placement = stand.model, machine.placement
    batch = len(starts)
    named = next(l for l in scenario.loads if l.name == spec.load)
    others = [l for l in scenario.loads if l.machine == machine.id and l.name != spec.load]

    def applied(load, factor: float) -> AppliedLoad:
        force, torque = load.force, load.torque
        if load.direction == "world":
            force, torque = placement.vector_to_model(force), placement.vector_to_model(torque)
        return AppliedLoad(model.frame_index(load.frame), np.tile(np.asarray(force, float) * factor, (batch, 1)),
                           np.tile(np.asarray(torque, float) * factor, (batch, 1)), load.direction == "body")

    gravity = placement.vector_to_model(scenario.gravity)
    load, kept = applied(named, 1.0), tuple(applied(l, l.factor) for l in others)
    result = capacity(stand, starts, free, gravity, load, list(spec.cylinders), spec.options, list(kept))
    return SolvedChart(spec, machine, stand, starts, free, gravity, load, kept, result)


def run_capacity(scenario: Any, spec: CapacitySpec, solved: SolvedChart | None = None) -> dict[str, Any]:
    """The capacity of every step of the sweep as the ``capacity.json`` document (see docs/ground.md), from the
    chart ``solved`` (solved here when not given)."""
    solved = solved or solve_chart(scenario, spec)
    machine, stand, result = solved.machine, solved.stand, solved.result
    model, placement = stand.model, machine.placement
    named = next(l for l in scenario.loads if l.name == spec.load)
    poses = forward(model, result.q_unloaded).frames
    frame, centre = model.frame_index(named.frame), model.frame_index(spec.centre)
    at = placement.point_to_world(poses[:, frame, :3, 3])
    axis = placement.point_to_world(poses[:, centre, :3, 3])
    ground_height, _, _ = stand.ground.height(axis[:, :2])
    g = float(np.linalg.norm(scenario.gravity)) or 1.0
    size = result.load
    points = []
    for b, row in enumerate(scenario.sweep.table()):
        points.append({
            "step": b,
            "parameters": {p.name: float(v) for p, v in zip(scenario.sweep.parameters, row)},
            "radius": float(np.linalg.norm(at[b, :2] - axis[b, :2])),
            "height": float(at[b, 2] - ground_height[b]),
            "tipping_load": None if result.ended[b] else finite_or_none(result.tipping[b] * size),
            "tips_below": None if result.ended[b] else finite_or_none(result.tipped[b] * size),
            "tipping_event": result.event[b],
            "event_load": None if result.ended[b] else finite_or_none(result.event_factor[b] * size),
            "hydraulic_event": cylinder_limit(machine.name(result.cylinder[b])) if result.hydraulic_event[b] else None,
            "stiffness_check": finite_or_none(result.stiffness_check[b]),
            "path_steps": int(result.steps[b]),
            "path_solves": int(result.trials[b]),
            "does_not_tip_below": finite_or_none(result.tipping[b] * size) if result.ended[b] else None,
            "path_ended": [v.message(machine.name) for v in result.ended[b]],
            "balance_load": finite_or_none(result.balance[b] * size),
            "tipping_edge": [machine.name(n) for n in result.edge[b] if n],
            "hydraulic_load": finite_or_none(result.hydraulic[b] * size),
            "limiting_cylinder": machine.name(result.cylinder[b]) if result.cylinder[b] else None,
            "rated_load": finite_or_none(result.rated[b] * size),
            "rated_mass": finite_or_none(result.rated[b] * size / g),
            "governs": result.governs[b],
            "valid": not result.invalid[b],
            "invalid": [v.message(machine.name) for v in result.invalid[b]],
        })
    options = spec.options
    return {"load": spec.load, "frame": machine.name(named.frame), "centre": machine.name(spec.centre),
            "load_size": size, "tipping_fraction": options.tipping_fraction,
            "hydraulic_fraction": options.hydraulic_fraction, "tolerance": options.tolerance,
            "balance_tolerance": options.balance_tolerance, "sink_limit": options.limits.sink,
            "tyre_compression_limit": options.limits.tyre_compression,
            "group": spec.group, "expected_invalid": sorted(spec.expected_invalid), "cylinders": {machine.name(c.joint): {"push": c.push, "pull": c.pull}
                                               for c in spec.cylinders},
            "batched_solves": result.solves, "points": points}


# ---------------------------------------------------------------------- inside ``shiftsim run``
def analysis_spec(scenario: Any) -> CapacitySpec | None:
    """The scenario's ``analysis.capacity`` read and checked (ScenarioError naming the place), or None without one."""
    entry = ((scenario.document or {}).get("analysis") or {}).get("capacity")
    if entry is None:
        return None
    problems = Problems(str(scenario.source), ScenarioError)
    spec = read_capacity(scenario, dict(entry), "analysis.capacity", problems)
    problems.raise_if_any()
    return spec


def unexpected_invalid(document: dict[str, Any] | None) -> list[int]:
    """The steps of a capacity document (:func:`run_analysis`) whose lift point is invalid and not listed in
    ``expected_invalid``; a document with an ``error`` counts as its every step ([-1])."""
    if document is None:
        return []
    if "error" in document:
        return [-1]
    expected = set(document.get("expected_invalid", ()))
    return [p["step"] for p in document["points"] if not p["valid"] and p["step"] not in expected]


def run_analysis(scenario: Any) -> dict[str, Any] | None:
    """The capacity document of the scenario's ``analysis.capacity`` (:func:`run_capacity`); a sweep the analysis
    cannot solve gives ``{"load": ..., "error": message}``. None without one."""
    return chart_analysis(scenario)[0]


def chart_analysis(scenario: Any) -> tuple[dict[str, Any] | None, SolvedChart | None]:
    """:func:`run_analysis`'s document and the chart it was made from (None without one or when it could not be
    solved)."""
    spec = analysis_spec(scenario)
    if spec is None:
        return None, None
    try:
        solved = solve_chart(scenario, spec)
        return run_capacity(scenario, spec, solved), solved
    except (SolveError, np.linalg.LinAlgError) as error:
        return {"load": spec.load, "error": scenario.machine(spec.machine).qualified(str(error))}, None
