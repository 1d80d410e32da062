"""The compiled core's per-parameter partial derivatives of the residual (src/partials.c) against central differences
of the core's own residual on a model whose *file-level spec* is edited and compiled again (``helpers.sensitivity.
edited``, not through the sensitivity code): at a fixed configuration q and fixed closure multipliers lambda, the
residual Q(q, p) + G(q, p)^T lambda and the closure residual g(q, p) of ``statics.evaluate``.

The residual is linear in masses, centres of mass, spring and restraint coefficients, load components and factors,
and gravity: one central difference is exact there up to rounding. A frame's position enters through rotations of
the closure points: Richardson's extrapolation of two central differences (error O(h^4)).

Also: a batch of configurations over threads equals each configuration alone, bad parameter rows are refused with
a message naming the row, and a failed allocation leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from helpers.core import fails_cleanly_at_every_allocation
from helpers.sensitivity import edited, pair_mounts

from shiftsim.core.layout import compiled
from shiftsim.core.library import core
from shiftsim.loading import load_model
from shiftsim.model import compile_model
from shiftsim.sensitivity.parameters import (
    _load_arrays,
    _motion_arrays,
    catalogue,
    force_partials_batch,
    parameter_codes,
)
from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec, RestraintSpec
from shiftsim.statics import Load, applied, evaluate, independent_rows

MODELS = Path(__file__).resolve().parents[2] / "models" / "shift"
LINEAR = ("mass", "com", "spring", "restraint", "pair", "load", "gravity")


def residuals(spec: ModelSpec, loads: list[Load], q: np.ndarray, rows: np.ndarray, lam: np.ndarray):
    """(Q + G^T lambda over every coordinate (nq,), g on ``rows`` (m,)) of the compiled spec at q."""
    model = compile_model(spec)
    ev = evaluate(model, q, np.arange(model.nq), model.gravity, applied(model, loads), multipliers=lam, rows=rows)
    return ev.residual, ev.closure


def difference(spec, loads, q, rows, lam, name: str, value: float, kind: str):
    """d(residual)/dp and d(g)/dp: a central difference (linear kinds) or Richardson's extrapolation (frames)."""
    h = 1e-3 * max(abs(value), 1.0)

    def central(step):
        plus = residuals(*edited(spec, loads, name, step), q, rows, lam)
        minus = residuals(*edited(spec, loads, name, -step), q, rows, lam)
        return [(a - b) / (2 * step) for a, b in zip(plus, minus)]

    if kind in LINEAR:
        return central(h)
    half, whole = central(h / 2), central(h)
    return [(4 * a - b) / 3 for a, b in zip(half, whole)]


def check_every_parameter(spec: ModelSpec, loads: list[Load], q: np.ndarray, kinds=None, seed: int = 0) -> set:
    """The core's partials against the differences for every parameter (of ``kinds``) at q with random multipliers;
    returns the kinds checked. Tolerance: 1e-9 of the largest entry of the column pair (rounding of the residual,
    ~1e-16 of the forces, over the step) plus 1e-7 relative for the extrapolated frames."""
    model = compile_model(spec)
    free = np.arange(model.nq)
    rows = independent_rows(model, q, free)
    lam = np.random.default_rng(seed).normal(scale=50.0, size=len(rows))
    multipliers = np.zeros(6 * len(model.closures))
    multipliers[rows] = lam
    params = [p for p in catalogue(model, tuple(loads)) if kinds is None or p.kind in kinds]
    force, closure = force_partials_batch(model, q[None], multipliers[None], model.gravity, tuple(loads), params)
    force_scale = np.max(np.abs(residuals(spec, loads, q, rows, lam)[0])) + 1.0
    for column, p in enumerate(params):
        d_force, d_closure = difference(spec, loads, q, rows, lam, p.name, p.value, p.kind)
        got_force, got_closure = force[0, :, column], closure[0, rows, column]
        rel = 1e-7 if p.kind == "frame" else 1e-9
        tolerance = rel * (np.max(np.abs(d_force)) + force_scale / max(abs(p.value), 1.0))
        np.testing.assert_allclose(got_force, d_force, rtol=0, atol=tolerance, err_msg=p.name)
        np.testing.assert_allclose(got_closure, d_closure, rtol=0, atol=rel * (np.max(np.abs(d_closure), initial=0.0) + 1.0),
                                   err_msg=p.name)
    for kind in {p.kind for p in params}:  # every kind really acts here (not only zero columns compared)
        columns = [j for j, p in enumerate(params) if p.kind == kind]
        assert np.max(np.abs(force[0][:, columns])) > 0 or np.max(np.abs(closure[0][:, columns]), initial=0) > 0, kind
    return {p.kind for p in params}


def chain_with_laws() -> ModelSpec:
    """Three links about y with polynomial springs, a two-piece joint law on the first joint, a Euclidean strut and
    a two-piece law along an anchor's z axis (pair restraints), a spatial tilt so that every axis is exercised; load
    points ``l2:hook`` and ``l1:tip`` (the latter also a pin that stretches the pairs: not a parameter)."""
    bodies, joints = [], []
    for i in range(3):
        frames = {"tip": FrameSpec("tip", translation=np.array([1.0, 0.1 * i, 0.05]))}
        if i == 2:
            frames["hook"] = FrameSpec("hook", translation=np.array([0.8, -0.1, 0.1]))
        if i == 1:
            frames["strap"] = FrameSpec("strap", translation=np.array([0.5, 0.0, 0.2]))
        bodies.append(BodySpec(f"l{i}", mass=2.0 + i, com=np.array([0.5, 0.03, 0.05 * i]), inertia=np.eye(3) * 0.1,
                               frames=frames))
        parent = FrameRef(FIXED) if i == 0 else FrameRef(f"l{i - 1}", "tip")
        axis = np.array([0.0, 1.0, 0.0]) if i != 1 else np.array([0.0, 0.6, 0.8])
        joints.append(JointSpec(f"j{i}", "revolute", parent, FrameRef(f"l{i}"), axis=axis, initial=(0.0,),
                                stiffness=(5.0, 800.0, 30.0)))
    anchor = {"anchor": FrameSpec("anchor", translation=np.array([1.0, 0.0, 1.5]))}
    restraints = [
        RestraintSpec("stop", "spring", (0.1,), ((40.0, -2.0), (900.0, 40.0 - 90.0)), joint="j0"),
        RestraintSpec("strut", "spring", (), ((300.0, -360.0),), pair=(FrameRef(FIXED, "anchor"), FrameRef("l1", "strap"))),
        RestraintSpec("lift", "spring", (-5.0,), ((0.0, 40.0, 10.0), (0.0, 80.0, 210.0)), distance_type="Tz",
                      pair=(FrameRef(FIXED, "anchor"), FrameRef("l2", "tip"))),
    ]
    return ModelSpec("laws", "test", "test", gravity=np.array([0.3, -0.2, -9.81]), bodies=bodies, joints=joints,
                     fixed_frames=anchor, restraints=restraints)


LOADS_CHAIN = [Load("l2:hook", force=(40.0, 10.0, -120.0), torque=(3.0, -8.0, 2.0), factor=1.5),
               Load("l1:tip", force=(-20.0, 5.0, -60.0), torque=(1.0, 4.0, -2.0), direction="body", factor=0.8)]


def test_springs_joint_and_pair_laws_masses_loads_and_gravity_against_differences():
    spec = chain_with_laws()
    q = np.array([0.25, -0.4, 0.7])  # stop at its second piece (q0 above its knot 0.1), any configuration will do
    kinds = check_every_parameter(spec, LOADS_CHAIN, q)
    assert kinds >= {"mass", "com", "frame", "spring", "restraint", "pair", "load", "gravity"}
    names = {p.name for p in catalogue(compile_model(spec), tuple(LOADS_CHAIN))}
    # the pairs' own frames and the pins that stretch them (l1:tip also carries a load) are parameters
    assert {"l2:hook.x", "l1:tip.x", "l0:tip.y", "fixed:anchor.z", "l1:strap.x", "l2:tip.z"} <= names


@pytest.mark.slow
def test_pair_spring_mounts_and_the_pins_that_stretch_them_against_differences():
    """Every frame of the pair springs' model: the strut's mount and the pin it pulls on, the heel pins on the child
    sides (moving one moves its body and the strut's end with it), the rail whose axis the guide's law runs along,
    the anchor, the loaded hook, and the pins that carry one end of a pair and not the other, at two
    configurations (the guide on each of its pieces)."""
    spec = pair_mounts()
    loads = [Load("l2:hook", force=(30.0, -10.0, -80.0), torque=(2.0, 1.0, -3.0), factor=1.2)]
    model = compile_model(spec)
    names = {p.name for p in catalogue(model, tuple(loads)) if p.kind == "frame"}
    assert names == {f"{f}.{a}" for f in ("fixed:base", "fixed:anchor", "l0:foot", "l0:tip", "l0:mount", "l0:rail",
                                           "l1:heel", "l1:tip", "l2:heel", "l2:tip", "l2:hook") for a in "xyz"}
    for q in (np.array([0.3, -0.5, 0.1]), np.array([-0.2, 0.4, -0.15])):
        check_every_parameter(spec, loads, q, kinds=("frame",))


def test_a_loop_its_pins_restraint_and_following_load_against_differences():
    model = load_model(MODELS / "four_bar.json")
    loads = [Load("four_bar:coupler:tip", force=(15.0, 4.0, -25.0), torque=(0.5, -1.0, 2.0), direction="body",
                  factor=1.3)]
    q = model.q0 + np.array([0.05, -0.03, 0.02, 0.04])  # off the loop's manifold: g itself is not zero
    kinds = check_every_parameter(model.spec, loads, q)
    assert {"frame", "restraint", "load"} <= kinds
    assert len(compile_model(model.spec).closures) == 1


@pytest.mark.slow
def test_the_excavators_pins_mounts_and_cylinder_springs_against_differences():
    model = load_model(MODELS / "excavator_hydraulic.json")
    loads = [Load("arm:bucket:tip", force=(2000.0, 500.0, -10000.0))]
    q = model.q0 + 0.01 * np.sin(np.arange(model.nq))
    kinds = check_every_parameter(model.spec, loads, q, kinds=("frame", "spring", "load"))
    assert kinds == {"frame", "spring", "load"}


def test_a_batch_over_threads_equals_each_configuration_alone():
    """Seven configurations, each with its own gravity and load factors, in one batch over three threads."""
    model = compile_model(chain_with_laws())
    params = catalogue(model, tuple(LOADS_CHAIN))
    rng = np.random.default_rng(3)
    q = rng.normal(scale=0.5, size=(7, model.nq))
    gravity = model.gravity + rng.normal(size=(7, 3))
    factors = rng.uniform(0.5, 2.0, size=(7, len(LOADS_CHAIN)))
    multipliers = np.zeros((7, 0))
    batch = force_partials_batch(model, q, multipliers, gravity, tuple(LOADS_CHAIN), params, load_factors=factors,
                                 threads=3)
    for b in range(7):
        scaled = tuple(dataclasses.replace(load, factor=f) for load, f in zip(LOADS_CHAIN, factors[b]))
        alone = force_partials_batch(model, q[b:b + 1], multipliers[b:b + 1], gravity[b], scaled, params, threads=1)
        assert np.array_equal(batch[0][b], alone[0][0]) and np.array_equal(batch[1][b], alone[1][0])
    assert not np.array_equal(batch[0][0], batch[0][1])


def _call(model, codes, start=None, motion=None, loads=LOADS_CHAIN):
    frames, follow, force, torque, factor = _load_arrays(model, tuple(loads))
    default_start, default_motion = _motion_arrays(model)
    P = len(codes)
    core.partials(compiled(model), model.q0[None].copy(), np.zeros((1, 6 * len(model.closures))),
                  model.gravity[None].copy(), frames, force[None].copy(), torque[None].copy(), factor[None].copy(),
                  follow, np.ascontiguousarray(codes, dtype=np.int64),
                  default_start if start is None else start, default_motion if motion is None else motion,
                  np.zeros((1, model.nq, P)), np.zeros((1, 6 * len(model.closures), P)), 1)


def test_bad_parameter_and_motion_rows_are_refused_naming_the_row():
    model = load_model(MODELS / "four_bar.json")
    good = parameter_codes(model, (), catalogue(model))
    _call(model, good, loads=())
    bad = good.copy()
    bad[2, 1] = 10_000  # a node the model does not have
    with pytest.raises(ValueError, match="parameter row 2"):
        _call(model, bad, loads=())
    start, motion = _motion_arrays(model)
    broken = motion.copy()
    broken[0, 3] = 2  # a side that is neither +1 nor -1
    with pytest.raises(ValueError, match="motion row 0"):
        _call(model, good, motion=broken, loads=())
    with pytest.raises(ValueError, match="parameters"):
        _call(model, good[:, :3].copy(), loads=())


def test_a_failed_allocation_leaves_nothing_behind():
    model = compile_model(chain_with_laws())
    params = catalogue(model, tuple(LOADS_CHAIN))
    q = np.array([[0.25, -0.4, 0.7]])

    def call():
        return force_partials_batch(model, q, np.zeros((1, 0)), model.gravity, tuple(LOADS_CHAIN), params, threads=1)

    (force, _), failures = fails_cleanly_at_every_allocation(call)
    assert failures >= 1 and np.array_equal(force, call()[0])


def test_the_ground_parameters_are_zero_columns_here():
    model = compile_model(chain_with_laws())
    params = catalogue(model, ())
    ground = dataclasses.replace(params[0], name="ground.stiffness", kind="ground")
    force, closure = force_partials_batch(model, model.q0[None], np.zeros((1, 0)), model.gravity, (), [params[0], ground])
    assert np.any(force[0, :, 0]) and not np.any(force[0, :, 1]) and closure.shape == (1, 0, 2)
