"""Path following against closed forms: the equilibrium path of a load factor ends where the reduced stiffness
loses definiteness -- an inverted pendulum on a torsion spring at k = m g l (a bifurcation: the upright
equilibrium goes on, unstable), a von Mises two-bar truss at its snap-through load (a fold: no equilibrium past
it, the snapped one is another well) -- located to 1e-6 relative."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.closed_forms import downward, pendulum, truss

from shiftsim.forces import AppliedLoad
from shiftsim.ground.path import LIMIT_POINT, PathOptions, load_path, reduced_stiffness
from shiftsim.statics import free_coordinates

G = 9.81


def _follow(model, load, first_step):
    free = free_coordinates(model, np.array([], dtype=int))
    return load_path(model, model.q0[None], free, np.zeros((1, 3)), load, first_step=np.array([first_step]),
                     options=PathOptions(tolerance=1e-6))


def test_an_inverted_pendulum_on_a_torsion_spring_loses_stability_at_k_equal_m_g_l():
    """Upright, the bob's weight W = lambda m g at l above the hinge gives the stiffness k - W l: zero at
    lambda* = k / (m g l). The upright equilibrium exists on both sides (a bifurcation): the path brackets the sign
    change of the lowest eigenvalue and locates it; the null vector is the hinge."""
    mass, length, k = 20.0, 1.5, 1000.0
    model = pendulum(mass, length, k)
    followed = _follow(model, downward(model, "bob:tip", mass * G), 0.3)
    path = followed.path
    exact = k / (mass * G * length)
    assert path.event[0] == 0 and LIMIT_POINT == "limit point"
    assert followed.at_event[0] == pytest.approx(exact, rel=1e-6)
    assert path.lo[0] <= exact * (1 + 1e-9) and path.hi[0] - path.lo[0] <= 1e-6 * path.lo[0]
    assert abs(path.q[0, 0]) < 1e-12  # still upright: the path never left its branch
    assert followed.null_vector[0] == pytest.approx([1.0]) or followed.null_vector[0] == pytest.approx([-1.0])


def _snap_load(a: float, h: float, k: float) -> float:
    """The von Mises truss' limit load, from dP/dy = 0 of P(y) = 2 k y (L0 / L(y) - 1), L(y) = sqrt(a^2 + y^2):
    L* = (L0 a^2)^(1/3), P* = 2 k (L0^(2/3) - a^(2/3))^(3/2)."""
    rest = np.hypot(a, h)
    return 2.0 * k * (rest ** (2.0 / 3.0) - a ** (2.0 / 3.0)) ** 1.5


def test_a_von_mises_truss_snaps_through_at_its_closed_form_limit_load():
    """The apex load P(y) = 2 k y (L0 / L - 1) peaks at P* (a fold): past it there is no equilibrium near the path,
    only the snapped one below the supports (another well, which the path must not jump into). The path ends at
    P* to 1e-6, at the apex height y* = sqrt(L*^2 - a^2), with a limit point on the slider."""
    a, h, k = 1.0, 0.2, 1e5
    model = truss(a, h, k)
    followed = _follow(model, downward(model, "apex:top", 1000.0), 0.5)
    path = followed.path
    exact = _snap_load(a, h, k) / 1000.0
    assert path.event[0] == 0
    assert followed.at_event[0] == pytest.approx(exact, rel=1e-6)
    assert path.lo[0] == pytest.approx(exact, rel=1e-6) and path.lo[0] <= exact * (1 + 1e-9)
    rest = np.hypot(a, h)
    apex = np.sqrt((rest * a * a) ** (2.0 / 3.0) - a * a)
    assert path.q[0, 0] == pytest.approx(apex, rel=2e-3)  # y - y* ~ sqrt(lambda* - lambda): 1e-3 of y* at 1e-6
    assert path.q[0, 0] > 0.0  # not snapped through
    # by central differences of the residual the slider's stiffness there keeps ~sqrt(1e-6) of its unloaded value
    assert abs(followed.differences[0]) < 1e-2


def test_the_limit_point_check_tells_a_real_fold_from_a_point_short_of_it():
    """The central-difference stiffness ratio is near zero at the truss' fold and about 1 - (load ratio) at the
    pendulum's bifurcation (linear), so a path that stopped at half the critical load would be refused."""
    mass, length, k = 20.0, 1.5, 1000.0
    model = pendulum(mass, length, k)
    free = free_coordinates(model, np.array([], dtype=int))
    exact = k / (mass * G * length)
    load = downward(model, "bob:tip", mass * G)
    for fraction in (0.5, 1.0 - 1e-7):
        at = reduced_stiffness(model, model.q0[None], free, np.zeros((1, 3)),
                               [AppliedLoad(load.frame, load.force * fraction * exact, load.torque, False)],
                               differences=True)
        assert at.lowest[0] / k == pytest.approx(1.0 - fraction, abs=1e-6)
