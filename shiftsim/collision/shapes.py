"""The collision shapes of several machines as flat arrays, and the body poses that carry them.

Shape ``k`` belongs to machine ``machine[k]`` and body ``body[k]`` (an index
into that machine's ``Model.body_names``); ``local[k]`` is the 4x4 transform
body <- shape (shape axes as columns, centre as translation). Every shape is
described by its oriented bounding box: ``size`` holds the half extents along
the shape axes — a box's own half extents, ``(r, r, r)`` for a sphere of
radius r, ``(r, r, length / 2)`` for a cylinder along its z axis — and
``radius`` the radius of the sphere about the centre that encloses it.
Shapes are named by paths ``machine:body:shape`` (``ex1:c1:boom:boom``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..kinematics import forward
from ..model import Model
from ..spec import PATH_SEPARATOR, ShapeSpec

BOX, SPHERE, CYLINDER = 0, 1, 2
KINDS = {"box": BOX, "sphere": SPHERE, "cylinder": CYLINDER}


@dataclass(frozen=True)
class ShapeTable:
    """Every shape of every machine, in machine, body, file order (see the module docstring)."""

    machine_ids: tuple[str, ...]
    paths: tuple[str, ...]
    machine: np.ndarray  # (S,) index into machine_ids
    body: np.ndarray  # (S,) index into the machine model's body_names
    kind: np.ndarray  # (S,) BOX, SPHERE or CYLINDER
    local: np.ndarray  # (S, 4, 4) body <- shape
    size: np.ndarray  # (S, 3) half extents of the oriented bounding box, m
    radius: np.ndarray  # (S,) bounding sphere radius, m
    specs: tuple[ShapeSpec, ...]

    def __len__(self) -> int:
        return len(self.paths)


def _half_extents(shape: ShapeSpec) -> np.ndarray:
    if shape.kind == "box":
        return np.asarray(shape.half_extents, float)
    if shape.kind == "sphere":
        return np.full(3, float(shape.radius))
    return np.array([shape.radius, shape.radius, shape.length / 2.0], float)


def _usable(shape: ShapeSpec) -> bool:
    """A shape with a volume: every size finite and > 0 (readers may pass zero-size shapes with a warning)."""
    try:
        size = _half_extents(shape)
    except (TypeError, ValueError):
        return False
    return size.shape == (3,) and bool(np.all(np.isfinite(size)) and np.all(size > 0))


def shape_table(machines: Sequence[tuple[str, Model]]) -> tuple[ShapeTable, list[str]]:
    """The shapes of the active bodies of ``machines`` ((id, model) pairs), and warnings for skipped shapes."""
    paths, machine, body, kind, local, size, specs, warnings = [], [], [], [], [], [], [], []
    for m, (machine_id, model) in enumerate(machines):
        by_name = {b.name: b for b in model.spec.bodies}
        for b, name in enumerate(model.body_names):
            for shape in by_name[name].shapes if name in by_name else ():
                path = PATH_SEPARATOR.join((machine_id, name, shape.name))
                if not _usable(shape):
                    warnings.append(f"collision shape {path!r} has no volume (a size is zero or missing): ignored")
                    continue
                transform = np.eye(4)
                transform[:3, :3] = shape.rotation
                transform[:3, 3] = shape.centre
                paths.append(path)
                machine.append(m)
                body.append(b)
                kind.append(KINDS[shape.kind])
                local.append(transform)
                size.append(_half_extents(shape))
                specs.append(shape)
    size_array = np.array(size, float).reshape(-1, 3)
    kinds = np.array(kind, int)
    radius = np.where(kinds == SPHERE, size_array[:, 0], np.linalg.norm(size_array, axis=1))
    radius = np.where(kinds == CYLINDER, np.hypot(size_array[:, 0], size_array[:, 2]), radius)
    table = ShapeTable(tuple(mid for mid, _ in machines), tuple(paths), np.array(machine, int), np.array(body, int),
                       kinds, np.array(local, float).reshape(-1, 4, 4), size_array, radius, tuple(specs))
    return table, warnings


def body_poses(model: Model, q: np.ndarray, placement: np.ndarray | None = None) -> np.ndarray:
    """World poses (B, n_bodies, 4, 4) of every body for coordinates ``q`` (B, nq); ``placement`` is world <- model.

    Body ``i`` is ``model.body_names[i]`` (0 is ``fixed``). Only the bodies' poses are formed (the compiled
    forward kinematics without the named frames, which collision does not need).
    """
    q = np.atleast_2d(np.asarray(q, float))
    poses = forward(model, q, frames=False).bodies  # (B, nb, 4, 4)
    if placement is not None:
        poses = placement @ poses
    return poses
