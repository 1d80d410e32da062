"""Ground contacts: analytic stiffness against differences, joint loads with contact forces, footprint geometry."""

import numpy as np
import pytest
from helpers.ground import GRAVITY, free_of, machine, standing

from shiftsim.errors import Problems
from shiftsim.forces import AppliedLoad
from shiftsim.ground.base import (
    BASE_COORDINATES,
    contact_points,
    floating,
)
from shiftsim.ground.footprint import footprint
from shiftsim.ground.terrain import Ground
from shiftsim.kinematics import state
from shiftsim.model import compile_model
from shiftsim.solution import body_balance
from shiftsim.spec import BodySpec, FrameRef, JointSpec, ModelSpec, ShapeSpec


def _differences(field, model, q, step=1e-7):
    columns = []
    for k in range(model.nq):
        plus, minus = q.copy(), q.copy()
        plus[0, k] += step
        minus[0, k] -= step
        columns.append((field.terms(model, state(model, plus)).Q[0] - field.terms(model, state(model, minus)).Q[0]) / (2 * step))
    return np.stack(columns, axis=1)


@pytest.mark.parametrize("anchor_shift, slipping", [(0.0, False), (1.0, True)])
def test_contact_stiffness_matches_central_differences(anchor_shift, slipping):
    """On a twisted bilinear grid, base tilted and turned, upper slewed: dQ/dq of the contacts against
    central differences, sticking (anchors where the contacts stand) and slipping (anchors 1.1 m away)."""
    x = np.array([-5.0, 0.0, 5.0])
    z = np.array([[0.0, 0.1, 0.3], [0.05, 0.0, -0.1], [0.2, -0.15, 0.1]])
    ground = Ground(grid=(x, x.copy(), z), stiffness=2e6, tangential_stiffness=1e6, friction=0.5)
    stand, q = standing(machine(), ground)
    q = q.copy()
    q[stand.base] += [0.3, -0.2, -0.4, 0.4, 0.03, -0.02]
    q[stand.model.coordinates_of("slew")[0]] = 0.7
    field = stand.field(q)
    field.anchors = field.anchors + anchor_shift * np.array([1.0, -0.5, 0.0])
    s = state(stand.model, q[None])
    c = field.evaluate(s)
    assert np.all(c.touching) and np.all(c.slipping) == slipping and np.any(c.slipping) == slipping
    terms = field.terms(stand.model, s)
    assert terms.conservative == (not slipping)
    numeric = _differences(field, stand.model, q[None])
    assert np.abs(terms.stiffness[0] - numeric).max() <= 1e-5 * np.abs(numeric).max()


def test_contact_forces_balance_the_machine_and_enter_the_joint_loads():
    """Standing under a hook load: every body's wrenches (contact forces included) sum to zero, the free
    base carries nothing, the contacts carry weight plus load, and the moment about the rear edge balances."""
    model = machine()
    stand, q = standing(model)
    hook = stand.model.frame_index("upper:hook")
    load = AppliedLoad(hook, np.array([[0.0, 0.0, -2000.0]]), np.zeros((1, 3)), False)
    solution, field = stand.solve(q, free_of(stand.model), GRAVITY, [load])
    assert solution.converged and solution.stable
    imbalance = body_balance(stand.model, solution.q, solution.multipliers, GRAVITY, [load], (field,))
    assert np.abs(imbalance).max() < 1e-6 * 1200 * 9.81
    # the free base carries nothing: the contacts hold the machine
    assert max(np.abs(solution.joint_loads[name].effort).max() for name in BASE_COORDINATES) < 1e-6 * 1200 * 9.81
    prints, points, forces = stand.footprints(field, solution.q[None])
    assert forces[0].sum(axis=0) == pytest.approx([0.0, 0.0, 1200 * 9.81 + 2000.0], abs=1e-6 * 14000)
    # moments about the rear edge x = -1 (rigid to 1e-8 m): weight 1 m in front of it, load 4 m
    front = forces[0][:2, 2].sum()
    assert front * 2.0 == pytest.approx(1200 * 9.81 * 1.0 + 2000.0 * 4.0, rel=1e-6)
    assert prints[0].centre_of_pressure[0] == pytest.approx(2000.0 * 3.0 / (1200 * 9.81 + 2000.0), abs=1e-5)


def test_box_contacts_are_the_bottom_corners():
    free_model = floating(machine())
    problems = Problems("test")
    points = contact_points(free_model, [{"box": "box:pad"}], "contacts", problems)
    assert not problems.items
    assert sorted(map(tuple, np.round([p.local for p in points], 12))) == sorted(
        [(sx, sy, 0.0) for sx in (-1.0, 1.0) for sy in (-0.75, 0.75)])


@pytest.mark.parametrize("gravity_z, face_z", [(-9.81, -0.2), (9.81, 0.0)])
def test_box_contacts_are_on_the_face_toward_the_models_gravity(gravity_z, face_z):
    """A z-up model stands on the box's -z face; a z-down one (MFK, Shift's SAE frame: gravity along +z) on its
    +z face. The pad spans z = -0.2 .. 0 in body coordinates."""
    pad = ShapeSpec("pad", "box", centre=np.array([0.0, 0.0, -0.1]), half_extents=np.array([1.0, 0.75, 0.1]))
    body = BodySpec("hull", 500.0, np.zeros(3), np.eye(3) * 50.0, shapes=[pad])
    model = compile_model(ModelSpec("hull", "hull.json", "shift", gravity=np.array([0.0, 0.0, gravity_z]),
                                    bodies=[body], joints=[JointSpec("weld", "rigid", FrameRef("fixed"),
                                                                     FrameRef("hull"))]))
    problems = Problems("test")
    points = contact_points(floating(model), [{"box": "hull:pad"}], "contacts", problems)
    assert not problems.items
    assert [p.local[2] for p in points] == pytest.approx([face_z] * 4)


def test_unknown_contacts_are_named_with_the_valid_names():
    free_model = floating(machine())
    problems = Problems("scenario.json")
    contact_points(free_model, ["box:c9", {"box": "box:slab"}, {"box": "hull:pad"}, "box:c0", "box:c0"],
                   "machines[0].contacts", problems)
    text = "\n".join(str(p) for p in problems.items)
    assert "machines[0].contacts[0]" in text and "box:c0" in text
    assert "machines[0].contacts[1].box" in text and "no box 'slab'" in text and "pad" in text
    assert "machines[0].contacts[2].box" in text and "no body 'hull'" in text
    assert "given more than once" in text


def test_footprint_margin_inside_outside_and_on_two_contacts():
    points = np.array([[1.0, 1.0, 0.0], [-1.0, 1.0, 0.0], [-1.0, -1.0, 0.0], [1.0, -1.0, 0.0]])
    # reaction of 4 N whose centre of pressure is at (0.6, 0.1): loads split to put it there
    forces = np.zeros((4, 3))
    forces[:, 2] = [1.0 + 0.6 + 0.1, 1.0 - 0.6 + 0.1, 1.0 - 0.6 - 0.1, 1.0 + 0.6 - 0.1]
    inside = footprint(points, forces)
    assert inside.centre_of_pressure[:2] == pytest.approx([0.6, 0.1])
    assert inside.margin == pytest.approx(0.4) and set(inside.edge) == {0, 3}
    forces[:, 2] = [2.0, 0.0, 0.0, 2.0]  # only the edge x = 1 loaded: on the edge
    assert footprint(points, forces).margin == pytest.approx(0.0, abs=1e-12)
    lifted = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, -3.0]])  # the ground pulling down: not standing
    assert footprint(points[:2], lifted).margin == -np.inf
