"""Static equilibrium checked against independent answers worked out in this file.

* cantilever spring chains: the small-deflection closed form q_i = M_i / k and,
  at large deflection, a minimization of a potential written here from the link
  geometry (scipy.optimize.minimize);
* a one-sided (piecewise) spring, pair springs of every distance type, external
  loads: hand solutions of one scalar equation;
* a four-bar with a crank spring: a 1-D potential from a closed-form position
  analysis, and the pin forces from a free-body-diagram solve;
* a boom and the excavator held by hydraulic cylinders: virtual work, the
  cylinder effort equals dV/dl of the potential of everything else;
* every solved equilibrium: each body's wrenches balance, and every free joint's
  effort equals its own restraint's generalized force.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from scipy.optimize import brentq, minimize, root
from scipy.spatial.transform import Rotation

from shiftsim.errors import SolveError
from shiftsim.forces import AppliedLoad
from shiftsim.kinematics import assemble, forward
from shiftsim.loading import load_model
from shiftsim.model import Model, compile_model
from shiftsim.solution import Solution, body_balance
from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec, RestraintSpec
from shiftsim.statics import Load, SolverOptions, solve, solve_batch

MODELS = Path(__file__).resolve().parents[2] / "models" / "shift"
G = 9.81
DOWN = np.array([0.0, 0.0, -G])


# ---------------------------------------------------------------------- shared checks


def law_value(knots: tuple[float, ...], coefficients: tuple[tuple[float, ...], ...], x: float) -> float:
    """A piecewise law (highest power first, absolute x) at x: piece i covers [k_i, k_i+1)."""
    piece = int(np.searchsorted(np.asarray(knots, float), x, side="right"))
    return float(np.polyval(coefficients[piece], x))


def restraint_force(spec: ModelSpec, joint: JointSpec, x: float) -> float:
    """f(x) of every spring on a 1-dof joint: its stiffness array (constant term first) plus joint restraints."""
    total = float(sum(c * x**i for i, c in enumerate(joint.stiffness)))
    for r in spec.restraints:
        if r.active and r.kind == "spring" and r.joint == joint.name:
            total += law_value(r.knots, r.coefficients, x)
    return total


def check_solution(sol: Solution, prescribed: tuple[str, ...] = ()) -> None:
    """Every body's wrench balance sums to zero (1e-9 relative) and a free joint's effort is -f(q)."""
    assert sol.status == "converged"
    model = sol.model
    balance = body_balance(model, sol.q, sol.multipliers, sol.gravity, sol.loads)
    frames = forward(model, sol.q).frames
    reach = 1.0 + float(np.max(np.linalg.norm(frames[:, :3, 3], axis=1)))
    weight = model.total_mass * float(np.linalg.norm(sol.gravity))
    largest = max([weight] + [float(np.max(np.abs(load.wrench_world))) for load in sol.joint_loads.values()])
    assert np.max(np.abs(balance)) <= 1e-9 * largest * reach, balance
    spec_joints = {j.name: j for j in model.spec.joints}
    for joint, load in zip(model.joints, sol.joint_loads.values()):
        if len(joint.coordinates) != 1 or joint.name in prescribed or joint.name not in spec_joints:
            continue
        if any(model.coordinates_of(p) == joint.coordinates for p in prescribed):
            continue
        expected = -restraint_force(model.spec, spec_joints[joint.name], float(sol.q[joint.coordinates[0]]))
        assert load.effort[0] == pytest.approx(expected, abs=1e-9 * largest * reach), joint.name


def by_name(sol: Solution, joint: str):
    return sol.joint_loads[joint]


def coordinate(sol: Solution, joint: str) -> float:
    return float(sol.q[sol.model.coordinates_of(joint)[0]])


def rod_inertia(mass: float, length: float) -> np.ndarray:
    return np.diag([1e-3 * mass, mass * length**2 / 12, mass * length**2 / 12])


# ---------------------------------------------------------------------- cantilever spring chains


def chain_spec(n: int, length: float = 1.0, mass: float = 1.0, k: float = 500.0) -> ModelSpec:
    """n links along +x from fixed, revolute about y (Ry: +q turns x toward -z), stiffness [0, k]."""
    bodies, joints = [], []
    for i in range(n):
        bodies.append(BodySpec(f"l{i}", mass=mass, com=np.array([length / 2, 0.0, 0.0]),
                               inertia=rod_inertia(mass, length),
                               frames={"tip": FrameSpec("tip", translation=np.array([length, 0.0, 0.0]))}))
        parent = FrameRef(FIXED) if i == 0 else FrameRef(f"l{i - 1}", "tip")
        joints.append(JointSpec(f"j{i}", "revolute", parent, FrameRef(f"l{i}"), axis=np.array([0.0, 1.0, 0.0]),
                                initial=(0.0,), stiffness=(0.0, k)))
    return ModelSpec(f"chain{n}", "test", "test", gravity=DOWN.copy(), bodies=bodies, joints=joints)


class ChainPotential:
    """Potential of a planar chain (x-z plane, joints about y) written from the link geometry.

    Absolute link angle phi_j = q_0 + ... + q_j (downward positive); link j spans joint j to joint j+1:
    joint_{j+1} = joint_j + L (cos phi_j, -sin phi_j); its centre of mass is at its middle.
    V = sum k q^2 / 2 + sum m g z_com.
    """

    def __init__(self, n: int, length: float, mass: float, k: float, g: float = G):
        self.n, self.length, self.mass, self.k, self.g = n, length, mass, k, g

    def geometry(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        phi = np.cumsum(q, axis=-1)
        dx, dz = self.length * np.cos(phi), -self.length * np.sin(phi)
        joint_x = np.concatenate([np.zeros(q.shape[:-1] + (1,)), np.cumsum(dx, axis=-1)[..., :-1]], axis=-1)
        joint_z = np.concatenate([np.zeros(q.shape[:-1] + (1,)), np.cumsum(dz, axis=-1)[..., :-1]], axis=-1)
        return joint_x, joint_z, joint_x + dx / 2, joint_z + dz / 2

    def energy(self, q: np.ndarray) -> np.ndarray:
        _, _, _, com_z = self.geometry(q)
        return 0.5 * self.k * np.sum(q**2, axis=-1) + self.mass * self.g * np.sum(com_z, axis=-1)

    def gradient(self, q: np.ndarray) -> np.ndarray:
        """dV/dq_i = k q_i - m g sum_{j >= i} (x_com_j - x_joint_i): turning joint i by dq lowers an
        outboard point by its horizontal distance from the joint times dq."""
        joint_x, _, com_x, _ = self.geometry(q)
        outboard = np.cumsum(com_x[::-1])[::-1] - joint_x * np.arange(self.n, 0, -1)
        return self.k * q - self.mass * self.g * outboard


def test_chain_potential_gradient_matches_its_finite_differences():
    """The test's own potential and gradient agree (so either can serve as the reference)."""
    potential = ChainPotential(6, 0.8, 1.5, 40.0)
    q = np.random.default_rng(0).uniform(-0.5, 0.5, 6)
    step = 1e-6
    fd = [(potential.energy(q + step * e) - potential.energy(q - step * e)) / (2 * step) for e in np.eye(6)]
    np.testing.assert_allclose(potential.gradient(q), fd, atol=1e-6)


@pytest.mark.parametrize("direction", [-1.0, 1.0])
def test_chain_small_deflection_matches_the_closed_form(direction):
    """For tiny loads q_i = M_i / k, M_i the gravity moment about joint i of everything outboard (straight
    chain). Gravity is used as written: along +z (a z-down file's convention) it bends the chain up."""
    n, length, mass, k = 6, 1.0, 1.0, 500.0
    model = compile_model(chain_spec(n, length, mass, k))
    g = 1e-4 * G
    sol = solve(model, gravity=[0.0, 0.0, direction * g])
    check_solution(sol)
    moments = [-direction * g * mass * sum((j - i) * length + length / 2 for j in range(i, n)) for i in range(n)]
    np.testing.assert_allclose(sol.q, np.array(moments) / k, rtol=1e-6)
    assert sol.stable


@pytest.mark.parametrize("n, k", [(5, 100.0), (10, 500.0), (8, 60.0)])
def test_chain_large_deflection_matches_an_independent_minimization(n, k):
    length, mass = 1.0, 1.0
    model = compile_model(chain_spec(n, length, mass, k))
    sol = solve(model)
    check_solution(sol)
    assert sol.stable
    potential = ChainPotential(n, length, mass, k)
    best = minimize(potential.energy, np.zeros(n), jac=potential.gradient, method="BFGS",
                    options={"gtol": 1e-9, "maxiter": 10_000})
    polished = root(potential.gradient, best.x, tol=1e-14).x  # Newton polish of the minimum BFGS found
    assert np.max(np.abs(potential.gradient(polished))) < 1e-9
    assert np.linalg.norm(polished - best.x) < 1e-4
    assert np.max(sol.q) > 0.3  # really a large deflection
    np.testing.assert_allclose(sol.q, polished, atol=1e-6)
    # deflection is measured from the unloaded reference (the straight chain)
    out = sol.as_dict()
    for i in range(n):
        assert out["joints"][f"j{i}"]["deflection"] == pytest.approx(sol.q[i], abs=1e-12)
        assert out["joints"][f"j{i}"]["effort"] == pytest.approx(-k * sol.q[i], rel=1e-9)


def test_example_cantilever_small_deflection():
    """models/shift/cantilever10.json: 10 links 0.5 m, 2 kg, 2000 N m/rad (read from the file)."""
    data = json.loads((MODELS / "cantilever10.json").read_text())
    link = data["bodies"][0]
    length, mass, com = link["frames"][0]["T"][0], link["mass"], link["center_of_mass"][0]
    k = data["joints"][0]["stiffness"][1]
    model = load_model(MODELS / "cantilever10.json")
    g = 1e-5 * G
    sol = solve(model, gravity=[0.0, 0.0, -g])
    check_solution(sol)
    n = len(data["bodies"])
    moments = [g * mass * sum((j - i) * length + com for j in range(i, n)) for i in range(n)]
    np.testing.assert_allclose([coordinate(sol, f"hinge{i + 1}") for i in range(n)], np.array(moments) / k, rtol=1e-6)


def test_fifty_link_chain_settles_on_a_verified_local_minimum():
    n, length, mass, k = 50, 1.0, 1.0, 500.0
    model = compile_model(chain_spec(n, length, mass, k))
    sol = solve(model)
    assert sol.status == "converged" and sol.stable
    check_solution(sol)
    potential = ChainPotential(n, length, mass, k)
    # gradient of the test's own potential by central differences: ~0 against the moments in play
    step = 1e-6
    fd_gradient = np.array([(potential.energy(sol.q + step * e) - potential.energy(sol.q - step * e)) / (2 * step)
                            for e in np.eye(n)])
    scale = mass * G * n * n * length / 2  # gravity moment of the whole straight chain about its root
    assert np.max(np.abs(fd_gradient)) < 1e-6 * scale
    # Hessian: central differences of the (finite-difference-checked) gradient, symmetrized
    h = 1e-5
    hessian = np.array([(potential.gradient(sol.q + h * e) - potential.gradient(sol.q - h * e)) / (2 * h)
                        for e in np.eye(n)])
    hessian = 0.5 * (hessian + hessian.T)
    lowest = np.linalg.eigvalsh(hessian)[0]
    assert lowest > 1e-3 * k, lowest
    # the shiftsim equilibrium is at least as low as a plain BFGS descent from the straight chain
    best = minimize(potential.energy, np.zeros(n), jac=potential.gradient, method="BFGS",
                    options={"gtol": 1e-10, "maxiter": 20_000})
    assert potential.energy(sol.q) <= best.fun + 1e-6 * scale


def inverted_pendulum_spec(k: float) -> ModelSpec:
    """A 1 m, 2 kg arm standing straight up (Ry at q = -pi/2 turns x to +z) on a spring at rest there:
    f = k (q + pi/2), written constant term first as [k pi/2, k]."""
    arm = BodySpec("arm", mass=2.0, com=np.array([0.5, 0.0, 0.0]), inertia=rod_inertia(2.0, 1.0))
    pin = JointSpec("pin", "revolute", FrameRef(FIXED), FrameRef("arm"), axis=np.array([0.0, 1.0, 0.0]),
                    initial=(-np.pi / 2,), stiffness=(k * np.pi / 2, k))
    return ModelSpec("inverted", "test", "test", gravity=DOWN.copy(), bodies=[arm], joints=[pin])


def test_upright_equilibrium_of_a_weak_spring_is_reported_unstable_and_left_for_a_stable_one():
    """With u = q + pi/2: V'(u) = k u - m g (L/2) sin u, V''(0) = k - m g L/2 < 0 for k = 5 (m g L/2 = 9.81).
    The upright pose balances exactly; the stable poses lean by +-u* with k u* = m g (L/2) sin u*."""
    k, weight_moment = 5.0, 2.0 * G * 0.5
    model = compile_model(inverted_pendulum_spec(k))
    stay = solve(model, options=SolverOptions(seek_stable=False))
    assert stay.status == "converged" and coordinate(stay, "pin") == pytest.approx(-np.pi / 2, abs=1e-12)
    assert stay.stable is False
    lean = brentq(lambda u: k * u - weight_moment * np.sin(u), 0.1, np.pi, xtol=1e-15)
    sol = solve(model)
    check_solution(sol)
    assert sol.stable is True
    assert abs(coordinate(sol, "pin") + np.pi / 2) == pytest.approx(lean, abs=1e-9)
    assert k - weight_moment * np.cos(lean) > 0  # V''(u*) > 0: the hand solution is a minimum


# ---------------------------------------------------------------------- piecewise spring on a slider


def slider_spec(knots: tuple[float, ...], coefficients: tuple[tuple[float, ...], ...], mass: float = 3.0,
                start: float = 0.3) -> ModelSpec:
    """A block on a vertical prismatic joint (Tz from fixed) resting on a restraint law."""
    block = BodySpec("block", mass=mass, com=np.zeros(3), inertia=np.eye(3) * 0.01)
    guide = JointSpec("guide", "prismatic", FrameRef(FIXED), FrameRef("block"), axis=np.array([0.0, 0.0, 1.0]),
                      initial=(start,))
    spring = RestraintSpec("pad", "spring", knots, coefficients, joint="guide")
    return ModelSpec("slider", "test", "test", gravity=DOWN.copy(), bodies=[block], joints=[guide], restraints=[spring])


def test_one_sided_spring_carries_the_weight_below_its_knot():
    """f = k x for x < 0, nothing above: the block falls onto the spring and settles at x = -m g / k."""
    k, mass = 2000.0, 3.0
    model = compile_model(slider_spec((0.0,), ((k, 0.0), (0.0,)), mass))
    sol = solve(model)
    check_solution(sol)
    assert coordinate(sol, "guide") == pytest.approx(-mass * G / k, rel=1e-9)
    assert by_name(sol, "guide").effort[0] == pytest.approx(mass * G, rel=1e-9)


def test_one_sided_quadratic_spring_highest_power_first():
    """f = a x^2 + b x for x < 0.05 (written [a, b, 0], highest power first, absolute x), 0 above.
    Equilibrium: -f(x) - m g = 0, the root below the knot."""
    a, b, mass, knot = -4000.0, 800.0, 3.0, 0.05
    model = compile_model(slider_spec((knot,), ((a, b, 0.0), (0.0,)), mass))
    sol = solve(model)
    check_solution(sol)
    roots = np.roots([a, b, mass * G])
    expected = float(max(r.real for r in roots if r.real < knot))
    assert coordinate(sol, "guide") == pytest.approx(expected, rel=1e-9)


def test_bilinear_spring_selects_the_piece_on_each_side():
    """f = k1 (x - 0.1) below the knot 0.1, k2 (x - 0.1) above; an upward pull F > m g lands above the knot."""
    k1, k2, mass, pull = 5000.0, 300.0, 3.0, 80.0
    model = compile_model(slider_spec((0.1,), ((k1, -0.1 * k1), (k2, -0.1 * k2)), mass))
    down = solve(model)
    up = solve(model, loads=[Load("block", force=(0.0, 0.0, pull))])
    for sol in (down, up):
        check_solution(sol)
    assert coordinate(down, "guide") == pytest.approx(0.1 - mass * G / k1, rel=1e-9)
    assert coordinate(up, "guide") == pytest.approx(0.1 + (pull - mass * G) / k2, rel=1e-9)


# ---------------------------------------------------------------------- four-bar with a crank spring


class FourBar:
    """Closed-form position analysis of models/shift/four_bar.json in the x-z plane, read from the file.

    Points as (x, z). Crank A->B, coupler B->C, rocker D->C; Ry by +theta turns a body's x axis
    toward -z, so B = A + r (cos theta, -sin theta). C is the intersection of the circles about B
    (coupler) and D (rocker) on the branch of the file's pose. Centres of mass on the link lines.
    """

    def __init__(self, model: Model):
        data = json.loads((MODELS / "four_bar.json").read_text())
        fixed = {f["name"]: np.array(f["T"])[[0, 2]] for f in data["fixed"]["frames"]}
        bodies = {b["name"]: b for b in data["assemblies"][0]["bodies"]}
        self.a, self.d = fixed["crank_pivot"], fixed["rocker_pivot"]
        self.crank = bodies["crank"]["frames"][0]["T"][0]
        self.coupler = bodies["coupler"]["frames"][0]["T"][0]
        self.rocker = bodies["rocker"]["frames"][0]["T"][0]
        self.mass = {name: b["mass"] for name, b in bodies.items()}
        self.com = {name: b["center_of_mass"][0] for name, b in bodies.items()}
        spring = data["assemblies"][0]["restraints"][0]
        self.law = np.array(spring["coefficients"][0], float)  # highest power first
        frames = forward(model, model.q0).frames
        c_file = frames[model.frame_index("four_bar:rocker:tip")][:3, 3][[0, 2]]
        theta0 = model.q0[model.coordinates_of("four_bar:crank_pin")[0]]
        self.branch = 1.0
        if np.linalg.norm(self.points(theta0)["C"] - c_file) > 1e-9:
            self.branch = -1.0
        assert np.linalg.norm(self.points(theta0)["C"] - c_file) < 1e-9

    def points(self, theta: float) -> dict[str, np.ndarray]:
        b = self.a + self.crank * np.array([np.cos(theta), -np.sin(theta)])
        bd = self.d - b
        dist = np.linalg.norm(bd)
        along = (self.coupler**2 - self.rocker**2 + dist**2) / (2 * dist)
        height = np.sqrt(self.coupler**2 - along**2)
        normal = np.array([-bd[1], bd[0]]) / dist
        c = b + along * bd / dist + self.branch * height * normal
        return {"A": self.a, "B": b, "C": c, "D": self.d,
                "G1": self.a + self.com["crank"] / self.crank * (b - self.a),
                "G2": b + self.com["coupler"] / self.coupler * (c - b),
                "G3": self.d + self.com["rocker"] / self.rocker * (c - self.d)}

    def spring_force(self, theta: float) -> float:
        return float(np.polyval(self.law, theta))

    def gravity_potential(self, theta: float, load: np.ndarray = np.zeros(2)) -> float:
        """Gravity plus a constant world force ``load`` (x, z) at the coupler tip C."""
        p = self.points(theta)
        gravity = G * sum(self.mass[b] * p[g][1] for b, g in (("crank", "G1"), ("coupler", "G2"), ("rocker", "G3")))
        return gravity - float(load @ p["C"])

    def potential(self, theta: float, load: np.ndarray = np.zeros(2)) -> float:
        return self.gravity_potential(theta, load) + float(np.polyval(np.polyint(self.law), theta))

    def slope(self, theta: float, load: np.ndarray = np.zeros(2), h: float = 1e-6) -> float:
        return (self.potential(theta + h, load) - self.potential(theta - h, load)) / (2 * h)

    def equilibrium_from(self, start: float, load: np.ndarray = np.zeros(2)) -> float:
        """The minimum of V reached by walking downhill from ``start`` (root of dV/dtheta)."""
        def slope(t: float) -> float:
            return self.slope(t, load)

        direction = -np.sign(slope(start))
        step, a = 0.01, start
        while np.sign(slope(a + direction * step)) == np.sign(slope(start)):
            a += direction * step
        lo, hi = sorted((a, a + direction * step))
        return brentq(slope, lo, hi, xtol=1e-14)

    def pin_forces(self, theta: float, load: np.ndarray = np.zeros(2)) -> dict[str, np.ndarray]:
        """Free-body diagrams of crank, coupler, rocker (3 x 3 planar equations, 9 unknowns):
        F_A ground->crank, F_B crank->coupler, F_C coupler->rocker, F_D ground->rocker, tau ground->crank;
        ``load`` (x, z) acts on the coupler at C."""
        p = self.points(theta)
        g = np.array([0.0, -G])
        w = {b: self.mass[b] * g for b in ("crank", "coupler", "rocker")}

        def moment(r: np.ndarray) -> np.ndarray:
            """y-moment of a force F at arm r: r_z F_x - r_x F_z, as a row acting on (F_x, F_z)."""
            return np.array([r[1], -r[0]])

        def cross(r: np.ndarray, f: np.ndarray) -> float:
            return float(moment(r) @ f)

        rows, rhs = [], []
        index = {"A": 0, "B": 2, "C": 4, "D": 6}

        def equation(terms: list[tuple[str, np.ndarray]], tau: float, constant: float) -> None:
            row = np.zeros(9)
            for name, coeffs in terms:
                row[index[name]:index[name] + 2] += coeffs
            row[8] = tau
            rows.append(row)
            rhs.append(-constant)

        for axis in range(2):
            unit = np.eye(2)[axis]
            equation([("A", unit), ("B", -unit)], 0.0, w["crank"][axis])
            equation([("B", unit), ("C", -unit)], 0.0, w["coupler"][axis] + load[axis])
            equation([("C", unit), ("D", unit)], 0.0, w["rocker"][axis])
        equation([("B", -moment(p["B"] - p["A"]))], 1.0, cross(p["G1"] - p["A"], w["crank"]))
        equation([("C", -moment(p["C"] - p["B"]))], 0.0,
                 cross(p["G2"] - p["B"], w["coupler"]) + cross(p["C"] - p["B"], load))
        equation([("C", moment(p["C"] - p["D"]))], 0.0, cross(p["G3"] - p["D"], w["rocker"]))
        u = np.linalg.solve(np.array(rows), np.array(rhs))
        return {"A": u[0:2], "B": u[2:4], "C": u[4:6], "D": u[6:8], "tau": u[8]}


@pytest.fixture(scope="module")
def four_bar_solution() -> tuple[Model, Solution, FourBar]:
    model = load_model(MODELS / "four_bar.json")
    return model, solve(model), FourBar(model)


def test_four_bar_equilibrium_angle_from_the_one_dimensional_potential(four_bar_solution):
    model, sol, bar = four_bar_solution
    check_solution(sol)
    assert sol.stable
    theta_rest = float(np.roots(bar.law)[0])  # the spring is at rest in the reference
    theta = bar.equilibrium_from(theta_rest)
    assert abs(theta - theta_rest) > 0.1  # gravity really moves it
    assert coordinate(sol, "four_bar:crank_pin") == pytest.approx(theta, abs=1e-8)
    curvature = (bar.slope(theta + 1e-4) - bar.slope(theta - 1e-4)) / 2e-4
    assert curvature > 0
    # the other bodies sit where the closed form puts them
    frames = forward(model, sol.q).frames
    p = bar.points(theta)
    np.testing.assert_allclose(frames[model.frame_index("four_bar:coupler:tip")][:3, 3][[0, 2]], p["C"], atol=1e-8)
    np.testing.assert_allclose(frames[model.frame_index("four_bar:rocker:tip")][:3, 3][[0, 2]], p["C"], atol=1e-8)
    assert sol.as_dict()["joints"]["four_bar:crank_pin"]["deflection"] == pytest.approx(theta - theta_rest, abs=1e-8)


@pytest.mark.parametrize("load", [(0.0, 0.0), (15.0, -25.0), (-30.0, 10.0)])
def test_four_bar_pin_forces_match_a_free_body_diagram(load):
    model = load_model(MODELS / "four_bar.json")
    bar = FourBar(model)
    load = np.array(load)
    sol = solve(model, loads=[Load("four_bar:coupler:tip", force=(load[0], 0.0, load[1]))])
    check_solution(sol)
    theta = bar.equilibrium_from(float(np.roots(bar.law)[0]), load)
    assert coordinate(sol, "four_bar:crank_pin") == pytest.approx(theta, abs=1e-8)
    fbd = bar.pin_forces(theta, load)
    # the crank torque of the FBD is the spring's: an independent check of the equilibrium itself
    assert fbd["tau"] == pytest.approx(-bar.spring_force(theta), abs=1e-7)
    expected = {"four_bar:crank_pin": (fbd["A"], fbd["tau"]), "four_bar:coupler_pin": (fbd["B"], 0.0),
                "four_bar:rocker_pin": (fbd["C"], 0.0), "four_bar:ground_pin": (fbd["D"], 0.0)}
    for joint, (force, moment_y) in expected.items():
        wrench = by_name(sol, joint).wrench_world
        np.testing.assert_allclose(wrench[[0, 2]], force, atol=1e-7, err_msg=joint)
        assert wrench[4] == pytest.approx(moment_y, abs=1e-7), joint
    assert by_name(sol, "four_bar:crank_pin").effort[0] == pytest.approx(fbd["tau"], abs=1e-7)


@pytest.mark.parametrize("crank", [-1.5, -0.5, 0.3])
def test_four_bar_with_the_crank_set_carries_the_virtual_work_torque(crank):
    """Crank prescribed: the joint (spring plus actuator) carries dV_gravity/dtheta of the rest."""
    model = load_model(MODELS / "four_bar.json")
    bar = FourBar(model)
    sol = solve(model, set={"crank_pin": crank})
    check_solution(sol, prescribed=("four_bar:crank_pin",))
    h = 1e-6
    expected = (bar.gravity_potential(crank + h) - bar.gravity_potential(crank - h)) / (2 * h)
    assert by_name(sol, "four_bar:crank_pin").effort[0] == pytest.approx(expected, rel=1e-7)
    frames = forward(model, sol.q).frames
    np.testing.assert_allclose(frames[model.frame_index("four_bar:coupler:tip")][:3, 3][[0, 2]], bar.points(crank)["C"],
                               atol=1e-9)


def test_four_bar_json_result_object(four_bar_solution):
    model, sol, bar = four_bar_solution
    out = sol.as_dict()
    assert set(out) >= {"status", "iterations", "residual", "stable", "joints", "frames", "bodies"}
    assert set(out["joints"]) == set(model.joint_names)
    assert set(out["frames"]) == set(model.frame_names)
    for entry in out["joints"].values():
        assert len(entry["wrench_joint"]) == 6 and len(entry["wrench_world"]) == 6
    reference = forward(model, sol.q_reference).frames
    for f, name in enumerate(model.frame_names):
        np.testing.assert_allclose(out["frames"][name]["deflection"],
                                   np.array(out["frames"][name]["position"]) - reference[f, :3, 3], atol=1e-12)
    # wrench_joint is wrench_world in the child-side joint frame
    frames = forward(model, sol.q).frames
    for joint in model.joints:
        rotation = frames[joint.child_frame][:3, :3]
        world = np.array(out["joints"][joint.name]["wrench_world"])
        np.testing.assert_allclose(out["joints"][joint.name]["wrench_joint"],
                                   np.concatenate([rotation.T @ world[:3], rotation.T @ world[3:]]), atol=1e-9)


def test_double_pendulum_with_a_backward_elbow_under_a_horizontal_tip_force():
    """models/shift/double_pendulum.json (elbow written link2 -> link1:distal, so link2's downward angle is
    shoulder - elbow). Hanging links with a horizontal tip force F: angles from the vertical
    tan a1 = F / (g (m1/2 + m2)), tan a2 = 2 F / (m2 g); the elbow passes m2 g + F from link2 to link1."""
    model = load_model(MODELS / "double_pendulum.json")
    force, m1, m2 = 6.0, 1.0, 1.0
    sol = solve(model, loads=[Load("double_pendulum:link2:distal", force=(force, 0.0, 0.0))])
    check_solution(sol)
    assert sol.stable
    phi1 = np.pi / 2 - np.arctan(force / (G * (m1 / 2 + m2)))
    phi2 = np.pi / 2 - np.arctan(2 * force / (m2 * G))

    def wrapped(angle: float) -> float:
        return float(np.angle(np.exp(1j * angle)))

    assert wrapped(coordinate(sol, "double_pendulum:shoulder") - phi1) == pytest.approx(0.0, abs=1e-9)
    assert wrapped(coordinate(sol, "double_pendulum:elbow") - (phi1 - phi2)) == pytest.approx(0.0, abs=1e-9)
    elbow = by_name(sol, "double_pendulum:elbow").wrench_world
    np.testing.assert_allclose(elbow, [force, 0.0, -m2 * G, 0.0, 0.0, 0.0], atol=1e-9)


# ---------------------------------------------------------------------- boom held by a hydraulic cylinder


def boom_spec() -> ModelSpec:
    """A 4 m boom pinned to the ground at the origin, lifted by a cylinder below it.

    Cylinder: barrel pinned to fixed:cyl_base, rod on a prismatic joint 'cyl' along the barrel's x
    (coordinate = pin-to-pin length), rod eye pinned to boom:cyl_head (this pin closes the loop).
    Initial values are rough; assembly closes the loop with 'cyl' held.
    """
    boom = BodySpec("boom", mass=500.0, com=np.array([2.0, 0.0, 0.15]), inertia=rod_inertia(500.0, 4.0),
                    frames={"cyl_head": FrameSpec("cyl_head", translation=np.array([1.5, 0.0, -0.3])),
                            "tip": FrameSpec("tip", translation=np.array([4.0, 0.0, 0.0]))})
    barrel = BodySpec("barrel", mass=60.0, com=np.array([0.5, 0.0, 0.0]), inertia=rod_inertia(60.0, 1.0))
    rod = BodySpec("rod", mass=30.0, com=np.array([-0.4, 0.0, 0.0]), inertia=rod_inertia(30.0, 0.8))
    y = np.array([0.0, 1.0, 0.0])
    joints = [
        JointSpec("boom_pin", "revolute", FrameRef(FIXED, "boom_foot"), FrameRef("boom"), axis=y, initial=(-0.35,)),
        JointSpec("base_pin", "revolute", FrameRef(FIXED, "cyl_base"), FrameRef("barrel"), axis=y, initial=(-1.0,)),
        JointSpec("cyl", "prismatic", FrameRef("barrel"), FrameRef("rod"), axis=np.array([1.0, 0.0, 0.0]),
                  initial=(1.65,)),
        JointSpec("rod_pin", "revolute", FrameRef("rod"), FrameRef("boom", "cyl_head"), axis=y, initial=(0.6,)),
    ]
    fixed = {"boom_foot": FrameSpec("boom_foot"),
             "cyl_base": FrameSpec("cyl_base", translation=np.array([0.8, 0.0, -1.2]))}
    return ModelSpec("boom", "test", "test", gravity=DOWN.copy(), bodies=[boom, barrel, rod], fixed_frames=fixed,
                     joints=joints)


def potential_energy(model: Model, q: np.ndarray, gravity: np.ndarray, world_forces: list[tuple[str, np.ndarray]] = ()
                     ) -> float:
    """V = -sum m g . com - sum F . p (constant world forces at frames), from the world poses."""
    poses = forward(model, q)
    energy = 0.0
    for body in model.spec.bodies:
        x = poses.bodies[model.body_names.index(body.name)]
        energy -= body.mass * gravity @ (x[:3, :3] @ body.com + x[:3, 3])
    for frame, force in world_forces:
        energy -= force @ poses.frames[model.frame_index(frame)][:3, 3]
    return float(energy)


def virtual_work_effort(model: Model, q: np.ndarray, held: list[str], actuator: str, gravity: np.ndarray,
                        world_forces: list[tuple[str, np.ndarray]] = (), h: float = 1e-5) -> float:
    """dV/dl by central differences: the loops are re-assembled at l +- h with every held joint kept."""
    held_coordinates = [model.coordinates_of(name)[0] for name in held]
    k = model.coordinates_of(actuator)[0]
    energies = []
    for sign in (1.0, -1.0):
        trial = q.copy()
        trial[k] += sign * h
        closed = assemble(model, trial, held=held_coordinates, tolerance=1e-13)
        energies.append(potential_energy(model, closed.q, gravity, world_forces))
    return (energies[0] - energies[1]) / (2 * h)


@pytest.mark.parametrize("tip_load", [0.0, -8000.0])
def test_boom_cylinder_effort_is_the_virtual_work_rate(tip_load):
    model = compile_model(boom_spec())
    loads = [Load("boom:tip", force=(0.0, 0.0, tip_load))] if tip_load else []
    sol = solve(model, hold=["cyl"], loads=loads)
    check_solution(sol, prescribed=("cyl",))
    assert coordinate(sol, "cyl") == 1.65  # held at the file's value
    forces = [("boom:tip", np.array([0.0, 0.0, tip_load]))]
    expected = virtual_work_effort(model, sol.q, ["cyl"], "cyl", DOWN, forces)
    effort = by_name(sol, "cyl").effort[0]
    assert effort > 0  # the cylinder below the boom pushes to hold it up
    assert effort == pytest.approx(expected, rel=1e-6)
    # the force the barrel exerts on the rod, along the cylinder axis, is the effort
    frames = forward(model, sol.q).frames
    axis = frames[model.frame_index("rod")][:3, 0]
    assert by_name(sol, "cyl").wrench_world[:3] @ axis == pytest.approx(effort, rel=1e-9)


# ---------------------------------------------------------------------- body-frame-pair springs


DISTANCE_TYPES = ["euclidean", "Tx", "Ty", "Tz"]


def pair_slider_spec(distance_type: str, k: float, rest: float) -> tuple[ModelSpec, np.ndarray, np.ndarray, np.ndarray]:
    """A block on a tilted prismatic rail through the origin (world direction ``rail``) pulled by a pair
    spring f = k (x - rest) from the rotated fixed frame 'anchor' (parent) to the block (child)."""
    rail = np.array([0.6, 0.0, 0.8])
    anchor_rotation = Rotation.from_euler("xyz", [0.3, -0.5, 0.8]).as_matrix()
    anchor_position = np.array([0.4, 0.3, 2.0])
    block = BodySpec("block", mass=4.0, com=np.zeros(3), inertia=np.eye(3) * 0.01)
    guide = JointSpec("rail", "prismatic", FrameRef(FIXED), FrameRef("block"), axis=rail, initial=(0.5,))
    spring = RestraintSpec("pull", "spring", (), ((k, -k * rest),), pair=(FrameRef(FIXED, "anchor"), FrameRef("block")),
                           distance_type=distance_type)
    fixed = {"anchor": FrameSpec("anchor", anchor_rotation, anchor_position)}
    spec = ModelSpec("pair_slider", "test", "test", gravity=DOWN.copy(), bodies=[block], fixed_frames=fixed,
                     joints=[guide], restraints=[spring])
    return spec, rail, anchor_rotation, anchor_position


@pytest.mark.parametrize("distance_type", DISTANCE_TYPES)
def test_pair_spring_on_a_slider(distance_type):
    k, mass = 3000.0, 4.0
    rest = 0.2 if distance_type != "euclidean" else 1.0
    spec, rail, rotation, anchor = pair_slider_spec(distance_type, k, rest)
    sol = solve(compile_model(spec))
    check_solution(sol)
    weight_along = mass * DOWN @ rail
    if distance_type == "euclidean":
        # m g.a - k (|s a - P| - L0) a.(s a - P)/|s a - P| = 0, solved for s on the side of the reference
        def balance(s: float) -> float:
            d = s * rail - anchor
            return weight_along - k * (np.linalg.norm(d) - rest) * (rail @ d) / np.linalg.norm(d)
        start = coordinate(sol, "rail")
        expected = brentq(balance, start - 0.3, start + 0.3, xtol=1e-14)
    else:
        # x = e.(s a - P) along the parent frame axis e: m g.a - k (x - L0) e.a = 0 (linear in s)
        e = rotation[:, "xyz".index(distance_type[1].lower())]
        x = rest + weight_along / (k * (e @ rail))
        expected = (x + e @ anchor) / (e @ rail)
    assert coordinate(sol, "rail") == pytest.approx(expected, abs=1e-10)


class PairPendulum:
    """A pendulum (pin about y at the origin, +theta turns x toward -z) whose frame 'spring_end' at its
    tip (rotation ``frame_rotation``) is the parent of a pair spring to the fixed frame 'hook'."""

    length, mass, k = 1.2, 5.0, 4000.0

    def __init__(self, distance_type: str):
        self.distance_type = distance_type
        self.frame_rotation = {
            "euclidean": np.eye(3),
            "Tx": Rotation.from_euler("y", -np.pi / 2 + 0.3).as_matrix(),  # frame x points mostly up
            "Ty": Rotation.from_euler("xy", [np.pi / 2, 0.2]).as_matrix(),  # frame y points mostly up
            "Tz": Rotation.from_euler("y", 0.25).as_matrix(),
        }[distance_type]
        self.hook = np.array([1.0, 0.0, 0.9])
        self.rest = self.distance(0.0)  # the spring is at rest in the straight pose

    def distance(self, theta: float) -> float:
        turn = Rotation.from_rotvec([0.0, theta, 0.0]).as_matrix()
        end = turn @ np.array([self.length, 0.0, 0.0])
        d = self.hook - end
        if self.distance_type == "euclidean":
            return float(np.linalg.norm(d))
        return float((turn @ self.frame_rotation)[:, "xyz".index(self.distance_type[1].lower())] @ d)

    def potential(self, theta: float) -> float:
        com_z = -self.length / 2 * np.sin(theta)
        return self.mass * G * com_z + 0.5 * self.k * (self.distance(theta) - self.rest) ** 2

    def slope(self, theta: float, h: float = 1e-6) -> float:
        return (self.potential(theta + h) - self.potential(theta - h)) / (2 * h)

    def spec(self) -> ModelSpec:
        body = BodySpec("arm", mass=self.mass, com=np.array([self.length / 2, 0.0, 0.0]),
                        inertia=rod_inertia(self.mass, self.length),
                        frames={"spring_end": FrameSpec("spring_end", self.frame_rotation,
                                                        np.array([self.length, 0.0, 0.0]))})
        pin = JointSpec("pin", "revolute", FrameRef(FIXED), FrameRef("arm"), axis=np.array([0.0, 1.0, 0.0]),
                        initial=(0.0,))
        spring = RestraintSpec("strut", "spring", (), ((self.k, -self.k * self.rest),),
                               pair=(FrameRef("arm", "spring_end"), FrameRef(FIXED, "hook")),
                               distance_type=self.distance_type)
        return ModelSpec("pair_pendulum", "test", "test", gravity=DOWN.copy(), bodies=[body],
                         fixed_frames={"hook": FrameSpec("hook", translation=self.hook)}, joints=[pin],
                         restraints=[spring])


@pytest.mark.parametrize("distance_type", DISTANCE_TYPES)
def test_pair_spring_from_a_moving_frame_on_a_pendulum(distance_type):
    pendulum = PairPendulum(distance_type)
    sol = solve(compile_model(pendulum.spec()))
    check_solution(sol)
    assert sol.stable
    grid = np.linspace(-0.5, 0.5, 1001)
    slopes = np.array([pendulum.slope(t) for t in grid])
    i = int(np.flatnonzero((slopes[:-1] < 0) & (slopes[1:] >= 0))[0])
    theta = brentq(pendulum.slope, grid[i], grid[i + 1], xtol=1e-14)
    assert abs(theta) > 1e-3  # gravity stretches the spring
    assert coordinate(sol, "pin") == pytest.approx(theta, abs=1e-8)


def planar_point(joint_x: float, joint_z: float, phi: float, local: tuple[float, float]) -> np.ndarray:
    """World (x, z) of the body point ``local`` = (a, c) on a link turned by phi about y (Ry: x toward -z)."""
    a, c = local
    return np.array([joint_x + a * np.cos(phi) + c * np.sin(phi), joint_z - a * np.sin(phi) + c * np.cos(phi)])


@pytest.mark.parametrize("distance_type", DISTANCE_TYPES)
def test_pair_spring_between_two_moving_links(distance_type):
    """Two sprung links (k = 60 N m/rad) with a pair spring from a frame on link 0 to a frame on link 1.
    The spring acts on one side of its knot L0 only, f = kc (x - L0), x along the parent frame axis (or the
    Euclidean distance). Reference: a 2-D minimization of a potential written here."""
    n, k, kc = 2, 60.0, 900.0
    spec = chain_spec(n, 1.0, 1.0, k)
    parent_local, child_local = (0.3, 0.25), (0.6, 0.25)  # frames above the link axes
    # the parent frame is tilted about y; for Ty its y axis is also turned into the plane (onto body z)
    lug = Rotation.from_euler("yx", [0.4, np.pi / 2 if distance_type == "Ty" else 0.0]).as_matrix()
    spec.bodies[0].frames["lug"] = FrameSpec("lug", lug, np.array([parent_local[0], 0.0, parent_local[1]]))
    spec.bodies[1].frames["lug"] = FrameSpec("lug", np.eye(3), np.array([child_local[0], 0.0, child_local[1]]))
    axis = "xyz".index(distance_type[1].lower()) if distance_type != "euclidean" else None

    def distance(q: np.ndarray) -> float:
        p = planar_point(0.0, 0.0, q[0], parent_local)
        elbow = planar_point(0.0, 0.0, q[0], (1.0, 0.0))
        c = planar_point(elbow[0], elbow[1], q[0] + q[1], child_local)
        d = np.array([c[0] - p[0], 0.0, c[1] - p[1]])
        if axis is None:
            return float(np.linalg.norm(d))
        return float((Rotation.from_rotvec([0.0, q[0], 0.0]).as_matrix() @ lug)[:, axis] @ d)

    # the sag (both joints turning +) stretches some distances and shortens others: the spring is a cable
    # (acts above its knot) where the sag stretches it and a bump stop (acts below its knot) where it shortens
    side = 1.0 if distance(np.array([0.3, 0.1])) > distance(np.zeros(2)) else -1.0
    rest = distance(np.zeros(2)) - side * 0.02  # engaged in the straight pose
    pieces = ((0.0,), (kc, -kc * rest)) if side > 0 else ((kc, -kc * rest), (0.0,))
    spec.restraints.append(RestraintSpec("cable", "spring", (rest,), pieces,
                                         pair=(FrameRef("l0", "lug"), FrameRef("l1", "lug")),
                                         distance_type=distance_type))
    sol = solve(compile_model(spec))
    check_solution(sol)
    chain = ChainPotential(n, 1.0, 1.0, k)

    def energy(q: np.ndarray) -> float:
        engaged = max(side * (distance(q) - rest), 0.0)
        return float(chain.energy(q)) + 0.5 * kc * engaged**2

    best = minimize(energy, np.zeros(2), method="Nelder-Mead", options={"xatol": 1e-12, "fatol": 1e-14,
                                                                         "maxiter": 20_000})
    polished = minimize(energy, best.x, method="BFGS", options={"gtol": 1e-10}).x
    np.testing.assert_allclose(sol.q, polished, atol=1e-6)
    assert side * (distance(sol.q) - rest) > 1e-3  # the spring is engaged at the equilibrium
    step = 1e-6
    gradient = [(energy(sol.q + step * e) - energy(sol.q - step * e)) / (2 * step) for e in np.eye(2)]
    assert np.max(np.abs(gradient)) < 1e-5


# ---------------------------------------------------------------------- external loads on a cantilever


def loaded_arm_spec(k: float = 300.0) -> ModelSpec:
    """A 1.5 m, 2 kg arm on a torsional spring at a pin about y; frames 'tip' (aligned with the arm) and
    'flipped' (at the tip, turned 180 degrees about x: its y and z axes point along -y and -z of the arm)."""
    length, mass = 1.5, 2.0
    body = BodySpec("arm", mass=mass, com=np.array([length / 2, 0.0, 0.0]), inertia=rod_inertia(mass, length),
                    frames={"tip": FrameSpec("tip", translation=np.array([length, 0.0, 0.0])),
                            "flipped": FrameSpec("flipped", Rotation.from_euler("x", np.pi).as_matrix(),
                                                 np.array([length, 0.0, 0.0]))})
    pin = JointSpec("pin", "revolute", FrameRef(FIXED), FrameRef("arm"), axis=np.array([0.0, 1.0, 0.0]),
                    initial=(0.0,), stiffness=(0.0, k))
    return ModelSpec("arm", "test", "test", gravity=DOWN.copy(), bodies=[body], joints=[pin])


# Each case: load, and the y-moment about the pin it adds as a function of theta (tip at L (cos t, 0, -sin t)).
L_ARM = 1.5
LOAD_CASES: dict[str, tuple[Load, Callable[[float], float]]] = {
    "world force down": (Load("arm:tip", force=(0.0, 0.0, -50.0)), lambda t: 50.0 * L_ARM * np.cos(t)),
    "world force oblique": (Load("arm:tip", force=(30.0, 0.0, -40.0)),
                            lambda t: -L_ARM * np.sin(t) * 30.0 + L_ARM * np.cos(t) * 40.0),
    "body force normal": (Load("arm:tip", force=(0.0, 0.0, -50.0), direction="body"), lambda t: 50.0 * L_ARM),
    "body force in flipped frame": (Load("arm:flipped", force=(0.0, 0.0, 50.0), direction="body"),
                                    lambda t: 50.0 * L_ARM),
    "body force along the arm": (Load("arm:tip", force=(70.0, 0.0, 0.0), direction="body"), lambda t: 0.0),
    "world torque": (Load("arm:tip", torque=(0.0, 40.0, 0.0)), lambda t: 40.0),
    "body torque in flipped frame": (Load("arm:flipped", torque=(0.0, 40.0, 0.0), direction="body"), lambda t: -40.0),
    "world torque about x": (Load("arm:tip", torque=(25.0, 0.0, 0.0)), lambda t: 0.0),
}


@pytest.mark.parametrize("case", list(LOAD_CASES))
def test_external_loads_on_a_sprung_arm(case):
    k, mass = 300.0, 2.0
    load, moment = LOAD_CASES[case]
    model = compile_model(loaded_arm_spec(k))
    sol = solve(model, loads=[load])
    check_solution(sol)
    if case == "world torque about x":
        # a torque about x on a pin about y is not carried by the spring: the pin takes it as a moment
        assert by_name(sol, "pin").wrench_world[3] == pytest.approx(-25.0, abs=1e-9)

    def balance(t: float) -> float:
        return k * t - mass * G * L_ARM / 2 * np.cos(t) - moment(t)

    theta = brentq(balance, -1.5, 1.5, xtol=1e-15)
    assert coordinate(sol, "pin") == pytest.approx(theta, abs=1e-10)
    assert by_name(sol, "pin").effort[0] == pytest.approx(-k * theta, abs=1e-8)


def test_load_factor_and_world_force_on_the_pin_wrench():
    """The pin carries the weight and the load: force = -(m g + F); Load.factor scales the load."""
    k, mass = 300.0, 2.0
    model = compile_model(loaded_arm_spec(k))
    sol = solve(model, loads=[Load("arm:tip", force=(10.0, 5.0, -20.0), factor=2.0)])
    check_solution(sol)
    np.testing.assert_allclose(by_name(sol, "pin").wrench_world[:3], -(mass * DOWN + 2.0 * np.array([10.0, 5.0, -20.0])),
                               atol=1e-9)


# ---------------------------------------------------------------------- failure is explicit


def test_unbalanced_slider_fails_and_names_its_joint():
    """A free slider pushed along its guide with nothing to resist: no equilibrium exists, found up front."""
    block = BodySpec("block", mass=1.0, com=np.zeros(3), inertia=np.eye(3) * 0.01)
    guide = JointSpec("guide", "prismatic", FrameRef(FIXED), FrameRef("block"), axis=np.array([1.0, 0.0, 0.0]),
                      initial=(0.0,))
    model = compile_model(ModelSpec("loose", "test", "test", gravity=DOWN.copy(), bodies=[block], joints=[guide]))
    sol = solve(model, loads=[Load("block", force=(10.0, 0.0, 0.0))])
    assert sol.status == "no equilibrium" and not sol.converged
    assert sol.iterations == 0
    assert any("guide" in line and "--hold" in line for line in sol.blame)


def test_prescribed_value_that_breaks_the_loop_raises_naming_the_loop():
    model = load_model(MODELS / "slider_crank.json")
    closing = [j.name for j in model.joints if not j.in_tree]
    with pytest.raises(SolveError) as caught:
        solve(model, set={"slider_guide": 0.9})
    assert closing[0] in str(caught.value)


def shiftsim(*args: Any) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shiftsim.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def loose_slider_json(tmp_path: Path) -> Path:
    data = {"model_parameters": {"version": "0.2", "gravity": [0.0, 0.0, -9.81],
                                 "units": {"angle": "radians", "length": "meters", "mass": "kilograms",
                                           "time": "seconds"}},
            "bodies": [{"name": "block", "mass": 1.0, "center_of_mass": [0, 0, 0],
                        "moment_of_inertia": {"Ixx": 0.01, "Iyy": 0.01, "Izz": 0.01, "Ixy": 0, "Iyz": 0, "Izx": 0}}],
            "joints": [{"name": "guide", "type": "Tx", "body_frame_pairs": [["fixed", "origin"], ["block", "origin"]],
                        "initial_displacement": 0.0}]}
    path = tmp_path / "loose.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.slow
def test_solve_command_exit_codes(tmp_path):
    ok = shiftsim("solve", MODELS / "four_bar.json", "--json")
    assert ok.returncode == 0, ok.stderr
    out = json.loads(ok.stdout)
    assert out["status"] == "converged" and out["stable"] is True
    assert set(out) >= {"status", "iterations", "residual", "stable", "joints", "frames", "bodies"}

    failed = shiftsim("solve", loose_slider_json(tmp_path), "--load", "block=10,0,0", "--json")
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert json.loads(failed.stdout)["status"] == "no equilibrium"

    broken = shiftsim("solve", MODELS / "slider_crank.json", "--set", "slider_guide=0.9", "--json")
    assert broken.returncode == 1 and "Traceback" not in broken.stderr and "cannot close" in broken.stderr

    for bad in (["--hold", "no_such_joint"], ["--load", "four_bar:coupler:tip=1,2"], ["--gravity", "0,-9.81"],
                ["--load", "nowhere=1,2,3"], ["--set", "crank_pin=x"]):
        run = shiftsim("solve", MODELS / "four_bar.json", *bad, "--json")
        assert run.returncode == 2, (bad, run.stderr)
        assert "Traceback" not in run.stderr and run.stdout == ""


@pytest.mark.slow
def test_solve_command_gravity_and_load_match_the_api():
    run = shiftsim("solve", MODELS / "four_bar.json", "--gravity", "0,0,-5", "--load", "four_bar:coupler:tip=0,0,-12",
                   "--json")
    assert run.returncode == 0, run.stderr
    model = load_model(MODELS / "four_bar.json")
    sol = solve(model, gravity=[0.0, 0.0, -5.0], loads=[Load("four_bar:coupler:tip", force=(0.0, 0.0, -12.0))])
    check_solution(sol)
    out = json.loads(run.stdout)
    assert out["joints"]["four_bar:crank_pin"]["position"] == pytest.approx(coordinate(sol, "four_bar:crank_pin"),
                                                                          abs=1e-10)


# ---------------------------------------------------------------------- the excavator with its cylinders held


CYLINDERS = ("arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl")


@pytest.fixture(scope="module")
def excavator_solution() -> tuple[Model, Solution]:
    model = load_model(MODELS / "excavator.json")
    return model, solve(model, hold=list(CYLINDERS))


def test_excavator_converges_with_its_cylinders_held(excavator_solution):
    model, sol = excavator_solution
    check_solution(sol, prescribed=CYLINDERS)
    assert sol.stable
    np.testing.assert_array_equal([coordinate(sol, c) for c in CYLINDERS],
                                  [model.q0[model.coordinates_of(c)[0]] for c in CYLINDERS])


def test_excavator_cylinder_efforts_by_virtual_work(excavator_solution):
    model, sol = excavator_solution
    efforts = {c: by_name(sol, c).effort[0] for c in CYLINDERS}
    for cylinder in CYLINDERS:
        expected = virtual_work_effort(model, sol.q, list(CYLINDERS), cylinder, model.gravity)
        assert efforts[cylinder] == pytest.approx(expected, rel=1e-6), cylinder
    # the boom cylinder below the boom pushes to hold up the whole front (a 20 t class machine: ~100-400 kN)
    assert 1e5 < efforts["arm:boom_cyl"] < 4e5


def test_excavator_with_a_payload_at_the_bucket_tip():
    """20 kN down at the bucket tip: every cylinder effort is still dV/dl, and the boom cylinder pushes harder."""
    model = load_model(MODELS / "excavator.json")
    payload = np.array([0.0, 0.0, -20_000.0])
    empty = solve(model, hold=list(CYLINDERS))
    sol = solve(model, hold=list(CYLINDERS), loads=[Load("arm:bucket:tip", force=tuple(payload))])
    check_solution(sol, prescribed=CYLINDERS)
    for cylinder in CYLINDERS:
        expected = virtual_work_effort(model, sol.q, list(CYLINDERS), cylinder, model.gravity,
                                       [("arm:bucket:tip", payload)])
        assert by_name(sol, cylinder).effort[0] == pytest.approx(expected, rel=1e-6), cylinder
    assert by_name(sol, "arm:boom_cyl").effort[0] > by_name(empty, "arm:boom_cyl").effort[0]


# ---------------------------------------------------------------------- batched mode


def test_solve_batch_on_a_grid_of_tip_loads_equals_single_solves():
    model = compile_model(chain_spec(5, k=500.0))
    grid = np.array([(fx, 0.0, fz) for fx in (-60.0, 0.0, 60.0) for fz in (-150.0, 0.0, 100.0)])
    batch = len(grid)
    tip = model.frame_index("l4:tip")
    result = solve_batch(model, np.zeros((batch, model.nq)), np.arange(model.nq), np.tile(DOWN, (batch, 1)),
                         [AppliedLoad(tip, grid, np.zeros((batch, 3)), False)])
    assert np.all(result.converged) and np.all(result.stable)
    for b, force in enumerate(grid):
        single = solve(model, loads=[Load("l4:tip", force=tuple(force))])
        np.testing.assert_allclose(result.q[b], single.q, atol=1e-9)


def test_solve_batch_of_gravity_cases_on_the_four_bar_equals_single_solves():
    model = load_model(MODELS / "four_bar.json")
    gravities = np.array([[0.0, 0.0, -G], [0.0, 0.0, -3.0], [2.0, 0.0, -9.0], [-4.0, 0.0, -6.0], [0.0, 0.0, 0.0]])
    start = assemble(model, model.q0).q
    result = solve_batch(model, np.tile(start, (len(gravities), 1)), np.arange(model.nq), gravities)
    assert np.all(result.converged)
    for b, gravity in enumerate(gravities):
        single = solve(model, gravity=gravity)
        np.testing.assert_allclose(result.q[b], single.q, atol=1e-9)
