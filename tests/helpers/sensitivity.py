"""Test helpers shared by several test files (no tests here)."""

from __future__ import annotations

import dataclasses

import numpy as np

from shiftsim.spec import (
    FIXED,
    BodySpec,
    FrameRef,
    FrameSpec,
    JointSpec,
    ModelSpec,
    RestraintSpec,
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


def pair_mounts() -> ModelSpec:
    """Pair springs on mounts that are also pins, spatial: three links whose joints attach to frames off the child
    bodies' origins (moving such a pin moves the child body against the joint's axis), a strut (Euclidean) from a
    mount on the first link to the second link's tip (the last link's pin), a two-piece law along the z axis of a
    rail frame on the first link (a turning direction) to the last link's tip, and a tie from a fixed anchor to a
    loaded hook."""
    offsets = {"foot": (0.1, 0.05, -0.1), "heel": (-0.15, 0.02, 0.1), "tip": (1.0, 0.1, 0.05),
               "mount": (0.4, -0.1, 0.3), "hook": (0.7, -0.1, 0.2)}
    rail = FrameSpec("rail", rotation=np.array([[1.0, 0.0, 0.0], [0.0, 0.8, -0.6], [0.0, 0.6, 0.8]]),
                     translation=np.array([0.6, 0.2, 0.4]))
    bodies = []
    for i, names in enumerate((("foot", "tip", "mount"), ("heel", "tip"), ("heel", "tip", "hook"))):
        frames = {n: FrameSpec(n, translation=np.array(offsets[n])) for n in names}
        if i == 0:
            frames["rail"] = rail
        bodies.append(BodySpec(f"l{i}", mass=3.0 - 0.5 * i, com=np.array([0.5, 0.02 * i, 0.05]),
                               inertia=np.eye(3) * 0.1, frames=frames))
    joints = [JointSpec("j0", "revolute", FrameRef(FIXED, "base"), FrameRef("l0", "foot"),
                        axis=np.array([0.0, 1.0, 0.0]), initial=(0.0,), stiffness=(0.0, 500.0)),
              JointSpec("j1", "revolute", FrameRef("l0", "tip"), FrameRef("l1", "heel"),
                        axis=np.array([0.3, 0.9, 0.1]), initial=(0.0,), stiffness=(0.0, 300.0)),
              JointSpec("j2", "prismatic", FrameRef("l1", "tip"), FrameRef("l2", "heel"),
                        axis=np.array([1.0, 0.0, 0.2]), initial=(0.0,), stiffness=(0.0, 2000.0))]
    fixed = {"base": FrameSpec("base", translation=np.array([0.0, 0.0, 1.0])),
             "anchor": FrameSpec("anchor", translation=np.array([1.5, 0.4, 2.2]))}
    restraints = [
        RestraintSpec("strut", "spring", (), ((400.0, -400.0 * 0.9),),
                      pair=(FrameRef("l0", "mount"), FrameRef("l1", "tip"))),
        RestraintSpec("guide", "spring", (0.2,), ((0.0, 60.0, -5.0), (30.0, 45.0, -3.2)),
                      distance_type="Tz", pair=(FrameRef("l0", "rail"), FrameRef("l2", "tip"))),
        RestraintSpec("tie", "spring", (), ((250.0, -250.0 * 1.1),),
                      pair=(FrameRef(FIXED, "anchor"), FrameRef("l2", "hook"))),
    ]
    return ModelSpec("mounts", "test", "test", gravity=np.array([0.4, 0.3, -9.81]), bodies=bodies, joints=joints,
                     fixed_frames=fixed, restraints=restraints)
