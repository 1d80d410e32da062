"""Sensitivities where the loops leave some joint loads open (statically indeterminate).

The boom of ``helpers.statics.twin_cylinder_spec`` held by its two cylinders, both held: how the boom's load splits
between them is not determined by statics (the solution reports the minimum-norm split and says it is an
assumption). A bob hangs from the boom's tip on a spring joint about x, tilted by a sideways load. The bob's angle
and its hanger's wrench are determined; they are checked against central differences of re-solves with the spec
edited; the cylinders' efforts and the loop joints' forces say why they have no derivative. The multipliers the
sensitivities use are the least-squares ones on the independent closure rows, so the solution's minimum-norm
split is not computed for a determinate model.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from helpers.sensitivity import TIGHT, edited
from helpers.statics import twin_cylinder_spec

from shiftsim.model import compile_model
from shiftsim.sensitivity import sensitivity
from shiftsim.spec import BodySpec, FrameRef, FrameSpec, JointSpec
from shiftsim.statics import Load, solve

HOLD = ["cylinder1", "cylinder2"]
LOADS = [Load("bob:weight", force=(0.0, 30.0, 0.0))]


def twin_with_a_bob():
    spec = twin_cylinder_spec(None, barrel_mass=20.0, rod_mass=10.0)
    bodies = list(spec.bodies)
    bodies[0] = dataclasses.replace(bodies[0], frames={**bodies[0].frames,
                                                       "tip": FrameSpec("tip", translation=np.array([4.0, 0.0, 0.0]))})
    bodies.append(BodySpec("bob", mass=8.0, com=np.array([0.0, 0.0, -0.6]), inertia=np.eye(3) * 0.1,
                           frames={"weight": FrameSpec("weight", translation=np.array([0.0, 0.0, -0.8]))}))
    hanger = JointSpec("hanger", "revolute", FrameRef("boom", "tip"), FrameRef("bob"), axis=np.array([1.0, 0.0, 0.0]),
                       initial=(0.0,), stiffness=(0.0, 400.0))
    return dataclasses.replace(spec, bodies=bodies, joints=[*spec.joints, hanger])


def outputs_of(spec, loads, of):
    sol = solve(compile_model(spec), hold=HOLD, loads=loads, options=TIGHT)
    assert sol.converged
    return sensitivity(sol, of=of, wrt=["gravity.z"], hold=HOLD, loads=loads).values


def test_determinate_outputs_against_differences_and_the_cylinders_say_why_not():
    spec = twin_with_a_bob()
    model = compile_model(spec)
    sol = solve(model, hold=HOLD, loads=LOADS, options=TIGHT)
    assert {"cylinder1", "cylinder2"} <= sol.indeterminate and "hanger" not in sol.indeterminate
    of = ["hanger", "hanger.mx", "hanger.fz", "bob:weight.y", "cylinder1.effort", "cylinder2.effort"]
    result = sensitivity(sol, of=of, wrt=["bob.mass", "bob.com.z", "load:bob:weight.fy", "boom:tip.z"], hold=HOLD,
                         loads=LOADS)
    for i, name in enumerate(of[:4]):
        assert result.reasons[i] is None, name
    for i in (4, 5):
        assert "statically indeterminate" in result.reasons[i] and np.all(np.isnan(result.derivative[i]))
    for j, (name, value) in enumerate(zip(result.parameters, result.parameter_values)):
        h = 1e-4 * max(abs(value), 1.0)
        plus = outputs_of(*edited(spec, LOADS, name, h), of[:4])
        minus = outputs_of(*edited(spec, LOADS, name, -h), of[:4])
        reference = (plus - minus) / (2 * h)
        noise = 1e-9 * np.max(np.abs(result.values[:4]))  # the re-solves' rounding over the step
        np.testing.assert_allclose(result.derivative[:4, j], reference, rtol=1e-5,
                                   atol=max(1e-6 * np.max(np.abs(reference)), noise), err_msg=name)
    assert abs(result.derivative[0, result.parameters.index("load:bob:weight.fy")]) > 1e-4  # the bob really tilts


def test_a_determinate_loop_is_not_asked_for_its_minimum_norm_split():
    """The oil columns (springs) determine the split: the sensitivities never compute the solution's loop-force
    split (a lazily computed property of the Solution), and the cylinders' efforts have derivatives."""
    model = compile_model(twin_cylinder_spec((2e6, 4e6), barrel_mass=20.0, rod_mass=10.0))
    sol = solve(model)
    result = sensitivity(sol, of=["cylinder1.fx", "boom_pivot"], wrt=["boom.mass"])
    assert "_loop_forces" not in vars(sol)
    assert all(r is None or "redundant closure row" in r for r in result.reasons)
    assert np.isfinite(result.derivative[0, 0])
