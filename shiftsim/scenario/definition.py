"""The parsed scenario: dataclasses, and :func:`load_scenario` that builds them from a file.

Building checks the document against the schema first (structure and types),
then the meaning: machine ids, model files, joint, frame, body and load names,
sweep consistency. Every problem is collected with its JSON path and raised
once as a :class:`~shiftsim.errors.ScenarioError` (exit code 2).

Several machines are independent: each is solved on its own, in its model
frame, with the world's gravity and loads rotated into that frame by its
placement; results are mapped back to the world (see ``runner``). A machine
attached to another (``attach``) is part of its host's model (``loading``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import Problems, ScenarioError, group_warnings, suggest
from ..jsonio import read_json
from ..spec import PATH_SEPARATOR
from . import schema
from .loading import load_machines
from .ground import stand_machines
from .machines import Machine, assemble_start, resolve
from .sweep import MAX_JOINT_VALUE, MAX_STEPS, Parameter, Sweep, expand, values_beyond

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
ANGLE_UNITS = {"rad": 1.0, "deg": 180.0 / math.pi}  # the value of one radian in each unit
RESERVED_LOAD_PREFIX = "load"
TIME = "time"


@dataclass(frozen=True)
class ScenarioLoad:
    """A force (N) and torque (N m) at frame ``frame`` (full model name) of machine ``machine``.

    ``direction`` "world": components in world axes, fixed in the world; "body":
    components in the frame's own axes, turning with it. Scaled by ``factor``.
    """

    name: str
    machine: str
    frame: str
    force: np.ndarray
    torque: np.ndarray
    direction: str = "world"
    factor: float = 1.0


@dataclass(frozen=True)
class Track:
    """Scenario names (``id:…``) of the frames, joints and bodies reported; None means all."""

    frames: tuple[str, ...] | None = None
    joints: tuple[str, ...] | None = None
    bodies: tuple[str, ...] | None = None

    def local(self, kind: str, machine: Machine) -> list[str] | None:
        """Model names of the tracked items of ``kind`` on ``machine`` (None: all)."""
        names = getattr(self, kind)
        if names is None:
            return None
        prefix = machine.id + PATH_SEPARATOR
        return [n[len(prefix):] for n in names if n.startswith(prefix)]


@dataclass(frozen=True)
class Outputs:
    """What is written besides results.json: the tidy CSV, which plots, the plots' resolution, and options per
    plot kind (``{"pin_loads": {"components": true}}``, see the scenario schema)."""

    csv: bool | None = None  # None: results.csv and steps.csv for runs of up to CSV_STEP_LIMIT steps (output/writers.py)
    plots: tuple[str, ...] | None = None  # as the scenario names them; None: all that apply (plots/registry.py)
    dpi: int = 100
    plot_options: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    """A validated scenario, machines loaded, placed and assembled."""

    name: str
    description: str
    source: Path
    gravity: np.ndarray
    machines: tuple[Machine, ...]
    loads: tuple[ScenarioLoad, ...]
    sweep: Sweep
    track: Track
    outputs: Outputs
    warnings: tuple[str, ...] = field(default=())
    document: Any = field(default=None, repr=False, compare=False)
    angle_unit: str = "rad"

    def machine(self, machine_id: str) -> Machine:
        return next(m for m in self.machines if m.id == machine_id)

    def angle(self, radians: Any) -> Any:
        """Angles (rad, a number or an array) in the scenario's ``angle_unit``, for what people read."""
        return radians * angle_factor(self.angle_unit)

    @property
    def input_files(self) -> tuple[Path, ...]:
        """The scenario file and every model file (never written)."""
        return (self.source.resolve(), *(path for m in self.machines for path in m.inputs))


def angle_factor(unit: str) -> float:
    """What one radian is in ``unit`` (``rad`` or ``deg``, :data:`ANGLE_UNITS`)."""
    return ANGLE_UNITS[unit]


def angle_unit_of(unit: str, angle_unit: str) -> str:
    """The unit a value measured in ``unit`` is shown in: ``rad`` becomes ``angle_unit``, others stay."""
    return angle_unit if unit == "rad" else unit


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file; raises ScenarioError listing every problem."""
    path = Path(path)
    document, warnings = read_json(path, ScenarioError)
    return build_scenario(path, document, warnings)


def build_scenario(path: Path, document: Any, warnings: list[str] = ()) -> Scenario:
    """Build a Scenario from an already parsed document (relative model paths from ``path``'s folder)."""
    problems = Problems(str(path), ScenarioError)
    schema.validate(document, problems)
    _check_finite(document, [], problems)
    problems.raise_if_any()
    warnings = list(warnings)

    gravity = np.asarray(document.get("world", {}).get("gravity", DEFAULT_GRAVITY), float)
    machines, attached = load_machines(document, path.parent, problems)
    for machine in machines:
        warnings.extend(f"machine {machine.id!r}: {w}" for w in group_warnings(machine.model.warnings))
        warning = _gravity_mismatch(machine, gravity)
        if warning:
            warnings.append(warning)
    known = _Known({m.id: m for m in machines}, {e["id"] for e in document["machines"]}, attached)
    loads = _loads(document.get("loads", []), known, problems)
    known.loads = {l.name for l in loads}
    known.broken_loads = {e["name"] for e in document.get("loads", [])} - known.loads
    sweep = _sweep(document.get("sweep"), known, problems)
    track = _track(document.get("track", {}), known, problems)
    outputs = _outputs(document)
    problems.raise_if_any()

    swept: dict[str, list[str]] = {}
    for p in sweep.parameters:
        if p.kind == "joint":
            swept.setdefault(p.machine, []).append(p.target)
    machines = [assemble_start(m, [*m.held, *swept.get(m.id, [])], problems) for m in machines]
    problems.raise_if_any()
    machines = stand_machines(document, machines, gravity, problems)
    problems.raise_if_any()
    return Scenario(document["name"], document.get("description", ""), path, gravity, tuple(machines),
                    tuple(loads), sweep, track, outputs, tuple(warnings), document,
                    angle_unit=document.get("angle_unit", "rad"))


def _outputs(document: dict) -> Outputs:
    """The outputs asked for (the plot names as written; which plots apply is the plot registry's,
    :func:`shiftsim.plots.registry.chosen_plots`)."""
    wanted, default = document.get("outputs", {}), Outputs()
    plots = wanted.get("plots")
    return Outputs(wanted.get("csv", default.csv), None if plots is None else tuple(plots),
                   int(wanted.get("dpi", default.dpi)), wanted.get("plot_options", {}))


def _check_finite(value: Any, path: list[str | int], problems: Problems) -> None:
    """Lenient (JSON5) input can hold NaN or Infinity: refuse them."""
    if isinstance(value, float) and not math.isfinite(value):
        problems.add(schema.json_path(path), f"{value} is not a finite number", "a finite number")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_finite(item, [*path, key], problems)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_finite(item, [*path, i], problems)


def _gravity_mismatch(machine: Machine, world_gravity: np.ndarray) -> str:
    """A warning when the model's own gravity, placed in the world, points away from the world's gravity."""
    own = machine.placement.vector_to_world(machine.model.gravity)
    if np.linalg.norm(own) == 0 or np.linalg.norm(world_gravity) == 0:
        return ""
    cosine = own @ world_gravity / (np.linalg.norm(own) * np.linalg.norm(world_gravity))
    if cosine > math.cos(math.radians(1.0)):
        return ""
    down = np.round(own / np.linalg.norm(own), 3).tolist()
    return (f"machine {machine.id!r}: the model's own gravity points along {down} in the world after placement, "
            f"the world's gravity along {np.round(world_gravity / np.linalg.norm(world_gravity), 3).tolist()}; "
            "the world's gravity is used (is the placement missing a rotation?)")


@dataclass
class _Known:
    """What references may name: loaded machines and loads. A reference to a machine id written in the
    file (``ids_written``) that did not load, or to a load in ``broken_loads``, adds no second problem.
    ``attached``: where each attached machine is (``id`` -> ``host:id``)."""

    machines: dict[str, Machine]
    ids_written: set[str]
    attached: dict[str, str] = field(default_factory=dict)
    loads: set[str] = field(default_factory=set)
    broken_loads: set[str] = field(default_factory=set)


def _split(name: str, known: _Known, where: str, problems: Problems) -> tuple[Machine, str] | None:
    """``MACHINE:rest`` -> (machine, rest), or None (with a problem unless the machine itself failed)."""
    machine_id, sep, rest = name.partition(PATH_SEPARATOR)
    if not sep or not rest:
        problems.add(where, f"{name!r} does not name a machine", "MACHINE:NAME, e.g. ex1:arm:boom")
        return None
    if machine_id in known.attached:  # an ending of the name under its host: the host's name for it
        host_id, _, inside = known.attached[machine_id].partition(PATH_SEPARATOR)
        if host_id not in known.machines:
            return None
        return known.machines[host_id], f"{inside}{PATH_SEPARATOR}{rest}"
    if machine_id not in known.machines:
        if machine_id not in known.ids_written:
            problems.add(where, f"unknown machine {machine_id!r}", suggest(machine_id, known.ids_written))
        return None
    return known.machines[machine_id], rest


def _loads(entries: list[dict], known: _Known, problems: Problems) -> list[ScenarioLoad]:
    loads: list[ScenarioLoad] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        where = f"loads[{i}]"
        if entry["name"] in seen:
            problems.add(f"{where}.name", f"load name {entry['name']!r} is already used by loads[{seen[entry['name']]}]",
                         "a unique name")
            continue
        seen[entry["name"]] = i
        split = _split(entry["frame"], known, f"{where}.frame", problems)
        if split is None:
            continue
        machine, rest = split
        frame = resolve(machine.model, "frame", rest, machine.id, f"{where}.frame", problems)
        if frame is None:
            continue
        loads.append(ScenarioLoad(entry["name"], machine.id, frame, np.asarray(entry.get("force", (0.0, 0.0, 0.0)), float),
                                  np.asarray(entry.get("torque", (0.0, 0.0, 0.0)), float),
                                  entry.get("direction", "world"), float(entry.get("factor", 1.0))))
    return loads


def _parameter(name: str, known: _Known, where: str, problems: Problems) -> Parameter | None:
    if name == TIME:
        return Parameter(name, "time", "s")
    head, sep, rest = name.partition(PATH_SEPARATOR)
    if head == RESERVED_LOAD_PREFIX and sep:
        if rest not in known.loads:
            if rest not in known.broken_loads:
                problems.add(where, f"unknown load {rest!r}", suggest(rest, known.loads))
            return None
        return Parameter(name, "load", "-", target=rest)
    if not sep:
        problems.add(where, f"{name!r} is not a parameter name", "MACHINE:JOINT, load:LOADNAME or time")
        return None
    split = _split(name, known, where, problems)
    if split is None:
        return None
    machine, rest = split
    setting = machine.setting(rest, where, problems, "sweep")
    if setting is None:
        return None
    return Parameter(name, setting.kind, setting.unit, machine.id, setting.target)


def _sweep(document: dict | None, known: _Known, problems: Problems) -> Sweep:
    if document is None:
        return Sweep()
    mode = document.get("mode", "line")
    parameters, values = [], []
    targets: dict[tuple, str] = {}
    for name, spec in document["parameters"].items():
        where = schema.json_path(["sweep", "parameters", name])
        parameter = _parameter(name, known, where, problems)
        if parameter is None:
            continue
        key = (parameter.kind, parameter.machine, parameter.target)
        if key in targets:
            problems.add(where, f"sets the same quantity as {targets[key]!r}", "each quantity swept once")
            continue
        targets[key] = name
        beyond = values_beyond(spec, MAX_JOINT_VALUE) if parameter.kind in ("joint", "placement") else []
        if beyond:
            problems.add(where, f"{', '.join(f'{v:g}' for v in beyond[:3])} {parameter.unit} is beyond what a "
                         "machine can reach", f"values within ±{MAX_JOINT_VALUE:g} {parameter.unit}")
            continue
        parameters.append(parameter)
        values.append(expand(spec))
    if mode == "line" and len({len(v) for v in values}) > 1:
        counts = ", ".join(f"{p.name}: {len(v)}" for p, v in zip(parameters, values))
        problems.add("sweep.parameters", f"a line sweep needs equally many values per parameter ({counts})",
                     "the same number of values for every parameter, or \"mode\": \"grid\"")
    for k, (parameter, times) in enumerate(zip(parameters, values)):
        if parameter.kind != "time":
            continue
        where = schema.json_path(["sweep", "parameters", parameter.name])
        if mode == "grid" and k != len(parameters) - 1:
            problems.add(where, "time is not the last parameter of a grid",
                         "time last, so that each continuation chain runs forward in time")
        if len(times) <= MAX_STEPS and any(b <= a for a, b in zip(times, times[1:])):  # larger: refused by size
            problems.add(where, "time values do not increase strictly", "strictly increasing times (s)")
    return Sweep(mode, tuple(parameters), tuple(values), document.get("segment"))


def _track(document: dict, known: _Known, problems: Problems) -> Track:
    found: dict[str, tuple[str, ...] | None] = {}
    for kind, singular in (("frames", "frame"), ("joints", "joint"), ("bodies", "body")):
        if kind not in document:
            found[kind] = None
            continue
        names = []
        for i, name in enumerate(document[kind]):
            where = f"track.{kind}[{i}]"
            split = _split(name, known, where, problems)
            if split is None:
                continue
            machine, rest = split
            full = resolve(machine.model, singular, rest, machine.id, where, problems)
            if full is not None and machine.name(full) not in names:
                names.append(machine.name(full))
        found[kind] = tuple(names)
    return Track(**found)
