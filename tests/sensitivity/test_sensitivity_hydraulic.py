"""The hydraulic load's derivative (shiftsim/sensitivity/hydraulic.py): the load factor at which a held cylinder
reaches its relief force, on the shipped excavator with its three strokes held, against Richardson central
differences of that factor found again by brentq on tight re-solves of the edited model (a body mass, a pin
position) or with the edited cylinder (bore, rod, relief pressure)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import brentq
from helpers.sensitivity import TIGHT, edited

from shiftsim.errors import InputError
from shiftsim.loading import load_model
from shiftsim.model import compile_model
from shiftsim.sensitivity.hydraulic import cylinder_limit, hydraulic_load_sensitivity
from shiftsim.statics import Load, solve

MODEL = Path(__file__).resolve().parents[2] / "models" / "shift" / "excavator.json"
HOLD = ["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"]
LOADS = [Load("arm:bucket:tip", force=(0.0, 0.0, -10000.0))]
PRESSURE, ROD = 30e6, 0.08


def force(spec, factor: float) -> tuple[float, np.ndarray]:
    """The boom cylinder's force (N, pushing positive) and the equilibrium at a load factor."""
    loads = [Load(l.frame, l.force, l.torque, l.direction, l.factor * factor) for l in LOADS]
    solution = solve(compile_model(spec), hold=HOLD, loads=loads, options=TIGHT)
    assert solution.converged
    return float(solution.joint_loads["arm:boom_cyl"].effort[0]), solution.q


def event(spec, bore: float, rod: float = ROD, pressure: float = PRESSURE) -> float:
    """The load factor at which the boom cylinder reaches its relief force (brentq on re-solves)."""
    f0 = force(spec, 0.0)[0]
    limit = cylinder_limit(f0, bore, rod, pressure)[0]
    return brentq(lambda f: force(spec, f)[0] - limit, 0.0, 20.0, xtol=1e-14, rtol=1e-15)


@pytest.fixture(scope="module")
def case():
    spec = load_model(MODEL).spec
    f0, f1 = force(spec, 0.0)[0], force(spec, 1.0)[0]
    # a bore whose push limit is reached at a load factor of about 3
    bore = float(np.sqrt(4.0 * (f0 + 3.0 * (f1 - f0)) / (np.pi * PRESSURE)))
    factor = event(spec, bore)
    result = hydraulic_load_sensitivity(load_model(MODEL), force(spec, factor)[1], factor, LOADS, "arm:boom_cyl",
                                        bore, ROD, PRESSURE, wrt=["arm:stick.mass", "arm:boom:stick_pivot.x"],
                                        hold=HOLD)
    return spec, bore, factor, result


def richardson(value, h: float) -> float:
    central = lambda step: (value(step) - value(-step)) / (2 * step)  # noqa: E731
    return (4 * central(h / 2) - central(h)) / 3


@pytest.mark.slow
def test_model_parameters_against_re_solved_events(case):
    spec, bore, factor, result = case
    assert 2.0 < factor < 4.0 and force(spec, factor)[0] > 0  # a pushing boom cylinder at its limit
    for name, h in [("arm:stick.mass", 2.0), ("arm:boom:stick_pivot.x", 1e-3)]:
        reference = richardson(lambda d: event(edited(spec, LOADS, name, d)[0], bore), h)
        exact = result.derivative[result.parameters.index(name)]
        assert exact == pytest.approx(reference, rel=1e-6), name


@pytest.mark.slow
def test_cylinder_parameters_against_re_solved_events(case):
    spec, bore, factor, result = case
    d = dict(zip(result.parameters, result.derivative))
    assert d["arm:boom_cyl.bore"] == pytest.approx(richardson(lambda h: event(spec, bore + h), 1e-4), rel=1e-6)
    assert d["arm:boom_cyl.relief_pressure"] == pytest.approx(
        richardson(lambda h: event(spec, bore, pressure=PRESSURE + h), 1e4), rel=1e-6)
    assert d["arm:boom_cyl.rod"] == 0.0  # pushing: the rod's area does not count
    # the limit's own closed form: d(push)/d(bore) = p pi D / 2, per the force's slope in the load factor
    slope = richardson(lambda h: force(spec, factor + h)[0], 1e-3)
    assert d["arm:boom_cyl.bore"] == pytest.approx(PRESSURE * np.pi * bore / 2 / slope, rel=1e-7)


def test_pulling_cylinder_limit_and_a_state_off_the_limit():
    limit, partial = cylinder_limit(-1.0, 0.1, 0.05, 2e7)
    assert limit == pytest.approx(-2e7 * np.pi / 4 * (0.01 - 0.0025))
    base = np.array([0.1, 0.05, 2e7])  # bore, rod, pressure: the annulus limit's partials by central differences
    for i in range(3):
        step = np.zeros(3)
        step[i] = 1e-6 * base[i]
        reference = (cylinder_limit(-1.0, *(base + step))[0] - cylinder_limit(-1.0, *(base - step))[0]) / (2 * step[i])
        assert partial[i] == pytest.approx(reference, rel=1e-6)
    spec = load_model(MODEL).spec
    q = force(spec, 1.0)[1]
    with pytest.raises(InputError, match="not at its relief limit"):
        hydraulic_load_sensitivity(load_model(MODEL), q, 1.0, LOADS, "arm:boom_cyl", 0.2, ROD, PRESSURE, hold=HOLD)
