"""The analytic tangent stiffness against central differences, and the finite-difference fallback solve."""

from pathlib import Path

import numpy as np
import pytest

from shiftsim import statics as st
from shiftsim.loading import load_model
from shiftsim.statics import Load, SolverOptions, solve

MODELS = Path(__file__).resolve().parents[2] / "models"
CASES = [
    ("shift/four_bar.json", {}, []),
    ("shift/excavator_hydraulic.json", {}, ["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"]),
    ("shift/cantilever10.json", {}, []),
    ("mdx/chair.json", {}, ["leg0", "leg1", "leg2", "leg3", "leg4", "leg5"]),
]


def _problem(model, hold):
    q, prescribed = st.resolve_prescribed(model, {}, hold)
    free = st.free_coordinates(model, prescribed)
    q = st.assemble(model, q, held=prescribed).q
    return free, st.independent_rows(model, q, free), q


@pytest.mark.parametrize("name, _, hold", CASES)
def test_analytic_stiffness_matches_central_differences(name, _, hold):
    """Away from equilibrium, with nonzero multipliers and following and world loads: every term of
    the tangent stiffness (gravity, springs, closure forces, loads) against differences of the residual."""
    model = load_model(MODELS / name)
    loads = [Load(model.frame_names[-1], force=(30.0, -20.0, 50.0), torque=(1.0, 2.0, -3.0), direction="body"),
             Load(model.frame_names[len(model.frame_names) // 2], force=(-10.0, 5.0, 40.0), torque=(0.5, 0.0, 1.0))]
    free, rows, q = _problem(model, hold)
    rng = np.random.default_rng(3)
    lam = rng.normal(0.0, 200.0, len(rows))
    applied = st.applied(model, loads)
    analytic = st.evaluate(model, q, free, model.gravity, applied, lam, rows).hessian
    numeric = st.evaluate(model, q, free, model.gravity, applied, lam, rows,
                          SolverOptions(finite_difference_stiffness=True)).hessian
    assert np.abs(analytic - numeric).max() <= 1e-5 * max(1.0, np.abs(analytic).max())


def test_finite_difference_fallback_solves_to_the_same_equilibrium():
    model = load_model(MODELS / "shift/excavator_hydraulic.json")
    hold = ["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"]
    loads = [Load("arm:bucket:tip", force=(0.0, 0.0, -15000.0))]
    analytic = solve(model, hold=hold, loads=loads)
    fallback = solve(model, hold=hold, loads=loads, options=SolverOptions(finite_difference_stiffness=True))
    assert analytic.converged and fallback.converged
    assert np.abs(analytic.q - fallback.q).max() < 1e-9
    assert analytic.joint_loads["arm:boom_cyl"].effort[0] == pytest.approx(
        fallback.joint_loads["arm:boom_cyl"].effort[0], rel=1e-9)


def test_point_hessian_keeps_the_terms_of_a_joint_whose_axis_holds_the_point():
    """A z rotation then an x rotation, the point on the z axis (dp/dq_z = 0 there): d2p/dq_z dq_x is not zero.
    Checked against central second differences of forward kinematics."""
    from shiftsim.forces import point_hessian
    from shiftsim.kinematics import forward, point_jacobian, state
    from shiftsim.model import compile_model
    from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec

    a = BodySpec("a", mass=1.0, inertia=np.eye(3) * 0.1)
    b = BodySpec("b", mass=1.0, inertia=np.eye(3) * 0.1, frames={"p": FrameSpec("p", translation=np.array([0, 0, 1.0]))})
    model = compile_model(ModelSpec("zx", "test", "test", bodies=[a, b], joints=[
        JointSpec("jz", "revolute", FrameRef(FIXED), FrameRef("a"), axis=np.array([0, 0, 1.0]), initial=(0.0,)),
        JointSpec("jx", "revolute", FrameRef("a"), FrameRef("b"), axis=np.array([1.0, 0, 0]), initial=(0.0,))]))
    frame = model.frame_index("b:p")

    def point(q):
        return forward(model, q).frames[frame, :3, 3]

    q, u, h = np.zeros(2), np.array([0.3, -0.7, 0.2]), 1e-4
    s = state(model, q[None])
    node = model.frame_node[frame]
    analytic = point_hessian(model, s, node, point_jacobian(model, s, node, point(q)[None]), u[None])[0]
    step = np.eye(2) * h
    numeric = np.array([[u @ (point(q + step[i] + step[j]) - point(q + step[i] - step[j]) - point(q - step[i] + step[j])
                               + point(q - step[i] - step[j])) / (4 * h * h) for j in range(2)] for i in range(2)])
    assert analytic[0, 1] == pytest.approx(0.3, abs=1e-12)
    np.testing.assert_allclose(analytic, numeric, atol=1e-6)
