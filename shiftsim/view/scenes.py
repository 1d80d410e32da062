"""Where the view's machine poses at a step come from: results.json's ``scene``, or forward kinematics of the store.

A run of up to :data:`~shiftsim.output.writers.JSON_STEP_LIMIT` steps keeps every step's scene in results.json
(:class:`StoredScene`). A longer run keeps only its summary there; its store holds each machine's solved and
unloaded coordinates per step, so :class:`ComputedScene` rebuilds the scenario once from results.json's
``metadata`` (the scenario as it was read, and the model files it named) and computes a step's scene when it is
shown, by the same forward kinematics the run used (:func:`shiftsim.output.scene.machine_scene`). A model file that
is missing or changed since the run (its SHA-256 against the recorded one) cannot give the run's poses: then
:class:`PointsScene` draws no machine bodies, and the view shows what the store holds (tracked frames as points,
forces, contacts, collision pairs), with :attr:`note` saying why.

Every source has ``machines`` (machine id -> the fixed layout of results.json's ``scene.machines``), ``note`` (''
or why the machines are not drawn) and ``step(row, coordinates)``: machine id -> its scene record at step row
``row`` (``frames``, ``reference`` (F, 3) m, ``shapes``, ``shapes_reference`` (S, 3, 4) m) or None (no solution).
``coordinates`` is the step's ``(machine, "coordinates" | "reference_coordinates") -> (nq,)`` store values, read
by the caller with the rest of the step's rows.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from ..output.run_results import RunResults

Coordinates = dict[tuple[str, str], np.ndarray]


class SceneSource(Protocol):
    machines: dict[str, dict[str, Any]]
    note: str

    def step(self, row: int, coordinates: Coordinates) -> dict[str, dict[str, Any] | None]: ...


class StoredScene:
    """The ``scene`` results.json holds for every step."""

    note = ""

    def __init__(self, scene: dict[str, Any]):
        self.machines = scene["machines"]
        self._steps = scene["steps"]

    def step(self, row: int, coordinates: Coordinates) -> dict[str, dict[str, Any] | None]:
        return self._steps[row]


class ComputedScene:
    """Each step's scene by forward kinematics of the store's coordinates of the step (the scenario's machines built
    once, from results.json's metadata)."""

    note = ""

    def __init__(self, scenario: Any, results: RunResults):
        from ..output.scene import machine_layout

        self.scenario, self.results = scenario, results
        self.machines = {machine.id: machine_layout(machine) for machine in scenario.machines}

    def step(self, row: int, coordinates: Coordinates) -> dict[str, dict[str, Any] | None]:
        from ..output.scene import machine_scene
        from ..scenario.runner import machine_values

        parameters = {name: float(self.results.steps[name][row]) for name in self.results.parameters}
        out: dict[str, dict[str, Any] | None] = {}
        for machine in self.scenario.machines:
            q = coordinates.get((machine.id, "coordinates"))
            q_reference = coordinates.get((machine.id, "reference_coordinates"))
            if q is None or q_reference is None or not np.all(np.isfinite(q)) or not np.all(np.isfinite(q_reference)):
                out[machine.id] = None  # no solution at this step
                continue
            out[machine.id] = machine_scene(machine, machine_values(self.scenario, machine, parameters), q,
                                            q_reference)
        return out


class PointsScene:
    """No machine bodies (the models cannot be had as the run had them): ``note`` says why."""

    machines: dict[str, dict[str, Any]] = {}

    def __init__(self, note: str):
        self.note = note

    def step(self, row: int, coordinates: Coordinates) -> dict[str, dict[str, Any] | None]:
        return {}


def changed_inputs(metadata: dict[str, Any]) -> list[str]:
    """What is wrong with the model files results.json's ``metadata`` recorded (each missing, or changed since the run:
    its SHA-256 now against the recorded one); [] when each is as the run read it. The scenario file (the first input)
    is not checked: its document as read is in ``metadata.scenario_document``."""
    from ..output.provenance import file_digest

    problems = []
    for item in metadata.get("inputs", [])[1:]:
        path = Path(item["path"])
        if not path.is_file():
            problems.append(f"model file {path} is missing")
        elif item.get("sha256") is not None and file_digest(path) != item["sha256"]:
            problems.append(f"model file {path} changed since the run (sha256 {file_digest(path)[:12]}..., the run "
                            f"read {item['sha256'][:12]}...)")
    return problems


def scene_of(results: RunResults) -> SceneSource:
    """The scene source for ``results`` (see the module docstring)."""
    document = results.document
    scene = document.get("scene")
    if scene is not None and len(scene["steps"]) == len(results.steps):
        return StoredScene(scene)
    fallback = "; the machines are drawn as their tracked frames only (points)"
    metadata = document.get("metadata")
    if not metadata or not metadata.get("inputs") or not isinstance(metadata.get("scenario_document"), dict):
        return PointsScene("results.json has no per-step scene and records no scenario and model files (metadata) "
                           "to compute it from" + fallback)
    problems = changed_inputs(metadata)
    if problems:
        return PointsScene("; ".join(problems) + fallback)
    from ..errors import ShiftsimError, ShiftsimWarning
    from ..scenario.definition import build_scenario

    try:
        with warnings.catch_warnings():  # the run showed the readers' warnings already
            warnings.simplefilter("ignore", ShiftsimWarning)
            scenario = build_scenario(Path(metadata["inputs"][0]["path"]), metadata["scenario_document"])
    except ShiftsimError as error:
        return PointsScene(f"the run's scenario cannot be rebuilt from results.json's metadata: {error}" + fallback)
    return ComputedScene(scenario, results)


__all__ = ["ComputedScene", "PointsScene", "SceneSource", "StoredScene", "changed_inputs", "scene_of"]
