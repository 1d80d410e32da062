"""What the 3D view draws at one step of a run, from its results alone (no solve).

The results are a :class:`~shiftsim.output.run_results.RunResults` (``load_results`` of a folder, or
``run_scenario``). A step's values are read with one filtered read of the store (by step, :func:`step_values`):
joint forces (``wrench_world``), tracked frames (``position``, ``deflection``), contact forces and points, centres
of pressure, the collision pairs' distances and closest points, and the machines' coordinates. The machines' poses
come from :mod:`.scenes`: results.json's ``scene`` for a run that keeps its steps there, forward kinematics of the
step's coordinates for a longer one. What is fixed over the run (the machines' size, the largest force, the
exaggeration) is found once (:func:`run_drawing`).

Everything is in the scenario's world frame (z up), in m; forces in N. Deflections are drawn
``factor`` times their size about the unloaded pose: a drawn point is ``reference + factor *
(loaded - reference)`` (factor 1 draws the solved pose). Arrows start at the point the force acts on
and are ``force * scale`` long (m per N; the largest force of the run is drawn :data:`ARROW_SHARE` of the
machines' size).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ground.footprint import footprint
from .scenes import ComputedScene, SceneSource, StoredScene, scene_of

if TYPE_CHECKING:
    from ..output.run_results import RunResults

ARROW_SHARE = 0.25  # the run's largest force is drawn this share of the machines' size
FORCE_FLOOR = 1e-6  # forces below this share of the run's largest are not drawn (round-off)


@dataclass(frozen=True)
class Shape:
    """A collision shape drawn at a step: ``kind`` box / sphere / cylinder, ``size`` (3,) half extents m,
    ``rotation`` (3, 3) world <- shape, ``centre`` (3,) m."""

    machine: str
    body: str
    kind: str
    size: np.ndarray
    rotation: np.ndarray
    centre: np.ndarray


@dataclass(frozen=True)
class Arrow:
    """A force drawn as an arrow: ``start`` (3,) m, ``force`` (3,) N, ``label`` naming it and its size."""

    name: str
    start: np.ndarray
    force: np.ndarray
    label: str


@dataclass(frozen=True)
class MachineDrawing:
    """One machine at one step: frame positions (F, 3) m as drawn, the links' point sets, cylinders and
    joint pins as (k, 2, 3) segments, shapes."""

    machine: str
    frames: np.ndarray
    links: list[tuple[str, np.ndarray]]
    cylinders: np.ndarray
    joints: np.ndarray
    shapes: list[Shape]


@dataclass(frozen=True)
class StepDrawing:
    """Everything drawn at one step (position ``row`` in the document's steps)."""

    row: int
    index: int
    status: str
    parameters: dict[str, float]
    machines: list[MachineDrawing]
    joint_forces: list[Arrow]
    contact_forces: list[Arrow]
    support_polygons: list[tuple[str, np.ndarray]]  # machine id, (k, 3) corners in order
    centres_of_pressure: list[tuple[str, np.ndarray]]
    collisions: list[tuple[str, np.ndarray, float]]  # "a - b", (2, 3) closest points, distance m
    tracked: list[tuple[str, np.ndarray]] = field(default_factory=list)  # tracked frame, (3,) m as drawn


@dataclass(frozen=True, eq=False)
class RunDrawing:
    """What the view draws of a whole run, fixed over it: the run's ``results``, where the machines' poses come from
    (``scene``, :mod:`.scenes`), the machines' ``size`` (m, their largest extent) and ``centre`` (3,) m, the run's
    ``largest_force`` (N), the default deflection exaggeration ``factor`` and the arrows' ``scale`` (m per N), and the
    tracked frames (``tracked``: names)."""

    results: RunResults
    scene: SceneSource
    size: float
    centre: np.ndarray
    largest_force: float
    factor: float
    scale: float
    tracked: list[str]


EXTENT_STEPS = 64  # steps a computed scene is posed at to size the view (every step of a stored scene)


def run_drawing(results: RunResults) -> RunDrawing:
    """The :class:`RunDrawing` of ``results``: its scene source (:func:`.scenes.scene_of`), the machines' extent over
    the run (every step of a stored scene; :data:`EXTENT_STEPS` spread steps of a computed one, and the tracked
    frames at every step), the largest joint or contact force, the exaggeration (:func:`exaggeration`) and the arrow
    scale (the largest force drawn :data:`ARROW_SHARE` of the machines' size)."""
    scene = scene_of(results)
    catalog = results.store.catalog()
    tracked = [entity for entity, quantity in catalog if quantity == "position" and (entity, "effort") not in catalog
               and (entity, "rotation") not in catalog]
    n = len(results.steps)
    rows = (range(n) if isinstance(scene, StoredScene)
            else np.unique(np.linspace(0, n - 1, min(n, EXTENT_STEPS)).round().astype(int)))
    coordinates = _coordinates(results, rows) if isinstance(scene, ComputedScene) else {}
    loaded, moved = [], [np.zeros(1)]
    for row in rows:
        for record in scene.step(int(row), coordinates.get(int(row), {})).values():
            if record is not None:
                frames, reference = np.asarray(record["frames"], float), np.asarray(record["reference"], float)
                loaded.append(frames)
                moved.append(np.linalg.norm(frames - reference, axis=1))
    for name in tracked:
        loaded.append(results[name, "position"].reshape(-1, 3))
        if (name, "deflection") in catalog:
            moved.append(np.linalg.norm(results[name, "deflection"], axis=1))
    points = np.concatenate([np.zeros((0, 3)), *loaded])
    points = points[np.all(np.isfinite(points), axis=1)]  # a failed step's frames are NaN
    if not len(points):
        points = np.zeros((1, 3))
    size = float(np.max(np.ptp(points, axis=0))) or 1.0
    centre = (points.min(axis=0) + points.max(axis=0)) / 2
    largest = largest_force(results)
    factor = exaggeration(float(np.nanmax(np.concatenate(moved))), size)
    return RunDrawing(results, scene, size, centre, largest, factor, ARROW_SHARE * size / largest if largest > 0 else 0.0,
                      tracked)


def _coordinates(results: RunResults, rows: Any) -> dict[int, dict[tuple[str, str], np.ndarray]]:
    """Step row -> its machines' ``coordinates`` and ``reference_coordinates`` (one filtered store read of those
    steps and quantities)."""
    wanted = [int(results.steps.index[row]) for row in rows]
    values = _group(results, results.store.select(quantity=["coordinates", "reference_coordinates"], steps=wanted))
    row_of = {index: int(row) for row, index in zip(rows, wanted)}
    return {row_of[index]: step for index, step in values.items()}


def _group(results: RunResults, table: Any) -> dict[int, dict[tuple[str, str], np.ndarray]]:
    """Store rows (``step, entity, quantity, component, value``) as step number -> (entity, quantity) -> its
    components in the catalog's order (NaN where a value is null)."""
    catalog = results.store.catalog()
    out: dict[int, dict[tuple[str, str], np.ndarray]] = {}
    columns = [table.column(name).to_pylist() for name in ("step", "entity", "quantity", "component")]
    values = table.column("value").to_numpy(zero_copy_only=False).astype(float)
    for step, entity, quantity, component, value in zip(*columns, values):
        key = (entity, quantity)
        components = catalog[key]
        array = out.setdefault(step, {}).get(key)
        if array is None:
            array = out[step][key] = np.full(len(components), np.nan)
        array[components.index(component)] = value
    return out


def step_values(results: RunResults, row: int) -> dict[tuple[str, str], np.ndarray]:
    """(entity, quantity) -> its components at step row ``row`` (a (k,) array; k = 1 for a number): every value the
    store holds of that step, read with one filtered read (by step)."""
    index = int(results.steps.index[row])
    return _group(results, results.store.select(steps=[index])).get(index, {})


def largest_force(results: RunResults) -> float:
    """N: the largest joint or contact force of the run (0 when none)."""
    forces = [0.0]
    for entity, quantity in results.keys():
        if quantity in ("wrench_world", "contact_force"):
            norms = np.linalg.norm(results[entity, quantity][:, :3], axis=1)
            forces.append(float(np.nanmax(norms, initial=0.0)))
    return max(forces)


def exaggeration(largest_deflection: float, size: float) -> float:
    """The deflection exaggeration from 1, 2, 5 x 10^n that draws ``largest_deflection`` (m) about a tenth of the
    machines' ``size`` (m) (1 when nothing deflects)."""
    wanted = 0.1 * size / largest_deflection if largest_deflection > 0 else 1.0
    if wanted <= 1:
        return 1.0
    decade = 10.0 ** np.floor(np.log10(wanted))
    return float(max(m * decade for m in (1, 2, 5) if m * decade <= wanted))


def force_label(name: str, force: np.ndarray) -> str:
    size = float(np.linalg.norm(force))
    return f"{name}: {size / 1e3:.3g} kN" if size >= 1e3 else f"{name}: {size:.3g} N"


def step_drawing(run: RunDrawing, row: int, factor: float) -> StepDrawing:
    """What is drawn at step ``row`` with deflections exaggerated ``factor`` times (see the module docstring): the
    step's store values read once (:func:`step_values`), the machines posed by ``run.scene``."""
    results, values = run.results, step_values(run.results, row)
    records = run.scene.step(row, values)
    machines, positions = [], {}
    for machine_id, layout in run.scene.machines.items():
        record = records.get(machine_id)
        if record is None:
            continue
        reference = np.asarray(record["reference"], float)
        frames = reference + factor * (np.asarray(record["frames"], float) - reference)
        positions.update(zip(layout["frames"], frames))
        machines.append(_machine(machine_id, layout, record, frames, factor))
    floor = FORCE_FLOOR * run.largest_force
    arrows = []
    for (name, quantity), wrench in values.items():
        if quantity != "wrench_world":
            continue
        frame, force = _joint_frame(run.scene.machines, name), wrench[:3]
        if frame in positions and np.linalg.norm(force) > floor:  # NaN (no solution) is not
            arrows.append(Arrow(name, positions[frame], force, force_label(name, force)))
    contact_forces, polygons, centres = _ground(values, floor)
    collisions = [(pair.replace("|", " - "), points.reshape(2, 3), float(values[pair, "distance"][0]))
                  for (pair, quantity), points in values.items()
                  if quantity == "closest_points" and np.all(np.isfinite(points)) and (pair, "distance") in values]
    parameters = {name: float(results.steps[name][row]) for name in results.parameters}
    tracked = []
    for name in run.tracked:
        solved = values.get((name, "position"))
        if name in positions:  # drawn exaggerated as the machine is
            tracked.append((name, positions[name]))
        elif solved is not None and np.all(np.isfinite(solved)):
            deflection = values.get((name, "deflection"), np.zeros(3))
            tracked.append((name, solved + (factor - 1) * np.nan_to_num(deflection)))
    return StepDrawing(row, int(results.steps.index[row]), str(results.steps.status[row]), parameters, machines,
                       arrows, contact_forces, polygons, centres, collisions, tracked)


def _ground(values: dict[tuple[str, str], np.ndarray], floor: float) -> tuple[list, list, list]:
    """A step's contact force arrows (at the contact points), support polygons (the run's footprint of the contacts'
    points and forces, :func:`shiftsim.ground.footprint.footprint`) and centres of pressure, per standing machine."""
    arrows, polygons, centres = [], [], []
    for machine_id in [entity for entity, quantity in values if quantity == "tipping_margin"]:
        names = [entity for entity, quantity in values if quantity == "contact_force"
                 and entity.startswith(machine_id + ":") and np.all(np.isfinite(values[entity, quantity]))
                 and (entity, "contact_point") in values]
        if not names:
            continue
        points = np.array([values[name, "contact_point"] for name in names])
        forces = np.array([values[name, "contact_force"] for name in names])
        arrows += [Arrow(name, point, force, force_label(name, force))
                   for name, point, force in zip(names, points, forces) if np.linalg.norm(force) > floor]
        ring = footprint(points, forces).polygon
        if len(ring) >= 2:
            polygons.append((machine_id, points[ring]))
        centre = values.get((machine_id, "centre_of_pressure"))
        if centre is not None and np.all(np.isfinite(centre)):
            centres.append((machine_id, centre))
    return arrows, polygons, centres


def _joint_frame(machines: dict[str, Any], joint: str) -> str | None:
    """The name of the child frame of joint ``joint`` (where its force is drawn), None when not in the scene."""
    for layout in machines.values():
        for item in layout["joints"] + layout["cylinders"]:
            if item["name"] == joint or joint.endswith(":" + item["name"]):
                return layout["frames"][item["frames"][1]]
    return None


def _machine(machine_id: str, layout: dict[str, Any], record: dict[str, Any], frames: np.ndarray,
             factor: float) -> MachineDrawing:
    links = [(link["body"], frames[link["frames"]]) for link in layout["links"]]
    cylinders = np.array([frames[c["frames"]] for c in layout["cylinders"]]).reshape(-1, 2, 3)
    joints = np.array([frames[j["frames"]] for j in layout["joints"]]).reshape(-1, 2, 3)
    shapes = []
    for spec, pose, reference in zip(layout["shapes"], record["shapes"], record["shapes_reference"]):
        pose, reference = np.asarray(pose, float), np.asarray(reference, float)
        centre = reference[:, 3] + factor * (pose[:, 3] - reference[:, 3])
        shapes.append(Shape(machine_id, spec["body"], spec["kind"], np.asarray(spec["size"], float), pose[:, :3],
                            centre))
    return MachineDrawing(machine_id, frames, links, cylinders, joints, shapes)


def capacity_points(results: RunResults) -> list[tuple[int, np.ndarray, str]]:
    """The capacity chart's lift points: (step row, lift point (3,) m as solved, label) for each rated point whose
    lift frame is reported."""
    capacity = results.document.get("capacity") or {}
    if "points" not in capacity or (capacity["frame"], "position") not in results:
        return []
    rows = {int(index): row for row, index in enumerate(results.steps.index)}
    lifted = results[capacity["frame"], "position"]
    out = []
    for point in capacity["points"]:
        row = rows.get(point["step"])
        if row is None or point.get("rated_mass") is None or not np.all(np.isfinite(lifted[row])):
            continue
        out.append((row, lifted[row],
                    f"step {point['step']}: rated {point['rated_mass'] / 1e3:.3g} t at radius "
                    f"{point['radius']:.3g} m, height {point['height']:.3g} m ({point['governs']} governs)"))
    return out
