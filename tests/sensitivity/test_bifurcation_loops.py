"""The critical load of a bifurcation on a model with a closed loop (shiftsim/sensitivity/bifurcation.py), against
its closed form.

Two bars stand upright on a hinge at the ground, hinged to each other at a knee with a torsion spring k; the upper
bar's top is pinned to a roller that slides on a vertical track (the loop: ground, lower bar, upper bar, roller,
track). A downward load P on the top buckles the knee sideways at the critical load where the energy's second
derivative along the one mode vanishes (bars L1 and L2 long, centres of mass c1 and c2 up each bar, masses m1, m2
and the roller's m3; r = L1 / L2; small tilt theta of the lower bar, the upper tilting by -r theta):

    V'' = k (1 + r)^2 - (lambda P + m3 g) L1 (1 + r) - m1 g c1 - m2 g (L1 + c2 r^2) = 0.

The derivatives of lambda* are that formula's, in closed form or by Richardson differences of it (the bars' lengths,
which also move the loop's pin and the load point); a side load on the knee and a sideways offset of it break the
symmetry and have none, a side load on the top does nothing (the track carries it).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers.closed_forms import downward

from shiftsim.ground.path import PathOptions, load_path
from shiftsim.model import compile_model
from shiftsim.sensitivity.bifurcation import bifurcation_load_sensitivity
from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec
from shiftsim.statics import Load, free_coordinates

K, P, G = 1000.0, 1000.0, 9.81
LENGTHS, CENTRES, MASSES = (1.0, 1.2), (0.5, 0.55), (5.0, 4.0, 1.0)  # lower, upper (and the roller's mass)
Y = np.array([0.0, 1.0, 0.0])


def knee_column() -> ModelSpec:
    (l1, l2), (c1, c2), (m1, m2, m3) = LENGTHS, CENTRES, MASSES
    bodies = [BodySpec("lower", m1, np.array([0.0, 0.0, c1]), np.eye(3) * 0.1,
                       {"top": FrameSpec("top", translation=np.array([0.0, 0.0, l1]))}),
              BodySpec("upper", m2, np.array([0.0, 0.0, c2]), np.eye(3) * 0.1,
                       {"top": FrameSpec("top", translation=np.array([0.0, 0.0, l2]))}),
              BodySpec("roller", m3, np.zeros(3), np.eye(3) * 0.01, {"pin": FrameSpec("pin")})]
    joints = [JointSpec("base", "revolute", FrameRef(FIXED), FrameRef("lower"), axis=Y, initial=(0.0,)),
              JointSpec("knee", "revolute", FrameRef("lower", "top"), FrameRef("upper"), axis=Y, initial=(0.0,),
                        stiffness=(0.0, K)),
              JointSpec("track", "prismatic", FrameRef(FIXED), FrameRef("roller"), axis=np.array([0.0, 0.0, 1.0]),
                        initial=(l1 + l2,)),
              JointSpec("roller_pin", "revolute", FrameRef("upper", "top"), FrameRef("roller", "pin"), axis=Y,
                        initial=(0.0,))]
    return ModelSpec("knee column", "test", "test", gravity=np.array([0.0, 0.0, -G]), bodies=bodies, joints=joints)


def critical(k=K, p=P, g=G, l1=LENGTHS[0], l2=LENGTHS[1], c1=CENTRES[0], c2=CENTRES[1], m1=MASSES[0],
             m2=MASSES[1], m3=MASSES[2]) -> float:
    """The closed form's lambda*."""
    r = l1 / l2
    return (k * (1 + r) ** 2 - m3 * g * l1 * (1 + r) - m1 * g * c1 - m2 * g * (l1 + c2 * r ** 2)) / (p * l1 * (1 + r))


def richardson(function, x: float, h: float) -> float:
    def central(step):
        return (function(x + step) - function(x - step)) / (2 * step)
    return (4 * central(h / 2) - central(h)) / 3


def test_the_critical_load_of_a_column_closed_by_a_loop_and_its_derivatives_as_its_energy_says():
    model = compile_model(knee_column())
    assert len(model.closures) == 1
    free = free_coordinates(model, np.array([], dtype=int))
    followed = load_path(model, model.q0[None], free, model.gravity[None], downward(model, "upper:top", P),
                         first_step=np.array([0.5]), options=PathOptions(tolerance=1e-6))
    exact = critical()
    assert followed.path.lo[0] < exact and abs(followed.path.lo[0] / exact - 1.0) > 1e-9  # the path stops short
    loads = [Load("upper:top", force=(0.0, 0.0, -P)), Load("lower:top", force=(0.0, 0.0, 0.0))]  # none at the knee
    result, reasons = bifurcation_load_sensitivity(model, followed.path.q[0], followed.path.lo[0], loads,
                                                   followed.null_vector[0])
    assert result.factor == pytest.approx(exact, rel=1e-12)
    d, why = dict(zip(result.parameters, result.derivative)), dict(zip(result.parameters, reasons))
    (l1, l2), (c1, c2), (m1, m2, m3) = LENGTHS, CENTRES, MASSES
    r = l1 / l2
    closed = {"knee.k": (1 + r) / (P * l1), "lower.mass": -G * c1 / (P * l1 * (1 + r)),
              "upper.mass": -G * (l1 + c2 * r ** 2) / (P * l1 * (1 + r)), "roller.mass": -G / P,
              "lower.com.z": -m1 * G / (P * l1 * (1 + r)), "upper.com.z": -m2 * G * r ** 2 / (P * l1 * (1 + r)),
              "load:upper:top.fz": exact / P, "gravity.z": -(critical(g=1.0) - critical(g=0.0)),
              "load:lower:top.fz": exact / (P * (1 + r))}  # at the knee, lambda* fz L1 more in V
    for name, value in closed.items():
        assert d[name] == pytest.approx(value, rel=1e-9), name
    for name, h, length in (("lower:top.z", 1e-3, "l1"), ("upper:top.z", 1e-3, "l2")):
        reference = richardson(lambda x: critical(**{length: x}), LENGTHS[length == "l2"], h)
        assert d[name] == pytest.approx(reference, rel=1e-8), name
    for breaking in ("load:lower:top.fx", "lower:top.x", "knee.preload", "gravity.x"):
        assert np.isnan(d[breaking]) and "symmetry" in why[breaking], breaking
    assert why["knee.k"] is None and why["load:upper:top.fx"] is None
    assert abs(d["load:upper:top.fx"]) < 1e-12 * abs(d["load:upper:top.fz"])  # the track carries a side load at the top
    mode = result.null_vector  # the knee buckles: the lower bar tilts by theta, the knee by -(1 + r) theta
    base, knee = (model.coordinate_names.index(name) for name in ("base", "knee"))
    position = {k: i for i, k in enumerate(free)}
    assert mode[position[knee]] / mode[position[base]] == pytest.approx(-(1 + r), rel=1e-9)
