"""Inverse kinematics and frame algorithms (shiftsim.ik) on hand-built models and a Shift four-bar.

Independent references: the planar two-link arm's closed forms (position,
Jacobian, law-of-cosines inverse, reach), poses composed here with scipy
rotations, central differences of residuals, and elementary geometry for
unreachable and conflicting targets (their best residuals in closed form).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from shiftsim.errors import InputError
from shiftsim.ik import (ContactConstraint, EndEffectorConstraint, IKOptions, IKProblem, frame_velocity, jacobian,
                         register_ik_solver, registered_solvers, solve_ik, transform_between, unregister_ik_solver)
from shiftsim.ik.constraints import rotation_log_jacobian_inverse, rotation_vector3
from shiftsim.ik.solver import _damped_step
from shiftsim.kinematics import closure_residual, forward, state
from shiftsim.loading import load_model
from shiftsim.model import Model, compile_model
from shiftsim.spec import FIXED, BodySpec, CouplingSpec, FrameRef, FrameSpec, JointSpec, ModelSpec

SHIFT_MODELS = Path(__file__).resolve().parents[2] / "models" / "shift"
L1, L2 = 0.7, 0.4  # planar arm link lengths (m)
Y = np.array([0.0, 1.0, 0.0])
X = np.array([1.0, 0.0, 0.0])


# ---------------------------------------------------------------------- models built here
def frame(name: str, translation=(0.0, 0.0, 0.0), rotation: Rotation | None = None) -> FrameSpec:
    return FrameSpec(name, np.eye(3) if rotation is None else rotation.as_matrix(), np.array(translation, float))


def planar_two_link(limits: dict[str, tuple[float, float]] | None = None, name: str = "planar_2r") -> Model:
    """Two links turning about z in the x-y plane: shoulder at the origin, elbow at L1, tip at L2."""
    limits = limits or {}
    spec = ModelSpec(name=name, source="<test>", format="test", bodies=[
        BodySpec("link1", frames={"end": frame("end", (L1, 0, 0))}),
        BodySpec("link2", frames={"tip": frame("tip", (L2, 0, 0))}),
    ], joints=[
        JointSpec("shoulder", "revolute", FrameRef(FIXED), FrameRef("link1"), limits=limits.get("shoulder")),
        JointSpec("elbow", "revolute", FrameRef("link1", "end"), FrameRef("link2"), limits=limits.get("elbow")),
    ])
    return compile_model(spec)


def planar_tip(q1: float, q2: float) -> np.ndarray:
    return np.array([L1 * np.cos(q1) + L2 * np.cos(q1 + q2), L1 * np.sin(q1) + L2 * np.sin(q1 + q2), 0.0])


def two_armed_torso() -> Model:
    """A torso turning about z with two 3-joint arms (shoulder and elbow pitch about y, wrist roll about x)."""
    bodies = [BodySpec("torso", frames={"left": frame("left", (0, 0.25, 0.5)),
                                        "right": frame("right", (0, -0.25, 0.5))})]
    joints = [JointSpec("waist", "revolute", FrameRef(FIXED), FrameRef("torso"), limits=(-2.5, 2.5))]
    for side in ("left", "right"):
        bodies += [BodySpec(f"{side}_upper", frames={"end": frame("end", (0.35, 0, 0))}),
                   BodySpec(f"{side}_fore", frames={"end": frame("end", (0.3, 0, 0))}),
                   BodySpec(f"{side}_hand", frames={"tip": frame("tip", (0.1, 0.02, 0.03))})]
        joints += [
            JointSpec(f"{side}_shoulder", "revolute", FrameRef("torso", side), FrameRef(f"{side}_upper"), axis=Y,
                      limits=(-2.0, 2.0)),
            JointSpec(f"{side}_elbow", "revolute", FrameRef(f"{side}_upper", "end"), FrameRef(f"{side}_fore"), axis=Y,
                      limits=(-2.5, 2.5)),
            JointSpec(f"{side}_wrist", "revolute", FrameRef(f"{side}_fore", "end"), FrameRef(f"{side}_hand"), axis=X,
                      limits=(-3.0, 3.0)),
        ]
    return compile_model(ModelSpec("torso", "<test>", "test", bodies=bodies, joints=joints))


def coupled_arm() -> Model:
    """A spatial 3-joint arm whose third joint follows the second: q3 = 0.5 sin(q2) - 0.3 q1."""
    spec = ModelSpec("coupled", "<test>", "test", bodies=[
        BodySpec("a", frames={"end": frame("end", (0.1, 0.0, 0.3))}),
        BodySpec("b", frames={"end": frame("end", (0.4, 0.0, 0.0), Rotation.from_rotvec([0.3, 0, 0]))}),
        BodySpec("c", frames={"tool": frame("tool", (0.25, 0.05, 0.0), Rotation.from_euler("XYZ", [0.2, -0.4, 1.0]))}),
    ], joints=[
        JointSpec("j1", "revolute", FrameRef(FIXED), FrameRef("a")),
        JointSpec("j2", "revolute", FrameRef("a", "end"), FrameRef("b"), axis=Y, limits=(-2.0, 2.0)),
        JointSpec("j3", "revolute", FrameRef("b", "end"), FrameRef("c"), axis=np.array([0.0, 0.6, 0.8]),
                  limits=(-1.0, 1.0),
                  coupling=CouplingSpec(("j2", "j1"), lambda v: 0.5 * np.sin(v[0]) - 0.3 * v[1],
                                        lambda v: np.array([0.5 * np.cos(v[0]), -0.3]), "0.5*sin(j2) - 0.3*j1")),
    ])
    return compile_model(spec)


def world_pose(model: Model, q: np.ndarray, name: str) -> np.ndarray:
    """World pose of a frame straight from kinematics.forward (couplings applied here)."""
    return forward(model, model.apply_couplings(q)).frames[model.frame_index(name)]


def within_limits(model: Model, q: np.ndarray) -> bool:
    return all(j.limits is None or j.limits[0] - 1e-12 <= q[j.coordinates[0]] <= j.limits[1] + 1e-12
               for j in model.joints)


# ---------------------------------------------------------------------- frames, Jacobians, velocities

def _central_differences(problem, model, q: np.ndarray) -> np.ndarray:
    """d residual / d free coordinates at q by central differences (step 1e-6), couplings followed."""
    numeric = np.empty((len(problem.evaluate(q).residual), len(problem.free)))
    for k, coordinate in enumerate(problem.free):
        d = np.zeros(model.nq)
        d[coordinate] = 1e-6
        plus = problem.evaluate(model.apply_couplings(q + d)).residual
        minus = problem.evaluate(model.apply_couplings(q - d)).residual
        numeric[:, k] = (plus - minus) / 2e-6
    return numeric

def test_planar_transform_and_jacobian_match_the_closed_forms():
    model = planar_two_link()
    q1, q2 = 0.4, -1.1
    x = transform_between(model, np.array([q1, q2]), "fixed", "link2:tip")
    np.testing.assert_allclose(x[:3, 3], planar_tip(q1, q2), atol=1e-14)
    np.testing.assert_allclose(x[:3, :3], Rotation.from_rotvec([0, 0, q1 + q2]).as_matrix(), atol=1e-14)
    expected = np.zeros((6, 2))
    expected[0] = [-L1 * np.sin(q1) - L2 * np.sin(q1 + q2), -L2 * np.sin(q1 + q2)]
    expected[1] = [L1 * np.cos(q1) + L2 * np.cos(q1 + q2), L2 * np.cos(q1 + q2)]
    expected[5] = [1.0, 1.0]
    np.testing.assert_allclose(jacobian(model, np.array([q1, q2]), "link2:tip"), expected, atol=1e-14)
    # seen from link1 (moving with the shoulder) only the elbow moves the tip
    seen = jacobian(model, np.array([q1, q2]), "link2:tip", relative_to="link1")
    np.testing.assert_allclose(seen[:, 0], 0.0, atol=1e-14)
    np.testing.assert_allclose(seen[:2, 1], [-L2 * np.sin(q2), L2 * np.cos(q2)], atol=1e-14)


def test_transform_between_two_moving_frames_is_the_relative_pose_of_forward_kinematics():
    model = two_armed_torso()
    rng = np.random.default_rng(3)
    q = rng.uniform(-1, 1, (4, model.nq))
    x = transform_between(model, q, "left_hand:tip", "right_fore:end")
    for k in range(4):
        a, b = world_pose(model, q[k], "left_hand:tip"), world_pose(model, q[k], "right_fore:end")
        np.testing.assert_allclose(x[k], np.linalg.inv(a) @ b, atol=1e-13)
    np.testing.assert_allclose(x[0] @ transform_between(model, q[0], "right_fore:end", "left_hand:tip"), np.eye(4),
                               atol=1e-13)


def finite_difference_twist(model: Model, q: np.ndarray, direction: np.ndarray, name: str, reference: str | None,
                            h: float = 1e-6) -> np.ndarray:
    """Central difference of the pose of ``name`` in ``reference`` (world) along ``direction``:
    [d position; rotation vector rate], both in the reference frame's axes."""
    def pose(qq):
        x = world_pose(model, qq, name)
        return x if reference is None else np.linalg.inv(world_pose(model, qq, reference)) @ x
    plus, minus = pose(q + h * direction), pose(q - h * direction)
    linear = (plus[:3, 3] - minus[:3, 3]) / (2 * h)
    angular = Rotation.from_matrix(plus[:3, :3] @ minus[:3, :3].T).as_rotvec() / (2 * h)
    return np.concatenate([linear, angular])


@pytest.mark.parametrize("reference", [None, "a:end", "c"])
def test_coupled_jacobian_against_finite_differences(reference):
    model = coupled_arm()
    assert [model.coordinate_names[i] for i in range(model.nq)] == ["j1", "j2", "j3"]
    q = model.apply_couplings(np.array([0.3, -0.7, 0.0]))
    jac = jacobian(model, q, "c:tool", relative_to=reference)
    assert jac.shape == (6, 2)  # j3 follows j1 and j2: no column
    for column, coordinate in enumerate((0, 1)):
        direction = np.zeros(3)
        direction[coordinate] = 1.0
        np.testing.assert_allclose(jac[:, column], finite_difference_twist(model, q, direction, "c:tool", reference),
                                   atol=1e-8)
    raw = jacobian(model, q, "c:tool", relative_to=reference, coordinates="all")
    assert raw.shape == (6, 3)
    # the coupled column enters through dq3/dq = (-0.3, 0.5 cos q2)
    np.testing.assert_allclose(jac, raw[:, :2] + np.outer(raw[:, 2], [-0.3, 0.5 * np.cos(q[1])]), atol=1e-14)


def test_expressed_in_rotates_the_rows_into_that_frame():
    model = coupled_arm()
    q = model.apply_couplings(np.array([-0.4, 0.9, 0.0]))
    world = jacobian(model, q, "c:tool")
    rotation = world_pose(model, q, "b:end")[:3, :3]
    local = jacobian(model, q, "c:tool", expressed_in="b:end")
    np.testing.assert_allclose(local[:3], rotation.T @ world[:3], atol=1e-14)
    np.testing.assert_allclose(local[3:], rotation.T @ world[3:], atol=1e-14)


def test_frame_velocity_is_the_rate_of_the_pose_and_ignores_coupled_rates():
    model = coupled_arm()
    q = model.apply_couplings(np.array([0.2, 0.5, 0.0]))
    rates = np.array([0.7, -1.3, 123.0])  # the rate given for coupled j3 plays no part
    twist = frame_velocity(model, q, rates, "c:tool")
    h = 1e-6
    along = np.array([0.7, -1.3, 0.0])
    np.testing.assert_allclose(twist, finite_difference_twist(model, q, along, "c:tool", None, h), atol=1e-8)
    seen = frame_velocity(model, q, rates, "c:tool", relative_to="b")
    np.testing.assert_allclose(seen, finite_difference_twist(model, q, along, "c:tool", "b", h), atol=1e-8)
    batch = frame_velocity(model, np.stack([q, q]), np.stack([rates, 2 * rates]), "c:tool")
    np.testing.assert_allclose(batch, [twist, 2 * twist], atol=1e-13)
    with pytest.raises(ValueError, match="one rate per coordinate"):
        frame_velocity(model, q, rates[:2], "c:tool")


def test_rotation_log_jacobian_inverse_against_finite_differences():
    for phi in ([0.0, 0.0, 0.0], [1e-6, -2e-6, 0.5e-6], [0.3, -0.2, 0.9], [2.0, 1.0, -1.5]):
        phi = np.array(phi)
        numeric = np.empty((3, 3))
        for k in range(3):
            d = np.zeros(3)
            d[k] = 1e-7
            plus = (Rotation.from_rotvec(d) * Rotation.from_rotvec(phi)).as_rotvec()
            minus = (Rotation.from_rotvec(-d) * Rotation.from_rotvec(phi)).as_rotvec()
            numeric[:, k] = (plus - minus) / 2e-7
        np.testing.assert_allclose(rotation_log_jacobian_inverse(phi), numeric, atol=1e-7)


def test_constraint_jacobians_against_finite_differences_of_the_residual():
    model = coupled_arm()
    target = Rotation.from_euler("XYZ", [0.3, 0.1, -0.5]).as_matrix()
    problem = IKProblem.bind(model, [
        EndEffectorConstraint("c:tool", position=[0.3, 0.2, 0.1], rotation=target, relative_to="a:end"),
        EndEffectorConstraint("b:end", rotation=target.T),
        ContactConstraint("c:tool", "a", gap=0.02),
    ], IKOptions(respect_limits=False))
    q = model.apply_couplings(np.array([0.4, 1.1, 0.0]))
    evaluation = problem.evaluate(q)
    assert evaluation.jacobian.shape == (6 + 3 + 4, 2)
    np.testing.assert_allclose(evaluation.jacobian, _central_differences(problem, model, q), atol=1e-7)


# ---------------------------------------------------------------------- inverse kinematics: reachable targets
@pytest.mark.parametrize("start", [[0.0, 0.0], [0.3, 0.3], [-2.0, 1.0], [2.5, -2.0], [1.0, -0.2]])
def test_planar_position_target_reached_from_several_starts(start):
    model = planar_two_link()
    target = planar_tip(0.9, -1.4)
    result = solve_ik(model, [EndEffectorConstraint("link2:tip", position=target)], np.array(start))
    assert result.converged and result.residual <= 1e-10
    np.testing.assert_allclose(planar_tip(*result.q), target, atol=1e-10)
    # the law of cosines fixes |q2|
    cos_q2 = (target @ target - L1 ** 2 - L2 ** 2) / (2 * L1 * L2)
    assert abs(abs(result.q[1]) - np.arccos(cos_q2)) < 1e-9
    assert result.joints == {"shoulder": result.q[0], "elbow": result.q[1]}


@pytest.mark.parametrize("seed", range(4))
def test_two_simultaneous_end_effector_constraints_on_a_branched_model(seed):
    model = two_armed_torso()
    rng = np.random.default_rng(seed)
    lower, upper = (np.array([j.limits[k] for j in model.joints]) for k in (0, 1))
    truth = rng.uniform(0.6 * lower, 0.6 * upper)
    left, right = world_pose(model, truth, "left_hand:tip"), world_pose(model, truth, "right_hand:tip")
    constraints = [EndEffectorConstraint("left_hand:tip", position=left[:3, 3], rotation=left[:3, :3]),
                   EndEffectorConstraint("right_hand:tip", position=right[:3, 3])]
    for start in (model.q0, rng.uniform(lower, upper)):
        result = solve_ik(model, constraints, start, IKOptions(restarts=8))
        assert result.converged, result.message
        assert result.residual <= 1e-10
        np.testing.assert_allclose(world_pose(model, result.q, "left_hand:tip")[:3], left[:3], atol=1e-10)
        np.testing.assert_allclose(world_pose(model, result.q, "right_hand:tip")[:3, 3], right[:3, 3], atol=1e-10)
        assert within_limits(model, result.q)
        assert [c["name"] for c in result.constraints] == ["left_hand:tip", "right_hand:tip"]


def test_relative_constraint_between_two_moving_frames():
    model = two_armed_torso()
    truth = np.array([0.3, 0.4, -0.8, 0.5, -0.6, 1.1, -0.2])
    relative = np.linalg.inv(world_pose(model, truth, "right_hand:tip")) @ world_pose(model, truth, "left_hand:tip")
    constraint = EndEffectorConstraint("left_hand:tip", position=relative[:3, 3], rotation=relative[:3, :3],
                                       relative_to="right_hand:tip")
    result = solve_ik(model, [constraint], model.q0, IKOptions(held=("waist",)))
    assert result.converged, result.message
    got = np.linalg.inv(world_pose(model, result.q, "right_hand:tip")) @ world_pose(model, result.q, "left_hand:tip")
    np.testing.assert_allclose(got, relative, atol=1e-10)
    assert result.q[model.coordinates_of("waist")[0]] == model.q0[0]  # held


def test_contact_constraint_puts_the_tool_on_a_tilted_surface():
    model = two_armed_torso()
    # a table through a pose the hand can take: its normal against the hand's z axis, its origin moved
    # within the plane and 1 cm below the tool, so that the contact is reachable but not at the start
    truth = np.array([0.2, 0.5, -0.9, 1.0, 0.0, 0.0, 0.0])
    tool = world_pose(model, truth, "left_hand:tip")
    axes = tool[:3, :3] @ Rotation.from_rotvec([np.pi, 0.0, 0.0]).as_matrix() @ Rotation.from_rotvec(
        [0.0, 0.0, 0.7]).as_matrix()
    normal = axes[:, 2]
    origin = tool[:3, 3] - 0.01 * normal + 0.05 * axes[:, 0] - 0.03 * axes[:, 1]
    spec = model.spec
    spec.fixed_frames["table"] = FrameSpec("table", axes, origin)
    model = compile_model(spec)
    contact = ContactConstraint("left_hand:tip", "fixed:table", gap=0.01)
    result = solve_ik(model, [contact], model.q0, IKOptions(restarts=4))
    assert result.converged, result.message
    reached = world_pose(model, result.q, "left_hand:tip")
    assert abs(normal @ (reached[:3, 3] - origin) - 0.01) < 1e-10
    np.testing.assert_allclose(reached[:3, 2], -normal, atol=1e-10)
    assert result.constraints[0]["kind"] == "contact" and result.constraints[0]["distance_error"] < 1e-10
    assert result.constraints[0]["normal_error"] < 1e-10


def test_coupled_model_pose_target():
    model = coupled_arm()
    truth = model.apply_couplings(np.array([0.8, -0.9, 0.0]))
    x = world_pose(model, truth, "c:tool")
    # 2 independent coordinates: ask for the position only, and for one axis direction through a relative frame
    result = solve_ik(model, [EndEffectorConstraint("c:tool", position=x[:3, 3])], np.array([0.0, 0.0, 0.0]))
    assert result.converged and result.residual <= 1e-10
    np.testing.assert_allclose(world_pose(model, result.q, "c:tool")[:3, 3], x[:3, 3], atol=1e-10)
    assert result.q[2] == pytest.approx(0.5 * np.sin(result.q[1]) - 0.3 * result.q[0], abs=1e-15)


def test_ik_closes_the_loop_of_a_four_bar_while_placing_the_coupler():
    model = load_model(SHIFT_MODELS / "four_bar.json")
    crank = model.coordinates_of("four_bar:crank_pin")[0]
    from shiftsim.kinematics import assemble
    q = model.q0.copy()
    q[crank] = -0.5
    truth = assemble(model, q, held=[crank]).q
    tip = world_pose(model, truth, "four_bar:coupler:tip")[:3, 3]
    result = solve_ik(model, [EndEffectorConstraint("four_bar:coupler:tip", position=tip)], model.q0)
    assert result.converged, result.message
    np.testing.assert_allclose(world_pose(model, result.q, "four_bar:coupler:tip")[:3, 3], tip, atol=1e-10)
    assert np.linalg.norm(closure_residual(model, state(model, result.q[None]))[0]) <= 1e-10
    assert [c["kind"] for c in result.constraints] == ["end_effector", "loop"]


# ---------------------------------------------------------------------- failing clearly, limits
def test_unreachable_target_fails_with_the_best_residual_and_names_the_constraint():
    model = planar_two_link()
    target = np.array([1.5, 0.8, 0.0])  # |target| = 1.7 > L1 + L2 = 1.1
    result = solve_ik(model, [EndEffectorConstraint("link2:tip", position=target, name="tool")], np.array([0.2, 0.4]))
    assert result.status == "failed" and not result.converged
    best = np.linalg.norm(target) - (L1 + L2)  # the stretched arm pointing at the target
    assert result.residual == pytest.approx(best, abs=1e-7)
    np.testing.assert_allclose(planar_tip(*result.q), target / np.linalg.norm(target) * (L1 + L2), atol=1e-6)
    assert result.violated and result.violated[0].startswith("tool (position error")
    assert "failed" in result.message and "tool" in result.message and "local minimum" in result.message


def test_conflicting_targets_meet_halfway_and_fail():
    model = planar_two_link()
    a, b = planar_tip(0.5, 0.7), planar_tip(0.6, 0.9)
    result = solve_ik(model, [EndEffectorConstraint("link2:tip", position=a, name="first"),
                              EndEffectorConstraint("link2:tip", position=b, name="second")], np.array([0.5, 0.8]))
    assert result.status == "failed"
    # min |p - a|^2 + |p - b|^2 over reachable p is at the midpoint (reachable here): residual |a - b| / sqrt(2)
    assert result.residual == pytest.approx(np.linalg.norm(a - b) / np.sqrt(2), rel=1e-6)
    np.testing.assert_allclose(planar_tip(*result.q), (a + b) / 2, atol=1e-6)
    assert [v.split(" (")[0] for v in result.violated] == ["first", "second"]


def test_joint_limits_are_respected_and_reported_when_in_the_way():
    model = planar_two_link({"elbow": (0.0, 0.5)})
    target = planar_tip(0.2, 1.2)  # needs |elbow| = 1.2 > 0.5
    result = solve_ik(model, [EndEffectorConstraint("link2:tip", position=target)], np.array([0.0, 0.3]),
                      IKOptions(restarts=3))
    assert result.status == "failed"
    assert 0.0 <= result.q[1] <= 0.5
    assert result.q[1] == 0.5  # pinned at the upper limit: the nearest the arm gets
    assert "elbow (upper)" in result.message
    # without limits the same target is reached with the elbow outside them
    free = solve_ik(model, [EndEffectorConstraint("link2:tip", position=target)], np.array([0.0, 0.3]),
                    IKOptions(respect_limits=False))
    assert free.converged and abs(free.q[1]) == pytest.approx(1.2, abs=1e-9)


def test_a_reachable_target_within_limits_is_reached_with_every_iterate_inside():
    model = planar_two_link({"shoulder": (-0.5, 1.0), "elbow": (-2.0, -0.1)})
    target = planar_tip(0.8, -1.5)
    seen = []
    problem_evaluate = IKProblem.evaluate

    def spy(self, q):
        seen.append(np.array(q))
        return problem_evaluate(self, q)

    IKProblem.evaluate = spy
    try:
        result = solve_ik(model, [EndEffectorConstraint("link2:tip", position=target)], np.array([3.0, 1.0]))
    finally:
        IKProblem.evaluate = problem_evaluate
    assert result.converged
    np.testing.assert_allclose(result.q, [0.8, -1.5], atol=1e-9)  # the only solution inside the limits
    assert all(within_limits(model, q) for q in seen) and len(seen) > 3


def test_limits_of_a_coupled_joint_bound_its_sources():
    model = coupled_arm()  # j3 = 0.5 sin(j2) - 0.3 j1 must stay within [-1, 1]
    inside = np.array([3.0, 0.0, 0.0])  # j3 = -0.9
    x = world_pose(model, inside, "c:tool")
    ok = solve_ik(model, [EndEffectorConstraint("c:tool", position=x[:3, 3])], np.array([2.6, 0.1, 0.0]))
    assert ok.converged and -1.0 <= ok.q[2] <= 1.0
    assert [c["kind"] for c in ok.constraints] == ["end_effector", "coupled_limit"]
    outside = np.array([4.2, 0.0, 0.0])  # j3 = -1.26: the pose of this configuration is out of bounds
    x = world_pose(model, outside, "c:tool")
    bad = solve_ik(model, [EndEffectorConstraint("c:tool", position=x[:3, 3])], np.array([4.0, 0.1, 0.0]))
    assert bad.status == "failed"
    # the limit is a residual row (soft): the best compromise near this start leaves both unmet, and says so
    assert [v.split(" (")[0] for v in bad.violated] == ["c:tool", "limits of 'j3'"]
    assert bad.constraints[1]["excess"] == pytest.approx(-1.0 - bad.q[2], abs=1e-12)


def test_held_joints_keep_their_start_values():
    model = two_armed_torso()
    start = np.full(model.nq, 0.1)
    x = world_pose(model, np.array([0.1, 0.1, 0.5, 0.4, 0.1, 0.1, 0.1]), "left_hand:tip")
    result = solve_ik(model, [EndEffectorConstraint("left_hand:tip", position=x[:3, 3])], start,
                      IKOptions(held=("waist", "left_shoulder")))
    assert result.converged
    assert result.joints["waist"] == 0.1 and result.joints["left_shoulder"] == 0.1


# ---------------------------------------------------------------------- registration point
def closed_form_two_link(problem: IKProblem, q_start: np.ndarray):
    """Law-of-cosines inverse of the planar arm for one absolute position target of link2:tip (else decline)."""
    if len(problem.constraints) != 1:
        return None
    c = problem.constraints[0]
    model = problem.model
    if (c.kind != "end_effector" or c.rotation is not None or c.reference is not None
            or model.frame_names[c.frame] != "link2:tip"):
        return None
    x, y = c.position[:2]
    cos_q2 = np.clip((x * x + y * y - L1 ** 2 - L2 ** 2) / (2 * L1 * L2), -1.0, 1.0)
    q2 = np.arccos(cos_q2) * (1.0 if q_start[1] >= 0 else -1.0)  # keep the starting elbow side
    q1 = np.arctan2(y, x) - np.arctan2(L2 * np.sin(q2), L1 + L2 * np.cos(q2))
    return problem.result(np.array([q1, q2]), 1, "planar two-link closed form")


@pytest.fixture
def registered():
    added = []

    def add(match, solver):
        added.append(register_ik_solver(match, solver))
    yield add
    for solver in added:
        unregister_ik_solver(solver)


def test_a_registered_solver_replaces_the_generic_one_for_its_model(registered):
    registered("planar_2r", closed_form_two_link)
    model = planar_two_link()
    other = planar_two_link(name="another_arm")
    assert registered_solvers(model) == [closed_form_two_link] and registered_solvers(other) == []
    target = planar_tip(-0.4, 0.9)
    constraint = [EndEffectorConstraint("link2:tip", position=target)]
    special = solve_ik(model, constraint, np.array([0.0, 0.5]))
    assert special.solver == "planar two-link closed form" and special.iterations == 1
    assert special.converged and special.residual <= 1e-12
    np.testing.assert_allclose(special.q, [-0.4, 0.9], atol=1e-12)
    generic = solve_ik(model, constraint, np.array([0.0, 0.5]), use_registered=False)
    assert generic.solver.startswith("generic") and generic.converged
    np.testing.assert_allclose(generic.q, special.q, atol=1e-9)
    assert solve_ik(other, constraint, np.array([0.0, 0.5])).solver.startswith("generic")
    # unreachable: the closed form's stretched answer is judged like any other: failed
    far = solve_ik(model, [EndEffectorConstraint("link2:tip", position=[2.0, 0.0, 0.0])], np.array([0.0, 0.5]))
    assert far.status == "failed" and far.residual == pytest.approx(2.0 - L1 - L2)


def test_a_solver_that_declines_falls_back_and_predicates_select_models(registered):
    calls = []

    def decline(problem, q_start):
        calls.append(problem.model.spec.name)
        return None

    registered(lambda model: model.nq == 2, decline)
    model = planar_two_link()
    result = solve_ik(model, [EndEffectorConstraint("link2:tip", rotation=np.eye(3))], np.array([0.3, 0.3]))
    assert calls == ["planar_2r"] and result.solver.startswith("generic") and result.converged
    registered("planar_2r", closed_form_two_link)  # registered last: tried first
    assert registered_solvers(model) == [closed_form_two_link, decline]
    with pytest.raises(TypeError):
        register_ik_solver(3, closed_form_two_link)


# ---------------------------------------------------------------------- bad input
def test_bad_constraints_are_refused_with_every_problem_named():
    model = planar_two_link()
    with pytest.raises(InputError) as error:
        solve_ik(model, [EndEffectorConstraint("link2:tpi", position=[1, 0, 0]),
                         EndEffectorConstraint("link2:tip"),
                         EndEffectorConstraint("link2:tip", rotation=np.diag([1.0, 1.0, -1.0])),
                         EndEffectorConstraint("link2:tip", position=[np.nan, 0, 0], weight=-1),
                         ContactConstraint("link2:tip", "fixed:table")], np.zeros(2))
    text = str(error.value)
    assert "unknown frame 'link2:tpi'" in text and "link2:tip" in text  # with the nearest valid name
    assert "neither a position nor a rotation" in text
    assert "not a rotation matrix" in text
    assert "target position" in text and "weight -1" in text
    assert "unknown frame 'fixed:table'" in text
    with pytest.raises(InputError, match="no constraint given"):
        solve_ik(model, [], np.zeros(2))
    with pytest.raises(InputError, match="q_start"):
        solve_ik(model, [EndEffectorConstraint("link2:tip", position=[1, 0, 0])], np.zeros(3))
    with pytest.raises(InputError, match="unknown joint 'elbw'"):
        solve_ik(model, [EndEffectorConstraint("link2:tip", position=[1, 0, 0])], options=IKOptions(held=("elbw",)))
    with pytest.raises(InputError, match="tolerance"):
        solve_ik(model, [EndEffectorConstraint("link2:tip", position=[1, 0, 0])], options=IKOptions(tolerance=0))


def test_a_coupled_joint_cannot_be_held():
    model = coupled_arm()
    with pytest.raises(InputError, match="'j3'.*coupled"):
        solve_ik(model, [EndEffectorConstraint("c:tool", position=[0.3, 0, 0])], options=IKOptions(held=("j3",)))


# ---------------------------------------------------------------------- the solver's fast paths
def test_rotation_vector3_is_scipys_rotation_vector():
    rotations = list(Rotation.random(200, random_state=5).as_matrix())
    for vector in ([0, 0, 0], [1e-9, -2e-9, 0], [1e-4, 0, 3e-4], [np.pi, 0, 0], [0, -np.pi + 1e-9, 0],
                   np.pi * np.array([1, 1, 1]) / np.sqrt(3), [2.0, -1.0, 0.5]):
        rotations.append(Rotation.from_rotvec(vector).as_matrix())
    for matrix in rotations:
        ours = np.array(rotation_vector3(matrix))
        np.testing.assert_allclose(ours, Rotation.from_matrix(matrix).as_rotvec(), rtol=0, atol=1e-13)
        assert np.linalg.norm(ours) <= np.pi + 1e-15


def test_an_exact_target_rotation_is_kept_and_a_nearly_orthonormal_one_projected():
    model = planar_two_link()
    exact = Rotation.from_euler("XYZ", [0.3, -0.7, 2.0]).as_matrix()
    bound = EndEffectorConstraint("link2:tip", rotation=exact).bind(model)
    assert np.array_equal(bound.rotation, exact)
    rough = exact + 1e-8 * np.arange(9.0).reshape(3, 3)  # within is_rotation's 1e-6, not orthonormal
    bound = EndEffectorConstraint("link2:tip", rotation=rough).bind(model)
    np.testing.assert_allclose(bound.rotation @ bound.rotation.T, np.eye(3), atol=1e-15)
    np.testing.assert_allclose(bound.rotation, Rotation.from_matrix(rough).as_matrix(), atol=1e-15)
    assert np.abs(bound.rotation - rough).max() > 1e-9


@pytest.mark.parametrize("case", ["torso", "coupled"])
def test_world_pose_rows_against_finite_differences(case):
    # a frame some coordinates do not carry (the other arm's), and a frame turned in its body (offset rotation)
    model, name = (two_armed_torso(), "left_hand:tip") if case == "torso" else (coupled_arm(), "c:tool")
    rng = np.random.default_rng(11)
    target = Rotation.from_rotvec(rng.normal(size=3)).as_matrix()
    problem = IKProblem.bind(model, [EndEffectorConstraint(name, position=[0.2, -0.1, 0.4], rotation=target)],
                             IKOptions(respect_limits=False))
    assert problem.constraints[0].offset_target is not None  # the world-pose path is the one under test
    q = model.apply_couplings(rng.uniform(-1.0, 1.0, model.nq))
    evaluation = problem.evaluate(q)
    pose = world_pose(model, q, name)
    np.testing.assert_allclose(evaluation.residual[:3], pose[:3, 3] - [0.2, -0.1, 0.4], atol=1e-14)
    np.testing.assert_allclose(evaluation.residual[3:], Rotation.from_matrix(pose[:3, :3] @ target.T).as_rotvec(),
                               atol=1e-13)
    np.testing.assert_allclose(evaluation.jacobian, _central_differences(problem, model, q), atol=1e-7)
    if case == "torso":  # the right arm does not move the left hand
        right = [k for k, c in enumerate(problem.free) if model.coordinate_names[c].startswith("right")]
        assert len(right) == 3 and not evaluation.jacobian[:, right].any()


def test_the_last_evaluation_is_reused_only_for_the_same_configuration():
    model = planar_two_link()
    problem = IKProblem.bind(model, [EndEffectorConstraint("link2:tip", position=[0.5, 0.5, 0.0])])
    first = problem.evaluate(np.array([0.1, 0.2]))
    assert problem.evaluate(np.array([0.1, 0.2])) is first
    other = problem.evaluate(np.array([0.1, 0.2 + 1e-15]))
    assert other is not first and not np.array_equal(other.residual, first.residual)


def test_damped_step_solves_the_damped_normal_equations_and_survives_a_singular_matrix():
    rng = np.random.default_rng(2)
    jac, r = rng.normal(size=(6, 4)), rng.normal(size=6)
    step = _damped_step(jac.T @ jac, jac.T @ r, 1e-3, np.eye(4))
    np.testing.assert_allclose(step, -np.linalg.solve(jac.T @ jac + 1e-3 * np.eye(4), jac.T @ r), rtol=1e-12)
    # no damping on a rank-2 J: Cholesky fails; the minimum-norm least-squares step is taken
    jac = rng.normal(size=(6, 2)) @ rng.normal(size=(2, 4))
    step = _damped_step(jac.T @ jac, jac.T @ r, 0.0, np.eye(4))
    np.testing.assert_allclose(step, -np.linalg.pinv(jac.T @ jac) @ (jac.T @ r), atol=1e-8)


def test_with_every_joint_held_nothing_moves_and_the_solve_says_why():
    model = planar_two_link()
    start = np.array([0.2, 0.3])
    result = solve_ik(model, [EndEffectorConstraint("link2:tip", position=[0.5, 0.5, 0.0])], start,
                      IKOptions(held=("shoulder", "elbow")))
    assert result.status == "failed" and result.iterations == 0
    np.testing.assert_array_equal(result.q, start)
    assert "no joint is free to move" in result.message
