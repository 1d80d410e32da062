"""Tipping, hydraulic and rated capacity against hand calculations (moment balance about the tipping edge,
cylinder force from bore and pressure), and the friction limit on a slope given by a height grid."""

import numpy as np
import pytest
from helpers.ground import GRAVITY, OPTIONS, free_of, lift_points, machine, standing

from shiftsim.forces import AppliedLoad
from shiftsim.ground.rating import CapacityOptions, Cylinder, capacity
from shiftsim.ground.terrain import Ground
from shiftsim.kinematics import state

G = 9.81


def test_tipping_load_over_front_and_over_side_follows_the_moment_balance():
    """Box 1000 kg (centre of mass over the middle of a 2 m x 1.5 m footprint) and a 200 kg upper on the
    slew axis; hook 3 m out. Over the front, about the edge x = 1: 1200 g * 1 m = P * 2 m; over the side
    (slew 90 deg), about the edge y = 0.75: 1200 g * 0.75 m = P * 2.25 m. Contacts 1e9 N/m: tilt ~1e-5 rad."""
    stand, q = standing(machine())
    qs, load = lift_points(stand, q, [0.0, np.pi / 2])
    result = capacity(stand, qs, free_of(stand.model), GRAVITY, load, [], OPTIONS)
    expected = np.array([1200 * G * 1.0 / 2.0, 1200 * G * 0.75 / 2.25]) / 1000.0
    assert result.tipping == pytest.approx(expected, rel=2e-4)
    assert np.all(result.tipping < result.tipped) and np.all(result.tipped <= result.tipping * (1 + 1e-4) + 1e-12)
    assert set(result.edge[0]) == {"box:c0", "box:c1"}  # the front corners (x = 1)
    assert set(result.edge[1]) == {"box:c0", "box:c3"}  # the left corners (y = 0.75)
    assert result.rated == pytest.approx(0.75 * result.tipping)
    assert result.governs == ["tipping", "tipping"] and np.all(np.isinf(result.hydraulic))


def test_hydraulic_limit_governs_with_a_small_cylinder():
    """The hook hangs from a 100 kg mast on a held prismatic 'cylinder' (bore 20 mm, rod 12 mm, 10 MPa) at
    3 m: it pushes 10 MPa * pi/4 * 0.02^2 = 3141.6 N, so it lifts 3141.6 - 100 g; the machine tips at
    (1200 g * 1 m - 100 g * 2 m) / 2 m. 87 % of the first is below 75 % of the second: hydraulic governs."""
    stand, q = standing(machine(mast=True))
    qs, load = lift_points(stand, q, [0.0], frame="mast:hook")
    cylinder = Cylinder("lift", bore=0.02, rod=0.012, pressure=10e6)
    result = capacity(stand, qs, free_of(stand.model), GRAVITY, load, [cylinder], OPTIONS)
    hydraulic = (cylinder.push - 100 * G) / 1000.0
    tipping = (1200 * G * 1.0 - 100 * G * 2.0) / 2.0 / 1000.0
    assert cylinder.push == pytest.approx(3141.59, rel=1e-5)
    assert result.hydraulic[0] == pytest.approx(hydraulic, rel=2e-4)
    assert result.tipping[0] == pytest.approx(tipping, rel=2e-4)
    assert result.governs == ["hydraulic"] and result.cylinder == ["lift"]
    assert result.rated[0] == pytest.approx(0.87 * result.hydraulic[0])


def test_pulling_limit_uses_the_annulus():
    """An upward pull at the mast makes the cylinder pull: its limit is the annulus, pi/4 (D^2 - d^2) p."""
    stand, q = standing(machine(mast=True))
    qs, load = lift_points(stand, q, [0.0], frame="mast:hook")
    up = AppliedLoad(load.frame, -load.force, load.torque, False)
    cylinder = Cylinder("lift", bore=0.02, rod=0.012, pressure=10e6)
    result = capacity(stand, qs, free_of(stand.model), GRAVITY, up, [cylinder], OPTIONS)
    assert result.hydraulic[0] == pytest.approx((cylinder.pull + 100 * G) / 1000.0, rel=2e-4)


def _slope(angle):
    """A plane falling along +x at ``angle`` as a 3 x 3 height grid (bilinear: exactly the plane)."""
    x = np.array([-10.0, 0.0, 10.0])
    return Ground(grid=(x, x.copy(), -np.tan(angle) * np.repeat(x[:, None], 3, axis=1)), stiffness=1e8, friction=0.5)


@pytest.mark.slow
@pytest.mark.parametrize("fraction, holds", [(0.97, True), (1.03, False)])
def test_friction_limit_on_a_slope(fraction, holds):
    """Box on a 10 deg slope (mu 0.5), pushed horizontally downhill at its centre of mass: it slides when
    P cos a + W sin a > mu (W cos a - P sin a), i.e. beyond P = W (mu cos a - sin a) / (cos a + mu sin a)."""
    angle = np.radians(10.0)
    stand, q = standing(machine(reach=0.0), _slope(angle))
    model = stand.model
    q[stand.base[4]] = angle  # the box parallel to the slope (a pitch about y turns x toward -z)
    q = stand.settle(q)
    weight = 1200 * G
    limit = weight * (0.5 * np.cos(angle) - np.sin(angle)) / (np.cos(angle) + 0.5 * np.sin(angle))
    push = AppliedLoad(model.frame_index("upper:hook"), np.array([[fraction * limit, 0.0, 0.0]]), np.zeros((1, 3)), False)
    solution, field = stand.solve(q, free_of(model), GRAVITY, [push])
    assert solution.converged == holds
    if holds:
        c = field.evaluate(state(model, solution.q[None]))
        total = c.forces[0].sum(axis=0)
        assert total == pytest.approx([-fraction * limit, 0.0, weight], rel=1e-6, abs=1e-6 * weight)
        normal = np.array([np.sin(angle), 0.0, np.cos(angle)])
        n_force = total @ normal
        tangential = np.linalg.norm(total - n_force * normal)
        p = fraction * limit
        assert n_force == pytest.approx(weight * np.cos(angle) - p * np.sin(angle), rel=1e-6)
        assert tangential == pytest.approx(p * np.cos(angle) + weight * np.sin(angle), rel=1e-6)
        assert tangential <= 0.5 * n_force


def test_an_upward_pull_at_the_hook_tips_the_machine_over_its_rear_edge():
    """Pulled up at the hook 3 m out, the box turns about its rear edge x = -1 (the front lifts): 1200 g * 1 m =
    P * 4 m (the old search, which only knew downward loads, called this load one that never tips)."""
    stand, q = standing(machine())
    qs, load = lift_points(stand, q, [0.0])
    upward = AppliedLoad(load.frame, -load.force, load.torque, load.follow)
    result = capacity(stand, qs, free_of(stand.model), GRAVITY, upward, [], OPTIONS)
    assert result.tipping[0] == pytest.approx(1200 * G / 4.0 / 1000.0, rel=2e-4)
    assert result.event == ["lift-off"] and set(result.edge[0]) == {"box:c2", "box:c3"}


def test_a_pull_at_the_centre_of_mass_lifts_the_whole_machine_off_at_its_weight():
    """Pulled straight up over its centre of mass the box leaves the ground whole at P = 1200 g: the centre of
    pressure stays put (no edge is reached), the ground's reaction falls to zero -- a lift-off of every contact,
    located from the reaction's secant to 1e-6."""
    stand, q = standing(machine(reach=0.0))
    qs, load = lift_points(stand, q, [0.0])
    upward = AppliedLoad(load.frame, -load.force, load.torque, load.follow)
    result = capacity(stand, qs, free_of(stand.model), GRAVITY, upward, [], OPTIONS)
    assert result.event == ["lift-off"] and not result.ended[0]
    assert result.tipping[0] == pytest.approx(1200 * G / 1000.0, rel=1e-4)  # OPTIONS.tolerance
    assert result.event_factor[0] == pytest.approx(1200 * G / 1000.0, rel=1e-9)


def test_the_point_keeps_the_equilibrium_where_its_path_ended():
    """``q_last`` is a standing equilibrium at the tipping factor: the contacts' vertical forces there (the contact
    field evaluated apart from the solver) carry the 1200 kg machine and the load at that factor; the centre of
    pressure is inside the support, at most the search's bracket from the edge x = 1."""
    stand, q = standing(machine())
    qs, load = lift_points(stand, q, [0.0])
    result = capacity(stand, qs, free_of(stand.model), GRAVITY, load, [], OPTIONS)
    assert result.event == ["lift-off"] and result.event_factor[0] == result.tipping[0]
    prints, _, forces = stand.footprints(stand.field(qs[0]), result.q_last)
    assert forces[0, :, 2].sum() == pytest.approx(1200 * G + 1000.0 * result.tipping[0], rel=1e-9)
    assert 0.0 < prints[0].margin < 1e-3


def test_each_tipping_load_is_located_to_1e_6_of_its_moment_balance():
    """With the default tolerance the path locates the lift-off to 1e-6: every tipping load is within 2e-6 of the
    self-check's moment balance at its equilibrium, and the path's end within 1e-6 above it (the bracketing
    search it replaced stopped up to 1e-3 short)."""
    stand, q = standing(machine())
    qs, load = lift_points(stand, q, [0.0, 0.4, np.pi / 2, 2.5])
    result = capacity(stand, qs, free_of(stand.model), GRAVITY, load, [], CapacityOptions())
    assert result.event == ["lift-off"] * 4 and result.invalid == [[]] * 4
    assert result.tipping == pytest.approx(result.balance, rel=2e-6)
    assert np.all(result.tipping <= result.event_factor)
    assert np.all(result.tipped - result.tipping <= 1.001e-6 * result.tipping)
    assert np.all(result.trials <= 12)  # a few steps to the event, not a crawl
