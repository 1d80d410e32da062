"""The solver finds the equilibrium every mechanism has from any assembled start, and says at once when there is none.

Independent checks:

* one-dof linkages (a line-symmetric Bricard 6R, a three-loop brake-like linkage, the four-bar and
  the slider-crank): the driving joint is walked along its range with ``assemble`` (loops closed at
  every sample), the potential is summed here from the body poses (m g z of every centre of mass plus
  the joint springs), and the well the start lies in is found by walking downhill on those samples;
  the solve started there must land on that well's minimum;
* a Stewart platform on leg springs: every start lands on the same pose, a strict minimum;
* an inverted pendulum on a spring: the lean angle from k u = m g L sin u (brentq);
* zero forces, spin axes and zero gravity: neutral, with the neutral joints named;
* no equilibrium (free bodies, a free slider, 500 free bodies, a Stewart platform with its legs
  free): reported as such, naming the joints, before iterating or after a few iterations.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq

from shiftsim.kinematics import assemble, forward
from shiftsim.loading import load_model
from shiftsim.model import Model, compile_model
from shiftsim.solution import body_balance
from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec
from shiftsim.statics import solve

ROOT = Path(__file__).resolve().parents[2]
G = 9.81
DOWN = np.array([0.0, 0.0, -G])
Y, Z = np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0])


# ---------------------------------------------------------------------- mechanisms built here
def _rod(mass: float, length: float) -> np.ndarray:
    return np.diag([1e-3 * mass, mass * length**2 / 12 + 1e-3, mass * length**2 / 12 + 1e-3])


def planar_linkage(name: str, ground: dict, bodies: dict, joints: list, springs: dict) -> ModelSpec:
    """Links in the x-z plane pinned about y. ``bodies``: name -> (mass, {pin: (x, z)}) with the pins'
    world positions at the (closed) start; ``joints``: (parent body or 'ground', pin, child body);
    ``springs``: joint index -> k (N m/rad, rest at the start)."""
    fixed = {p: FrameSpec(p, translation=np.array([x, 0.0, z])) for p, (x, z) in ground.items()}
    specs = []
    for body, (mass, pins) in bodies.items():
        points = np.array([[x, 0.0, z] for x, z in pins.values()])
        frames = {p: FrameSpec(p, translation=point - points[0]) for p, point in zip(pins, points)}
        specs.append(BodySpec(body, mass=mass, com=points.mean(axis=0) - points[0],
                              inertia=_rod(mass, float(np.linalg.norm(points[-1] - points[0]))), frames=frames))
    specs_joints = [JointSpec(pin, "revolute", FrameRef(FIXED if a == "ground" else a, pin), FrameRef(b, pin), axis=Y,
                              initial=(0.0,), stiffness=(0.0, springs[i]) if i in springs else ())
                    for i, (a, pin, b) in enumerate(joints)]
    return ModelSpec(name, "test", "test", gravity=DOWN.copy(), bodies=specs, fixed_frames=fixed, joints=specs_joints)


def brake_linkage() -> ModelSpec:
    """Three four-bars in series (a brake-pedal-like linkage): 7 links, 10 pins, 3 loops, one dof."""
    ground = {"g1": (0.0, 0.0), "g2": (2.0, 0.0), "g3": (4.0, 0.0), "g4": (6.0, 0.0)}
    p1, p2, p3, p4, p5, p6 = (0.0, 1.0), (2.2, 1.6), (2.4, 2.2), (4.3, 1.5), (4.5, 2.0), (6.4, 1.3)
    bodies = {
        "crank": (2.0, {"g1": ground["g1"], "p1": p1}),
        "coupler1": (3.0, {"p1": p1, "p2": p2}),
        "rocker1": (2.5, {"g2": ground["g2"], "p2": p2, "p3": p3}),
        "coupler2": (3.0, {"p3": p3, "p4": p4}),
        "rocker2": (2.5, {"g3": ground["g3"], "p4": p4, "p5": p5}),
        "coupler3": (3.0, {"p5": p5, "p6": p6}),
        "rocker3": (4.0, {"g4": ground["g4"], "p6": p6}),
    }
    joints = [("ground", "g1", "crank"), ("crank", "p1", "coupler1"), ("coupler1", "p2", "rocker1"),
              ("ground", "g2", "rocker1"), ("rocker1", "p3", "coupler2"), ("coupler2", "p4", "rocker2"),
              ("ground", "g3", "rocker2"), ("rocker2", "p5", "coupler3"), ("coupler3", "p6", "rocker3"),
              ("ground", "g4", "rocker3")]
    return planar_linkage("brake", ground, bodies, joints, springs={0: 40.0})


def _dh_link(d: float, a: float, alpha: float) -> np.ndarray:
    """Tz(d) Tx(a) Rx(alpha): the constant part of a DH link."""
    ca, sa = np.cos(alpha), np.sin(alpha)
    return np.array([[1.0, 0, 0, a], [0, ca, -sa, 0], [0, sa, ca, d], [0, 0, 0, 1]])


def bricard_linkage() -> ModelSpec:
    """A line-symmetric Bricard 6R on a ground link (a12 = a45, a23 = a56, a34 = a61, the same for the twists
    and offsets): six joints, one closure of six equations of which five are independent, one dof.
    The joint angles below close the loop (found by a least-squares solve of the DH chain)."""
    a, d = [1.0, 1.4, 1.2] * 2, [0.2, -0.3, 0.1] * 2
    alpha = list(np.radians([60.0, 100.0, 45.0] * 2))
    theta = [-2.9947, -2.1859, 2.2599, -2.9947, -2.1859, 2.2599]
    bodies = []
    for i in range(5):
        c = _dh_link(d[i], a[i], alpha[i])
        bodies.append(BodySpec(f"link{i}", mass=1.0 + 0.3 * i, com=0.5 * c[:3, 3], inertia=np.eye(3) * 0.05,
                               frames={"out": FrameSpec("out", rotation=c[:3, :3], translation=c[:3, 3])}))
    last = np.linalg.inv(_dh_link(d[5], a[5], alpha[5]))
    fixed = {"j0": FrameSpec("j0"), "j5": FrameSpec("j5", rotation=last[:3, :3], translation=last[:3, 3])}
    joints = [JointSpec(f"r{i}", "revolute", FrameRef(FIXED, "j0") if i == 0 else FrameRef(f"link{i - 1}", "out"),
                        FrameRef(FIXED, "j5") if i == 5 else FrameRef(f"link{i}"), axis=Z, initial=(theta[i],))
              for i in range(6)]
    return ModelSpec("bricard", "test", "test", gravity=np.array([0.0, -3.0, -G]), bodies=bodies, fixed_frames=fixed,
                     joints=joints)


# ---------------------------------------------------------------------- the independent check
def _law_energy(knots: tuple[float, ...], coefficients: tuple[tuple[float, ...], ...], x: float) -> float:
    """The integral of a piecewise law f (highest power first) from 0 to x, by quadrature."""
    def force(t: float) -> float:
        return float(np.polyval(coefficients[int(np.searchsorted(np.asarray(knots, float), t, side="right"))], t))

    return float(quad(force, 0.0, x, points=[k for k in knots if min(0.0, x) < k < max(0.0, x)] or None,
                      epsabs=1e-10, epsrel=1e-10, limit=200)[0])


def potential(model: Model, q: np.ndarray) -> float:
    """m g z of every centre of mass (gravity as the model gives it) plus every joint spring and joint restraint."""
    poses = forward(model, q).bodies
    energy = 0.0
    for body in model.spec.bodies:
        pose = poses[model.body_names.index(body.name)]
        energy -= body.mass * float(model.gravity @ (pose[:3, :3] @ body.com + pose[:3, 3]))
    for joint in model.spec.joints:
        if joint.stiffness:
            x = float(q[model.coordinates_of(joint.name)[0]])
            energy += sum(c * x ** (i + 1) / (i + 1) for i, c in enumerate(joint.stiffness))
    for r in model.spec.restraints:
        if r.active and r.kind == "spring" and r.joint is not None:
            energy += _law_energy(r.knots, r.coefficients, float(q[model.coordinates_of(r.joint)[0]]))
        elif r.active and r.kind == "spring":
            raise NotImplementedError("pair springs: not in these mechanisms")
    return energy


def walk(model: Model, drive: int, q_start: np.ndarray, step: float, span: float) -> tuple[np.ndarray, list]:
    """Assembled configurations along the driving coordinate, both ways from q_start, up to ``span`` or until
    the loops cannot close: driving values (sorted) and configurations."""
    samples = {0: q_start}
    for sign in (1.0, -1.0):
        q = q_start
        for k in range(1, int(span / step) + 1):
            target = q.copy()
            target[drive] = q_start[drive] + sign * k * step
            try:
                q = assemble(model, target, held=[drive], start=q).q
            except Exception:
                break
            samples[int(sign * k)] = q
    keys = sorted(samples)
    return np.array([samples[k][drive] for k in keys]), [samples[k] for k in keys]


def well_minimum(values: np.ndarray, energies: np.ndarray, start: int) -> float | None:
    """The driving value of the minimum of the well ``start`` lies in: downhill from sample ``start`` to a local
    minimum, refined by the parabola through it and its neighbours; None if the walk leaves the samples."""
    i = start
    while True:
        if i == 0 or i == len(values) - 1:
            return None
        if energies[i - 1] < energies[i] and energies[i - 1] <= energies[i + 1]:
            i -= 1
        elif energies[i + 1] < energies[i]:
            i += 1
        else:
            break
    e0, e1, e2 = energies[i - 1:i + 2]
    h = values[i + 1] - values[i]
    return float(values[i] + 0.5 * h * (e0 - e2) / (e0 - 2 * e1 + e2))


def one_dof_cases():
    yield "bricard", compile_model(bricard_linkage()), "r0", 0.01, np.pi
    yield "brake", compile_model(brake_linkage()), "g1", 0.005, 1.2
    yield "four_bar", load_model(ROOT / "models" / "shift" / "four_bar.json"), None, 0.01, np.pi
    yield "slider_crank", load_model(ROOT / "models" / "shift" / "slider_crank.json"), None, 0.01, np.pi


@pytest.mark.slow
@pytest.mark.parametrize("case", list(one_dof_cases()), ids=lambda c: c[0])
def test_one_dof_linkage_settles_in_the_well_of_every_start(case):
    name, model, drive_name, step, span = case
    if drive_name is None:  # the first tree joint drives: a crank
        drive_name = next(j.name for j in model.joints if j.in_tree)
    drive = model.coordinates_of(drive_name)[0]
    q0 = assemble(model, model.q0).q
    values, configurations = walk(model, drive, q0, step, span)
    energies = np.array([potential(model, q) for q in configurations])
    assert len(values) > 40 and np.ptp(energies) > 1.0  # a real range with real energy differences
    checked = 0
    for start in np.linspace(0, len(values) - 1, 9).astype(int)[1:-1]:
        expected = well_minimum(values, energies, start)
        if expected is None:
            continue
        sol = solve(model, q_start=configurations[start])
        assert sol.status == "converged", (name, start, sol.blame)
        assert sol.stability == "stable"
        turns = np.round((float(sol.q[drive]) - expected) / (2 * np.pi))  # the same pose a whole turn away
        assert float(sol.q[drive]) - 2 * np.pi * turns == pytest.approx(expected, abs=2e-4), (name, values[start])
        assert abs(float(sol.q[drive]) - values[start]) < 2 * np.pi  # it did not spin through a well
        assert potential(model, sol.q) <= energies.min() + 1e-9 or potential(model, sol.q) <= energies[start]
        balance = body_balance(model, sol.q, sol.multipliers, sol.gravity, sol.loads)
        assert np.max(np.abs(balance)) < 1e-7 * (1 + model.total_mass * G * 10)
        checked += 1
    assert checked >= 3, name


def test_bricard_is_overconstrained_with_one_dof():
    """Six closure equations, five independent: the redundant one is found and the mobility is one."""
    from shiftsim.statics import independent_rows

    model = compile_model(bricard_linkage())
    q = assemble(model, model.q0).q
    rows = independent_rows(model, q, np.arange(model.nq))
    assert len(rows) == 5 and model.nq - len(rows) == 1


def stewart_on_springs(k: float = 2e5) -> Model:
    """The Mdx chair with every leg on a spring at its file length (N/m): a six-dof platform held by springs."""
    model = load_model(ROOT / "models" / "mdx" / "chair.json")
    spec = model.spec
    joints = []
    for joint in spec.joints:
        if joint.name in {f"leg{i}" for i in range(6)}:
            length = float(joint.initial[0])
            joint = dataclasses.replace(joint, stiffness=(-k * length, k))
        joints.append(joint)
    return compile_model(dataclasses.replace(spec, joints=joints))


def test_stewart_platform_on_leg_springs_settles_on_one_pose_from_spread_starts():
    model = stewart_on_springs()
    legs = [model.coordinates_of(f"leg{i}")[0] for i in range(6)]
    q0 = assemble(model, model.q0).q
    platform = model.body_names.index("platform")
    results = []
    rng = np.random.default_rng(3)
    for _ in range(4):
        target = q0.copy()
        target[legs] += rng.uniform(-0.06, 0.06, 6)  # tilt and heave the platform by several centimetres
        start = assemble(model, target, held=legs, start=q0).q
        sol = solve(model, q_start=start)
        assert sol.status == "converged" and sol.stability == "stable", sol.blame
        results.append(forward(model, sol.q).bodies[platform])
    for pose in results[1:]:
        np.testing.assert_allclose(pose, results[0], atol=1e-8)


def test_inverted_pendulum_settles_in_the_well_its_start_lies_in():
    """10 kg at 1 m above a pin with k = 50 N m/rad at the upright pose: k u = m g L sin u gives u* = 1.873;
    started at -1.8 it must lean to -u*, and the unloaded reference (the spring's rest) is upright."""
    body = BodySpec("mass", mass=10.0, com=np.array([0.0, 0.0, 1.0]), inertia=np.eye(3) * 1e-3)
    pin = JointSpec("pin", "revolute", FrameRef(FIXED), FrameRef("mass"), axis=Y, initial=(0.0,), stiffness=(0.0, 50.0))
    model = compile_model(ModelSpec("inverted", "test", "test", gravity=DOWN.copy(), bodies=[body], joints=[pin]))
    lean = brentq(lambda u: 50.0 * u - 10.0 * G * np.sin(u), 0.5, 2.5, xtol=1e-15)
    assert lean == pytest.approx(1.873, abs=5e-4)
    for start, expected in ((-1.8, -lean), (1.8, lean), (-0.3, -lean), (2.6, lean)):
        sol = solve(model, set={}, q_start=np.array([start]))
        assert sol.status == "converged" and sol.stability == "stable"
        assert sol.q[0] == pytest.approx(expected, abs=1e-10)
        assert sol.q_reference[0] == pytest.approx(0.0, abs=1e-12)


# ---------------------------------------------------------------------- neutral is not unstable, zero is not failure
def test_wheels_with_centres_on_their_axles_converge_neutral_and_are_named():
    """Generalized forces are round-off (1e-15 N m): converged against the model's own scale, and neutral."""
    chassis = BodySpec("chassis", mass=800.0, com=np.array([1.2, 0.0, 0.3]), inertia=np.eye(3) * 100.0,
                       frames={f"hub{i}": FrameSpec(f"hub{i}", translation=np.array([2.4 * (i // 2), 0.8 * (-1) ** i, 0.0]))
                               for i in range(4)})
    wheels = [BodySpec(f"wheel{i}", mass=20.0, com=np.array([1e-17, 0.0, 0.0]), inertia=np.diag([0.6, 1.0, 0.6]))
              for i in range(4)]
    fix = JointSpec("mount", "rigid", FrameRef(FIXED), FrameRef("chassis"))
    spins = [JointSpec(f"spin{i}", "revolute", FrameRef("chassis", f"hub{i}"), FrameRef(f"wheel{i}"), axis=Y,
                       initial=(0.3 * i,)) for i in range(4)]
    model = compile_model(ModelSpec("car", "test", "test", gravity=DOWN.copy(), bodies=[chassis] + wheels,
                                    joints=[fix] + spins))
    sol = solve(model)
    assert sol.status == "converged" and sol.stability == "neutral" and not sol.stable
    named = " ".join(sol.neutral)
    assert all(f"spin{i}" in named for i in range(4)) and len(sol.neutral) == 4
    np.testing.assert_allclose(sol.q, model.q0, atol=1e-9)  # nothing turns the wheels


def test_vertical_slew_axis_and_zero_gravity_float_are_neutral():
    slew_body = BodySpec("upper", mass=500.0, com=np.array([1.0, 0.0, 0.5]), inertia=np.eye(3) * 50.0)
    slew = JointSpec("slew", "revolute", FrameRef(FIXED), FrameRef("upper"), axis=Z, initial=(0.4,))
    model = compile_model(ModelSpec("slew", "test", "test", gravity=DOWN.copy(), bodies=[slew_body], joints=[slew]))
    sol = solve(model)
    assert sol.status == "converged" and sol.stability == "neutral" and sol.neutral == ["1 slew"]
    floating = compile_model(ModelSpec("float", "test", "test", gravity=np.zeros(3),
                                       bodies=[BodySpec("pod", mass=3.0, com=np.array([0.1, 0, 0]),
                                                        inertia=np.eye(3))]))
    sol = solve(floating)
    assert sol.status == "converged" and sol.stability == "neutral" and len(sol.neutral) == 6


@pytest.mark.slow
def test_neutral_solve_exits_0_and_says_neutral():
    """A double pendulum with no springs in zero gravity: nothing moves it, nothing holds it."""
    out = subprocess.run([sys.executable, "-m", "shiftsim.cli", "solve",
                          str(ROOT / "models" / "shift" / "double_pendulum.json"), "--gravity", "0,0,0"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0].endswith("neutral")
    assert "neutral direction" in out.stdout and "shoulder" in out.stdout


# ---------------------------------------------------------------------- no equilibrium, said at once
def test_free_bodies_under_gravity_have_no_equilibrium_before_any_iteration():
    bodies = [BodySpec(f"crate{i}", mass=5.0, com=np.zeros(3), inertia=np.eye(3)) for i in range(3)]
    model = compile_model(ModelSpec("crates", "test", "test", gravity=DOWN.copy(), bodies=bodies))
    sol = solve(model)
    assert sol.status == "no equilibrium" and sol.iterations == 0
    assert all(f"crate{i}.float[2]" in sol.blame[0] for i in range(3))  # the vertical translations


@pytest.mark.slow
def test_five_hundred_free_bodies_are_refused_without_iterating():
    """3000 coordinates: the verdict comes from the start's stiffness and two probes, not from iterating."""
    bodies = [BodySpec(f"b{i}", mass=1.0, com=np.zeros(3), inertia=np.eye(3) * 0.1) for i in range(500)]
    model = compile_model(ModelSpec("free500", "test", "test", gravity=DOWN.copy(), bodies=bodies))
    assert model.nq == 3000
    sol = solve(model)
    assert sol.status == "no equilibrium" and sol.iterations == 0 and "500 coordinates" in sol.blame[0]


def test_a_support_far_below_is_found_by_the_probe():
    """A body over a one-sided spring that engages 5 m below: it has an equilibrium (it falls onto it)."""
    from shiftsim.spec import RestraintSpec

    body = BodySpec("block", mass=2.0, com=np.zeros(3), inertia=np.eye(3) * 0.1)
    drop = JointSpec("drop", "prismatic", FrameRef(FIXED), FrameRef("block"), axis=Z, initial=(0.0,))
    stop = RestraintSpec("stop", "spring", joint="drop", knots=(-5.0,),
                         coefficients=((1e4, 5e4), (0.0,)))
    model = compile_model(ModelSpec("drop", "test", "test", gravity=DOWN.copy(), bodies=[body], joints=[drop],
                                    restraints=[stop]))
    sol = solve(model)
    assert sol.status == "converged" and sol.stability == "stable"
    assert sol.q[0] == pytest.approx(-5.0 - 2.0 * G / 1e4, abs=1e-9)


def test_stewart_platform_with_free_legs_has_no_equilibrium_within_reach():
    chair = load_model(ROOT / "models" / "mdx" / "chair.json")
    sol = solve(chair)
    assert sol.status == "no equilibrium" and sol.iterations < 60
    assert "far beyond the machine's size" in sol.blame[0] and "leg0" in sol.blame[0]


@pytest.mark.slow
def test_no_equilibrium_exits_1_naming_the_joints_and_the_fixes():
    out = subprocess.run([sys.executable, "-m", "shiftsim.cli", "solve", str(ROOT / "models" / "mdx" / "chair.json")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "no equilibrium" in out.stderr and "leg3" in out.stderr and "--hold" in out.stderr
    as_json = subprocess.run([sys.executable, "-m", "shiftsim.cli", "solve", str(ROOT / "models" / "mdx" / "chair.json"),
                              "--json"], capture_output=True, text=True, timeout=120)
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["status"] == "no equilibrium"


# ---------------------------------------------------------------------- large motion is said
def test_rigid_excavator_without_holds_says_it_folded():
    model = load_model(ROOT / "models" / "shift" / "excavator.json")
    sol = solve(model)
    assert sol.status == "converged"
    assert any("boom_pivot" in r and "deg" in r for r in sol.remarks)
    assert any("--hold" in r for r in sol.remarks)
    held = solve(model, hold=[j.name for j in model.joints if j.source_type == "prismatic"])
    assert held.remarks == []


def test_scenario_steps_carry_the_verdict_and_the_neutral_directions(tmp_path):
    """A double pendulum with no springs in zero gravity, swept over a tip load of zero: every step is
    converged and neutral, and results.json names the neutral joints with the machine's prefix."""
    import shiftsim

    scenario = {
        "name": "weightless", "world": {"gravity": [0.0, 0.0, 0.0]},
        "machines": [{"id": "p", "model": str(ROOT / "models" / "shift" / "double_pendulum.json")}],
        "sweep": {"mode": "line", "parameters": {"p:double_pendulum:shoulder": {"from": 0.0, "to": 0.2, "steps": 2}}},
        "outputs": {"csv": False, "plots": []},
    }
    results = shiftsim.run_scenario(scenario, output=tmp_path / "out")
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    for step in document["steps"]:
        assert step["status"] == "converged" and step["stability"] == "neutral" and not step["stable"]
        assert any("p:double_pendulum:elbow" in d for d in step["neutral_directions"]["p"])
    assert results is not None
