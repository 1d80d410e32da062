"""The gravity pieces of the sensitivities against Pinocchio on a spatial arm (five revolute joints about x, y
and z with offsets in all three directions):

* d(generalized gravity)/dq, the stiffness the bordered system is built from, against
  ``computeStaticTorqueDerivatives`` (Pinocchio's static torque is minus shiftsim's generalized force);
* the partial derivatives with respect to gravity and to each body's mass against Pinocchio's generalized gravity
  (linear in both: evaluated with unit gravity vectors and with one body's mass changed).
"""

from __future__ import annotations

import numpy as np
import pytest

from shiftsim.kinematics import state
from shiftsim.model import compile_model
from shiftsim.sensitivity.parameters import catalogue, force_partials
from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec
from shiftsim.statics import evaluate

pin = pytest.importorskip("pinocchio")

AXES = ["z", "y", "x", "y", "z"]
OFFSETS = [np.array([0.1, 0.0, 0.4]), np.array([0.0, 0.2, 0.3]), np.array([0.6, -0.1, 0.05]),
           np.array([0.5, 0.15, -0.1]), np.array([0.3, 0.0, 0.2])]
COMS = [np.array([0.05, 0.02, 0.2]), np.array([0.3, -0.05, 0.1]), np.array([0.25, 0.04, -0.03]),
        np.array([0.2, 0.1, 0.0]), np.array([0.1, -0.02, 0.05])]
MASSES = [12.0, 8.0, 5.0, 3.0, 1.5]
GRAVITY = np.array([0.4, -0.3, -9.81])
Q = np.array([0.3, -0.7, 0.9, 0.5, -1.1])


def shiftsim_arm(masses=MASSES):
    bodies, joints = [], []
    for i in range(5):
        frames = {"next": FrameSpec("next", translation=OFFSETS[i + 1])} if i < 4 else {}
        bodies.append(BodySpec(f"b{i}", mass=masses[i], com=COMS[i], inertia=np.eye(3) * 0.01, frames=frames))
        parent = FrameRef(FIXED, "base") if i == 0 else FrameRef(f"b{i - 1}", "next")
        axis = np.eye(3)["xyz".index(AXES[i])]
        joints.append(JointSpec(f"j{i}", "revolute", parent, FrameRef(f"b{i}"), axis=axis, initial=(0.0,)))
    return compile_model(ModelSpec("arm", "test", "test", gravity=GRAVITY.copy(), bodies=bodies, joints=joints,
                                   fixed_frames={"base": FrameSpec("base", translation=OFFSETS[0])}))


def pinocchio_arm(masses=MASSES, gravity=GRAVITY):
    model = pin.Model()
    parent = 0
    joint_types = {"x": pin.JointModelRX, "y": pin.JointModelRY, "z": pin.JointModelRZ}
    for i in range(5):
        parent = model.addJoint(parent, joint_types[AXES[i]](), pin.SE3(np.eye(3), OFFSETS[i]), f"j{i}")
        model.appendBodyToJoint(parent, pin.Inertia(masses[i], COMS[i], np.eye(3) * 0.01), pin.SE3.Identity())
    model.gravity.linear = gravity
    return model


def static_torque(model, q):
    return pin.computeGeneralizedGravity(model, model.createData(), q)


def test_generalized_gravity_and_its_configuration_derivative_match_pinocchio():
    arm = shiftsim_arm()
    reference = pinocchio_arm()
    fext = [pin.Force.Zero() for _ in range(reference.njoints)]
    derivative = pin.computeStaticTorqueDerivatives(reference, reference.createData(), Q, fext)
    ev = evaluate(arm, Q, np.arange(5), GRAVITY)
    scale = np.max(np.abs(derivative))
    np.testing.assert_allclose(ev.residual, -static_torque(reference, Q), atol=1e-12 * np.max(np.abs(ev.residual)))
    # hessian = -d(residual)/dq = d(static torque)/dq
    np.testing.assert_allclose(ev.hessian, derivative, atol=1e-11 * scale)


def test_gravity_and_mass_partials_match_pinocchio():
    arm = shiftsim_arm()
    parameters = [p for p in catalogue(arm) if p.kind in ("gravity", "mass")]
    partials, closure = force_partials(arm, state(arm, Q[None]), GRAVITY, (), np.zeros(0), parameters)
    assert closure.shape == (0, len(parameters))
    for column, p in enumerate(parameters):
        if p.kind == "gravity":  # Q is linear in gravity: Pinocchio's torque with a unit gravity vector
            expected = -static_torque(pinocchio_arm(gravity=np.eye(3)[p.component]), Q)
        else:  # and linear in each mass: the difference of two Pinocchio torques one kilogram apart
            body = int(p.name[1])
            heavier = list(MASSES)
            heavier[body] += 1.0
            expected = static_torque(pinocchio_arm(), Q) - static_torque(pinocchio_arm(heavier), Q)
        np.testing.assert_allclose(partials[:, column], expected, atol=1e-11 * (1 + np.max(np.abs(expected))),
                                   err_msg=p.name)
