"""What the 3D view draws at one step of a run, from the results document alone (no model, no solve).

Everything is in the scenario's world frame (z up), in m; forces in N. Deflections are drawn
``factor`` times their size about the unloaded pose: a drawn point is ``reference + factor *
(loaded - reference)`` (factor 1 draws the solved pose). Arrows start at the point the force acts on
and are ``force * arrow_scale`` long (m per N; :func:`arrow_scale` makes the largest force of the run
a fixed share of the machines' size).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

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
    notes: list[str] = field(default_factory=list)


def has_scene(document: dict[str, Any]) -> bool:
    return "scene" in document and len(document["scene"]["steps"]) == len(document["steps"])


def frame_positions(document: dict[str, Any], row: int, machine: str, factor: float) -> np.ndarray | None:
    """(F, 3) m: the machine's frames at step ``row`` with deflections ``factor`` times their size (None: no solution)."""
    record = document["scene"]["steps"][row].get(machine)
    if record is None:
        return None
    reference = np.asarray(record["reference"], float)
    return reference + factor * (np.asarray(record["frames"], float) - reference)


def _all_frames(document: dict[str, Any]) -> np.ndarray:
    """(n, 3) m: every machine's frames at every step, loaded (a single origin when nothing is drawn)."""
    points = [np.asarray(record["frames"], float) for step in document["scene"]["steps"]
              for record in step.values() if record is not None]
    return np.concatenate(points) if points else np.zeros((1, 3))


def machines_size(document: dict[str, Any]) -> float:
    """m: the largest extent of the machines' frames over the run (1 when nothing is drawn)."""
    return float(np.max(np.ptp(_all_frames(document), axis=0))) or 1.0


def machines_centre(document: dict[str, Any]) -> np.ndarray:
    """(3,) m: the centre of the box around the machines' frames over the run."""
    frames = _all_frames(document)
    return (frames.min(axis=0) + frames.max(axis=0)) / 2


def largest_force(document: dict[str, Any]) -> float:
    """N: the largest joint or contact force of the run (0 when none)."""
    forces = [0.0]
    for step in document["steps"]:
        forces += [float(np.linalg.norm(joint["wrench_world"][:3])) for joint in step["joints"].values()]
        for record in (step.get("ground") or {}).values():
            forces += [float(np.linalg.norm(f)) for f in record["contact_forces"].values()]
    return max(forces)


def arrow_scale(document: dict[str, Any]) -> float:
    """m per N: the run's largest force drawn :data:`ARROW_SHARE` of the machines' size (0 when no force)."""
    largest = largest_force(document)
    return ARROW_SHARE * machines_size(document) / largest if largest > 0 else 0.0


def default_factor(document: dict[str, Any]) -> float:
    """The deflection exaggeration from 1, 2, 5 x 10^n that draws the run's largest frame deflection about
    a tenth of the machines' size (1 when nothing deflects)."""
    largest = 0.0
    for step in document["scene"]["steps"]:
        for record in step.values():
            if record is not None:
                moved = np.asarray(record["frames"], float) - np.asarray(record["reference"], float)
                largest = max(largest, float(np.max(np.linalg.norm(moved, axis=1), initial=0.0)))
    wanted = 0.1 * machines_size(document) / largest if largest > 0 else 1.0
    if wanted <= 1:
        return 1.0
    decade = 10.0 ** np.floor(np.log10(wanted))
    return float(max(m * decade for m in (1, 2, 5) if m * decade <= wanted))


def force_label(name: str, force: np.ndarray) -> str:
    size = float(np.linalg.norm(force))
    return f"{name}: {size / 1e3:.3g} kN" if size >= 1e3 else f"{name}: {size:.3g} N"


def step_drawing(document: dict[str, Any], row: int, factor: float) -> StepDrawing:
    """What is drawn at step ``row`` with deflections exaggerated ``factor`` times (see the module docstring)."""
    step = document["steps"][row]
    scene = document["scene"]
    machines, positions = [], {}
    for machine_id, layout in scene["machines"].items():
        frames = frame_positions(document, row, machine_id, factor)
        if frames is None:
            continue
        names = layout["frames"]
        positions.update(zip(names, frames))
        machines.append(_machine(machine_id, layout, scene["steps"][row][machine_id], frames, factor))
    largest = largest_force(document)
    joint_forces = []
    for name, joint in step["joints"].items():
        frame = _joint_frame(scene, name)
        force = np.asarray(joint["wrench_world"][:3], float)
        if frame in positions and np.linalg.norm(force) > FORCE_FLOOR * largest:
            joint_forces.append(Arrow(name, positions[frame], force, force_label(name, force)))
    contact_forces, polygons, centres = [], [], []
    for machine_id, record in (step.get("ground") or {}).items():
        points = {name: np.asarray(p, float) for name, p in record.get("contact_points", {}).items()}
        for name, force in record["contact_forces"].items():
            force = np.asarray(force, float)
            if name in points and np.linalg.norm(force) > FORCE_FLOOR * largest:
                contact_forces.append(Arrow(name, points[name], force, force_label(name, force)))
        corners = [points[name] for name in record.get("support_polygon", []) if name in points]
        if len(corners) >= 2:
            polygons.append((machine_id, np.array(corners)))
        if record.get("centre_of_pressure") is not None:
            centres.append((machine_id, np.asarray(record["centre_of_pressure"], float)))
    collisions = [(f"{pair['a']} - {pair['b']}", np.asarray(pair["points"], float), float(pair["distance"]))
                  for pair in step.get("collisions") or [] if pair.get("points") is not None]
    return StepDrawing(row, step["index"], step["status"], step["parameters"], machines, joint_forces,
                       contact_forces, polygons, centres, collisions)


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


def capacity_points(document: dict[str, Any]) -> list[tuple[int, np.ndarray, str]]:
    """The capacity chart's lift points: (step row, lift point (3,) m as solved, label) for each valid point."""
    capacity = document.get("capacity") or {}
    if "points" not in capacity:
        return []
    rows = {step["index"]: row for row, step in enumerate(document["steps"])}
    out = []
    for point in capacity["points"]:
        row = rows.get(point["step"])
        frame = document["steps"][row]["frames"].get(capacity["frame"]) if row is not None else None
        if frame is None or point.get("rated_mass") is None:
            continue
        out.append((row, np.asarray(frame["position"], float),
                    f"step {point['step']}: rated {point['rated_mass'] / 1e3:.3g} t at radius "
                    f"{point['radius']:.3g} m, height {point['height']:.3g} m ({point['governs']} governs)"))
    return out
