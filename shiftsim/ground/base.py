"""A machine standing free: its model's fixed frame on a 6-dof base, and the points that touch the ground.

:func:`free_base` composes a spec in which the model's ``fixed`` becomes a massless
body :data:`BASE` hanging from the world by a float joint :data:`BASE` (three
translations along the model's x, y, z, then z-y'-x'' angles; zero = where the
model's fixed frame was). Every joint and restraint that hung from ``fixed``
hangs from it; ``fixed:f`` frames become ``float_base:f``. Nothing else of the
model changes, so its joint, body and frame names stay valid.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import InputError, Problems, suggest
from ..kinematics import forward
from ..model import Model, compile_model
from ..spec import FIXED, ORIGIN, PATH_SEPARATOR, BodySpec, FrameRef, JointSpec, ModelSpec
from .contacts import ContactPoint

BASE = "float_base"
BASE_COORDINATES = ("base.x", "base.y", "base.z", "base.rz", "base.ry", "base.rx")
"""The free base's coordinates as users see them (``ID:base.x`` in a scenario): translations along the model's
x, y, z (m), then the z-y'-x'' angles (rad): about z, then the turned y, then the twice-turned x."""


def free_base(spec: ModelSpec, added_float: str | None = None) -> ModelSpec:
    """``spec`` with its fixed frame on a free 6-dof base (see the module docstring).

    A model that is already free stands the same as the model welded to the world, its root body fixed to the
    base where its own float put it (otherwise the two would be one 6-dof motion twice, and the machine would
    have no stiffness along it): the one float joint from ``fixed``'s origin written in the file becomes rigid
    and the base takes its initial values (both are translations then z-y'-x'' angles); ``added_float``, the
    root body that the model compiler gave a float joint (a body connected to nothing fixed), is welded to the
    base at its file pose by a rigid joint of the same name (``body.float``)."""
    result = copy.deepcopy(spec)
    floats = [i for i, j in enumerate(result.joints) if j.type == "float" and j.parent.body == FIXED and j.active]
    start = (0.0,) * 6
    if len(floats) == 1 and result.joints[floats[0]].parent.frame == ORIGIN:
        own = result.joints[floats[0]]
        start = tuple(own.initial) if len(own.initial) == 6 else start
        result.joints[floats[0]] = replace(own, type="rigid", initial=(), offset=np.eye(4))
    if added_float is not None:
        result.joints.append(JointSpec(f"{added_float}.float", "rigid", FrameRef(BASE, ORIGIN),
                                       FrameRef(added_float, ORIGIN), source_type="float (added), on the free base",
                                       where="free base of the machine on the ground"))

    def move(ref: FrameRef) -> FrameRef:
        return FrameRef(BASE, ref.frame) if ref.body == FIXED else ref

    result.joints = [replace(j, parent=move(j.parent), child=move(j.child)) for j in result.joints]
    result.restraints = [replace(r, pair=None if r.pair is None else (move(r.pair[0]), move(r.pair[1])))
                         for r in result.restraints]
    result.bodies.insert(0, BodySpec(BASE, frames=result.fixed_frames, where="free base of the machine on the ground"))
    result.fixed_frames = {}
    result.joints.insert(0, JointSpec(BASE, "float", FrameRef(FIXED, ORIGIN), FrameRef(BASE, ORIGIN),
                                      initial=start, source_type="float",
                                      where="free base of the machine on the ground"))
    return result


def floating(model: Model) -> Model:
    """The compiled :func:`free_base` of a model (made once per model)."""
    cached = model.cache.get("floating")
    if cached is None:
        added = [j.name[:-len(".float")] for j in model.joints if j.source_type == "float (added)"]
        cached = compile_model(free_base(model.spec, added[0] if len(added) == 1 else None))
        names = list(cached.coordinate_names)
        for k, name in zip(cached.coordinates_of(BASE), BASE_COORDINATES):
            names[k] = name
        cached = replace(cached, coordinate_names=tuple(names))
        model.cache["floating"] = cached
    return cached


def lift_coordinates(model: Model, free: Model, q: np.ndarray) -> np.ndarray:
    """Coordinates of ``free`` (= floating(model)) with the base at zero and the others from ``q`` (..., nq); the
    coordinates of a float joint that :func:`free_base` made rigid go to the base's, in order."""
    q = np.asarray(q, float)
    base = iter(base_coordinates(free))
    index = [free.coordinate_names.index(name) if name in free.coordinate_names else next(base)
             for name in model.coordinate_names]
    out = np.zeros(q.shape[:-1] + (free.nq,))
    out[..., index] = q
    return out


def base_coordinates(free: Model) -> list[int]:
    """The six coordinates of the free base (x, y, z, then z-y'-x'' angles)."""
    return list(free.coordinates_of(BASE))


def contact_points(model: Model, entries: list[Any], where: str, problems: Problems) -> list[ContactPoint]:
    """Contact points of ``entries``: frame names (``body:frame``, short endings allowed) and
    ``{"box": "body:shape"}`` (the four corners of the box face whose outward normal points most along the
    model's gravity at the file pose: the bottom face, z-up or z-down model, see docs/ground.md). Problems name
    ``where[i]``."""
    points: list[ContactPoint] = []
    for i, entry in enumerate(entries):
        at = f"{where}[{i}]"
        if isinstance(entry, str):
            try:
                frame = model.frame_index(entry.replace(f"{FIXED}{PATH_SEPARATOR}", f"{BASE}{PATH_SEPARATOR}", 1))
            except InputError as error:  # the lookup's own message, with the nearest frame names
                problems.add(at, error.problems[0].what, error.problems[0].expected)
                continue
            local = model.frame_offset[frame][:3, 3]
            points.append(ContactPoint(model.frame_names[frame], int(model.frame_node[frame]), local.copy()))
            continue
        points.extend(_box_corners(model, entry.get("box", ""), f"{at}.box", problems))
    names = [p.name for p in points]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.add(where, f"contact {name!r} is given more than once", "each contact point once")
    return points


def _box_corners(model: Model, path: str, where: str, problems: Problems) -> list[ContactPoint]:
    body_name, _, shape_name = path.rpartition(PATH_SEPARATOR)
    bodies = {b.name: b for b in model.spec.bodies if b.active}
    body = bodies.get(body_name)
    if body is None:
        problems.add(where, f"no body {body_name!r}", suggest(body_name, bodies))
        return []
    boxes = {s.name: s for s in body.shapes if s.kind == "box"}
    shape = boxes.get(shape_name)
    if shape is None:
        problems.add(where, f"body {body_name!r} has no box {shape_name!r}",
                     suggest(shape_name, boxes) if boxes else "a body with a box collision shape")
        return []
    rotation, half = np.asarray(shape.rotation, float), np.asarray(shape.half_extents, float)
    node = int(model.body_node[model.body_names.index(body_name)])
    # the model's down (its gravity; -z where it has none) in the box's axes at the file pose: a z-down model
    # (MFK, Shift's SAE frame) stands on the box's +z face, a z-up one on its -z face
    gravity = np.asarray(model.gravity, float)
    down_model = gravity / np.linalg.norm(gravity) if np.linalg.norm(gravity) > 0 else np.array([0.0, 0.0, -1.0])
    body_rotation = forward(model, model.q0).bodies[model.body_names.index(body_name), :3, :3]
    down_box = rotation.T @ body_rotation.T @ down_model
    axis = int(np.argmax(np.abs(down_box)))  # the shape axis nearest the vertical
    down = np.sign(down_box[axis])  # the face toward the ground
    others = [a for a in range(3) if a != axis]
    corners = []
    for k, (sa, sb) in enumerate(((-1, -1), (1, -1), (1, 1), (-1, 1))):
        local = np.zeros(3)
        local[axis] = down * half[axis]
        local[others[0]], local[others[1]] = sa * half[others[0]], sb * half[others[1]]
        corners.append(ContactPoint(f"{path}:corner{k}", node, np.asarray(shape.centre, float) + rotation @ local))
    return corners
