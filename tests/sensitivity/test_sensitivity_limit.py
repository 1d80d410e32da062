"""The limit load's derivative by the envelope theorem on the bordered system (shiftsim/sensitivity/limit.py),
against a closed form solved here: a link on a softening torsion spring (moment k theta - c theta^3) under its
weight and a tip load lambda P. Along the path

    lambda(theta) = (k theta - c theta^3) / (P l cos theta) - m g l_c / (P l),

which folds where d lambda / d theta = 0 (found with brentq); the limit load's derivatives are Richardson central
differences of that closed form, and for the spring rate and the mass the envelope theorem's own closed forms
(d lambda*/dk = theta* / (P l cos theta*), d lambda*/dm = -g l_c / (P l))."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from shiftsim.errors import InputError
from shiftsim.model import compile_model
from shiftsim.sensitivity.limit import limit_load_sensitivity
from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec
from shiftsim.statics import Load

BASE = {"k": 1000.0, "c": 1000.0, "m": 2.0, "lc": 0.5, "l": 1.0, "P": 100.0, "g": 9.81}


def spec(p: dict) -> ModelSpec:
    body = BodySpec("l0", mass=p["m"], com=np.array([p["lc"], 0.0, 0.0]), inertia=np.eye(3) * 0.1,
                    frames={"tip": FrameSpec("tip", translation=np.array([p["l"], 0.0, 0.0]))})
    joint = JointSpec("hinge", "revolute", FrameRef(FIXED), FrameRef("l0"), axis=np.array([0.0, 1.0, 0.0]),
                      initial=(0.0,), stiffness=(0.0, p["k"], 0.0, -p["c"]))
    return ModelSpec("softening", "test", "test", gravity=np.array([0.0, 0.0, -p["g"]]), bodies=[body],
                     joints=[joint])


def fold(p: dict) -> tuple[float, float]:
    """(theta*, lambda*) of the closed form."""
    k, c, m, lc, l, load, g = (p[x] for x in ("k", "c", "m", "lc", "l", "P", "g"))
    slope = lambda t: (k - 3 * c * t * t) * np.cos(t) + (k * t - c * t ** 3) * np.sin(t)  # noqa: E731
    theta = brentq(slope, 1e-6, np.sqrt(k / c), xtol=1e-15)  # the spring softens to nothing at sqrt(k/c)
    return theta, (k * theta - c * theta ** 3) / (load * l * np.cos(theta)) - m * g * lc / (load * l)


def richardson(p: dict, key: str, h: float) -> float:
    def central(step):
        up, down = dict(p), dict(p)
        up[key] += step
        down[key] -= step
        return (fold(up)[1] - fold(down)[1]) / (2 * step)
    return (4 * central(h / 2) - central(h)) / 3


def test_the_limit_load_of_a_softening_spring_against_its_closed_form():
    theta, factor = fold(BASE)
    model = compile_model(spec(BASE))
    result = limit_load_sensitivity(model, np.array([theta]), factor, [Load("l0:tip", force=(0.0, 0.0, -BASE["P"]))])
    d = dict(zip(result.parameters, result.derivative))
    # the envelope theorem's closed forms: at the fold d lambda / d theta = 0, so only the explicit terms remain
    assert d["hinge.k"] == pytest.approx(theta / (BASE["P"] * BASE["l"] * np.cos(theta)), rel=1e-9)
    assert d["l0.mass"] == pytest.approx(-BASE["g"] * BASE["lc"] / (BASE["P"] * BASE["l"]), rel=1e-9)
    # every parameter kind against Richardson differences of the closed form (sign: fz = -P, gravity.z = -g)
    for name, key, sign, h in [("hinge.k", "k", 1, 1.0), ("hinge.k3", "c", -1, 0.5), ("l0.mass", "m", 1, 1e-3),
                               ("l0.com.x", "lc", 1, 1e-4), ("l0:tip.x", "l", 1, 1e-4),
                               ("load:l0:tip.fz", "P", -1, 1e-2), ("gravity.z", "g", -1, 1e-3)]:
        assert d[name] == pytest.approx(sign * richardson(BASE, key, h), rel=1e-6), name
    # the fold's mode is the link's rotation
    assert abs(result.null_vector[0]) == pytest.approx(1.0, abs=1e-12)
    assert result.elasticity[result.parameters.index("hinge.k")] == pytest.approx(
        BASE["k"] * d["hinge.k"] / factor, rel=1e-12)


def test_a_state_that_is_no_fold_or_no_equilibrium_is_refused():
    theta, factor = fold(BASE)
    model = compile_model(spec(BASE))
    load = [Load("l0:tip", force=(0.0, 0.0, -BASE["P"]))]
    below = 0.8 * theta  # an equilibrium of the path before the fold: regular
    k, c, m, lc, l, size, g = (BASE[x] for x in ("k", "c", "m", "lc", "l", "P", "g"))
    on_path = (k * below - c * below ** 3) / (size * l * np.cos(below)) - m * g * lc / (size * l)
    with pytest.raises(InputError, match="not a limit point"):
        limit_load_sensitivity(model, np.array([below]), on_path, load)
    with pytest.raises(InputError, match="not an equilibrium"):
        limit_load_sensitivity(model, np.array([below]), factor, load)


def _branch(factor: float, slopes: dict[str, float]) -> "LimitSensitivities":
    from shiftsim.sensitivity.limit import LimitSensitivities

    return LimitSensitivities(factor, tuple(slopes), np.ones(len(slopes)), np.array(list(slopes.values())), None)


@pytest.mark.parametrize("hydraulic, governs, near", [(3.0, "hydraulic", False), (4.0, "tipping", False),
                                                      (0.75 * 4.0 / 0.87 * 1.005, "tipping", True),
                                                      (0.75 * 4.0 / 0.87 * 0.995, "hydraulic", True)])
def test_the_rated_load_follows_the_governing_branch_and_flags_the_switch(hydraulic, governs, near):
    """min(0.75 T, 0.87 H) with T and H linear in two parameters: its derivative against central differences of
    the min itself, on the side of the point the min lies on."""
    from shiftsim.sensitivity.rated import rated_load_sensitivity

    tipping = {"a": 0.3, "b": -0.2}
    hydraulic_slopes = {"a": -0.1, "bore": 2.0}
    result = rated_load_sensitivity(_branch(4.0, tipping), _branch(hydraulic, hydraulic_slopes))
    assert result.governs == governs and result.near_switch is near and (result.reason is not None) is near

    def rated(name: str, h: float) -> float:
        return min(0.75 * (4.0 + tipping.get(name, 0.0) * h), 0.87 * (hydraulic + hydraulic_slopes.get(name, 0.0) * h))

    assert result.rated == pytest.approx(rated("a", 0.0), rel=1e-15)
    for j, name in enumerate(result.parameters):
        h = 1e-6  # smaller than the gap to the switch: the min does not change branch
        assert result.derivative[j] == pytest.approx((rated(name, h) - rated(name, -h)) / (2 * h), rel=1e-8, abs=1e-12)
    assert result.parameters == ("a", "b", "bore")


def test_the_rigid_lifter_tips_about_its_front_edge_as_its_closed_form():
    """A rigid lifter on pads, its front edge a held hinge (the pads behind it carry what the hinge's effort says):
    it tips when that effort reaches 0, at lambda* P b = m g a (a the base's lever behind the edge, b the load's
    ahead of it), so d(tipping load)/d(base mass) = g a / b; and d/d(centre of mass), d/d(load lever)."""
    from shiftsim.sensitivity.limit import event_load_sensitivity

    m, a, b, g, size = 5000.0, 1.2, 4.0, 9.81, 1000.0
    body = BodySpec("lifter", mass=m, com=np.array([-a, 0.0, 0.3]), inertia=np.eye(3) * 100.0,
                    frames={"hook": FrameSpec("hook", translation=np.array([b, 0.0, 2.0]))})
    edge = JointSpec("edge", "revolute", FrameRef(FIXED), FrameRef("lifter"), axis=np.array([0.0, 1.0, 0.0]),
                     initial=(0.0,))
    model = compile_model(ModelSpec("lifter", "test", "test", gravity=np.array([0.0, 0.0, -g]), bodies=[body],
                                    joints=[edge]))
    factor = m * g * a / (size * b)
    event = event_load_sensitivity(model, np.zeros(1), factor, [Load("lifter:hook", force=(0.0, 0.0, -size))],
                                   "edge.effort", wrt=["lifter.mass", "lifter.com.x", "lifter:hook.x", "gravity.z"],
                                   hold=["edge"])
    assert event.value == pytest.approx(0.0, abs=1e-9 * m * g * a)  # the rear pads carry nothing: it tips
    d = dict(zip(event.result.parameters, event.result.derivative))
    assert size * d["lifter.mass"] == pytest.approx(g * a / b, rel=1e-12)  # N of tipping load per kg of base
    assert d["lifter.com.x"] == pytest.approx(-m * g / (size * b), rel=1e-12)
    assert d["lifter:hook.x"] == pytest.approx(-factor / b, rel=1e-12)
    assert d["gravity.z"] == pytest.approx(-m * a / (size * b), rel=1e-12)
