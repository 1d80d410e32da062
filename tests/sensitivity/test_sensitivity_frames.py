"""Frame positions that move a pair spring as design parameters (the spring's own mounts, and pins whose move
carries one end of it), against independent answers:

* a boom pinned at its foot and held up by a strut (a pair spring from a fixed base to a head frame on the boom):
  its angle is the root of the one-degree-of-freedom energy's slope (brentq on the closed form), and the angle's,
  the tip's and the head's derivatives with respect to both mounts' positions and the strut's rate are Richardson
  differences of that root;
* the spatial pair-spring model of ``helpers.sensitivity.pair_mounts`` (mounts on pins, a law along a turning axis,
  a loaded hook, a held joint): every frame parameter against Richardson central differences of tight re-solves of
  the spec edited, for joint values, frame positions (the moved frames' own included) and the held joint's effort;
* forward and adjoint modes agree to 1e-10.

(The car's suspension seats, which move a wheel with its tyre or contacts, are checked in
test_sensitivity_tyres.py and test_sensitivity_wrench_ground.py.)
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers.sensitivity import TIGHT, edited, pair_mounts, richardson
from scipy.optimize import brentq

from shiftsim.model import compile_model
from shiftsim.sensitivity import sensitivity
from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec, RestraintSpec
from shiftsim.statics import Load, solve

HEAD, TIP, COM = np.array([1.5, 0.0, 0.3]), np.array([4.0, 0.0, 0.0]), np.array([2.0, 0.0, 0.1])
BASE = np.array([0.6, 0.0, 2.0])
MASS, PAYLOAD, G = 400.0, 3000.0, 9.81
RATE, REST = 1e5, 2.0  # the strut: 100 kN/m, 2 m long unloaded (stretched 14 cm: it holds the boom up)


def strut_boom(base: np.ndarray = BASE, head: np.ndarray = HEAD, rate: float = RATE) -> ModelSpec:
    """A boom pinned at the origin (about y) hanging from a strut: a pair spring of ``rate`` N/m (unloaded length
    REST) from the fixed frame ``base`` to the boom's ``head``."""
    boom = BodySpec("boom", mass=MASS, com=COM, inertia=np.eye(3),
                    frames={"head": FrameSpec("head", translation=head), "tip": FrameSpec("tip", translation=TIP)})
    pin = JointSpec("boom_pin", "revolute", FrameRef(FIXED, "foot"), FrameRef("boom"), axis=np.array([0.0, 1.0, 0.0]),
                    initial=(0.0,))
    strut = RestraintSpec("strut", "spring", (), ((rate, -rate * REST),), pair=(FrameRef(FIXED, "base"),
                                                                              FrameRef("boom", "head")))
    return ModelSpec("boom", "test", "test", gravity=np.array([0.0, 0.0, -G]), bodies=[boom], joints=[pin],
                     fixed_frames={"foot": FrameSpec("foot"), "base": FrameSpec("base", translation=base)},
                     restraints=[strut])


def turned(phi: float, r: np.ndarray, order: int = 0) -> np.ndarray:
    """R_y(phi) r (R_y turns x toward -z), or its ``order``-th derivative in phi."""
    c, s = np.cos(phi + order * np.pi / 2), np.sin(phi + order * np.pi / 2)
    return np.array([c * r[0] + s * r[2], r[1], -s * r[0] + c * r[2]])


def boom_angle(base: np.ndarray = BASE, head: np.ndarray = HEAD, rate: float = RATE) -> float:
    """The equilibrium angle: the root near 0 of dV/dphi = m g z_com' + P z_tip' + f(l) l', the strut's law
    f(l) = rate l - RATE L0 (its coefficient of l is ``rate``, the constant one the file's) at
    l = |R(phi) head - base|."""
    def slope(phi: float) -> float:
        d = turned(phi, head) - base
        length = np.linalg.norm(d)
        return (MASS * G * turned(phi, COM, 1)[2] + PAYLOAD * turned(phi, TIP, 1)[2]
                + (rate * length - RATE * REST) * (d @ turned(phi, head, 1)) / length)

    return brentq(slope, -0.3, 0.3, xtol=1e-15, rtol=1e-15)


def test_a_boom_held_by_a_strut_per_mount_position_from_its_energy():
    model = compile_model(strut_boom())
    loads = [Load("boom:tip", force=(0.0, 0.0, -PAYLOAD))]
    wrt = ["fixed:base.x", "fixed:base.z", "boom:head.x", "boom:head.z", "strut.c1"]
    result = sensitivity(model, of=["boom_pin", "boom:tip.z", "boom:head.x", "boom:head.z"], wrt=wrt, loads=loads,
                         options=TIGHT)
    assert result.parameters == tuple(wrt) and not any(result.reasons)
    phi = boom_angle()
    assert result.values[0] == pytest.approx(phi, abs=1e-12) and abs(phi) > 0.05  # the boom really turns
    moved = {"fixed:base.x": lambda h: boom_angle(base=BASE + [h, 0.0, 0.0]),
             "fixed:base.z": lambda h: boom_angle(base=BASE + [0.0, 0.0, h]),
             "boom:head.x": lambda h: boom_angle(head=HEAD + [h, 0.0, 0.0]),
             "boom:head.z": lambda h: boom_angle(head=HEAD + [0.0, 0.0, h]),
             "strut.c1": lambda h: boom_angle(rate=RATE + h)}
    for j, name in enumerate(wrt):
        d_phi = richardson(moved[name], 1e-4 if name != "strut.c1" else 1e2)
        own = np.eye(3)[{"x": 0, "z": 2}[name[-1]]] if name.startswith("boom:head") else np.zeros(3)
        d_head = turned(phi, HEAD, 1) * d_phi + turned(phi, own)  # the head turns with the boom and moves on it
        expected = [d_phi, turned(phi, TIP, 1)[2] * d_phi, d_head[0], d_head[2]]
        assert abs(d_phi) * (0.01 * RATE if name == "strut.c1" else 0.01) > 1e-3, name  # 1 % or 1 cm: > 1 mrad
        np.testing.assert_allclose(result.derivative[:, j], expected, rtol=1e-7, atol=1e-12, err_msg=name)


def resolved(spec: ModelSpec, loads: list[Load], of: list[str], hold: list[str]) -> np.ndarray:
    """The outputs ``of`` of a tight solve of ``spec`` (read off the solution as the sensitivity table's values)."""
    solution = solve(compile_model(spec), hold=hold, loads=loads, options=TIGHT)
    assert solution.converged
    return sensitivity(solution, of=of, wrt=["gravity.z"], hold=hold, loads=loads).values


MOUNT_LOADS = [Load("l2:hook", force=(30.0, -10.0, -80.0), torque=(2.0, 1.0, -3.0), factor=1.2)]


@pytest.mark.slow
@pytest.mark.parametrize("hold", [[], ["j1"]], ids=["free", "j1 held"])
def test_pair_spring_mounts_and_the_pins_that_stretch_them_against_re_solves(hold):
    spec = pair_mounts()
    of = ["joint", "l2:tip.x", "l2:tip.z", "l0:mount.y", "l0:rail.z", "l2:hook.x", "l1:tip.y",
          *(["j1.effort"] if hold else [])]
    exact = sensitivity(compile_model(spec), of=of, wrt=["frame"], hold=hold, loads=MOUNT_LOADS, options=TIGHT)
    assert not any(exact.reasons) and len(exact.parameters) == 33
    for j, (name, value) in enumerate(zip(exact.parameters, exact.parameter_values)):
        reference = richardson(lambda h: resolved(*edited(spec, MOUNT_LOADS, name, h), list(exact.outputs), hold),
                               1e-3)
        scale = float(np.max(np.abs(reference)))
        assert scale > 1e-3, name  # every frame moves something
        assert np.max(np.abs(exact.derivative[:, j] - reference)) <= 1e-6 * scale, (name, exact.derivative[:, j],
                                                                                    reference)


def test_forward_and_adjoint_agree_with_pair_spring_mounts():
    model = compile_model(pair_mounts())
    args = dict(of=["joint", "frame", "j1.effort"], wrt=["all"], hold=["j1"], loads=MOUNT_LOADS)
    forward, adjoint = (sensitivity(model, mode=mode, **args) for mode in ("forward", "adjoint"))
    frames = [j for j, name in enumerate(forward.parameters) if name.startswith(("l0:mount", "l0:rail", "l2:tip"))]
    assert len(frames) == 9 and np.max(np.abs(forward.derivative[:, frames])) > 1e-3
    assert np.max(np.abs(forward.derivative - adjoint.derivative)) <= 1e-10 * np.max(np.abs(forward.derivative))
