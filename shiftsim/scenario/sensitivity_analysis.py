"""A scenario's sensitivity analysis (``analysis.sensitivity``): exact derivatives of named outputs of every solved
step with respect to design parameters (docs/sensitivity.md).

``of`` names outputs with their machine's prefix (``ex1:arm:boom_cyl.effort``, or a kind: ``ex1:effort``); ``wrt``
names parameters the same way, or kinds and ``all`` without a prefix, which apply to every machine in ``of``
(default ``["all"]``). Each converged step's equilibrium is solved again from its own coordinates (one or two
iterations) with the step's prescribed joints, loads (in the machine's model axes) and gravity, and
differentiated by :func:`shiftsim.sensitivity.sensitivity`; a machine standing on the ground (``contacts``,
tyres) on its free base, with its ground field (the contacts' and tyres' parameters and the contact forces,
centre of pressure and tipping margin among the names). ``MACHINE:tipping_load``, ``MACHINE:hydraulic_load``,
``MACHINE:rated_load`` (or the kind ``MACHINE:capacity``) ask for the lift-capacity chart's sensitivities of the
scenario's ``analysis.capacity`` at every lift point (:mod:`shiftsim.sensitivity.chart`; N per parameter unit,
with the governing branch and whether the point is within 1 % of the switch). Names are checked against the
first step's model before anything is solved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import statics
from ..errors import InputError, Problems, ScenarioError, SolveError, suggest
from ..sensitivity import document as points
from ..sensitivity.document import CAPACITY_OUTPUTS
from ..sensitivity import outputs as output_table
from ..sensitivity import parameters as parameter_table
from ..sensitivity import OUTPUT_KINDS, PARAMETER_KINDS, sensitivity
from ..sensitivity import ground as ground_table
from ..sensitivity.chart import Chart, chart_sensitivities
from ..spec import PATH_SEPARATOR
from .ground import floating_model, step_anchor
from .machines import Machine
from .capacity_analysis import SolvedChart, analysis_spec, solve_chart
from .runner import StepResult, _machine_loads, _set_values, machine_values

@dataclass(frozen=True)
class SensitivitySpec:
    """Per machine id (in the order ``of`` names them) its step outputs and parameters (model names or kinds), the
    mode, whether the report ranks by elasticity, how many parameters it shows per output, and per machine the
    capacity chart's outputs (:data:`CAPACITY_OUTPUTS`)."""

    of: dict[str, tuple[str, ...]]
    wrt: dict[str, tuple[str, ...]]
    mode: str = "auto"
    normalized: bool = False
    top: int = 10
    capacity: dict[str, tuple[str, ...]] = field(default_factory=dict)  # machine -> the chart's outputs asked for




@dataclass(frozen=True)
class _StepProblem:
    """One machine's solve inputs at a step (model axes); a standing machine's model is on its free base, held
    by its ground field ``ground`` (None for a machine fixed to the world)."""

    model: Any
    set: dict
    loads: list
    gravity: np.ndarray
    ground: Any = None


def _step_problem(scenario: Any, machine: Machine, values: dict[str, float]) -> _StepProblem:
    setup = machine.setup(machine_values(scenario, machine, values))
    factors = {p.target: values[p.name] for p in scenario.sweep.parameters if p.kind == "load"}
    model, joints, ground = setup.model, _set_values(machine, setup.joints), None
    if machine.support is not None:  # as the step was solved (shiftsim.scenario.runner.solve_step)
        model = floating_model(setup.model)
        ground = machine.support.field(model, machine, setup.placement, step_anchor(model, machine.q_start, joints))
    return _StepProblem(model, joints, _machine_loads(scenario, machine, setup.placement, factors),
                        setup.placement.vector_to_model(scenario.gravity), ground)


def _split(text: str, machines: dict[str, Machine]) -> tuple[str | None, str]:
    head, sep, rest = text.partition(PATH_SEPARATOR)
    return (head, rest) if sep and head in machines else (None, text)


def read_sensitivity(scenario: Any, entry: dict[str, Any], where: str, problems: Problems,
                     place: Callable[[str, int], str] | None = None) -> SensitivitySpec | None:
    """A :class:`SensitivitySpec` from an ``analysis.sensitivity`` object at ``where``, every name checked against
    the model of the sweep's first step (problems naming the entry, the machine and the valid names). ``place``
    names entry ``i`` of ``of`` or ``wrt`` (default ``<where>.of[i]``; the command line names its flags)."""
    place = place or (lambda key, i: f"{where}.{key}[{i}]")
    known = len(problems.items)  # problems found before: names are still checked
    machines = {m.id: m for m in scenario.machines}
    of: dict[str, list[tuple[str, int]]] = {}  # machine -> (model name or kind, index in the entry)
    chart: dict[str, list[str]] = {}  # machine -> capacity outputs
    for i, text in enumerate(entry["of"]):
        machine, local = _split(text, machines)
        if machine is None:
            problems.add(place("of", i), f"{text!r} names no machine of the scenario",
                         f"MACHINE:output with MACHINE {suggest(text.partition(PATH_SEPARATOR)[0], machines)}")
        elif local in (*CAPACITY_OUTPUTS, "capacity"):
            why = _no_chart(scenario, machine)
            if why:
                problems.add(place("of", i), why, "a capacity output of the machine carrying analysis.capacity's load")
            else:
                chart.setdefault(machine, []).extend(CAPACITY_OUTPUTS if local == "capacity" else [local])
                of.setdefault(machine, [])
        else:
            of.setdefault(machine, []).append((local, i))
    wrt: dict[str, list[tuple[str, int]]] = {m: [] for m in of}
    for i, text in enumerate(entry.get("wrt", ["all"])):
        machine, local = _split(text, machines)
        if machine is not None and machine not in of:
            problems.add(place("wrt", i), f"{text!r} is a parameter of machine {machine!r}, which has no output "
                         "in 'of'", f"a parameter of {', '.join(of) or 'a machine named in of'}, or a kind")
        for m in [machine] if machine in of else list(of) if machine is None else []:
            wrt[m].append((local, i))
    if len(problems.items) > known:
        return None
    first = dict(zip(scenario.sweep.names, (float(v) for v in scenario.sweep.table()[0])))
    for machine, names in of.items():
        _check_names(scenario, machines[machine], first, names, wrt[machine], where, place, problems)
    if len(problems.items) > known:
        return None
    return SensitivitySpec({m: tuple(n for n, _ in v) for m, v in of.items()},
                           {m: tuple(n for n, _ in v) for m, v in wrt.items()},
                           entry.get("mode", "auto"), bool(entry.get("normalized", False)), int(entry.get("top", 10)),
                           {m: tuple(dict.fromkeys(v)) for m, v in chart.items()})


def _no_chart(scenario: Any, machine: str) -> str:
    """Why ``machine`` has no capacity chart to differentiate (empty: it has one)."""
    entry = ((scenario.document or {}).get("analysis") or {}).get("capacity")
    if entry is None:
        return "the scenario has no analysis.capacity: no lift capacity to differentiate"
    load = next((l for l in scenario.loads if l.name == entry.get("load")), None)
    if load is None or load.machine != machine:
        return f"analysis.capacity's load is not on machine {machine!r}"
    return ""


def _check_names(scenario: Any, machine: Machine, values: dict[str, float], of: list[tuple[str, int]],
                 wrt: list[tuple[str, int]], where: str, place: Callable[[str, int], str], problems: Problems) -> None:
    """Each of ``of``/``wrt`` must be an output/parameter name or kind of ``machine``'s model at the first step."""
    try:
        problem = _step_problem(scenario, machine, values)
    except InputError as error:
        problems.add(where, f"machine {machine.id!r} has no valid model at the first step: {error}")
        return
    _, prescribed = statics.resolve_prescribed(problem.model, problem.set, [])
    outputs = output_table.catalogue(problem.model, statics.free_coordinates(problem.model, prescribed))
    parameters = parameter_table.catalogue(problem.model, tuple(problem.loads), problem.gravity)
    if problem.ground is not None:
        outputs += ground_table.output_catalogue(problem.ground)
        parameters += ground_table.catalogue(problem.ground)
    catalogues = {"of": (outputs, OUTPUT_KINDS), "wrt": (parameters, (*PARAMETER_KINDS, "all"))}
    for key, names in (("of", of), ("wrt", wrt)):
        items, kinds = catalogues[key]
        valid = {item.name for item in items} | {item.kind for item in items} | ({"all"} if key == "wrt" else set())
        for name, index in names:
            if name not in valid:
                what = "output" if key == "of" else "parameter"
                problems.add(place(key, index), f"machine {machine.id!r} has no {what} {name!r}",
                             f"{'an' if what == 'output' else 'a'} {what} kind the model has "
                             f"({', '.join(k for k in kinds if k in valid)}) or "
                             f"{machine.id}:NAME with NAME {suggest(name, [item.name for item in items])}")


def sensitivity_spec(scenario: Any) -> SensitivitySpec | None:
    """The scenario's ``analysis.sensitivity`` read and checked (ScenarioError naming the place), or None."""
    entry = ((scenario.document or {}).get("analysis") or {}).get("sensitivity")
    if entry is None:
        return None
    problems = Problems(str(scenario.source), ScenarioError)
    spec = read_sensitivity(scenario, dict(entry), "analysis.sensitivity", problems)
    problems.raise_if_any()
    return spec


def run_sensitivity(scenario: Any, spec: SensitivitySpec, steps: list[StepResult],
                    chart: SolvedChart | None = None) -> dict[str, Any]:
    """results.json's ``sensitivity`` section: one point per (step, machine) (:mod:`shiftsim.sensitivity.document`);
    a step that did not converge, or whose equilibrium cannot be differentiated, gets its reason as ``error``.
    ``chart``: the scenario's solved capacity chart, whose lift points' sensitivities join the points of the same
    steps (solved here when the spec asks for them and none is given)."""
    machines = {m.id: m for m in scenario.machines}
    found = []
    for step in steps:
        for machine_id, of in spec.of.items():
            if not of:
                continue
            machine = machines[machine_id]
            head = {"step": step.index, "parameters": step.parameters, "machine": machine_id}
            if machine_id not in step.q:
                found.append({**head, "error": "the step has no equilibrium of this machine (it did not converge)"})
                continue
            try:
                problem = _step_problem(scenario, machine, step.parameters)
                fields = () if problem.ground is None else (problem.ground,)
                solution = statics.solve(problem.model, set=problem.set, loads=problem.loads, gravity=problem.gravity,
                                         q_start=step.q[machine_id], fields=fields)
                result = sensitivity(solution, of=of, wrt=spec.wrt[machine_id], set=problem.set, loads=problem.loads,
                                     gravity=problem.gravity, mode=spec.mode, ground=problem.ground)
            except (InputError, SolveError, np.linalg.LinAlgError) as error:
                found.append({**head, "error": str(error)})
                continue
            found.append(points.point(result, step.index, step.parameters, machine_id, machine.name))
    if spec.capacity:
        found = _with_chart(scenario, spec, steps, found, chart)
    names = [machines[m].name(o) for m, local in spec.of.items() for o in local]
    names += [machines[m].name(o) for m, local in spec.capacity.items() for o in local]
    return {"of": names, "mode": spec.mode, "normalized": spec.normalized, "top": spec.top, "points": found}


def _with_chart(scenario: Any, spec: SensitivitySpec, steps: list[StepResult], found: list[dict[str, Any]],
                chart: SolvedChart | None) -> list[dict[str, Any]]:
    """``found`` with the capacity chart's lift points' sensitivities merged into the points of their steps."""
    machine_id, outputs = next(iter(spec.capacity.items()))
    machine = scenario.machine(machine_id)
    swept = {step.index: step.parameters for step in steps}
    table = scenario.sweep.table()
    try:
        chart = chart or solve_chart(scenario, analysis_spec(scenario))
        per_point = chart_points(chart, spec.wrt[machine_id], spec.mode)
    except (InputError, SolveError, np.linalg.LinAlgError) as error:
        return found + [{"step": b, "parameters": swept.get(b, {}), "machine": machine_id,
                         "error": f"capacity: {error}"} for b in range(len(table))]
    by_step = {(p["step"], p["machine"]): p for p in found}
    for b, outputs_at in enumerate(per_point):
        wanted = {name: o for name, o in outputs_at.items() if name in outputs}
        point = by_step.get((b, machine_id))
        if point is None or "error" in point:
            point = {"step": b, "parameters": swept.get(b, {p.name: float(v) for p, v in
                                                            zip(scenario.sweep.parameters, table[b])}),
                     "machine": machine_id, "mode": spec.mode, "parameter_values": {}, "outputs": {}}
            found.append(point)
            by_step[(b, machine_id)] = point
        for name, o in wanted.items():
            point["parameter_values"].update({machine.name(p): v for p, v in o.pop("parameter_values").items()})
            point["outputs"][machine.name(name)] = {
                **o, "derivative": {machine.name(p): v for p, v in o["derivative"].items()},
                "change_per_percent": {machine.name(p): v for p, v in o["change_per_percent"].items()}}
    return sorted(found, key=lambda p: (p["step"], p["machine"]))


def chart_points(solved: SolvedChart, wrt, mode: str) -> list[dict[str, dict[str, Any]]]:
    """Per lift point its capacity outputs (:data:`CAPACITY_OUTPUTS`, N) as the section's output entries (model
    names): value, reason, derivative and change per 1 % per parameter, the parameters' values, and for the
    rated load the governing branch and whether it is within 1 % of the switch."""
    spec = solved.spec
    chart = Chart(solved.stand, solved.stand.field(solved.starts[0]), solved.free, solved.gravity, solved.load,
                  solved.others, spec.cylinders, spec.options)
    size = solved.result.load
    found = []
    for b, point in enumerate(chart_sensitivities(chart, solved.result, wrt, mode)):
        entries = {}
        for name, branch, value in (("tipping_load", point.tipping, solved.result.tipping[b]),
                                    ("hydraulic_load", point.hydraulic, solved.result.hydraulic[b]),
                                    ("rated_load", point.rated, solved.result.rated[b])):
            key = name.split("_")[0]
            if branch is None:
                entries[name] = {"value": _finite(value * size), "reason": point.reasons[key], "derivative": {},
                                 "change_per_percent": {}, "parameter_values": {}}
                continue
            factor = branch.rated if key == "rated" else branch.factor
            derivative = size * branch.derivative
            entries[name] = {"value": float(factor * size), "reason": branch.reason if key == "rated" else None,
                             "derivative": dict(zip(branch.parameters, map(float, derivative))),
                             "change_per_percent": dict(zip(branch.parameters,
                                                            map(float, 0.01 * branch.parameter_values * derivative))),
                             "parameter_values": dict(zip(branch.parameters, map(float, branch.parameter_values)))}
            if key == "rated":
                entries[name] |= {"governs": branch.governs, "near_switch": branch.near_switch}
            if key == "tipping":
                entries[name] |= {"search_gap": float(point.tipping_gap)}
        found.append(entries)
    return found


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def run_analysis(scenario: Any, steps: list[StepResult], chart: SolvedChart | None = None) -> dict[str, Any] | None:
    """The ``sensitivity`` section of the scenario's ``analysis.sensitivity`` (None without one); ``chart`` its
    solved capacity chart, if any."""
    spec = sensitivity_spec(scenario)
    return None if spec is None else run_sensitivity(scenario, spec, steps, chart)


__all__ = ["SensitivitySpec", "read_sensitivity", "run_analysis", "run_sensitivity", "sensitivity_spec"]
