"""What the 3D view draws at one step of a run, from its results alone (no model, no solve).

The results are a :class:`~shiftsim.output.run_results.RunResults` (``load_results`` of a folder, or
``run_scenario``): per-step values come through its public interface (``results.steps`` for the step numbers,
status and swept values; ``results[joint, "wrench_world"]``, ``results[frame, "position"]``), the machines' geometry
from results.json's ``scene``; the ground's contact points and support polygons and the collision pairs' closest
points, which ``RunResults`` holds no arrays for, from the step's record in ``results.document``.

Everything is in the scenario's world frame (z up), in m; forces in N. Deflections are drawn
``factor`` times their size about the unloaded pose: a drawn point is ``reference + factor *
(loaded - reference)`` (factor 1 draws the solved pose). Arrows start at the point the force acts on
and are ``force * arrow_scale`` long (m per N; :func:`arrow_scale` makes the largest force of the run
a fixed share of the machines' size).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

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


def has_scene(results: RunResults) -> bool:
    """Whether the results hold a ``scene`` for every step (results written before the view have none)."""
    scene = results.document.get("scene")
    return scene is not None and len(scene["steps"]) == len(results.steps)


def step_record(results: RunResults, row: int) -> dict[str, Any]:
    """Step row ``row``'s record in results.json, for what ``RunResults`` has no arrays of: ground contact points,
    support polygons and contact forces (``ground``), the collision pairs' closest points (``collisions``)."""
    return results.document["steps"][row]


def frame_positions(scene: dict[str, Any], row: int, machine: str, factor: float) -> np.ndarray | None:
    """(F, 3) m: the machine's frames at step ``row`` with deflections ``factor`` times their size (None: no solution)."""
    record = scene["steps"][row].get(machine)
    if record is None:
        return None
    reference = np.asarray(record["reference"], float)
    return reference + factor * (np.asarray(record["frames"], float) - reference)


def _all_frames(scene: dict[str, Any]) -> np.ndarray:
    """(n, 3) m: every machine's frames at every step, loaded (a single origin when nothing is drawn)."""
    points = [np.asarray(record["frames"], float) for step in scene["steps"] for record in step.values()
              if record is not None]
    return np.concatenate(points) if points else np.zeros((1, 3))


def machines_size(scene: dict[str, Any]) -> float:
    """m: the largest extent of the machines' frames over the run (1 when nothing is drawn)."""
    return float(np.max(np.ptp(_all_frames(scene), axis=0))) or 1.0


def machines_centre(scene: dict[str, Any]) -> np.ndarray:
    """(3,) m: the centre of the box around the machines' frames over the run."""
    frames = _all_frames(scene)
    return (frames.min(axis=0) + frames.max(axis=0)) / 2


def joint_forces(results: RunResults) -> dict[str, np.ndarray]:
    """Joint name -> (n_steps, 3) N: the force each reported joint transmits, world axes (NaN: no solution)."""
    return {entity: results[entity, quantity][:, :3] for entity, quantity in results.keys()
            if quantity == "wrench_world"}


def tracked_frames(results: RunResults) -> dict[str, np.ndarray]:
    """Tracked frame name -> (n_steps, 3) m, world positions as solved (entities with a position that are neither
    joints, which have an effort, nor bodies, which have a rotation)."""
    return {entity: results[entity, quantity] for entity, quantity in results.keys()
            if quantity == "position" and (entity, "effort") not in results and (entity, "rotation") not in results}


def largest_force(results: RunResults) -> float:
    """N: the largest joint or contact force of the run (0 when none)."""
    forces = [0.0, *(float(np.nanmax(np.linalg.norm(f, axis=1), initial=0.0)) for f in joint_forces(results).values())]
    for row in range(len(results.steps)):
        for record in (step_record(results, row).get("ground") or {}).values():
            forces += [float(np.linalg.norm(f)) for f in record["contact_forces"].values()]
    return max(forces)


def arrow_scale(results: RunResults) -> float:
    """m per N: the run's largest force drawn :data:`ARROW_SHARE` of the machines' size (0 when no force)."""
    largest = largest_force(results)
    return ARROW_SHARE * machines_size(results.document["scene"]) / largest if largest > 0 else 0.0


def default_factor(scene: dict[str, Any]) -> float:
    """The deflection exaggeration from 1, 2, 5 x 10^n that draws the run's largest frame deflection about
    a tenth of the machines' size (1 when nothing deflects)."""
    largest = 0.0
    for step in scene["steps"]:
        for record in step.values():
            if record is not None:
                moved = np.asarray(record["frames"], float) - np.asarray(record["reference"], float)
                largest = max(largest, float(np.max(np.linalg.norm(moved, axis=1), initial=0.0)))
    wanted = 0.1 * machines_size(scene) / largest if largest > 0 else 1.0
    if wanted <= 1:
        return 1.0
    decade = 10.0 ** np.floor(np.log10(wanted))
    return float(max(m * decade for m in (1, 2, 5) if m * decade <= wanted))


def force_label(name: str, force: np.ndarray) -> str:
    size = float(np.linalg.norm(force))
    return f"{name}: {size / 1e3:.3g} kN" if size >= 1e3 else f"{name}: {size:.3g} N"


def step_drawing(results: RunResults, row: int, factor: float) -> StepDrawing:
    """What is drawn at step ``row`` with deflections exaggerated ``factor`` times (see the module docstring)."""
    scene = results.document["scene"]
    machines, positions = [], {}
    for machine_id, layout in scene["machines"].items():
        frames = frame_positions(scene, row, machine_id, factor)
        if frames is None:
            continue
        names = layout["frames"]
        positions.update(zip(names, frames))
        machines.append(_machine(machine_id, layout, scene["steps"][row][machine_id], frames, factor))
    largest = largest_force(results)
    arrows = []
    for name, forces in joint_forces(results).items():
        frame, force = _joint_frame(scene, name), forces[row]
        if frame in positions and np.linalg.norm(force) > FORCE_FLOOR * largest:  # NaN (no solution) is not
            arrows.append(Arrow(name, positions[frame], force, force_label(name, force)))
    record = step_record(results, row)
    contact_forces, polygons, centres = [], [], []
    for machine_id, ground in (record.get("ground") or {}).items():
        points = {name: np.asarray(p, float) for name, p in ground.get("contact_points", {}).items()}
        for name, force in ground["contact_forces"].items():
            force = np.asarray(force, float)
            if name in points and np.linalg.norm(force) > FORCE_FLOOR * largest:
                contact_forces.append(Arrow(name, points[name], force, force_label(name, force)))
        corners = [points[name] for name in ground.get("support_polygon", []) if name in points]
        if len(corners) >= 2:
            polygons.append((machine_id, np.array(corners)))
        if ground.get("centre_of_pressure") is not None:
            centres.append((machine_id, np.asarray(ground["centre_of_pressure"], float)))
    collisions = [(f"{pair['a']} - {pair['b']}", np.asarray(pair["points"], float),
                   float(results[f"{pair['a']}|{pair['b']}", "distance"][row]))
                  for pair in record.get("collisions") or [] if pair.get("points") is not None]
    parameters = {name: float(results.steps[name][row]) for name in results.parameters}
    tracked = [(name, positions.get(name, solved[row])) for name, solved in tracked_frames(results).items()
               if np.all(np.isfinite(positions.get(name, solved[row])))]  # drawn exaggerated where the scene has it
    return StepDrawing(row, int(results.steps.index[row]), str(results.steps.status[row]), parameters, machines,
                       arrows, contact_forces, polygons, centres, collisions, tracked)


def _joint_frame(scene: dict[str, Any], joint: str) -> str | None:
    """The name of the child frame of joint ``joint`` (where its force is drawn), None when not in the scene."""
    for layout in scene["machines"].values():
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
