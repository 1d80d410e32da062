"""Test helpers shared by several test files (no tests here)."""

from __future__ import annotations

import dataclasses

import numpy as np

from shiftsim.spec import (
    FIXED,
    ModelSpec,
)
from shiftsim.statics import Load, SolverOptions

TIGHT = SolverOptions(force_tolerance=1e-14, closure_tolerance=1e-14)


def _body(spec: ModelSpec, name: str) -> int:
    return [b.name for b in spec.bodies].index(name)


def edited(spec: ModelSpec, loads: list[Load], parameter: str, delta: float) -> tuple[ModelSpec, list[Load]]:
    """The spec and loads with one parameter moved by ``delta``, edited where the model file holds it."""
    head, _, field = parameter.rpartition(".")
    if parameter.startswith("gravity."):
        gravity = spec.gravity.copy()
        gravity["xyz".index(field)] += delta
        return dataclasses.replace(spec, gravity=gravity), loads
    if parameter.startswith("load:"):
        frame = head[len("load:"):]
        out = []
        for load in loads:
            if load.frame == frame:
                if field == "factor":
                    load = dataclasses.replace(load, factor=load.factor + delta)
                else:
                    values = np.array([*load.force, *load.torque])
                    values[("fx", "fy", "fz", "tx", "ty", "tz").index(field)] += delta
                    load = dataclasses.replace(load, force=tuple(values[:3]), torque=tuple(values[3:]))
            out.append(load)
        return spec, out
    bodies, joints, restraints = list(spec.bodies), list(spec.joints), list(spec.restraints)
    if field == "mass":
        i = _body(spec, head)
        bodies[i] = dataclasses.replace(bodies[i], mass=bodies[i].mass + delta)
    elif head.endswith(".com"):
        i = _body(spec, head[:-4])
        com = bodies[i].com.copy()
        com["xyz".index(field)] += delta
        bodies[i] = dataclasses.replace(bodies[i], com=com)
    elif head in [j.name for j in joints]:
        i = [j.name for j in joints].index(head)
        power = 0 if field == "preload" else 1 if field == "k" else int(field[1:])
        stiffness = list(joints[i].stiffness)
        stiffness[power] += delta
        joints[i] = dataclasses.replace(joints[i], stiffness=tuple(stiffness))
    elif head.split(".")[0] in [r.name for r in restraints]:
        i = [r.name for r in restraints].index(head.split(".")[0])
        pieces = [list(c) for c in restraints[i].coefficients]
        piece = int(head.split(".piece")[1]) if ".piece" in head else 0
        power = int(field[1:])
        pieces[piece][len(pieces[piece]) - 1 - power] += delta
        restraints[i] = dataclasses.replace(restraints[i], coefficients=tuple(tuple(c) for c in pieces))
    else:  # a frame on a body
        body, _, frame = head.rpartition(":")
        frames = dict(spec.fixed_frames if body == FIXED else bodies[_body(spec, body)].frames)
        translation = frames[frame].translation.copy()
        translation["xyz".index(field)] += delta
        frames[frame] = dataclasses.replace(frames[frame], translation=translation)
        if body == FIXED:
            return dataclasses.replace(spec, fixed_frames=frames), loads
        i = _body(spec, body)
        bodies[i] = dataclasses.replace(bodies[i], frames=frames)
    return dataclasses.replace(spec, bodies=bodies, joints=joints, restraints=restraints), loads
