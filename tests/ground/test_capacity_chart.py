"""A lift-capacity chart from the shipped excavator scenario (a slice of its grid): every point is valid, every
tipping load located to 1e-6 of its own moment balance, and no neighbour jumps (no rated load, nor tipping load
of two neighbouring lift-offs, more than 3x the next along a stroke: a search that jumped between wells or
stopped at an impossible equilibrium gave 103 MN beside 150 kN). Over the front with the bucket tucked in
(3.1 m out, 1.6 m down) the path ends at a limit point, not a lift-off: under 36 t the arm itself folds."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.scenario import capacity_scenario, write_scenario

from shiftsim.errors import Problems
from shiftsim.scenario import load_scenario
from shiftsim.scenario.capacity_analysis import read_capacity, run_capacity


@pytest.mark.slow
def test_a_chart_slice_is_valid_self_consistent_and_smooth(tmp_path):
    document = capacity_scenario()
    document["sweep"] = {"mode": "grid", "parameters": {"ex1:lower:slew": [0.0, 1.5707963267948966],
                                                        "ex1:front:arm:boom_cyl": {"from": 1.75, "to": 2.85, "steps": 4},
                                                        "ex1:front:arm:stick_cyl": {"from": 2.3, "to": 3.4, "steps": 3}}}
    document["analysis"]["capacity"]["group"] = "ex1:lower:slew"
    path = write_scenario(tmp_path, document)
    scenario = load_scenario(path)
    spec = read_capacity(scenario, scenario.document["analysis"]["capacity"], "analysis.capacity", Problems(str(path)))
    points = run_capacity(scenario, spec)["points"]
    assert len(points) == 24 and all(p["valid"] for p in points)
    lifted = [p for p in points if p["tipping_event"] == "lift-off"]
    assert len(lifted) >= 12
    for p in lifted:
        assert p["balance_load"] == pytest.approx(p["tipping_load"], rel=2e-6)
        assert p["tipping_load"] <= p["event_load"] <= p["tips_below"] <= p["tipping_load"] * (1 + 1.001e-6)
    for p in points:
        # a limit point checks itself by a second algorithm: the stiffness by central differences of the residual
        assert (p["stiffness_check"] is not None) == (p["tipping_event"] == "limit point")
        assert p["tipping_event"] != "limit point" or abs(p["stiffness_check"]) <= 0.01
        assert p["tipping_event"] in ("lift-off", "limit point", "path ends")
        assert (p["tipping_load"] is None) == (p["tipping_event"] == "path ends")
        assert p["hydraulic_event"] == f"cylinder limit {p['limiting_cylinder']}"
    tipping = np.array([p["tipping_load"] or p["does_not_tip_below"] for p in points]).reshape(2, 4, 3)
    lift_off = np.array([p["tipping_event"] == "lift-off" for p in points]).reshape(2, 4, 3)
    rated = np.array([p["rated_load"] for p in points]).reshape(2, 4, 3)
    for axis in (1, 2):  # neighbours along the boom and along the stick stroke
        assert np.all(np.abs(np.diff(np.log(rated), axis=axis)) <= np.log(3.0)), rated
        both = (np.diff(lift_off.astype(int), axis=axis) == 0) & np.take(lift_off, range(1, lift_off.shape[axis]), axis)
        jumps = np.abs(np.diff(np.log(tipping), axis=axis))[both]
        assert np.all(jumps <= np.log(3.0)), tipping
