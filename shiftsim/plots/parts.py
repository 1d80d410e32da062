"""What of a machine's model the pictures draw (the pose plot, and results.json's ``scene`` for the 3D view): links by
their frames' outline, cylinders, the other joints, ground attachment frames. Plain arrays of indices; no drawing
library is imported here, so the scene of results.json is built without one."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ground.base import BASE, BASE_COORDINATES, is_floating
from ..model import PRISMATIC, Model
from ..spec import FIXED, PATH_SEPARATOR


@dataclass(frozen=True)
class Parts:
    """What of a machine's model is drawn, as indices into its frames (F) and bodies (B)."""

    links: list[tuple[str, np.ndarray]]  # (label, frame indices) of bodies drawn by their frames' outline
    cylinders: np.ndarray  # (k, 2) parent and child frame of each prismatic joint
    cylinder_names: list[str]
    pins: np.ndarray  # child frames of the other joints
    connections: np.ndarray  # (k, 2) parent and child frame of the other joints (zero length where they coincide)
    connection_joints: np.ndarray  # (k,) index in the model's joints of each connection
    fixed: np.ndarray  # ground attachment frames


def free_base_parts(model: Model) -> tuple[set[str], set[int]]:
    """The joints (names) and massless bodies (indices) of a standing machine's free base
    (:func:`shiftsim.ground.base.free_base`): the machine's own parts hang from it, it is not drawn."""
    if not is_floating(model):
        return set(), set()
    bodies = {b for b, name in enumerate(model.body_names) if name == BASE or name.startswith(BASE + ".")}
    return set(BASE_COORDINATES), bodies


def machine_parts(model: Model, shaped_bodies: set[int]) -> Parts:
    """Bodies with collision shapes (``shaped_bodies``) are drawn by them; the fixed body, a free base's joints and
    massless links, and the bodies at either end of a prismatic joint that take part in no more than two joints
    (cylinder barrels, pistons, rods: a pin and the slide; a car's body, carrying four struts, is drawn) are not drawn
    as links."""
    by_length = sorted(model.body_names, key=len, reverse=True)  # frame names may hold ':' (attached ground frames)
    body_of = np.array([model.body_names.index(next(b for b in by_length if name.startswith(b + PATH_SEPARATOR)))
                        for name in model.frame_names])
    base_joints, base_bodies = free_base_parts(model)
    kept = [k for k, j in enumerate(model.joints) if j.name not in base_joints]
    moving = {k for k in kept if any(model.node_kind[model.coordinate_node[c]] == PRISMATIC
                                     for c in model.joints[k].coordinates)}
    prismatic = [model.joints[k] for k in kept if k in moving]
    joints_at = np.bincount([int(body_of[f]) for j in model.joints for f in (j.parent_frame, j.child_frame)],
                            minlength=len(model.body_names))
    actuator_bodies = {b for j in prismatic for f in (j.parent_frame, j.child_frame)
                       if joints_at[b := int(body_of[f])] <= 2}  # a barrel, piston or rod: its pin and its slide
    fixed_body = model.body_names.index(FIXED)
    hidden = shaped_bodies | actuator_bodies | base_bodies | {fixed_body}
    drawn = [b for b in range(len(model.body_names)) if b not in hidden]
    links = [(model.body_names[b].rsplit(PATH_SEPARATOR, 1)[-1], np.flatnonzero(body_of == b)) for b in drawn]
    connecting = [k for k in kept if k not in moving]
    others = [model.joints[k] for k in connecting]
    fixed = sorted({f for k in kept for f in (model.joints[k].parent_frame, model.joints[k].child_frame)
                    if body_of[f] == fixed_body})
    return Parts(links, np.array([(j.parent_frame, j.child_frame) for j in prismatic], int).reshape(-1, 2),
                  [j.name.rsplit(PATH_SEPARATOR, 1)[-1] for j in prismatic],
                  np.array([j.child_frame for j in others], int),
                  np.array([(j.parent_frame, j.child_frame) for j in others], int).reshape(-1, 2),
                  np.array(connecting, int),
                  np.array(fixed, int))


__all__ = ["Parts", "free_base_parts", "machine_parts"]
