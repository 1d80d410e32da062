"""Design sensitivities of an equilibrium against independent answers.

* every parameter kind and output kind: central finite differences with Richardson extrapolation of full
  re-solves (tight tolerance) of a model whose *file-level spec* is edited (not through the sensitivity code);
* closed forms: the cantilever spring chain's small-deflection tip slope d(q_i)/dk = -M_i / k^2, and the four-bar
  with a crank spring d(theta)/d(rate) from its one-degree-of-freedom energy (implicit function theorem on dV/dtheta);
* forward and adjoint modes agree to 1e-10;
* bad names give an InputError naming the valid kinds.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from helpers.sensitivity import TIGHT, edited

from shiftsim.errors import InputError
from shiftsim.loading import load_model
from shiftsim.model import compile_model
from shiftsim.sensitivity import sensitivity
from shiftsim.sensitivity.parameters import catalogue
from shiftsim.spec import (
    FIXED,
    BodySpec,
    FrameRef,
    FrameSpec,
    JointSpec,
    ModelSpec,
    RestraintSpec,
)
from shiftsim.statics import Load, solve

MODELS = Path(__file__).resolve().parents[2] / "models" / "shift"


def chain_spec(n: int = 3, k: float = 800.0) -> ModelSpec:
    """n 1 m links along +x, revolute about y, stiffness [preload 5, k], a tip frame on the last link."""
    bodies, joints = [], []
    for i in range(n):
        frames = {"tip": FrameSpec("tip", translation=np.array([1.0, 0.0, 0.0]))}
        if i == n - 1:
            frames["hook"] = FrameSpec("hook", translation=np.array([0.8, 0.0, 0.1]))
        bodies.append(BodySpec(f"l{i}", mass=2.0 + i, com=np.array([0.5, 0.0, 0.05 * i]), inertia=np.eye(3) * 0.1,
                               frames=frames))
        parent = FrameRef(FIXED) if i == 0 else FrameRef(f"l{i - 1}", "tip")
        joints.append(JointSpec(f"j{i}", "revolute", parent, FrameRef(f"l{i}"), axis=np.array([0.0, 1.0, 0.0]),
                                initial=(0.0,), stiffness=(5.0, k)))
    return ModelSpec("chain", "test", "test", gravity=np.array([0.3, 0.0, -9.81]), bodies=bodies, joints=joints)


# ---------------------------------------------------------------------- the spec edits of the reference


def outputs_of(spec, loads, of, hold) -> np.ndarray:
    """The outputs ``of`` of a fresh tight solve (their values, read by the sensitivity table's value column)."""
    model = compile_model(spec)
    sol = solve(model, hold=hold, loads=loads, options=TIGHT)
    assert sol.converged
    return sensitivity(sol, of=of, wrt=["gravity.z"], hold=hold, loads=loads).values


def richardson(spec, loads, of, hold, parameter, value) -> np.ndarray:
    """Central differences at h and h/2, extrapolated: error O(h^4)."""
    h = 1e-3 * max(abs(value), 1.0) if not parameter.endswith((".mass", ".factor")) else 1e-3 * max(abs(value), 1e-3)

    def central(step):
        plus = outputs_of(*edited(spec, loads, parameter, step), of, hold)
        minus = outputs_of(*edited(spec, loads, parameter, -step), of, hold)
        return (plus - minus) / (2 * step)

    return (4 * central(h / 2) - central(h)) / 3


def check_against_finite_differences(spec, loads, of, wrt, hold=()):
    model = compile_model(spec)
    exact = sensitivity(model, of=of, wrt=wrt, hold=hold, loads=loads, options=TIGHT)
    assert set(exact.parameters) >= {w for w in wrt if "." in w}
    for j, (name, value) in enumerate(zip(exact.parameters, exact.parameter_values)):
        reference = richardson(spec, loads, list(exact.outputs), hold, name, value)
        got = exact.derivative[:, j]
        determined = np.array([r is None for r in exact.reasons])
        scale = np.max(np.abs(reference[determined])) + 1e-300
        # the differences' own noise floor: solver rounding (~1e-14 of an output) over the step (~1e-3 of p)
        noise = 1e-9 * np.abs(exact.values[determined]) / max(abs(value), 1.0)
        assert np.all(np.abs(got[determined] - reference[determined])
                      <= 1e-6 * np.abs(reference[determined]) + np.maximum(1e-6 * scale, noise)), (
            name, got[determined], reference[determined])
    return exact


@pytest.mark.slow
def test_chain_every_parameter_kind_against_finite_differences():
    spec = chain_spec()
    loads = [Load("l2:hook", force=(40.0, 10.0, -120.0), torque=(3.0, -8.0, 2.0), factor=1.5),
             Load("l1:tip", force=(-20.0, 5.0, -60.0), torque=(1.0, 4.0, -2.0), direction="body", factor=0.8)]
    exact = check_against_finite_differences(
        spec, loads, of=["joint", "l2:hook.x", "l2:hook.z", "l1:tip.z", "wrench", "wrench_joint"],
        wrt=["mass", "com", "spring", "load", "gravity", "frame"])
    kinds = {"mass", "com", "spring", "load", "gravity", "frame"}
    assert {p.kind for p in catalogue(compile_model(spec), tuple(loads)) if p.name in exact.parameters} == kinds


@pytest.mark.slow
def test_four_bar_restraint_and_pin_wrench_against_finite_differences():
    model = load_model(MODELS / "four_bar.json")
    loads = [Load("four_bar:coupler:tip", force=(15.0, 0.0, -25.0))]
    exact = check_against_finite_differences(model.spec, loads, of=["joint", "pin", "wrench", "four_bar:coupler:tip.z"],
                                             wrt=["restraint", "four_bar:coupler.mass", "four_bar:rocker.com.x",
                                                  "load:four_bar:coupler:tip.fz", "gravity.z"])
    assert any(r is not None for r in exact.reasons)  # the planar loop's out-of-plane rows are indeterminate
    assert exact.reasons[exact.outputs.index("four_bar:crank_pin")] is None


@pytest.mark.slow
def test_held_cylinder_effort_against_finite_differences():
    model = load_model(MODELS / "excavator.json")
    hold = ["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"]
    loads = [Load("arm:bucket:tip", force=(0.0, 0.0, -8000.0))]
    check_against_finite_differences(model.spec, loads, of=["effort", "wrench", "arm:bucket:tip.z"],
                                     wrt=["arm:boom.mass", "arm:stick.com.x", "load:arm:bucket:tip.fz",
                                          "arm:bucket:tip.x"], hold=hold)


# ---------------------------------------------------------------------- closed forms
def test_cantilever_spring_chain_tip_slope_per_rate_closed_form():
    """Small deflection: q_i = M_i / k (M_i the gravity moment about joint i; Ry turns x toward -z, the way
    gravity pulls), so dq_i/dk = -M_i / k^2; at k = 1e7 the nonlinearity is below 1e-10 relative."""
    n, k, g = 4, 1.0e7, 9.81
    bodies, joints = [], []
    for i in range(n):
        bodies.append(BodySpec(f"l{i}", mass=3.0, com=np.array([0.5, 0.0, 0.0]), inertia=np.eye(3) * 0.1,
                               frames={"tip": FrameSpec("tip", translation=np.array([1.0, 0.0, 0.0]))}))
        parent = FrameRef(FIXED) if i == 0 else FrameRef(f"l{i - 1}", "tip")
        joints.append(JointSpec(f"j{i}", "revolute", parent, FrameRef(f"l{i}"), axis=np.array([0.0, 1.0, 0.0]),
                                initial=(0.0,), stiffness=(0.0, k)))
    spec = ModelSpec("cantilever", "test", "test", gravity=np.array([0.0, 0.0, -g]), bodies=bodies, joints=joints)
    model = compile_model(spec)
    result = sensitivity(model, of=[f"j{i}" for i in range(n)], wrt=[f"j{i}.k" for i in range(n)], options=TIGHT)
    for i in range(n):
        moment = sum(3.0 * g * (j + 0.5 - i) for j in range(i, n))  # weight of links i.. times lever from joint i
        assert result.derivative[i, i] == pytest.approx(-moment / k**2, rel=1e-6)
        assert result.values[i] == pytest.approx(moment / k, rel=1e-6)  # the sign of the deflection, checked
    off = result.derivative - np.diag(np.diag(result.derivative))
    assert np.max(np.abs(off)) <= 1e-6 * np.max(np.abs(result.derivative))  # a joint's rate moves only that joint


def test_four_bar_crank_angle_per_spring_rate_from_its_one_dof_energy():
    """Along the loop theta (crank angle) is the one degree of freedom: V(theta) = Vs(theta) + Vg(theta), with the
    spring law f = c1 theta + c0 (Vs' = f). Held at t, the crank's effort (restraint plus actuator) is
    E(t) = Vg'(t), minus the generalized gravity force along the loop (at the free equilibrium it equals -f,
    checked). Implicit function theorem on V'(theta) = f(theta) + E(theta) = 0: dtheta/dc1 = -theta / V''
    with V'' = c1 + E'(theta), E' from held solves
    (central differences with Richardson extrapolation): an independent computation."""
    model = load_model(MODELS / "four_bar.json")
    crank = "four_bar:crank_pin"
    c1, c0 = model.spec.restraints[0].coefficients[0]
    result = sensitivity(model, of=[crank], wrt=["four_bar:crank_spring.c1"], options=TIGHT)
    theta = result.values[0]

    def effort(t):
        return float(solve(model, set={crank: t}, options=TIGHT).joint_loads[crank].effort[0])

    assert effort(theta) == pytest.approx(-(c1 * theta + c0), rel=1e-8)

    def slope(h):
        return (effort(theta + h) - effort(theta - h)) / (2 * h)

    curvature = c1 + (4 * slope(5e-4) - slope(1e-3)) / 3
    assert curvature > 0
    assert result.derivative[0, 0] == pytest.approx(-theta / curvature, rel=1e-6)


# ---------------------------------------------------------------------- modes and errors
@pytest.mark.slow
@pytest.mark.parametrize("model_file, hold", [("four_bar.json", ()),
                                              ("excavator.json", ("arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"))])
def test_forward_and_adjoint_modes_agree(model_file, hold):
    model = load_model(MODELS / model_file)
    loads = [Load(model.frame_names[-1], force=(10.0, 0.0, -300.0))]
    of = ["joint", "pin", "wrench", "effort"] if hold else ["joint", "pin", "wrench"]
    forward = sensitivity(model, of=of, wrt=["all"], hold=hold, loads=loads, mode="forward")
    adjoint = sensitivity(model, of=of, wrt=["all"], hold=hold, loads=loads, mode="adjoint")
    assert forward.mode == "forward" and adjoint.mode == "adjoint"
    scale = np.nanmax(np.abs(forward.derivative))
    np.testing.assert_allclose(adjoint.derivative, forward.derivative, rtol=1e-10, atol=1e-10 * scale)
    assert np.all(np.isfinite(forward.derivative[[r is None for r in forward.reasons]]))


def test_unknown_names_list_the_valid_kinds():
    model = compile_model(chain_spec())
    with pytest.raises(InputError, match="mass, com, frame, spring"):
        sensitivity(model, of=["j0"], wrt=["l0.weight"])
    with pytest.raises(InputError, match="joint, frame, pin, wrench, effort"):
        sensitivity(model, of=["j9"], wrt=["all"])


def test_dataframe_and_elasticity():
    model = compile_model(chain_spec())
    result = sensitivity(model, of=["j2"], wrt=["spring"])
    table = result.frame(normalized=True)
    assert list(table["parameter"])[0] in result.parameters
    j = result.parameters.index("j2.k")
    assert table.loc[table.parameter == "j2.k", "elasticity"].item() == pytest.approx(
        result.derivative[0, j] * 800.0 / result.values[0])


@pytest.mark.slow
def test_command_line_json_matches_the_api_and_bad_names_exit_2():
    import json
    import subprocess
    import sys

    model_file = str(MODELS / "excavator.json")
    base = [sys.executable, "-m", "shiftsim", "sensitivity", model_file, "--hold", "arm:boom_cyl", "--hold",
            "arm:stick_cyl", "--hold", "arm:bucket_cyl", "--load", "arm:bucket:tip=0,0,-10000"]
    run = subprocess.run(base + ["--of", "arm:boom_cyl.effort", "--wrt", "mass,load", "--json"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    printed = json.loads(run.stdout)["outputs"]["arm:boom_cyl.effort"]
    api = sensitivity(load_model(model_file), of=["arm:boom_cyl.effort"], wrt=["mass", "load"],
                      hold=["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"],
                      loads=[Load("arm:bucket:tip", force=(0.0, 0.0, -10000.0))])
    assert printed["value"] == pytest.approx(api.values[0], rel=1e-12)
    for name, value in zip(api.parameters, api.derivative[0]):
        assert printed["derivative"][name] == pytest.approx(value, rel=1e-9, abs=1e-9)
    bad = subprocess.run(base + ["--of", "arm:boom_cyl.effort", "--wrt", "arm:boom.weight"], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "arm:boom.weight: unknown parameter" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_pin_and_mount_positions_against_finite_differences():
    """Frames that joints attach to: on the tree-parent side (moves the child subtree with the joint's axis),
    on the tree-child side (moves the child body against a fixed axis), and loop-closing pins (move a closure
    point, or a virtual chain)."""
    spec = chain_spec()
    loads = [Load("l2:hook", force=(40.0, 10.0, -120.0), factor=1.5)]
    check_against_finite_differences(spec, loads, of=["joint", "l2:hook.x", "l2:hook.z", "l1:tip.x", "wrench"],
                                     wrt=["l0:tip.x", "l0:tip.z", "l1:tip.x", "l1:tip.z"])
    model = load_model(MODELS / "four_bar.json")
    frames = [f"{name}.{a}" for name in ("four_bar:crank:tip", "four_bar:coupler:tip", "four_bar:rocker:tip",
                                         "fixed:rocker_pivot") for a in "xz"]
    check_against_finite_differences(model.spec, [Load("four_bar:coupler:tip", force=(15.0, 0.0, -25.0))],
                                     of=["joint", "pin", "wrench", "four_bar:coupler:tip.z"], wrt=frames)


@pytest.mark.slow
def test_boom_cylinder_mount_positions_against_finite_differences():
    model = load_model(MODELS / "excavator.json")
    hold = ["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"]
    loads = [Load("arm:bucket:tip", force=(0.0, 0.0, -8000.0))]
    frames = [f"{name}.{a}" for name in ("upper:house:boom_cyl_base", "arm:boom:boom_cyl_head",
                                         "arm:boom:stick_pivot") for a in "xz"]
    check_against_finite_differences(model.spec, loads, of=["effort", "arm:bucket:tip.z", "pin", "wrench"], wrt=frames,
                                     hold=hold)


# ---------------------------------------------------------------------- boom held by a cylinder
BOOM_HEAD = np.array([1.5, 0.0, -0.3])  # on the boom, boom coordinates
BOOM_TIP = np.array([4.0, 0.0, 0.0])
BOOM_COM = np.array([2.0, 0.0, 0.15])
BOOM_MASS, G = 500.0, 9.81


def boom_spec(base: np.ndarray) -> ModelSpec:
    """A boom pinned at the origin (about y), lifted by a cylinder from ``base`` (fixed) to its head; barrel and
    rod massless, so the loop's energy is the boom's and the payload's alone."""
    y = np.array([0.0, 1.0, 0.0])
    boom = BodySpec("boom", mass=BOOM_MASS, com=BOOM_COM, inertia=np.eye(3),
                    frames={"head": FrameSpec("head", translation=BOOM_HEAD),
                            "tip": FrameSpec("tip", translation=BOOM_TIP)})
    joints = [
        JointSpec("boom_pin", "revolute", FrameRef(FIXED, "foot"), FrameRef("boom"), axis=y, initial=(-0.35,)),
        JointSpec("base_pin", "revolute", FrameRef(FIXED, "base"), FrameRef("barrel"), axis=y, initial=(-1.0,)),
        JointSpec("cyl", "prismatic", FrameRef("barrel"), FrameRef("rod"), axis=np.array([1.0, 0.0, 0.0]),
                  initial=(1.65,)),
        JointSpec("rod_pin", "revolute", FrameRef("rod"), FrameRef("boom", "head"), axis=y, initial=(0.6,)),
    ]
    fixed = {"foot": FrameSpec("foot"), "base": FrameSpec("base", translation=base)}
    return ModelSpec("boom", "test", "test", gravity=np.array([0.0, 0.0, -G]),
                     bodies=[boom, BodySpec("barrel"), BodySpec("rod")], fixed_frames=fixed, joints=joints)


def _rotate(phi: float, r: np.ndarray, order: int = 0) -> np.ndarray:
    """R_y(phi) r (Ry turns x toward -z), or its ``order``-th derivative in phi."""
    c, s = np.cos(phi + order * np.pi / 2), np.sin(phi + order * np.pi / 2)
    return np.array([c * r[0] + s * r[2], r[1], -s * r[0] + c * r[2]])


def cylinder_force(length: float, base: np.ndarray, payload: float, near: float) -> float:
    """Virtual work on the loop: the held cylinder carries E = dV/dl = V'(phi) / l'(phi), V = m g z_com + P z_tip,
    phi the boom angle that closes the loop at ``length`` (the root of |R(phi) h - B| = l nearest ``near``)."""
    from scipy.optimize import brentq

    phi = brentq(lambda a: np.linalg.norm(_rotate(a, BOOM_HEAD) - base) - length, near - 0.2, near + 0.2,
                 xtol=1e-15, rtol=1e-15)
    head = _rotate(phi, BOOM_HEAD) - base
    dl = head @ _rotate(phi, BOOM_HEAD, 1) / np.linalg.norm(head)
    dv = BOOM_MASS * G * _rotate(phi, BOOM_COM, 1)[2] + payload * _rotate(phi, BOOM_TIP, 1)[2]
    return dv / dl


def test_boom_cylinder_force_per_payload_and_per_mount_position_from_the_loops_energy():
    base, payload = np.array([0.8, 0.0, -1.2]), 6000.0
    model = compile_model(boom_spec(base))
    loads = [Load("boom:tip", force=(0.0, 0.0, -payload))]
    result = sensitivity(model, of=["cyl.effort", "boom_pin"], wrt=["load:boom:tip.fz", "fixed:base.x",
                                                                     "fixed:base.z"],
                         hold=["cyl"], loads=loads, options=TIGHT)
    length, phi = model.q0[model.coordinates_of("cyl")[0]], result.values[1]
    force = cylinder_force(length, base, payload, phi)
    assert result.values[0] == pytest.approx(force, rel=1e-9)
    assert force > 0  # the cylinder pushes the boom up
    # the payload does not move a held loop: dE/dP = z_tip'(phi) / l'(phi), and fz = -P
    dpayload = (cylinder_force(length, base, payload + 1.0, phi) - force)  # E is affine in P: exact
    assert result.derivative[0, 0] == pytest.approx(-dpayload, rel=1e-9)
    for column, axis in ((1, 0), (2, 2)):  # the mount moves the loop: Richardson differences of the closed form

        def moved(h):
            step = np.eye(3)[axis] * h
            return (cylinder_force(length, base + step, payload, phi)
                    - cylinder_force(length, base - step, payload, phi)) / (2 * h)

        assert result.derivative[0, column] == pytest.approx((4 * moved(5e-4) - moved(1e-3)) / 3, rel=1e-7)


def test_wrench_and_pin_values_equal_the_cores_joint_loads():
    for name, hold in (("four_bar.json", ()), ("excavator_hydraulic.json", ("arm:boom_cyl", "arm:stick_cyl"))):
        model = load_model(MODELS / name)
        loads = [Load(model.frame_names[-1], force=(100.0, 50.0, -1e4), torque=(10.0, 20.0, 30.0), direction="body")]
        sol = solve(model, hold=hold, loads=loads)
        result = sensitivity(sol, of=["wrench"], wrt=["gravity"], hold=hold, loads=loads)
        core = np.concatenate([sol.joint_loads[j.name].wrench_world for j in model.joints if j.in_tree])
        np.testing.assert_allclose(result.values, core, atol=1e-12 * np.max(np.abs(core)))
        # a loop-closing joint's load is its multipliers (0 on the indeterminate rows, as the solver reports them)
        pins = sensitivity(sol, of=["pin"], wrt=["gravity"], hold=hold, loads=loads)
        core = np.concatenate([sol.joint_loads[model.joints[c.joint].name].wrench_world for c in model.closures])
        np.testing.assert_allclose(pins.values, core, atol=1e-12 * np.max(np.abs(core)))


def one_link(restraint: RestraintSpec | None, gravity: np.ndarray) -> ModelSpec:
    body = BodySpec("link", mass=2.0, com=np.array([0.5, 0.0, 0.0]), inertia=np.eye(3) * 0.1)
    joint = JointSpec("hinge", "revolute", FrameRef(FIXED), FrameRef("link"), axis=np.array([0.0, 0.0, 1.0]),
                      initial=(0.0,))
    return ModelSpec("link", "test", "test", gravity=gravity, bodies=[body], joints=[joint],
                     restraints=[restraint] if restraint else [])


def test_no_derivative_at_a_knot_or_a_neutral_equilibrium_says_why():
    """About a vertical axis gravity does no work: with a restraint whose slope changes at 0 the equilibrium
    sits on the knot; with no restraint every angle is an equilibrium (neutral)."""
    down = np.array([0.0, 0.0, -9.81])
    knotted = RestraintSpec("stop", "spring", (0.0,), ((100.0, 0.0), (300.0, 0.0)), joint="hinge")
    result = sensitivity(compile_model(one_link(knotted, down)), of=["hinge", "link:origin.x"], wrt=["all"])
    assert all(r is not None and "knot" in r for r in result.reasons)
    assert np.all(np.isnan(result.derivative))
    result = sensitivity(compile_model(one_link(None, down)), of=["hinge"], wrt=["all"])
    assert result.reasons[0] is not None and "neutral" in result.reasons[0]
    assert np.all(np.isnan(result.derivative))
    # off the knot the same restraint has a derivative: a sideways pull, f = 300 q on q > 0
    pulled = sensitivity(compile_model(one_link(knotted, down)), of=["hinge"], wrt=["stop.piece1.c1"],
                         loads=[Load("link:origin", torque=(0.0, 0.0, 30.0))], options=TIGHT)
    assert pulled.reasons[0] is None
    assert pulled.values[0] == pytest.approx(0.1, rel=1e-9)
    assert pulled.derivative[0, 0] == pytest.approx(-0.1 / 300.0, rel=1e-9)  # q = T / c1: dq/dc1 = -q / c1


def test_a_kind_the_model_lacks_and_a_joint_named_like_a_kind():
    link = compile_model(one_link(None, np.array([0.0, -9.81, 0.0])))  # gravity across the axis: it hangs
    with pytest.raises(InputError, match="pin: the model has no output of this kind"):
        sensitivity(link, of=["pin"], wrt=["all"])
    spec = one_link(None, np.array([0.0, -9.81, 0.0]))
    spec = dataclasses.replace(spec, joints=[dataclasses.replace(spec.joints[0], name="pin")])
    assert sensitivity(compile_model(spec), of=["pin"], wrt=["mass"]).outputs == ("pin",)


def test_moving_every_mount_on_the_house_together_changes_no_force():
    """A rigid translation of the whole arm (both house mounts moved alike, strokes held) leaves every cylinder
    force where it was and moves the tip with it: the two mounts' derivatives add up to 0 (forces, tip x per x)
    and to 1 (tip z per z). A physical identity, independent of how either derivative is computed."""
    model = load_model(MODELS / "excavator_hydraulic.json")
    hold = ["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"]
    mounts = ["upper:house:boom_foot", "upper:house:boom_cyl_base"]
    result = sensitivity(model, of=["effort", "arm:bucket:tip.x", "arm:bucket:tip.z"],
                         wrt=[f"{m}.{a}" for m in mounts for a in "xz"], hold=hold,
                         loads=[Load("arm:bucket:tip", force=(0.0, 0.0, -10000.0))])
    x = [result.parameters.index(f"{m}.x") for m in mounts]
    z = [result.parameters.index(f"{m}.z") for m in mounts]
    efforts = [i for i, name in enumerate(result.outputs) if name.endswith(".effort")]
    scale = np.max(np.abs(result.derivative[efforts]))
    assert scale > 1e4  # each mount alone moves the forces a lot
    np.testing.assert_allclose(result.derivative[efforts][:, x].sum(axis=1), 0.0, atol=1e-9 * scale)
    np.testing.assert_allclose(result.derivative[efforts][:, z].sum(axis=1), 0.0, atol=1e-9 * scale)
    tip_x, tip_z = result.outputs.index("arm:bucket:tip.x"), result.outputs.index("arm:bucket:tip.z")
    assert result.derivative[tip_x, x].sum() == pytest.approx(1.0, abs=1e-9)
    assert result.derivative[tip_z, z].sum() == pytest.approx(1.0, abs=1e-9)
    assert result.derivative[tip_z, x].sum() == pytest.approx(0.0, abs=1e-9)


@pytest.mark.slow
def test_tornado_chart_and_csv_table(tmp_path):
    import csv
    import subprocess
    import sys

    from shiftsim.sensitivity.table import change_per_percent

    model_file = str(MODELS / "excavator.json")
    table, chart = tmp_path / "s.csv", tmp_path / "t.png"
    run = subprocess.run([sys.executable, "-m", "shiftsim", "sensitivity", model_file, "--hold", "arm:boom_cyl",
                          "--load", "arm:bucket:tip=0,0,-5000", "--of", "arm:boom_cyl.effort,arm:bucket_pivot",
                          "--wrt", "mass,gravity", "--csv", str(table), "--tornado", str(chart)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = list(csv.DictReader(table.open()))
    api = sensitivity(load_model(model_file), of=["arm:boom_cyl.effort", "arm:bucket_pivot"], wrt=["mass", "gravity"],
                      hold=["arm:boom_cyl"], loads=[Load("arm:bucket:tip", force=(0.0, 0.0, -5000.0))])
    assert len(rows) == len(api.outputs) * len(api.parameters)
    change = change_per_percent(api, "arm:boom_cyl.effort")
    for row in rows[: len(api.parameters)]:
        j = api.parameters.index(row["parameter"])
        assert float(row["change_per_percent"]) == pytest.approx(change[j], rel=1e-9, abs=1e-9)
        # 1 % of the parameter times the derivative: the first-order change, checked against the raw derivative
        assert float(row["change_per_percent"]) == pytest.approx(0.01 * float(row["parameter_value"])
                                                                 * float(row["derivative"]), rel=1e-12, abs=1e-12)


def test_a_solution_with_other_held_joints_than_given_is_refused():
    model = load_model(MODELS / "excavator.json")
    hold = ["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"]
    sol = solve(model, hold=hold)
    assert sensitivity(sol, of=["effort"], wrt=["mass"], hold=hold).derivative.shape == (3, len(model.body_names) - 1)
    with pytest.raises(InputError, match="the set/hold the solution was solved with"):
        sensitivity(sol, of=["joint"], wrt=["mass"], hold=hold[:2])


def strut_spec() -> ModelSpec:
    """The chain with a strut (Euclidean distance, spring 300 N/m from 1.2 m) from a fixed anchor at (1, 0, 1.5) to
    a strap frame on the middle link."""
    spec = chain_spec()
    bodies = list(spec.bodies)
    bodies[1] = dataclasses.replace(bodies[1], frames={**bodies[1].frames,
                                                       "strap": FrameSpec("strap", translation=np.array([0.5, 0.0, 0.2]))})
    anchor = {"anchor": FrameSpec("anchor", translation=np.array([1.0, 0.0, 1.5]))}
    strut = RestraintSpec("strut", "spring", (), ((300.0, -300.0 * 1.2),), pair=(FrameRef(FIXED, "anchor"),
                                                                                   FrameRef("l1", "strap")))
    return dataclasses.replace(spec, bodies=bodies, fixed_frames=anchor, restraints=[strut])


@pytest.mark.slow
def test_pair_restraint_laws_against_finite_differences():
    """A strut (Euclidean distance) from a fixed anchor to the middle link and a two-piece law along the anchor's
    z axis to the last link."""
    spec = strut_spec()
    lift = RestraintSpec("lift", "spring", (-5.0,), ((0.0, 40.0, 10.0), (0.0, 80.0, 210.0)), distance_type="Tz",
                         pair=(FrameRef(FIXED, "anchor"), FrameRef("l2", "tip")))
    spec = dataclasses.replace(spec, restraints=[*spec.restraints, lift])
    exact = check_against_finite_differences(spec, [], of=["joint", "l2:tip.z"], wrt=["pair", "l1.mass"])
    # the pairs' frames and the pins that move one end of a pair are parameters (test_sensitivity_frames.py)
    names = {p.name for p in catalogue(compile_model(spec))}
    assert {"l0:tip.x", "l1:tip.x", "l1:strap.y", "fixed:anchor.z"} <= names
    assert {"strut.c1", "strut.c0", "lift.piece0.c1", "lift.piece1.c0"} <= set(exact.parameters)
    assert np.all(np.isfinite(exact.derivative))
    tip = exact.outputs.index("l2:tip.z")
    assert abs(exact.derivative[tip, exact.parameters.index("strut.c1")]) > 1e-6  # the strut really acts


@pytest.mark.slow
def test_a_held_spherical_joint_and_its_frames_against_finite_differences():
    """Multi-node joints: a spherical joint (three nodes) held at a tilted pose carries a link with a spring joint;
    its efforts, its wrench and its two frames' positions."""
    spec = chain_spec(2)
    bodies = list(spec.bodies)
    bodies[0] = dataclasses.replace(bodies[0], frames={**bodies[0].frames,
                                                       "ball": FrameSpec("ball", translation=np.array([0.1, 0.05, 0.2]))})
    joints = list(spec.joints)
    joints[0] = JointSpec("j0", "spherical", FrameRef(FIXED, "socket"), FrameRef("l0", "ball"),
                          initial=(0.2, -0.3, 0.1))
    spec = dataclasses.replace(spec, bodies=bodies, joints=joints,
                               fixed_frames={"socket": FrameSpec("socket", translation=np.array([0.3, -0.2, 1.0]))})
    loads = [Load("l1:hook", force=(30.0, -20.0, -90.0), factor=1.0)]
    check_against_finite_differences(spec, loads, of=["effort", "wrench", "j1", "l1:hook.y"],
                                     wrt=["fixed:socket.x", "fixed:socket.y", "l0:ball.x", "l0:ball.z", "l0:tip.y",
                                          "l0.mass", "l1.com.y"], hold=["j0"])


@pytest.mark.slow
def test_shiftsim_sensitivity_is_callable_after_its_submodules_are_imported():
    import subprocess
    import sys

    code = ("import shiftsim.sensitivity.parameters, shiftsim\n"
            f"m = shiftsim.load_model({str(MODELS / 'four_bar.json')!r})\n"
            "print(shiftsim.sensitivity(m, of=['four_bar:crank_pin'], wrt=['gravity.z']).outputs)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "four_bar:crank_pin" in run.stdout


def test_printed_table_shows_no_negative_zero(capsys):
    """The slew ring's in-plane wrench components and many derivatives are exactly zero with a negative sign on
    the excavator: the table prints them as 0 (-0 would read as a tiny negative number)."""
    from shiftsim.cli import main

    status = main(["sensitivity", str(MODELS / "excavator_hydraulic.json"), "--of", "upper:slew_ring.fx,wrench",
                   "--wrt", "all", "--top", "200"])
    printed = capsys.readouterr().out
    assert status == 0 and "upper:slew_ring.fx = 0\n" in printed
    tokens = printed.split()
    assert "-0" not in tokens and tokens.count("0") > 100


@pytest.mark.slow
def test_wrenches_with_pair_restraints_against_finite_differences():
    """Pair springs' forces in the wrench of every joint they cross: a strut from a fixed anchor to the middle link
    (every joint below it) and a two-piece law along the anchor's z axis to the last link, with a load. The values,
    in world and in joint axes, equal the solve's joint loads (every force); the derivatives agree with Richardson
    differences of re-solves of the edited spec, and forward with adjoint mode."""
    spec = strut_spec()
    lift = RestraintSpec("lift", "spring", (-5.0,), ((0.0, 40.0, 10.0), (0.0, 80.0, 210.0)), distance_type="Tz",
                         pair=(FrameRef(FIXED, "anchor"), FrameRef("l2", "tip")))
    spec = dataclasses.replace(spec, restraints=[*spec.restraints, lift])
    loads = [Load("l2:hook", force=(40.0, 10.0, -120.0), torque=(3.0, -8.0, 2.0))]
    exact = check_against_finite_differences(spec, loads, of=["wrench", "wrench_joint"],
                                             wrt=["pair", "mass", "com", "load", "gravity"])
    assert all(r is None for r in exact.reasons) and np.all(np.isfinite(exact.derivative))
    model = compile_model(spec)
    solved = solve(model, loads=loads, options=TIGHT).joint_loads
    components = ("fx", "fy", "fz", "mx", "my", "mz")
    for name, value in zip(exact.outputs, exact.values):
        joint, component = name.split(".", 1)
        load = solved[joint]
        in_axes = np.concatenate([load.rotation.T @ load.wrench_world[:3], load.rotation.T @ load.wrench_world[3:]])
        expected = (in_axes[components.index(component.split(".")[1])] if component.startswith("wrench_joint.")
                    else load.wrench_world[components.index(component)])
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-12 * np.max(np.abs(exact.values)))
    without = solve(compile_model(dataclasses.replace(spec, restraints=[])), loads=loads).joint_loads
    assert abs(solved["j0"].wrench_world[4] - without["j0"].wrench_world[4]) > 1.0  # the springs really act
    strut = exact.parameters.index("strut.c1")
    assert abs(exact.derivative[exact.outputs.index("j0.my"), strut]) > 1e-3
    adjoint = sensitivity(model, of=["wrench", "wrench_joint"], wrt=["all"], loads=loads, mode="adjoint", options=TIGHT)
    forward = sensitivity(model, of=["wrench", "wrench_joint"], wrt=["all"], loads=loads, mode="forward", options=TIGHT)
    np.testing.assert_allclose(forward.derivative, adjoint.derivative, rtol=1e-10,
                               atol=1e-10 * np.max(np.abs(adjoint.derivative)))


def test_elasticity_of_an_output_at_round_off_is_nan():
    """(p / y) dy/dp is kept where the output stands clear of its change per parameter, and is NaN where the output
    is 0 or within 1e-9 of its largest change p dy/dp (round-off: no relative change exists)."""
    from shiftsim.sensitivity.table import elasticities

    derivative = np.array([[2.0, -1.0], [0.3, 0.0], [1.0, 1.0], [np.nan, np.nan]])
    p = np.array([0.5, 4.0])
    values = np.array([-2.0, 1e-13, 0.0, 3.0])
    e = elasticities(derivative, p, values)
    np.testing.assert_allclose(e[0], [2.0 * 0.5 / -2.0, -1.0 * 4.0 / -2.0])
    assert np.all(np.isnan(e[1:]))
    assert np.allclose(elasticities(derivative[1:2], p, [1e-9]), [[0.15 / 1e-9, 0.0]])  # clear of round-off
