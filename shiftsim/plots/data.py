"""What every plot draws from: a run's results read through the results object's public interface.

The plots of a run and the plots of a results folder drawn again (``shiftsim plot``) come from the same place: the
:class:`~shiftsim.output.results.RunResults` of the run (``results[entity, quantity]`` arrays by step, read
together in one scan by ``results.select(keys)``; ``results.steps``, ``results.keys()``) and the scenario it ran.
:func:`steps_of` turns those arrays back into the per-step records (:class:`~shiftsim.scenario.runner.StepResult`) that the plots and the digest read, holding only
what the results hold: a value that is NaN at a step (a failed step, a machine that did not converge) is left out of
that step, as the run left it out.

The quantities read (entity kinds as in :mod:`shiftsim.output.results`):

* joints: ``position``, ``deflection``, ``effort``, ``wrench_joint``, ``wrench_world``;
* frames: ``position``, ``deflection``;
* machines: ``coordinates``, ``reference_coordinates`` (the pose plot's poses);
* machine pairs ``a|b``: ``distance``, ``in_collision``, ``closest_points``;
* Mdx machines and legs: ``platform_pose``; ``actuator_length``, ``actuator_raw``, ``actuator_in_range``,
  ``actuator_force``;
* standing machines and their contacts: ``centre_of_pressure``, ``tipping_margin``; ``contact_force``,
  ``contact_point`` (the support polygon follows from these, as the run found it: :func:`.ground.support_polygon`);
* per step (``results.steps``): ``index``, the swept values, ``status``, ``iterations``, ``residual``, ``stable``,
  ``stability``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np

from ..analysis.digest import Peak, deflection_peaks, effort_peaks, pin_load_peaks
from ..scenario.definition import Scenario
from ..scenario.runner import StepResult

JOINT_QUANTITIES = ("position", "deflection", "effort", "wrench_joint", "wrench_world")
FRAME_QUANTITIES = ("position", "deflection")
LEG_QUANTITIES = {"lengths": "actuator_length", "raw": "actuator_raw", "in_range": "actuator_in_range",
                  "forces": "actuator_force"}


class Results(Protocol):
    """The part of :class:`~shiftsim.output.results.RunResults` plots read (it sits above the plots)."""

    steps: Any  # index (n,), values {parameter: (n,)}, status, iterations, residual, stable, stability (n,)

    def __getitem__(self, key: tuple[str, str]) -> np.ndarray: ...

    def keys(self) -> list[tuple[str, str]]: ...

    def select(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], np.ndarray]: ...


class _Column:
    """One quantity of one entity over the steps, as the run recorded it: per step a float or (nested) list, or None
    where it is NaN throughout (the step does not have it); converted once, read per step."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.values = array.tolist()
        self.present = ~np.all(np.isnan(array.reshape(len(array), -1)), axis=1)

    def __getitem__(self, row: int) -> Any:
        return self.values[row] if self.present[row] else None


class Ranking(Protocol):
    """The peaks of a run the plots rank and leave out series by (and say why a plot is empty by): what
    :class:`~shiftsim.analysis.digest.RunDigest` holds, or :class:`StepPeaks` of steps read back."""

    deflection: dict[str, Peak]
    pins: dict[str, Peak]

    def effort_peaks(self) -> dict[str, dict[str, Peak]]: ...

    def force_level(self) -> float: ...

    def peak_deflection(self) -> Peak | None: ...


@dataclass(frozen=True)
class StepPeaks:
    """The peaks of steps read back (:func:`steps_of`), each reduced once, as a :class:`Ranking`: per tracked frame
    its largest deflection (m), per kind and joint coordinate its largest |effort|, per joint its largest pin load (N)
    (:mod:`shiftsim.analysis.digest`; a whole ``RunDigest`` needs what the records do not hold, the tipping edges)."""

    deflection: dict[str, Peak]
    efforts: dict[str, dict[str, Peak]]
    pins: dict[str, Peak]

    @classmethod
    def of(cls, scenario: Scenario, steps: Sequence[StepResult]) -> StepPeaks:
        return cls(deflection_peaks(steps), effort_peaks(scenario, steps), pin_load_peaks(steps))

    def effort_peaks(self) -> dict[str, dict[str, Peak]]:
        return self.efforts

    def force_level(self) -> float:
        """The largest peak effort or pin load (N; N m as if at a 1 m lever): ``digest.force_level``'s."""
        return max([*(abs(p.value) for peaks in self.efforts.values() for p in peaks.values()),
                    *(p.value for p in self.pins.values())], default=0.0)

    def peak_deflection(self) -> Peak | None:
        return max(self.deflection.values(), key=lambda p: p.value, default=None)


def steps_of(scenario: Scenario, results: Results) -> list[StepResult]:
    """The steps of ``results`` (a run of ``scenario``) as the records the plots read (see the module docstring)."""
    entities: dict[str, list[str]] = {}
    for entity, quantity in results.keys():
        entities.setdefault(quantity, []).append(entity)
    joints = entities.get("effort", [])
    frames = [e for e in entities.get("deflection", []) if e not in set(joints)]
    needed = ([(j, q) for j in joints for q in JOINT_QUANTITIES] + [(f, q) for f in frames for q in FRAME_QUANTITIES]
              + [(e, q) for q in ("coordinates", "reference_coordinates", "distance", "in_collision",
                                  "closest_points", "platform_pose", "centre_of_pressure", "tipping_margin",
                                  "contact_force", "contact_point", *LEG_QUANTITIES.values())
                 for e in entities.get(q, [])])
    arrays = {key: _Column(array) for key, array in results.select(needed).items()}  # one scan of the store
    joint_records = {name: _records(arrays, name, JOINT_QUANTITIES, "effort") for name in joints}
    frame_records = {name: _records(arrays, name, FRAME_QUANTITIES, "deflection") for name in frames}
    table = results.steps
    names = list(table.values)
    swept = list(zip(*(values.tolist() for values in table.values.values()))) or [()] * len(table)
    steps = []
    for row, (index, values, status, iterations, residual, stable, stability) in enumerate(zip(
            table.index.tolist(), swept, table.status.tolist(), table.iterations.tolist(), table.residual.tolist(),
            table.stable.tolist(), table.stability.tolist())):
        step = StepResult(index, dict(zip(names, values)), status, iterations,
                          None if math.isnan(residual) else residual, stable, stability=stability)
        for name, records in joint_records.items():
            if records[row] is not None:
                step.joints[name] = records[row]
        for name, records in frame_records.items():
            if records[row] is not None:
                step.frames[name] = records[row]
        for machine_id in entities.get("coordinates", []):
            if arrays[machine_id, "coordinates"][row] is not None:
                step.q[machine_id] = arrays[machine_id, "coordinates"].array[row]
                step.q_reference[machine_id] = arrays[machine_id, "reference_coordinates"].array[row]
        step.collisions = _collisions(arrays, entities.get("distance", []), row)
        step.actuators = _actuators(scenario, arrays, set(entities.get("platform_pose", [])), row)
        step.ground = _ground(arrays, entities.get("tipping_margin", []), entities.get("contact_force", []), row)
        steps.append(step)
    return steps


def _records(arrays: dict, entity: str, quantities: Sequence[str], kept_by: str) -> list[dict[str, Any] | None]:
    """Per step row, ``entity``'s record ``{quantity: value}`` (a quantity the step lacks is None), or None where it
    lacks ``kept_by`` (the entity was not reported at that step)."""
    cells = [[value if present else None for value, present in zip(arrays[entity, q].values,
                                                                    arrays[entity, q].present.tolist())]
             for q in quantities]
    return [dict(zip(quantities, values)) if kept else None
            for kept, values in zip(arrays[entity, kept_by].present.tolist(), zip(*cells))]


def _collisions(arrays: dict, pairs: list[str], row: int) -> list[dict[str, Any]] | None:
    """The step's pair records (``a``, ``b``, ``distance`` m, ``in_collision``, ``points``); None without pairs."""
    if not pairs:
        return None
    found = []
    for pair in pairs:
        distance = arrays[pair, "distance"][row]
        if distance is None:
            continue
        a, b = pair.split("|", 1)
        record = {"a": a, "b": b, "distance": distance, "in_collision": bool(arrays[pair, "in_collision"].array[row])}
        points = arrays[pair, "closest_points"][row] if (pair, "closest_points") in arrays else None
        if points is not None:  # ax, ay, az, bx, by, bz
            record["points"] = [points[:3], points[3:]]
        found.append(record)
    return found


def _actuators(scenario: Scenario, arrays: dict, platforms: set[str], row: int) -> dict[str, dict[str, Any]]:
    """Per Mdx machine posed at the step: its legs' lengths, raw values, range flags and forces, and its pose."""
    out = {}
    for machine in scenario.machines:
        if machine.id not in platforms or arrays[machine.id, "platform_pose"][row] is None:
            continue
        legs = [machine.name(leg) for leg in machine.vocabulary.legs]
        record: dict[str, Any] = {"joints": legs, "pose": arrays[machine.id, "platform_pose"][row]}
        for key, quantity in LEG_QUANTITIES.items():
            record[key] = [float(arrays[leg, quantity].array[row]) for leg in legs]
        record["in_range"] = [bool(v) for v in record["in_range"]]
        out[machine.id] = record
    return out


def _ground(arrays: dict, machines: list[str], contacts: list[str], row: int) -> dict[str, dict[str, Any]]:
    """Per standing machine converged at the step: its contacts' forces and points, centre of pressure and tipping
    margin (the support polygon follows from the contacts: :func:`.ground.support_polygon`)."""
    out = {}
    for machine_id in machines:
        names = [c for c in contacts if c.startswith(machine_id + ":") and arrays[c, "contact_force"][row] is not None]
        if not names:
            continue
        margin = float(arrays[machine_id, "tipping_margin"].array[row])
        out[machine_id] = {
            "contact_forces": {c: arrays[c, "contact_force"][row] for c in names},
            "contact_points": {c: arrays[c, "contact_point"][row] for c in names},
            "centre_of_pressure": [None if math.isnan(v) else float(v)
                                   for v in arrays[machine_id, "centre_of_pressure"].array[row]],
            "tipping_margin": None if math.isnan(margin) else margin}
    return out


__all__ = ["Ranking", "Results", "StepPeaks", "steps_of"]
