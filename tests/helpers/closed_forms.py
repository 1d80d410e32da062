"""Models with closed-form stiffness for the path's tests (no tests here): an inverted pendulum on a torsion spring
and a von Mises two-bar truss, both without gravity (a load stands in for the weight)."""

from __future__ import annotations

import numpy as np

from shiftsim.forces import AppliedLoad
from shiftsim.model import compile_model
from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec, RestraintSpec


def downward(model, frame: str, size: float) -> AppliedLoad:
    """A downward force of ``size`` N at ``frame``, one case."""
    return AppliedLoad(model.frame_index(frame), np.array([[0.0, 0.0, -size]]), np.zeros((1, 3)), False)


def pendulum(mass: float, length: float, k: float):
    """A bob of ``mass`` at ``length`` above a revolute joint (axis y) with a torsion spring ``k``, no gravity:
    the load on the bob stands in for its weight."""
    bob = BodySpec("bob", mass, np.array([0.0, 0.0, length]), np.eye(3) * 1e-3,
                   {"tip": FrameSpec("tip", translation=np.array([0.0, 0.0, length]))})
    hinge = JointSpec("hinge", "revolute", FrameRef(FIXED), FrameRef("bob"), axis=np.array([0.0, 1.0, 0.0]),
                      initial=(0.0,), stiffness=(0.0, k))
    return compile_model(ModelSpec("pendulum", "test", "test", gravity=np.zeros(3), bodies=[bob], joints=[hinge]))


def truss(a: float, h: float, k: float):
    """A von Mises truss: an apex on a vertical slider (start height ``h``) held by two bars of axial stiffness
    ``k`` from supports at x = -a and x = a, unstressed at the start (rest length sqrt(a^2 + h^2))."""
    rest = float(np.hypot(a, h))
    apex = BodySpec("apex", 1.0, np.zeros(3), np.eye(3) * 1e-3, {"top": FrameSpec("top")})
    slider = JointSpec("slider", "prismatic", FrameRef(FIXED), FrameRef("apex"), axis=np.array([0.0, 0.0, 1.0]),
                       initial=(h,))
    supports = {side: FrameSpec(side, translation=np.array([x, 0.0, 0.0])) for side, x in (("left", -a), ("right", a))}
    bars = [RestraintSpec(f"bar_{side}", "spring", (), ((k, -k * rest),), pair=(FrameRef(FIXED, side), FrameRef("apex")))
            for side in supports]
    return compile_model(ModelSpec("truss", "test", "test", gravity=np.zeros(3), bodies=[apex], fixed_frames=supports,
                                   joints=[slider], restraints=bars))
