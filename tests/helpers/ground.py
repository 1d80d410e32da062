"""Test helpers shared by several test files (no tests here)."""

import numpy as np

from shiftsim.errors import Problems
from shiftsim.forces import AppliedLoad
from shiftsim.ground.base import (
    contact_points,
    floating,
    lift_coordinates,
)
from shiftsim.ground.rating import CapacityOptions
from shiftsim.ground.stand import Stand
from shiftsim.ground.terrain import Ground
from shiftsim.model import compile_model
from shiftsim.spec import BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec, ShapeSpec

CORNERS = [(1.0, 0.75, 0.0), (1.0, -0.75, 0.0), (-1.0, -0.75, 0.0), (-1.0, 0.75, 0.0)]
GRAVITY = np.array([0.0, 0.0, -9.81])


def machine(reach: float = 3.0, mast: bool = False, shapes=()):
    """A rigid 1000 kg box (2 m x 1.5 m footprint, centre of mass 0.5 m up) carrying a 200 kg upper body on a
    revolute slew joint (axis z, 1 m up, mass on the axis) with a hook ``reach`` m out along the upper's x.
    With ``mast``, the hook hangs from a 100 kg mast on a prismatic joint (axis z) at the end of the reach.
    ``shapes``: more collision shapes on the box (ShapeSpec) beside its pad (bottom on the contacts' plane)."""
    frames = {f"c{i}": FrameSpec(f"c{i}", translation=np.array(p)) for i, p in enumerate(CORNERS)}
    frames["slew_seat"] = FrameSpec("slew_seat", translation=np.array([0.0, 0.0, 1.0]))
    box = BodySpec("box", 1000.0, np.array([0.0, 0.0, 0.5]), np.diag([200.0, 300.0, 400.0]), frames,
                   shapes=[ShapeSpec("pad", "box", centre=np.array([0.0, 0.0, 0.1]), half_extents=np.array([1.0, 0.75, 0.1])),
                           *shapes])
    upper = BodySpec("upper", 200.0, np.zeros(3), np.diag([20.0, 20.0, 20.0]),
                     {"hook": FrameSpec("hook", translation=np.array([reach, 0.0, 0.0])),
                      "mast_seat": FrameSpec("mast_seat", translation=np.array([reach, 0.0, 0.0]))})
    bodies = [box, upper]
    joints = [JointSpec("weld", "rigid", FrameRef("fixed"), FrameRef("box")),
              JointSpec("slew", "revolute", FrameRef("box", "slew_seat"), FrameRef("upper"), axis=np.array([0.0, 0.0, 1.0]),
                        initial=(0.0,))]
    if mast:
        bodies.append(BodySpec("mast", 100.0, np.zeros(3), np.diag([5.0, 5.0, 5.0]),
                               {"hook": FrameSpec("hook", translation=np.zeros(3))}))
        joints.append(JointSpec("lift", "prismatic", FrameRef("upper", "mast_seat"), FrameRef("mast"),
                                axis=np.array([0.0, 0.0, 1.0]), initial=(0.0,)))
    return compile_model(ModelSpec("box", "box.json", "shift", bodies=bodies, joints=joints))


def standing(model, ground=Ground(stiffness=1e9), contacts=("box:c0", "box:c1", "box:c2", "box:c3")):
    free_model = floating(model)
    problems = Problems("test")
    points = contact_points(free_model, list(contacts), "contacts", problems)
    assert not problems.items
    stand = Stand.build(free_model, points, ground, np.eye(3), np.zeros(3))
    return stand, stand.settle(lift_coordinates(model, free_model, model.q0))


def free_of(model, held=("slew", "lift")):
    """Every coordinate but those of the ``held`` joints (the slew and the mast's lift)."""
    prescribed = {c for name in held if name in model.joint_names for c in model.coordinates_of(name)}
    return np.array([i for i in range(model.nq) if i not in prescribed])


OPTIONS = CapacityOptions(tolerance=1e-4)


def lift_points(stand, q, slews, frame="upper:hook"):
    """Lift points: the start with the slew joint at each value, and a 1 kN downward load at ``frame``."""
    qs = np.repeat(q[None], len(slews), axis=0)
    qs[:, stand.model.coordinates_of("slew")[0]] = slews
    load = AppliedLoad(stand.model.frame_index(frame), np.tile([0.0, 0.0, -1000.0], (len(slews), 1)),
                       np.zeros((len(slews), 3)), False)
    return qs, load
