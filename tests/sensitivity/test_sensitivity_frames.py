"""Frame positions that move a pair spring or a contact as design parameters (the spring's own mounts, pins whose
move carries one end of it, a seat that carries contacts), against independent answers:

* a boom pinned at its foot and held up by a strut (a pair spring from a fixed base to a head frame on the boom):
  its angle is the root of the one-degree-of-freedom energy's slope (brentq on the closed form), and the angle's,
  the tip's and the head's derivatives with respect to both mounts' positions and the strut's rate are Richardson
  differences of that root;
* the spatial pair-spring model of ``helpers.sensitivity.pair_mounts`` (mounts on pins, a law along a turning axis,
  a loaded hook, a held joint): every frame parameter against Richardson central differences of tight re-solves of
  the spec edited, for joint values, frame positions (the moved frames' own included), the joints' wrenches in world
  and joint axes (the pair springs across their cuts pull harder and elsewhere) and the held joint's effort;
* the four-bar with a strut on its coupler: every frame for the joint values, the closing pin's multipliers and
  frame positions against re-solves;
* forward and adjoint modes agree to 1e-10;
* a frame that carries contacts: the rigid lifter's front pads on an outrigger welded to the box, whose seat's
  position moves the tipping load as the closed form about the moved tipping edge says;
* contacts that stand at the moved frame (a loaded pad, a contact at the outrigger's seat): every such frame's
  position against Richardson differences of tight re-solves of the edited spec with the contacts re-read from the
  moved frames, for the pads' forces, centre of pressure, margin, joint values and wrenches.

(The car's suspension seats, which move a wheel with its tyre or contacts, are checked in
test_sensitivity_tyres.py and test_sensitivity_wrench_ground.py.)
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from helpers.ground import OPTIONS, free_of, lift_points, machine, standing
from helpers.sensitivity import TIGHT, edited, pair_mounts, richardson
from scipy.optimize import brentq

from shiftsim.ground.contacts import ContactField
from shiftsim.ground.rating import capacity
from shiftsim.ground.terrain import Ground
from shiftsim.kinematics import state
from shiftsim.loading import load_model
from shiftsim.model import compile_model
from shiftsim.sensitivity import sensitivity
from shiftsim.sensitivity.chart import Chart, chart_sensitivities
from shiftsim.sensitivity.parameters import catalogue
from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec, RestraintSpec
from shiftsim.statics import Load, SolverOptions, solve

MODELS = Path(__file__).resolve().parents[2] / "models" / "shift"
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
    of = ["joint", "l2:tip.x", "l2:tip.z", "l0:mount.y", "l0:rail.z", "l2:hook.x", "l1:tip.y", "wrench", "wrench_joint",
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


# ---------------------------------------------------------------------- a frame that carries contacts
def outrigged(seat_x: float = 0.0):
    """The box machine of ``helpers.ground`` (with its 100 kg mast 3 m out) whose front pads sit on a massless
    outrigger welded to the box at ``box:outrigger_seat`` (x = ``seat_x``): the pads stay where the box's front
    pads were (x = 1 m) when the seat is at 0; moving the seat moves them."""
    spec = machine(reach=3.0, mast=True).spec
    box = next(b for b in spec.bodies if b.name == "box")
    frames = {n: f for n, f in box.frames.items() if n not in ("c0", "c1")}
    frames["outrigger_seat"] = FrameSpec("outrigger_seat", translation=np.array([seat_x, 0.0, 0.0]))
    pads = {n: FrameSpec(n, translation=box.frames[n].translation) for n in ("c0", "c1")}
    bodies = [dataclasses.replace(b, frames=frames) if b is box else b for b in spec.bodies]
    bodies.append(BodySpec("outrigger", 0.0, np.zeros(3), np.zeros((3, 3)), pads))
    weld = JointSpec("outrigger_weld", "rigid", FrameRef("box", "outrigger_seat"), FrameRef("outrigger"))
    return dataclasses.replace(spec, bodies=bodies, joints=[*spec.joints, weld])


def test_an_outrigger_seat_moves_the_tipping_load_as_its_closed_form():
    """The rigid lifter of test_sensitivity_ground.py (ground 1e9 N/m) tipping about its front pads, which now
    sit on an outrigger: moving the outrigger's seat by d on the box moves the tipping edge to x_e = 1 + d, and
    the tipping load lambda* F = (1200 g x_e - 100 g (3 - x_e)) / (3 - x_e) (box and upper on the slew axis, mast
    and load at the hook, x = 3), so d(tipping load)/d(seat x) = (1300 g + lambda* F) / (3 - x_e): 8829 N per m at
    x_e = 1; the seat's y moves the edge along itself and does not move it."""
    model = compile_model(outrigged())
    stand, q = standing(model, Ground(stiffness=1e9), contacts=("outrigger:c0", "outrigger:c1", "box:c2", "box:c3"))
    free = free_of(stand.model)
    starts, load = lift_points(stand, q, np.array([0.0]), "mast:hook")
    options = dataclasses.replace(OPTIONS, tolerance=1e-12, max_solves=120,
                                  solver=dataclasses.replace(OPTIONS.solver, force_tolerance=1e-12))
    result = capacity(stand, starts, free, np.array([0.0, 0.0, -G]), load, [], options)
    found = Chart(stand, stand.field(starts[0]), free, np.array([0.0, 0.0, -G]), load, (), (), options)
    point = chart_sensitivities(found, result, wrt=["box:outrigger_seat.x", "box:outrigger_seat.y", "box.mass"])[0]
    assert result.edge[0] == ("outrigger:c1", "outrigger:c0") and point.reasons["tipping"] is None
    d = dict(zip(point.tipping.parameters, point.tipping.derivative))
    tipping = (1200.0 * G * 1.0 - 100.0 * G * 2.0) / 2.0
    assert point.tipping.factor * 1000.0 == pytest.approx(tipping, rel=2e-5)
    assert 1000.0 * d["box:outrigger_seat.x"] == pytest.approx((1300.0 * G + tipping) / 2.0, rel=2e-5)
    assert abs(1000.0 * d["box:outrigger_seat.y"]) <= 1e-4 * tipping
    assert 1000.0 * d["box.mass"] == pytest.approx(G * 1.0 / 2.0, rel=2e-5)  # as without the outrigger
    assert point.rated.governs == "tipping"  # no cylinder: the rated load is 0.75 of the tipping load
    np.testing.assert_allclose(point.rated.derivative, 0.75 * point.tipping.derivative, rtol=1e-12)


@pytest.mark.slow
def test_a_loop_with_a_strut_on_its_coupler_against_re_solves():
    """The four-bar with a strut (a pair spring) from a fixed frame to a mount on its coupler: every frame's in-plane
    position (the loop's pins, which move the strut's mount or the closure, the strut's own two; a pin moved out of
    the plane would not let the loop close) against re-solves, for the joint values, the closing pin's multipliers
    (the in-plane ones; the planar loop's others are indeterminate) and frame positions."""
    model = load_model(MODELS / "four_bar.json")
    coupler = next(b for b in model.spec.bodies if b.name == "four_bar:coupler")
    mount = FrameSpec("mount", translation=np.array([0.4, 0.0, 0.15]))
    bodies = [dataclasses.replace(b, frames={**b.frames, "mount": mount}) if b is coupler else b
              for b in model.spec.bodies]
    strut = RestraintSpec("strut", "spring", (), ((800.0, -800.0 * 0.9),),
                          pair=(FrameRef(FIXED, "strut_base"), FrameRef("four_bar:coupler", "mount")))
    base = FrameSpec("strut_base", translation=np.array([0.5, 0.0, 2.0]))
    spec = dataclasses.replace(model.spec, bodies=bodies, restraints=[*model.spec.restraints, strut],
                               fixed_frames={**model.spec.fixed_frames, "strut_base": base})
    loads = [Load("four_bar:coupler:tip", force=(15.0, 0.0, -25.0))]
    model = compile_model(spec)
    in_plane = [p.name for p in catalogue(model, tuple(loads)) if p.kind == "frame" and p.name.endswith((".x", ".z"))]
    exact = sensitivity(model, of=["joint", "pin", "four_bar:coupler:mount.x", "four_bar:coupler:tip.z"],
                        wrt=in_plane, loads=loads, options=TIGHT)
    determined = np.array([r is None for r in exact.reasons])
    assert {"fixed:strut_base.z", "four_bar:coupler:mount.x", "four_bar:crank:tip.x"} <= set(exact.parameters)
    pins = [o for o, known in zip(exact.outputs, determined) if known and o.startswith("four_bar:rocker_pin.f")]
    assert determined.sum() >= 7 and pins
    for j, name in enumerate(exact.parameters):
        reference = richardson(lambda h: resolved(*edited(spec, loads, name, h), list(exact.outputs), []), 1e-3)
        scale = float(np.max(np.abs(reference[determined])))
        assert scale > 1e-3, name
        assert np.max(np.abs(exact.derivative[determined, j] - reference[determined])) <= 1e-6 * scale, name


# ---------------------------------------------------------------------- contacts that stand at the moved frame
STANDING_AT = ("outrigger:c0", "outrigger:c1", "box:c2", "box:c3", "box:outrigger_seat")
STANDING_HOLD = ["slew", "lift"]
STANDING_TIGHT = SolverOptions(force_tolerance=1e-12, closure_tolerance=1e-14)  # the pads' round-off: not 1e-14
STANDING_WRT = ["box:c2.x", "box:c2.y", "box:c2.z", "box:outrigger_seat.x", "box:outrigger_seat.y",
                "box:outrigger_seat.z"]


def standing_field(spec, ground: Ground, anchors=None):
    """The floating model of ``spec`` and its contact field on STANDING_AT, the contacts read from its frames (a
    frame moved in the spec moves the contact standing at it), settled, or anchored at ``anchors`` when given."""
    stand, q = standing(compile_model(spec), ground, contacts=STANDING_AT)
    field = stand.field(q)
    if anchors is not None:
        field = ContactField(field.contacts, ground, field.rotation, field.translation, field.normal,
                             field.tangential, anchors)
    return stand.model, field, q


def standing_solve(model, field, loads, q_start):
    found = solve(model, hold=STANDING_HOLD, loads=loads, q_start=q_start, fields=(field,), options=STANDING_TIGHT)
    assert found.converged
    return found


@pytest.mark.parametrize("sideways", [0.0, 2500.0], ids=["sticking", "some slipping"])
def test_contacts_standing_at_the_moved_frame_against_re_solves(sideways):
    """The outrigged box (slew and lift held) on its four pads and a fifth contact at the outrigger's seat (10 MN/m,
    friction 0.3), 3 kN down and ``sideways`` N along x at the hook and 2 kN down on the pad ``box:c2``: the pad
    (a loaded contact frame) and the seat (a pin frame that carries two pads and has a contact of its own) move the
    contacts standing at them. Every one of their parameters against Richardson differences of tight re-solves of
    the edited spec with the contacts re-read from the moved frames (the anchors kept), for the pads' forces, the
    centre of pressure, the margin, the joint values and the tree joints' wrenches (the floating base's carries
    every pad, the outrigger weld's its two). Forward and adjoint modes agree to 1e-10."""
    spec, ground = outrigged(), Ground(stiffness=1e7, friction=0.3)
    model, field, q = standing_field(spec, ground)
    loads = [Load("mast:hook", force=(sideways, 0.0, -3000.0)), Load("box:c2", force=(0.0, 0.0, -2000.0))]
    solution = standing_solve(model, field, loads, q)
    slipping = field.evaluate(state(model, solution.q[None])).slipping[0]
    assert slipping.any() == bool(sideways)
    exact, adjoint = (sensitivity(solution, of=["reaction", "cop", "margin", "joint", "wrench"], wrt=STANDING_WRT,
                                  hold=STANDING_HOLD, loads=loads, ground=field, mode=mode)
                      for mode in ("forward", "adjoint"))
    assert not any(exact.reasons) and list(exact.parameters) == STANDING_WRT
    assert np.max(np.abs(exact.derivative - adjoint.derivative)) <= 1e-10 * np.max(np.abs(exact.derivative))

    def resolved_at(name, h):
        edited_spec, edited_loads = edited(spec, loads, name, h)
        moved_model, moved, _ = standing_field(edited_spec, ground, field.anchors)
        found = standing_solve(moved_model, moved, edited_loads, solution.q)
        return sensitivity(found, of=list(exact.outputs), wrt=["gravity.z"], hold=STANDING_HOLD, loads=edited_loads,
                           ground=moved).values

    def kind(output: str) -> str:
        head, _, tail = output.rpartition(".")
        if head in STANDING_AT:
            return "reaction"
        if output.startswith(("cop.", "margin")):
            return "cop and margin"
        return "wrench" if tail in ("fx", "fy", "fz", "mx", "my", "mz") else "joint"

    kinds = {}
    for i, output in enumerate(exact.outputs):
        kinds.setdefault(kind(output), []).append(i)
    assert set(kinds) == {"reaction", "cop and margin", "wrench", "joint"}
    for j, name in enumerate(STANDING_WRT):
        # a micrometre: the stick range is ~0.1 mm, and a slipping pad's direction turns fast (the error falls as h^4)
        reference = richardson(lambda h: resolved_at(name, h), 1e-6)
        for kind, rows in kinds.items():
            scale = max(float(np.max(np.abs(reference[rows]))), 1e-9)
            assert np.max(np.abs(exact.derivative[rows, j] - reference[rows])) <= 1e-6 * scale, (name, kind)
        assert np.max(np.abs(reference[kinds["reaction"]])) > 10.0, name  # every such move shifts the pads' forces
