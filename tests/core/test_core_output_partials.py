"""The compiled core's sensitivity outputs (src/output_partials.c): values, rows d/d(q, lambda) and explicit partial
derivatives d/dp, at a fixed configuration q and fixed closure multipliers lambda (any q and lambda: the kernel does
not need an equilibrium).

References, none of them the kernel itself:

* values: a tree joint's wrench (in world axes, and in its child-side joint frame's axes with that frame's rotation)
  and a frame's position against the core's joint loads (src/loads.c, through ``solution.joint_load_arrays``) and
  forward kinematics; an effort against ``statics.evaluate``;
* rows in (q, lambda): Richardson central differences of the values (checked above) over q and lambda;
* explicit partials: central differences (Richardson for frame positions) of the values of a model whose file-level
  spec is edited and compiled again (``helpers.sensitivity.edited``), at the same q and lambda;
* the ground's point forces the caller gives (a contact's or tyre's force with its own rate and partials): records
  on bodies whose forces move by exactly their given rate and partials, differenced the same way.

Every term of a wrench (weights, loads in world and in frame axes with factors, closure wrenches on both sides, the
ground's records with torques, pair springs crossing the joint's cut from either side, the joint frame's own motion,
frame positions moving subtrees and pins, the joint frame's turn for the wrench in its axes) shows up in one of these;
dropping one fails a check. Also: a batch over threads equals each case alone, bad output rows are
refused naming the row, a failed allocation leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from helpers.core import fails_cleanly_at_every_allocation
from helpers.sensitivity import edited, richardson

from shiftsim.core.layout import compiled
from shiftsim.core.library import core
from shiftsim.kinematics import forward, state
from shiftsim.loading import load_model
from shiftsim.model import Model, compile_model
from shiftsim.sensitivity.outputs import Output, catalogue, output_codes, output_rows_batch
from shiftsim.sensitivity.parameters import Parameter, _load_arrays, _motion_arrays, parameter_codes
from shiftsim.sensitivity.parameters import catalogue as parameter_catalogue
from shiftsim.solution import joint_load_arrays
from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec, RestraintSpec
from shiftsim.statics import Load, applied, evaluate, independent_rows

MODELS = Path(__file__).resolve().parents[2] / "models" / "shift"
LINEAR = ("mass", "com", "spring", "restraint", "load", "gravity")


def spatial_chain() -> ModelSpec:
    """Three links on revolute joints about tilted axes (the middle one written child to parent: its wrench is the
    reversed joint's; the last one meets its link at a socket frame, a position parameter that is its wrench's
    moment point), with springs and two load points (one of them also a pin frame)."""
    bodies, joints = [], []
    for i in range(3):
        frames = {"tip": FrameSpec("tip", translation=np.array([1.0, 0.1 * i, 0.05]))}
        if i == 2:
            frames["hook"] = FrameSpec("hook", translation=np.array([0.8, -0.1, 0.1]))
            frames["socket"] = FrameSpec("socket", translation=np.array([-0.1, 0.05, 0.02]))
        bodies.append(BodySpec(f"l{i}", mass=2.0 + i, com=np.array([0.5, 0.03, 0.05 * i]), inertia=np.eye(3) * 0.1,
                               frames=frames))
        parent = FrameRef(FIXED) if i == 0 else FrameRef(f"l{i - 1}", "tip")
        child = FrameRef(f"l{i}", "socket") if i == 2 else FrameRef(f"l{i}")
        if i == 1:
            parent, child = child, parent
        axis = np.array([0.0, 1.0, 0.0]) if i != 1 else np.array([0.0, 0.6, 0.8])
        joints.append(JointSpec(f"j{i}", "revolute", parent, child, axis=axis, initial=(0.0,), stiffness=(5.0, 800.0)))
    return ModelSpec("chain", "test", "test", gravity=np.array([0.3, -0.2, -9.81]), bodies=bodies, joints=joints)


def chain_with_pairs() -> ModelSpec:
    """The spatial chain with three pair springs across its joints: a Euclidean strut from a fixed anchor to the
    first link (inside every joint's subtree), a Euclidean tie from the middle link to the last (crossing the last
    joint from outside in) and a two-piece law along the last link's z axis to an eye on the middle link (frame a
    inside the last joint's subtree, and turning with it). The middle joint's parent-side frame ``l0:tip`` moves
    the tie and the lift rigidly with both ends: it stays a position parameter."""
    spec = spatial_chain()
    extra = {0: {"strap": (0.4, -0.1, 0.3)}, 1: {"strap": (0.5, 0.0, 0.2), "eye": (0.3, 0.1, -0.2)},
             2: {"brace": (0.2, 0.05, -0.3)}}
    bodies = [dataclasses.replace(b, frames={**b.frames, **{n: FrameSpec(n, translation=np.array(t))
                                                            for n, t in extra[i].items()}})
              for i, b in enumerate(spec.bodies)]
    restraints = [
        RestraintSpec("strut", "spring", (), ((300.0, -360.0),), pair=(FrameRef(FIXED, "anchor"), FrameRef("l0", "strap"))),
        RestraintSpec("tie", "spring", (), ((50.0, 900.0, -700.0),), pair=(FrameRef("l1", "strap"), FrameRef("l2", "tip"))),
        RestraintSpec("lift", "spring", (-0.2,), ((0.0, 400.0, 30.0), (200.0, 600.0, 50.0)), distance_type="Tz",
                      pair=(FrameRef("l2", "brace"), FrameRef("l1", "eye"))),
    ]
    anchor = {"anchor": FrameSpec("anchor", translation=np.array([1.0, 0.2, 1.5]))}
    return dataclasses.replace(spec, bodies=bodies, fixed_frames=anchor, restraints=restraints)


LOADS_CHAIN = [Load("l2:hook", force=(40.0, 10.0, -120.0), torque=(3.0, -8.0, 2.0), factor=1.5),
               Load("l1:tip", force=(-20.0, 5.0, -60.0), torque=(1.0, 4.0, -2.0), direction="body", factor=0.8)]
LOADS_FOUR_BAR = [Load("four_bar:coupler:tip", force=(15.0, 4.0, -25.0), torque=(0.5, -1.0, 2.0), direction="body",
                       factor=1.3)]


def some_outputs(model: Model) -> list[Output]:
    """Every joint value, frame position, pin and tree-joint wrench of the model."""
    return [o for o in catalogue(model, np.arange(model.nq)) if o.kind != "effort"]


def rows_at(model, q, lam, loads, params, outs, ground=None, threads=1):
    """(values (B, Y), rows (B, Y, nq + 6 K), explicit (B, Y, P)) at configurations q (B, nq), multipliers (B, 6 K)."""
    batch, n_p = len(q), len(params)
    return output_rows_batch(model, q, lam, model.gravity, tuple(loads), params, outs, np.zeros((batch, model.nq)),
                             np.zeros((batch, model.nq, model.nq)), np.zeros((batch, model.nq, n_p)), ground,
                             threads=threads)


def random_case(model: Model, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A configuration near q0 and random multipliers on every closure row (N)."""
    rng = np.random.default_rng(seed)
    return model.q0 + rng.normal(scale=0.1, size=model.nq), rng.normal(scale=50.0, size=6 * len(model.closures))


CASES = [("chain", lambda: compile_model(spatial_chain()), LOADS_CHAIN),
         ("chain with pairs", lambda: compile_model(chain_with_pairs()), LOADS_CHAIN[:1]),
         ("four bar", lambda: load_model(MODELS / "four_bar.json"), LOADS_FOUR_BAR),
         ("excavator", lambda: load_model(MODELS / "excavator_hydraulic.json"),
          [Load("arm:bucket:tip", force=(2000.0, 500.0, -10000.0), factor=1.2)])]


@pytest.mark.parametrize("name, make, loads", CASES, ids=[c[0] for c in CASES])
def test_values_equal_the_cores_joint_loads_and_forward_kinematics(name, make, loads):
    model = make()
    q, lam = random_case(model, 1)
    outs = some_outputs(model)
    overflows = core.allocations()[1]
    values = rows_at(model, q[None], lam[None], loads, parameter_catalogue(model, tuple(loads)), outs)[0][0]
    assert core.allocations()[1] == overflows  # the workspace was sized for everything the kernel took
    wrench, rotation, _ = joint_load_arrays(model, q, lam, model.gravity, applied(model, loads))
    in_joint_axes = np.concatenate([np.einsum("jik,ji->jk", rotation, wrench[:, :3]),
                                    np.einsum("jik,ji->jk", rotation, wrench[:, 3:])], axis=1)  # R^T (F, M)
    frames = forward(model, q, bodies=False).frames[:, :3, 3]
    expected = np.array([q[o.target] if o.kind == "joint" else frames[o.target, o.component] if o.kind == "frame"
                         else lam[6 * o.target + o.component] if o.kind == "pin" else
                         in_joint_axes[o.target, o.component] if o.kind == "wrench_joint" else
                         wrench[o.target, o.component] for o in outs])
    assert {o.kind for o in outs} >= ({"joint", "frame", "wrench", "wrench_joint", "pin"} if model.closures else
                                      {"joint", "frame", "wrench", "wrench_joint"})
    np.testing.assert_allclose(values, expected, rtol=1e-13, atol=1e-12 * np.max(np.abs(expected)))


@pytest.mark.parametrize("name, make, loads", CASES[:3], ids=[c[0] for c in CASES[:3]])
def test_rows_in_the_coordinates_and_multipliers_against_differences(name, make, loads):
    """All perturbed cases in one batch; Richardson's extrapolation of central differences at h and h/2."""
    model = make()
    q, lam = random_case(model, 2)
    outs = some_outputs(model)
    n, h = model.nq + len(lam), 1e-3
    steps = np.concatenate([s * np.eye(n) for s in (h, -h, h / 2, -h / 2)])
    values, rows, _ = rows_at(model, np.concatenate([q[None], q + steps[:, :model.nq]]),
                              np.concatenate([lam[None], lam + steps[:, model.nq:]]), loads, [], outs)
    plus, minus, half_plus, half_minus = np.split(values[1:], 4)
    differences = (4 * (half_plus - half_minus) / h - (plus - minus) / (2 * h)) / 3  # (n, Y)
    scale = np.max(np.abs(rows[0]), axis=1, keepdims=True) + 1e-3 * np.max(np.abs(values[0]))
    assert np.count_nonzero(rows[0][:, model.nq:]) >= (6 if model.closures else 0)
    worst = np.abs(rows[0] - differences.T) / scale
    assert np.max(worst) < 1e-8, (outs[np.argmax(worst) // n].name, np.max(worst))


def _explicit_check(model: Model, loads: list[Load], seed: int) -> set[str]:
    q, lam = random_case(model, seed)
    outs = some_outputs(model)
    params = parameter_catalogue(model, tuple(loads))
    values, _, explicit = rows_at(model, q[None], lam[None], loads, params, outs)
    for column, p in enumerate(params):
        def value(delta, p=p):
            spec, moved = edited(model.spec, loads, p.name, delta)
            return rows_at(compile_model(spec), q[None], lam[None], moved, [], outs)[0][0]

        h = 1e-3 * max(abs(p.value), 1.0)
        expected = (value(h) - value(-h)) / (2 * h) if p.kind in LINEAR else richardson(value, h)
        scale = np.max(np.abs(expected)) + 1e-9 * np.max(np.abs(values))
        np.testing.assert_allclose(explicit[0][:, column], expected, rtol=0, atol=1e-8 * scale, err_msg=p.name)
    return {p.kind for p in params if np.any(explicit[0][:, params.index(p)])}


@pytest.mark.slow
def test_explicit_partials_of_a_spatial_chain_against_edited_models():
    kinds = _explicit_check(compile_model(spatial_chain()), LOADS_CHAIN, 3)
    assert kinds == {"mass", "com", "frame", "load", "gravity"}  # springs act inside their joints: no output moves


@pytest.mark.slow
def test_explicit_partials_of_pair_springs_across_the_joints_against_edited_models():
    kinds = _explicit_check(compile_model(chain_with_pairs()), LOADS_CHAIN[:1], 12)
    assert kinds == {"mass", "com", "frame", "pair", "load", "gravity"}


@pytest.mark.slow
def test_explicit_partials_of_a_loop_with_pins_and_a_following_load_against_edited_models():
    kinds = _explicit_check(load_model(MODELS / "four_bar.json"), LOADS_FOUR_BAR, 4)
    assert {"mass", "com", "frame", "load", "gravity"} <= kinds


def ground_records(model: Model, q: np.ndarray, local: np.ndarray, nodes: np.ndarray, forces: np.ndarray,
                   rate: np.ndarray, partial: np.ndarray, dq: np.ndarray, dp: np.ndarray):
    """Point-force records (batch of one) on ``nodes`` at body points ``local`` (G, 3) at configuration q, their
    force and torque (G, 6) at q0 moved by exactly rate (G, nq, 6) . dq and partial (G, 6, P) . dp."""
    s = state(model, q[None])
    points = np.einsum("gij,gj->gi", s.rotation[0, nodes], local) + s.position[0, nodes]
    moved = forces + np.einsum("gki,k->gi", rate, dq) + np.einsum("gip,p->gi", partial, dp)
    return (nodes[None].astype(np.int64), np.concatenate([points, moved], axis=1)[None], rate[None].copy(),
            partial[None].copy())


def test_the_ground_s_point_forces_with_their_rates_and_partials():
    """Three records on the chain (one on each link, one with a torque) and two parameters of kind ``none`` whose
    only terms are the records' partials: the wrench's rows and partials against differences of its values."""
    model = compile_model(spatial_chain())
    q, lam = random_case(model, 5)
    rng = np.random.default_rng(6)
    nodes = np.array([int(model.body_node[b]) for b in (1, 2, 3)])
    local = rng.normal(size=(3, 3))
    forces = rng.normal(scale=100.0, size=(3, 6))
    forces[:2, 3:] = 0.0
    rate, partial = rng.normal(scale=100.0, size=(3, model.nq, 6)), rng.normal(size=(3, 6, 2))
    params = [Parameter(f"ground.{i}", "ground", -1, None, 1.0) for i in range(2)]
    outs = [o for o in some_outputs(model) if o.kind == "wrench"]

    def values(dq, dp):
        records = ground_records(model, q + dq, local, nodes, forces, rate, partial, dq, dp)
        return rows_at(model, (q + dq)[None], lam[None], LOADS_CHAIN, params, outs, records)

    overflows = core.allocations()[1]
    base, rows, explicit = values(np.zeros(model.nq), np.zeros(2))
    assert core.allocations()[1] == overflows
    # the values: the core's joint loads with the records' forces as extra point forces (torque-free records)
    without = values(np.zeros(model.nq), np.zeros(2))[0][0]
    applied_loads = applied(model, LOADS_CHAIN)
    loads_only, _, _ = joint_load_arrays(model, q, lam, model.gravity, applied_loads)
    assert np.max(np.abs(base[0] - loads_only[[o.target for o in outs], [o.component for o in outs]])) > 1.0
    records = ground_records(model, q, local[:2], nodes[:2], forces[:2], rate[:2], partial[:2], np.zeros(model.nq),
                             np.zeros(2))
    two = rows_at(model, q[None], lam[None], LOADS_CHAIN, params, outs, records)[0][0]
    wrench = np.empty((len(model.joints), 6))
    frames, follow, force, torque, factor = _load_arrays(model, tuple(LOADS_CHAIN))
    core.joint_loads(compiled(model), q, lam, model.gravity, frames, force * factor[:, None], torque * factor[:, None],
                     follow, nodes[:2].astype(np.int64), records[1][0, :, :3].copy(), forces[:2, :3].copy(), wrench,
                     np.empty((len(model.joints), 3, 3)), np.empty(model.nq))
    np.testing.assert_allclose(two, wrench[[o.target for o in outs], [o.component for o in outs]], rtol=1e-13,
                               atol=1e-12 * np.max(np.abs(two)))
    assert np.array_equal(without, base[0])
    h = 1e-4
    for k in range(model.nq):
        step = h * np.eye(model.nq)[k]
        expected = richardson(lambda d: values(d * step / h, np.zeros(2))[0][0], h)
        np.testing.assert_allclose(rows[0][:, k], expected, rtol=0, atol=1e-8 * np.max(np.abs(rows[0])))
    for j in range(2):
        expected = (values(np.zeros(model.nq), np.eye(2)[j])[0][0] - values(np.zeros(model.nq), -np.eye(2)[j])[0][0]) / 2
        np.testing.assert_allclose(explicit[0][:, j], expected, rtol=0, atol=1e-10 * np.max(np.abs(expected)))


def test_an_effort_s_rows_are_the_equilibrium_s_residual_stiffness_and_force_partials():
    model = load_model(MODELS / "four_bar.json")
    q, _ = random_case(model, 7)
    free = np.arange(model.nq)
    rows = independent_rows(model, q, free)
    ev = evaluate(model, q, free, model.gravity, applied(model, LOADS_FOUR_BAR), rows=rows)
    lam = np.zeros(6 * len(model.closures))
    lam[rows] = ev.multipliers
    outs = [Output(f"{name}.effort", "effort", k, 0) for k, name in enumerate(model.coordinate_names)]
    force_partial = np.random.default_rng(8).normal(size=(model.nq, 4))
    params = parameter_catalogue(model, tuple(LOADS_FOUR_BAR))[:4]
    values, state_rows, explicit = output_rows_batch(
        model, q[None], lam[None], model.gravity, tuple(LOADS_FOUR_BAR), params, outs, ev.residual[None],
        ev.hessian[None], force_partial[None])
    np.testing.assert_array_equal(values[0], -ev.residual)
    np.testing.assert_array_equal(state_rows[0][:, :model.nq], ev.hessian)
    np.testing.assert_allclose(state_rows[0][:, model.nq + rows], -ev.closure_jacobian.T, rtol=1e-14, atol=1e-15)
    np.testing.assert_array_equal(explicit[0], -force_partial)


def test_a_batch_over_threads_equals_each_case_alone():
    model = load_model(MODELS / "four_bar.json")
    outs = some_outputs(model)
    params = parameter_catalogue(model, tuple(LOADS_FOUR_BAR))
    rng = np.random.default_rng(9)
    q = model.q0 + rng.normal(scale=0.1, size=(7, model.nq))
    lam = rng.normal(scale=50.0, size=(7, 6 * len(model.closures)))
    batch = rows_at(model, q, lam, LOADS_FOUR_BAR, params, outs, threads=3)
    for b in range(7):
        alone = rows_at(model, q[b:b + 1], lam[b:b + 1], LOADS_FOUR_BAR, params, outs, threads=1)
        assert all(np.array_equal(x[b], y[0]) for x, y in zip(batch, alone))
    assert not np.array_equal(batch[2][0], batch[2][1])


def _call(model: Model, codes: np.ndarray, ground_node=None, chosen=None):
    frames, follow, force, torque, factor = _load_arrays(model, ())
    start, motion = _motion_arrays(model)
    nq, columns, y = model.nq, model.nq + 6 * len(model.closures), len(codes)
    nodes = np.zeros((1, 0), np.int64) if ground_node is None else np.array([[ground_node]], np.int64)
    g = nodes.shape[1]
    core.output_partials(compiled(model), model.q0[None].copy(), np.zeros((1, 6 * len(model.closures))),
                         model.gravity[None].copy(), frames, force[None].copy(), torque[None].copy(),
                         factor[None].copy(), follow, parameter_codes(model, (), []), start, motion, nodes,
                         np.zeros((1, g, 9)), np.zeros((1, g, nq, 6)), np.zeros((1, g, 6, 0)), np.zeros((1, nq)),
                         np.zeros((1, nq, nq)), np.zeros((1, nq, 0)), np.ascontiguousarray(codes, dtype=np.int64),
                         np.arange(columns) if chosen is None else chosen, np.zeros((1, y)),
                         np.zeros((1, y, columns if chosen is None else len(chosen))), np.zeros((1, y, 0)), 1)


def test_bad_output_rows_and_columns_are_refused_naming_them():
    model = load_model(MODELS / "four_bar.json")
    good = output_codes(model, some_outputs(model))
    _call(model, good)
    closing = next(i for i, j in enumerate(model.joints) if not j.in_tree)
    for row, column, bad in ((3, 1, 10_000), (5, 2, 7), (4, 3, 1)):
        broken = good.copy()
        broken[row, column] = bad
        with pytest.raises(ValueError, match=f"output row {row}"):
            _call(model, broken)
    wrench = good.copy()
    for kind in (3, 5):  # the wrench of a loop-closing joint (world or joint axes): a pin output instead
        wrench[0] = (kind, closing, 0, 0)
        with pytest.raises(ValueError, match="output row 0.*tree joint"):
            _call(model, wrench)
    with pytest.raises(ValueError, match="ground_node 0 is 999"):
        _call(model, good, ground_node=999)
    with pytest.raises(ValueError, match="outputs"):
        _call(model, good[:, :3].copy())
    with pytest.raises(ValueError, match="columns: index 10 outside"):  # nq + 6 K = 4 + 6 columns
        _call(model, good, chosen=np.array([0, 10]))


def test_a_failed_allocation_leaves_nothing_behind():
    model = load_model(MODELS / "four_bar.json")
    outs = some_outputs(model)
    params = parameter_catalogue(model, tuple(LOADS_FOUR_BAR))
    q, lam = random_case(model, 10)

    def call():
        return rows_at(model, q[None], lam[None], LOADS_FOUR_BAR, params, outs)

    (values, rows, explicit), failures = fails_cleanly_at_every_allocation(call)
    again = call()
    assert failures >= 1 and np.array_equal(rows, again[1]) and np.array_equal(explicit, again[2])


def test_a_load_with_factor_zero_still_has_a_factor_partial():
    """The factor's partial is the load per unit factor, not the applied load divided by its factor."""
    model = compile_model(spatial_chain())
    loads = [dataclasses.replace(LOADS_CHAIN[1], factor=0.0)]
    params = [p for p in parameter_catalogue(model, tuple(loads)) if p.name.endswith(".factor")]
    outs = [o for o in some_outputs(model) if o.kind == "wrench"]
    q, lam = random_case(model, 11)
    _, _, explicit = rows_at(model, q[None], lam[None], loads, params, outs)
    ones = [dataclasses.replace(loads[0], factor=1.0)]
    with_load = rows_at(model, q[None], lam[None], ones, [], outs)[0][0]
    without = rows_at(model, q[None], lam[None], loads, [], outs)[0][0]
    np.testing.assert_allclose(explicit[0][:, 0], with_load - without, rtol=1e-13, atol=1e-12 * np.max(np.abs(without)))
    assert np.all(np.isfinite(explicit))
