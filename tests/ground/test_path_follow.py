"""ground/path.follow on synthetic paths (no model): an event function that a step lands on exactly, and a
bracket that the solve budget leaves open, against their known answers."""

import numpy as np

from shiftsim.ground.path import Events, PathOptions, Trial, follow


def linear_steps(zero: float, calls: list):
    """One coordinate q = factor; one event function 1 - factor / zero, linear: its secant lands on ``zero``
    exactly (in floating point, for the values used here)."""

    def steps(cases, factors, q_start, careful):
        calls.append(factors.copy())
        values = (1.0 - factors / zero)[:, None]
        n = len(cases)
        return Trial(factors[:, None].copy(), np.ones(n, dtype=bool), values, np.zeros((n, 0)),
                     np.ones(n, dtype=bool), [""] * n)

    return steps


def start(n):
    return Trial(np.zeros((n, 1)), np.ones(n, dtype=bool), np.ones((n, 1)), np.zeros((n, 0)),
                 np.ones(n, dtype=bool), [""] * n)


def test_a_step_landing_exactly_on_an_event_ends_the_path_there():
    calls: list = []
    zero = 2.0  # the first step to 3 crosses (value -0.5); regula falsi on [0, 3] aims at 2 exactly: value 0.0
    path = follow(linear_steps(zero, calls), np.zeros((1, 1)), start(1), Events(("cylinder",), (False,)),
                  np.array([3.0]), np.array([100.0]), np.ones((1, 1)), np.ones(1), PathOptions(max_solves=60))
    assert path.lo[0] == path.hi[0] == zero and path.event[0] == 0 and path.located[0] == "exact"
    assert not path.unfinished[0]
    assert len(calls) < 10  # it does not spend its budget re-solving the same factor


def test_a_bracket_left_open_by_the_solve_budget_is_reported_unfinished():
    calls: list = []
    path = follow(linear_steps(1e6, calls), np.zeros((1, 1)), start(1), Events(("cylinder",), (False,)),
                  np.array([1e-3]), np.array([1e7]), np.ones((1, 1)), np.ones(1), PathOptions(max_solves=3))
    assert path.unfinished[0] and path.lo[0] < 1e6
