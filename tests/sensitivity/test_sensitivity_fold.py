"""The derivative of a limit load where the load path folds, located from where a path follower stopped
(shiftsim/sensitivity/limit.py: ``locate_fold``, ``fold_sensitivities``; chart.py's tipping branch at a limit
point), against independent answers:

* an inverted pendulum on a torsion spring k under a load P at l above its hinge buckles at lambda* P l = k (a
  bifurcation: the upright path goes on, the load does no work along the mode; shiftsim/sensitivity/bifurcation.py):
  d lambda*/dk = 1/(P l), d lambda*/dl = -k/(P l^2); a side load or an offset breaks the symmetry (no derivative);
* the von Mises two-bar truss (tests/helpers/closed_forms.py): its snap-through load
  P* = 2 k (L0^(2/3) - a^(2/3))^(3/2) is linear in the bars' stiffness k at fixed rest length, so
  d lambda*/dk = lambda*/k, and d lambda*/d(load) = -lambda*/P;
* a boom on a softening hinge spring (moment k theta - c theta^3) at the end of the box machine's slewing upper,
  standing on four pads: its capacity path ends at a limit point (the boom folds) long before the machine tips.
  The independent answer is a second algorithm on the re-solved machine: the hinge held at an angle theta, the
  load factor lambda(theta) that frees it (secant on the hinge's effort, each a tight standing solve), maximized
  over theta (scipy's Brent). Its Richardson differences over edited model files are the reference;
* the shipped excavator chart's step 6, whose path folds over the front (closed loops, a free base on stiff
  pads: the bordered matrix's multiplier block has singular values of 1e-15 of its largest, so the fold's null
  vectors must come from the loop-projected stiffness): Richardson differences of the fold located again (the
  locator being checked by the second algorithm above) on the lift point re-solved with one model parameter
  moved.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from helpers.closed_forms import downward, pendulum, truss
from helpers.ground import OPTIONS, free_of, lift_points, machine, standing
from helpers.sensitivity import edited
from scipy.optimize import minimize_scalar

from shiftsim.errors import InputError
from shiftsim.ground.path import PathOptions, load_path
from shiftsim.ground.rating import capacity
from shiftsim.ground.terrain import Ground
from shiftsim.model import compile_model
from shiftsim.sensitivity.bifurcation import bifurcation_load_sensitivity
from shiftsim.sensitivity.chart import Chart, chart_sensitivities
from shiftsim.sensitivity.limit import limit_load_sensitivity
from shiftsim.spec import BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec
from shiftsim.statics import Load, SolverOptions, free_coordinates, solve

TIGHT = SolverOptions(force_tolerance=1e-13, closure_tolerance=1e-14)


def test_the_truss_fold_located_from_the_path_end_and_its_derivative_as_the_closed_form():
    a, h, k, size = 1.0, 0.2, 1e5, 1000.0
    model = truss(a, h, k)
    load = downward(model, "apex:top", size)
    followed = load_path(model, model.q0[None], free_coordinates(model, np.array([], dtype=int)), np.zeros((1, 3)),
                         load, first_step=np.array([0.5]), options=PathOptions(tolerance=1e-6))
    rest = np.hypot(a, h)
    exact = 2.0 * k * (rest ** (2.0 / 3.0) - a ** (2.0 / 3.0)) ** 1.5 / size
    assert followed.path.lo[0] < exact and abs(followed.path.lo[0] / exact - 1.0) > 1e-9  # the path stops short
    result = limit_load_sensitivity(model, followed.path.q[0], followed.path.lo[0],
                                    [Load("apex:top", force=(0.0, 0.0, -size))], gravity=np.zeros(3),
                                    direction=followed.null_vector[0])
    assert result.factor == pytest.approx(exact, rel=1e-12)
    d = dict(zip(result.parameters, result.derivative))
    # a bar's law is c1 x + c0 with c0 = -k L0: d/dk at fixed rest length is d/dc1 - L0 d/dc0, both bars
    per_k = sum(d[f"bar_{side}.c1"] - rest * d[f"bar_{side}.c0"] for side in ("left", "right"))
    assert per_k == pytest.approx(exact / k, rel=1e-9)
    assert d["load:apex:top.fz"] == pytest.approx(exact / size, rel=1e-9)  # lambda* = P* / (-fz)
    assert d["gravity.z"] == pytest.approx(1.0 / size, rel=1e-9)  # the apex's 1 kg weighs on the fold too
    assert abs(result.null_vector[0]) == pytest.approx(1.0, rel=1e-12)  # the slider


def test_the_inverted_pendulum_s_critical_load_and_its_derivatives_as_k_equals_lambda_p_l():
    mass, length, k = 20.0, 1.5, 1000.0
    size = mass * 9.81
    model = pendulum(mass, length, k)
    load = downward(model, "bob:tip", size)
    followed = load_path(model, model.q0[None], free_coordinates(model, np.array([], dtype=int)), np.zeros((1, 3)),
                         load, first_step=np.array([0.3]), options=PathOptions(tolerance=1e-6))
    exact = k / (size * length)
    result, reasons = bifurcation_load_sensitivity(model, followed.path.q[0], followed.path.lo[0],
                                                   [Load("bob:tip", force=(0.0, 0.0, -size))],
                                                   followed.null_vector[0], gravity=np.zeros(3))
    assert result.factor == pytest.approx(exact, rel=1e-13)
    d = dict(zip(result.parameters, result.derivative))
    assert d["hinge.k"] == pytest.approx(1.0 / (size * length), rel=1e-9)
    assert d["bob:tip.z"] == pytest.approx(-k / (size * length ** 2), rel=1e-9)
    assert d["load:bob:tip.fz"] == pytest.approx(k / (size ** 2 * length), rel=1e-9)  # lambda* = k / (-fz l)
    assert d["gravity.z"] == pytest.approx(mass / size, rel=1e-9)  # the bob's own weight m g at the same height
    assert d["bob.mass"] == 0.0  # no gravity here
    why = dict(zip(result.parameters, reasons))
    for breaking in ("load:bob:tip.fx", "bob:tip.x", "hinge.preload", "gravity.x"):
        assert np.isnan(d[breaking]) and "symmetry" in why[breaking]
    assert why["hinge.k"] is None
    # the envelope theorem of a fold has nothing to divide by here: its locator says the path does not fold
    with pytest.raises(InputError, match="bifurcates"):
        limit_load_sensitivity(model, followed.path.q[0], followed.path.lo[0],
                               [Load("bob:tip", force=(0.0, 0.0, -size))], gravity=np.zeros(3),
                               direction=followed.null_vector[0])


# ---------------------------------------------------------------------- a chart whose paths fold
SLEWS = np.array([0.0, 0.5, 1.0])
GRAVITY = np.array([0.0, 0.0, -9.81])
SEARCH = dataclasses.replace(OPTIONS, tolerance=1e-6)


def folding() -> ModelSpec:
    """The box machine with a 20 kg, 1 m boom hinged (axis y) at its upper's hook, on a softening spring
    2000 theta - 2000 theta^3 N m; the load at the boom's tip."""
    spec = machine(reach=3.0).spec
    boom = BodySpec("boom", 20.0, np.array([0.5, 0.0, 0.0]), np.eye(3) * 0.5,
                    {"tip": FrameSpec("tip", translation=np.array([1.0, 0.0, 0.0]))})
    hinge = JointSpec("fold", "revolute", FrameRef("upper", "hook"), FrameRef("boom"), axis=np.array([0.0, 1.0, 0.0]),
                      initial=(0.0,), stiffness=(0.0, 2000.0, 0.0, -2000.0))
    return dataclasses.replace(spec, bodies=[*spec.bodies, boom], joints=[*spec.joints, hinge])


def folded_chart(spec: ModelSpec):
    stand, q = standing(compile_model(spec), Ground(stiffness=1e8))
    free = free_of(stand.model)
    starts, load = lift_points(stand, q, SLEWS, "boom:tip")
    result = capacity(stand, starts, free, GRAVITY, load, [], SEARCH)
    return Chart(stand, stand.field(starts[0]), free, GRAVITY, load, (), (), SEARCH), result


def by_angles(spec: ModelSpec, slew: float) -> float:
    """The largest load factor the boom carries, by a second algorithm: max over the hinge angle theta of the
    factor at which the held hinge's effort is what its spring gives (a free hinge)."""
    stand, q = standing(compile_model(spec), Ground(stiffness=1e8))
    field = stand.field(q)
    law = next(j for j in spec.joints if j.name == "fold").stiffness

    def carried(theta: float) -> float:
        def unbalanced(factor: float) -> float:
            found = solve(stand.model, set={"slew": slew, "fold": theta}, q_start=q, fields=(field,), options=TIGHT,
                          loads=[Load("boom:tip", force=(0.0, 0.0, -1000.0), factor=factor)])
            assert found.converged
            return found.joint_loads["fold"].effort[0] + sum(c * theta ** i for i, c in enumerate(law))

        a, b = 0.5, 0.9
        fa, fb = unbalanced(a), unbalanced(b)
        while abs(b - a) > 1e-14 * abs(b):
            a, fa, b = b, fb, b - fb * (b - a) / (fb - fa)
            fb = unbalanced(b)
        return b

    return -minimize_scalar(lambda theta: -carried(theta), bracket=(0.4, 0.6), tol=1e-9).fun


@pytest.fixture(scope="module")
def folded():
    found, result = folded_chart(folding())
    return result, chart_sensitivities(found, result)


@pytest.mark.slow
def test_a_folding_boom_s_tipping_branch_is_its_located_fold(folded):
    result, points = folded
    assert result.event == ["limit point"] * 3 and result.governs == ["tipping"] * 3
    for b, point in enumerate(points):
        assert point.reasons["tipping"] is None and point.reasons["rated"] is None
        assert point.tipping.factor == pytest.approx(by_angles(folding(), SLEWS[b]), rel=1e-12)
        assert point.tipping.factor >= result.tipping[b]  # the path stops short of it (here by up to 4e-6)
        assert point.tipping_gap == pytest.approx(point.tipping.factor / result.tipping[b] - 1.0, rel=1e-12)
        assert point.rated.governs == "tipping"
        assert np.allclose(point.rated.derivative, SEARCH.tipping_fraction * point.tipping.derivative, rtol=1e-15)


@pytest.mark.slow
@pytest.mark.parametrize("name, h", [("fold.k", 10.0), ("fold.k3", 10.0), ("boom.mass", 0.1), ("boom:tip.x", 1e-3),
                                     ("box.mass", 10.0)])
def test_the_folding_boom_s_limit_load_against_re_solves_by_a_second_algorithm(folded, name, h):
    """At the last slew (1 rad: the boom's fold and the machine's tilt not in one plane)."""
    _, points = folded

    def central(step: float) -> float:
        return (by_angles(edited(folding(), [], name, step)[0], SLEWS[-1])
                - by_angles(edited(folding(), [], name, -step)[0], SLEWS[-1])) / (2 * step)

    reference = (4 * central(h / 2) - central(h)) / 3
    ours = dict(zip(points[-1].tipping.parameters, points[-1].tipping.derivative))[name]
    floor = 1e-13 / h  # the reference's own noise (its load factor to ~1e-14) over the step
    assert abs(ours - reference) <= 1e-6 * abs(reference) + floor, (ours, reference)


@pytest.mark.slow
@pytest.mark.parametrize("name, h", [("front:arm:boom.mass", 10.0), ("front:arm:boom:boom_cyl_head.x", 1e-3),
                                     ("lower:carbody.mass", 100.0)])
def test_the_shipped_excavator_s_folding_lift_point_against_its_fold_located_again(excavator_chart, name, h):
    from shiftsim.sensitivity.chart import _loads
    from shiftsim.sensitivity.limit import locate_fold

    solved, chart, point = excavator_chart
    one = np.array([STEP])

    def fold(delta: float) -> float:
        stand = dataclasses.replace(solved.stand, model=compile_model(edited(solved.stand.model.spec, [], name,
                                                                             delta)[0]))
        found = capacity(stand, solved.starts[one], solved.free, solved.gravity, chart.load, list(chart.cylinders),
                         chart.options, list(chart.others))
        assert found.event == ["limit point"]
        again = dataclasses.replace(chart, stand=stand)
        named, *rest = _loads(again, 0, 1.0)
        return locate_fold(stand.model, found.q_last[0], solved.free, solved.gravity, [named], float(found.tipping[0]),
                           found.null_vector[0], rest, (chart.field,), expected=float(found.event_factor[0])).factor

    def central(step: float) -> float:
        return (fold(step) - fold(-step)) / (2 * step)

    reference = (4 * central(h / 2) - central(h)) / 3
    ours = dict(zip(point.tipping.parameters, point.tipping.derivative))[name]
    assert point.tipping.factor == pytest.approx(fold(0.0), rel=1e-13)
    assert ours == pytest.approx(reference, rel=1e-6)


STEP = 6  # of the shipped chart: over the front, its path folds


@pytest.fixture(scope="module")
def excavator_chart():
    """The shipped chart's lift point STEP solved alone (its field anchored there, as the chart's own search of
    it alone), and its sensitivities."""
    import json

    from helpers.scenario import SCENARIOS

    from shiftsim.ground.stand import take
    from shiftsim.scenario.capacity_analysis import analysis_spec, solve_chart
    from shiftsim.scenario.definition import build_scenario

    path = SCENARIOS / "excavator_capacity.json"
    scenario = build_scenario(path, json.loads(path.read_text()))
    spec = analysis_spec(scenario)
    solved = solve_chart(scenario, spec)
    one = np.array([STEP])
    load, others = take(solved.load, one), tuple(take(o, one) for o in solved.others)
    result = capacity(solved.stand, solved.starts[one], solved.free, solved.gravity, load, list(spec.cylinders),
                      spec.options, list(others))
    assert result.event == ["limit point"]
    chart = Chart(solved.stand, solved.stand.field(solved.starts[STEP]), solved.free, solved.gravity, load, others,
                  spec.cylinders, spec.options)
    return solved, chart, chart_sensitivities(chart, result)[0]
