"""A scenario's sensitivity analysis (``analysis.sensitivity``): exact derivatives of named outputs of every solved
step with respect to design parameters (docs/sensitivity.md).

``of`` names outputs with their machine's prefix (``ex1:arm:boom_cyl.effort``, or a kind: ``ex1:effort``); ``wrt``
names parameters the same way, or kinds and ``all`` without a prefix, which apply to every machine in ``of``
(default ``["all"]``). Each converged step's equilibrium is solved again from its own coordinates (one or two
iterations) with the step's prescribed joints, loads (in the machine's model axes) and gravity, and
differentiated by :func:`shiftsim.sensitivity.sensitivity`. Names are checked against the first step's model
before anything is solved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import statics
from ..errors import InputError, Problems, ScenarioError, SolveError, suggest
from ..sensitivity import document as points
from ..sensitivity import outputs as output_table
from ..sensitivity import parameters as parameter_table
from ..sensitivity import sensitivity
from ..spec import PATH_SEPARATOR
from .machines import Machine
from .runner import StepResult, _machine_loads, _set_values, machine_values

@dataclass(frozen=True)
class SensitivitySpec:
    """Per machine id (in the order ``of`` names them) its outputs and parameters (model names or kinds), the
    mode, whether the report ranks by elasticity, and how many parameters it shows per output."""

    of: dict[str, tuple[str, ...]]
    wrt: dict[str, tuple[str, ...]]
    mode: str = "auto"
    normalized: bool = False
    top: int = 10


@dataclass(frozen=True)
class _StepProblem:
    """One machine's solve inputs at a step (model axes)."""

    model: Any
    set: dict
    loads: list
    gravity: np.ndarray


def _step_problem(scenario: Any, machine: Machine, values: dict[str, float]) -> _StepProblem:
    setup = machine.setup(machine_values(scenario, machine, values))
    factors = {p.target: values[p.name] for p in scenario.sweep.parameters if p.kind == "load"}
    return _StepProblem(setup.model, _set_values(machine, setup.joints),
                        _machine_loads(scenario, machine, setup.placement, factors),
                        setup.placement.vector_to_model(scenario.gravity))


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
    for i, text in enumerate(entry["of"]):
        machine, local = _split(text, machines)
        if machine is None:
            problems.add(place("of", i), f"{text!r} names no machine of the scenario",
                         f"MACHINE:output with MACHINE {suggest(text.partition(PATH_SEPARATOR)[0], machines)}")
        elif machines[machine].support is not None:
            problems.add(place("of", i), f"machine {machine!r} stands on the ground ('contacts'): sensitivities "
                         "of a standing machine are not implemented (contact forces are not differentiated yet)",
                         "an output of a machine without 'contacts'")
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
                           entry.get("mode", "auto"), bool(entry.get("normalized", False)), int(entry.get("top", 10)))


def _check_names(scenario: Any, machine: Machine, values: dict[str, float], of: list[tuple[str, int]],
                 wrt: list[tuple[str, int]], where: str, place: Callable[[str, int], str], problems: Problems) -> None:
    """Each of ``of``/``wrt`` must be an output/parameter name or kind of ``machine``'s model at the first step."""
    try:
        problem = _step_problem(scenario, machine, values)
    except InputError as error:
        problems.add(where, f"machine {machine.id!r} has no valid model at the first step: {error}")
        return
    _, prescribed = statics.resolve_prescribed(problem.model, problem.set, [])
    catalogues = {"of": (output_table.catalogue(problem.model, statics.free_coordinates(problem.model, prescribed)),
                         output_table.KINDS),
                  "wrt": (parameter_table.catalogue(problem.model, tuple(problem.loads), problem.gravity),
                          (*parameter_table.KINDS, "all"))}
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


def run_sensitivity(scenario: Any, spec: SensitivitySpec, steps: list[StepResult]) -> dict[str, Any]:
    """results.json's ``sensitivity`` section: one point per (step, machine) (:mod:`shiftsim.sensitivity.document`);
    a step that did not converge, or whose equilibrium cannot be differentiated, gets its reason as ``error``."""
    machines = {m.id: m for m in scenario.machines}
    found = []
    for step in steps:
        for machine_id, of in spec.of.items():
            machine = machines[machine_id]
            head = {"step": step.index, "parameters": step.parameters, "machine": machine_id}
            if machine_id not in step.q:
                found.append({**head, "error": "the step has no equilibrium of this machine (it did not converge)"})
                continue
            try:
                problem = _step_problem(scenario, machine, step.parameters)
                solution = statics.solve(problem.model, set=problem.set, loads=problem.loads, gravity=problem.gravity,
                                         q_start=step.q[machine_id])
                result = sensitivity(solution, of=of, wrt=spec.wrt[machine_id], set=problem.set, loads=problem.loads,
                                     gravity=problem.gravity, mode=spec.mode)
            except (InputError, SolveError, np.linalg.LinAlgError) as error:
                found.append({**head, "error": str(error)})
                continue
            found.append(points.point(result, step.index, step.parameters, machine_id, machine.name))
    return {"of": [machines[m].name(o) for m, names in spec.of.items() for o in names],
            "mode": spec.mode, "normalized": spec.normalized, "top": spec.top, "points": found}


def run_analysis(scenario: Any, steps: list[StepResult]) -> dict[str, Any] | None:
    """The ``sensitivity`` section of the scenario's ``analysis.sensitivity`` (None without one)."""
    spec = sensitivity_spec(scenario)
    return None if spec is None else run_sensitivity(scenario, spec, steps)


__all__ = ["SensitivitySpec", "read_sensitivity", "run_analysis", "run_sensitivity", "sensitivity_spec"]
