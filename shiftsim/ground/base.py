"""A machine standing free: its model's fixed frame on a 6-dof base, and the points that touch the ground.

:func:`free_base` composes a spec in which the model's ``fixed`` becomes a massless
body :data:`BASE` hanging from the world by six joints named :data:`BASE_COORDINATES`
(``base.x``, ``base.y``, ``base.z``: translations along the model's x, y, z; then
``base.rz``, ``base.ry``, ``base.rx``: the z-y'-x'' angles; zero = where the model's
fixed frame was), through five massless bodies ``float_base.x`` ... ``float_base.ry``.
Being joints, the base's coordinates are held, tracked, swept and blamed by these names
(``car:base.z`` in a scenario). Every joint and restraint that hung from ``fixed``
hangs from :data:`BASE`; ``fixed:f`` frames become ``float_base:f`` — except in a model that is already free
(its own base), where ``fixed`` is the file's world: its frames and what else hangs from it stay there, and only
the own base hangs from :data:`BASE`. Nothing else of the model changes, so its joint, body and frame names stay
valid.
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
"""The free base's joints, one coordinate each, as users see them (``ID:base.x`` in a scenario): translations along
the model's x, y, z (m), then the z-y'-x'' angles (rad): about z, then the turned y, then the twice-turned x."""
_BASE_MOTIONS = (("prismatic", (1.0, 0.0, 0.0)), ("prismatic", (0.0, 1.0, 0.0)), ("prismatic", (0.0, 0.0, 1.0)),
                 ("revolute", (0.0, 0.0, 1.0)), ("revolute", (0.0, 1.0, 0.0)), ("revolute", (1.0, 0.0, 0.0)))


def free_base(spec: ModelSpec, added_float: str | None = None) -> ModelSpec:
    """``spec`` with its fixed frame on a free 6-dof base (see the module docstring).

    A model that is already free stands the same as the model welded to the world, its root body fixed to the
    base where its own base put it (otherwise the two would be one 6-dof motion twice, and the machine would
    have no stiffness along it). Its own base is either the one float joint from ``fixed``'s origin written in
    the file (it becomes rigid and the base takes its initial values: both are translations then z-y'-x''
    angles), or a chain of six one-coordinate joints from ``fixed``'s origin through massless bodies, three
    sliding along independent axes and three turning about independent axes, each joining body origins (the
    public Shift vehicles' joints A-F, :func:`own_base_chain`): each becomes rigid at its file value, and the
    base starts at zero. ``added_float``, the root body that the model compiler gave a float joint (a body
    connected to nothing fixed), is welded to the base at its file pose by a rigid joint of the same name
    (``body.float``). In a model already free, ``fixed`` is the file's world: its frames (the public vehicles'
    overhead lights 24 m up) and whatever else hangs from it stay in the world; only the own base moves to the
    free base."""
    result = copy.deepcopy(spec)
    floats = [i for i, j in enumerate(result.joints) if j.type == "float" and j.parent.body == FIXED and j.active]
    start = (0.0,) * 6
    own_base = None  # the index of the own base's joint from fixed's origin
    if len(floats) == 1 and result.joints[floats[0]].parent.frame == ORIGIN:
        own_base = floats[0]
        own = result.joints[own_base]
        start = tuple(own.initial) if len(own.initial) == 6 else start
        result.joints[own_base] = replace(own, type="rigid", initial=(), offset=np.eye(4))
    elif not floats:
        chain = own_base_chain(result)
        own_base = chain[0] if chain else None
        for i in chain:
            joint = result.joints[i]
            result.joints[i] = replace(joint, type="rigid", initial=(), offset=joint.offset @ _motion(joint),
                                       source_type=f"{joint.source_type or joint.type} (the file's own base, made "
                                                   f"rigid at its file value: the free base moves it)")
    if added_float is not None:
        result.joints.append(JointSpec(f"{added_float}.float", "rigid", FrameRef(BASE, ORIGIN),
                                       FrameRef(added_float, ORIGIN), source_type="float (added), on the free base",
                                       where="free base of the machine on the ground"))

    already_free = own_base is not None or added_float is not None

    def move(ref: FrameRef) -> FrameRef:
        return FrameRef(BASE, ref.frame) if ref.body == FIXED else ref

    if already_free:  # the file's world stays the world; the own base hangs from the free base
        if own_base is not None:
            own = result.joints[own_base]
            result.joints[own_base] = replace(own, parent=move(own.parent))
        base_frames = {}
    else:
        result.joints = [replace(j, parent=move(j.parent), child=move(j.child)) for j in result.joints]
        result.restraints = [replace(r, pair=None if r.pair is None else (move(r.pair[0]), move(r.pair[1])))
                             for r in result.restraints]
        base_frames, result.fixed_frames = result.fixed_frames, {}
    where = "free base of the machine on the ground"
    links = [f"{BASE}.{name.removeprefix('base.')}" for name in BASE_COORDINATES[:-1]]
    result.bodies[:0] = [BodySpec(link, where=where) for link in links] + \
        [BodySpec(BASE, frames=base_frames, where=where)]
    parents, children = [FIXED, *links], [*links, BASE]
    result.joints[:0] = [JointSpec(name, kind, FrameRef(parent, ORIGIN), FrameRef(child, ORIGIN), axis=np.array(axis),
                                   initial=(value,), source_type="free base", where=where)
                         for name, (kind, axis), parent, child, value
                         in zip(BASE_COORDINATES, _BASE_MOTIONS, parents, children, start)]
    return result


def own_base_chain(spec: ModelSpec) -> list[int]:
    """Indices of the joints making a model's own 6-dof base, empty when it has none: a chain from ``fixed``'s
    origin of six active one-coordinate joints, each from the origin of the body the previous one moves to the
    origin of the next, the five bodies between massless and joined to nothing else, three prismatic joints
    with independent axes and three revolute joints with independent axes (any order)."""
    joints = [(i, j) for i, j in enumerate(spec.joints) if j.active]
    masses = {b.name: b.mass for b in spec.bodies if b.active}
    chain, body = [], FIXED
    for _ in range(6):
        touching = [(i, j) for i, j in joints if body in (j.parent.body, j.child.body) and i not in chain]
        if len(touching) != 1 or (body != FIXED and masses.get(body, 1.0) != 0.0):
            return []
        i, joint = touching[0]
        if joint.parent.body != body or joint.type not in ("revolute", "prismatic") \
                or (joint.parent.frame, joint.child.frame) != (ORIGIN, ORIGIN) or len(joint.initial) != 1:
            return []
        chain.append(i)
        body = joint.child.body
    axes = {kind: np.array([spec.joints[i].axis for i in chain if spec.joints[i].type == kind], float)
            for kind in ("revolute", "prismatic")}
    if any(len(a) != 3 or abs(np.linalg.det(a / np.linalg.norm(a, axis=1)[:, None])) < 0.5 for a in axes.values()):
        return []
    return chain


def _motion(joint: JointSpec) -> np.ndarray:
    """The 4x4 motion of a one-coordinate joint at its file value (a turn about, or a slide along, its axis)."""
    axis = np.asarray(joint.axis, float) / np.linalg.norm(joint.axis)
    motion = np.eye(4)
    if joint.type == "revolute":
        from scipy.spatial.transform import Rotation  # scipy: 0.3 s to import, paid only where it is used

        motion[:3, :3] = Rotation.from_rotvec(axis * joint.initial[0]).as_matrix()
    else:
        motion[:3, 3] = axis * joint.initial[0]
    return motion


def floating(model: Model) -> Model:
    """The compiled :func:`free_base` of a model (made once per model)."""
    cached = model.cache.get("floating")
    if cached is None:
        added = [j.name[:-len(".float")] for j in model.joints if j.source_type == "float (added)"]
        cached = compile_model(free_base(model.spec, added[0] if len(added) == 1 else None))
        model.cache["floating"] = cached
    return cached


def lift_coordinates(model: Model, free: Model, q: np.ndarray) -> np.ndarray:
    """Coordinates of ``free`` (= floating(model)) with the base at zero and the others from ``q`` (..., nq); the
    coordinates of a float joint that :func:`free_base` made rigid go to the base's, in order; those of a chain
    made rigid (the file's own base) are dropped: their file values are in the rigid joints."""
    q = np.asarray(q, float)
    out = np.zeros(q.shape[:-1] + (free.nq,))
    base = iter(base_coordinates(free))
    for joint in model.joints:
        for k in joint.coordinates:
            name = model.coordinate_names[k]
            if name in free.coordinate_names:
                out[..., free.coordinate_names.index(name)] = q[..., k]
            elif joint.type == "float":
                out[..., next(base)] = q[..., k]
    return out


def base_coordinates(free: Model) -> list[int]:
    """The six coordinates of the free base (x, y, z, then z-y'-x'' angles)."""
    return [free.coordinates_of(name)[0] for name in BASE_COORDINATES]


def is_floating(model: Model) -> bool:
    """Whether ``model`` is on a free base (:func:`free_base`)."""
    return BASE in model.body_names


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
            points.append(ContactPoint(model.frame_names[frame], int(model.frame_node[frame]), local.copy(), frame))
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
