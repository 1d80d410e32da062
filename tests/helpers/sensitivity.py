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


def richardson(value, h: float):
    """The derivative at 0 of ``value(delta)`` (a number or an array) by central differences at steps h and h/2,
    Richardson-extrapolated (the step's h^2 error term removed)."""
    def central(step: float):
        return (value(step) - value(-step)) / (2 * step)

    return (4 * central(h / 2) - central(h)) / 3


def edited_field(field, name: str, delta: float):
    """A car's tyre field (``TyreField``) or contact field (``ContactField``) with one ground parameter moved
    (``ground.tangential_stiffness``, ``ground.stiffness``, ``<tyre>.vertical_stiffness|radius|friction``), its
    anchors kept."""
    from shiftsim.ground.contacts import ContactField
    from shiftsim.ground.tyres import TyreField

    ground, tangential = field.ground, field.tangential.copy()
    if name == "ground.tangential_stiffness":
        ground = dataclasses.replace(ground, tangential_stiffness=ground.tangential_stiffness + delta)
        tangential = tangential + delta
    if isinstance(field, ContactField):
        normal = field.normal + (delta if name == "ground.stiffness" else 0.0)
        return ContactField(field.contacts, ground, field.rotation, field.translation, normal, tangential,
                            field.anchors)
    tyres = list(field.tyres)
    if name.startswith("tyre_"):
        tyre, key = name.split(".")
        t = [x.name for x in tyres].index(tyre)
        key = {"vertical_stiffness": "stiffness", "radius": "radius", "friction": "friction"}[key]
        value = field.mu[t] if key == "friction" else getattr(tyres[t], key)
        tyres[t] = dataclasses.replace(tyres[t], **{key: value + delta})
    return TyreField(tyres, ground, field.rotation, field.translation, tangential, field.friction_points,
                     field.anchors)
