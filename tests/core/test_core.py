"""The compiled core as a library: batches equal single solves, threads change nothing, callbacks, buffers.

The numbers themselves are checked elsewhere against independent references (finite differences in
test_statics_stiffness.py, closed forms in test_statics.py, robust cases in test_statics_robust.py); here the
properties of the core's machinery that those tests cannot see.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

from shiftsim.core.layout import compiled
from shiftsim.core.library import STATUSES, core
from shiftsim.core.problem import settings
from shiftsim.forces import ForceTerms
from shiftsim.kinematics import forward
from shiftsim.loading import load_model
from shiftsim.statics import SolverOptions, evaluate, free_coordinates, resolve_prescribed, solve, solve_batch

MODELS = Path(__file__).resolve().parents[2] / "models"


def _cases(model, hold, count, seed=0):
    q, prescribed = resolve_prescribed(model, {}, hold)
    free = free_coordinates(model, prescribed)
    rng = np.random.default_rng(seed)
    gravity = model.gravity[None] * rng.uniform(0.2, 1.5, (count, 1))
    return np.repeat(q[None], count, axis=0), free, gravity


@pytest.mark.parametrize("name, hold", [("shift/cantilever10.json", []),
                                        ("shift/excavator_hydraulic.json", ["arm:boom_cyl", "arm:stick_cyl",
                                                                            "arm:bucket_cyl"])])
def test_a_batch_equals_its_cases_solved_one_at_a_time_on_any_number_of_threads(name, hold):
    model = load_model(MODELS / name)
    q, free, gravity = _cases(model, hold, 12)
    one = solve_batch(model, q, free, gravity, threads=1)
    two = solve_batch(model, q, free, gravity, threads=2)
    assert one.converged.all() and len(set(one.iterations.tolist())) >= 1
    alone = [solve_batch(model, q[b:b + 1], free, gravity[b:b + 1], threads=1) for b in range(len(q))]
    for b in range(len(q)):
        assert np.array_equal(one.q[b], alone[b].q[0]) and np.array_equal(two.q[b], one.q[b])
        assert np.array_equal(one.multipliers[b], alone[b].multipliers[0])
        assert one.iterations[b] == alone[b].iterations[0] == two.iterations[b]
    assert len({tuple(np.round(x, 9)) for x in one.q}) == len(q)  # the cases differ: the test can fail


def test_forward_into_given_poses_equals_the_allocating_call():
    model = load_model(MODELS / "shift/excavator.json")
    rng = np.random.default_rng(2)
    out = forward(model, model.q0)
    for _ in range(5):
        q = model.q0 + rng.normal(0.0, 0.3, model.nq)
        expected = forward(model, q)
        again = forward(model, q, out=out)
        assert again is out
        assert np.array_equal(out.frames, expected.frames) and np.array_equal(out.bodies, expected.bodies)


def test_an_exception_in_a_force_field_reaches_the_caller():
    model = load_model(MODELS / "shift/cantilever10.json")

    class Broken:
        def terms(self, model, s):
            raise RuntimeError("field failed on purpose")

        def point_forces(self, model, s):
            return []

    with pytest.raises(RuntimeError, match="on purpose"):
        solve(model, fields=(Broken(),))


def test_a_force_field_enters_the_solve_through_the_callback():
    """A constant generalized force on the first coordinate, given as a field: at the solve's equilibrium the
    model's own forces (evaluated without the field) balance exactly that push."""
    model = load_model(MODELS / "shift/cantilever10.json")
    push = np.zeros(model.nq)
    push[0] = 3.0

    class Push:
        def terms(self, model, s):
            batch = s.q.shape[0]
            return ForceTerms(np.tile(push, (batch, 1)), np.zeros((batch, model.nq, model.nq)),
                              -s.q @ push, True)

        def point_forces(self, model, s):
            return []

    q, free, gravity = _cases(model, [], 1)
    with_field = solve_batch(model, q, free, gravity, fields=(Push(),))
    without = solve_batch(model, q, free, gravity)
    assert with_field.converged[0] and without.converged[0]
    assert abs(with_field.q[0, 0] - without.q[0, 0]) > 1e-6  # the field moved the first joint
    own = evaluate(model, with_field.q[0], free, gravity[0]).residual
    np.testing.assert_allclose(own, -push[free], atol=1e-8)


def test_pivoted_rank_agrees_with_scipy_and_numpy_on_random_rank_deficient_matrices():
    rng = np.random.default_rng(1)
    for _ in range(200):
        rows, cols = rng.integers(1, 12), rng.integers(1, 30)
        k = rng.integers(0, min(rows, cols) + 1)
        a = rng.normal(size=(rows, k)) @ rng.normal(size=(k, cols)) if k else np.zeros((rows, cols))
        order = np.empty(cols, dtype=np.int64)
        rank = core.pivoted_rank(np.ascontiguousarray(a), 1e-9, order)
        _, r, pivots = scipy.linalg.qr(a, pivoting=True, mode="economic")
        diagonal = np.abs(np.diag(r))
        assert rank == np.sum(diagonal > 1e-9 * max(diagonal.max(initial=0.0), 1.0)) == np.linalg.matrix_rank(a)
        assert sorted(order.tolist()) == list(range(cols))
        if rank:
            assert np.linalg.matrix_rank(a[:, order[:rank]]) == rank  # the chosen columns are independent


def test_the_core_refuses_arrays_of_the_wrong_kind_with_a_clear_error():
    model = load_model(MODELS / "shift/cantilever10.json")
    q = np.zeros((1, model.nq), dtype=np.float32)
    with pytest.raises(TypeError, match="float64"):
        core.forward(compiled(model), q, None, None, 1)
    with pytest.raises(TypeError, match="C-contiguous"):
        core.forward(compiled(model), np.zeros((model.nq, 2)).T, None, None, 1)


def test_a_pickled_model_rebuilds_its_compiled_form():
    import pickle

    model = load_model(MODELS / "shift/four_bar.json")
    before = forward(model, model.q0).frames
    copy = pickle.loads(pickle.dumps(model))
    assert "core_model" not in copy.cache and "core_model" in model.cache
    assert np.array_equal(forward(copy, copy.q0).frames, before)


def test_loads_and_gravity_scale_per_case():
    """Each case of a batch has its own force floor and size: a case with ten times the gravity is solved as
    it would be alone (the floor is not the batch's largest)."""
    model = load_model(MODELS / "shift/four_bar.json")
    q, free, _ = _cases(model, [], 2)
    gravity = np.stack([model.gravity, 10.0 * model.gravity])
    both = solve_batch(model, q, free, gravity)
    for b in range(2):
        alone = solve_batch(model, q[b:b + 1], free, gravity[b:b + 1])
        assert np.array_equal(both.q[b], alone.q[0])


def test_a_non_finite_force_never_converges():
    """NaN must fail every test of the iteration (C's fmax would drop it: the core's maxima propagate it)."""
    from shiftsim.statics import Load

    model = load_model(MODELS / "shift/cantilever10.json")
    result = solve(model, loads=[Load(model.frame_names[-1], force=(float("nan"), 0.0, 0.0))])
    assert result.status == "failed" and not result.converged


def test_a_coupled_model_is_freed_after_a_solve():
    """The problems kept on a model call its couplings back; they must not keep the model alive."""
    import gc
    import weakref

    model = load_model(Path(__file__).resolve().parents[1] / "data" / "claraty" / "two_link_sample.xml")
    assert model.couplings
    assert solve(model).converged
    owner = weakref.ref(model)
    del model
    gc.collect()
    assert owner() is None


def test_arrays_of_the_wrong_size_are_refused_before_the_core_reads_them():
    """The core reads exactly the sizes the model implies: anything else is a ValueError naming the array, never
    a read past the end."""
    model = load_model(MODELS / "shift/cantilever10.json")
    with pytest.raises(ValueError, match="q: 11 items, expected 10"):
        core.forward(compiled(model), np.zeros(model.nq + 1), None, None, 1)
    poses = forward(model, model.q0)
    with pytest.raises(ValueError, match="frames"):
        core.forward(compiled(model), model.q0, None, poses.frames[:-1].copy(), 1)
    free = np.arange(model.nq)
    with pytest.raises(ValueError, match="q_start"):
        solve_batch(model, np.zeros((2, model.nq + 3)), free, model.gravity)
    with pytest.raises(IndexError):  # numpy's own refusal on the way to the core
        solve_batch(model, model.q0[None], np.array([0, 99]), model.gravity)
    with pytest.raises(ValueError, match="free: index 99"):  # and the core's, for a caller that goes straight to it
        core.problem(compiled(model), np.array([0, 99]), np.zeros(0, np.int64), np.zeros(2, np.int64),
                     np.zeros(0, np.int64), np.zeros(0, np.int64), None, None, None, 0, settings(SolverOptions()))


def test_the_boundary_tables_are_one_list_on_both_sides():
    """fields.h defines each table once; the Python modules that fill or read them hold the same names in the same
    order (checked at import), and the settings record is read by name."""
    from shiftsim.core import layout, problem

    assert core.MODEL_FIELDS == layout.MODEL_FIELDS and len(core.MODEL_FIELDS) == 32
    assert core.SETTINGS_FIELDS == tuple(problem.SETTINGS) and len(core.SETTINGS_FIELDS) == 12
    assert len(core.RESULT_FLAGS) == 7 and len(core.EVALUATION_SCALARS) == 5
    assert core.DISTANCE_TYPES == tuple(sorted(layout.DISTANCE_TYPES, key=layout.DISTANCE_TYPES.get))
    assert core.STATUSES == STATUSES and core.STATUSES[0] == "ok" and len(core.STATUS_MESSAGES) == len(STATUSES)
    model = load_model(MODELS / "shift/four_bar.json")
    record = settings(SolverOptions())
    del record["max_step"]
    with pytest.raises(ValueError, match="SETTINGS_FIELDS"):
        core.problem(compiled(model), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                     np.zeros(0, np.int64), np.zeros(0, np.int64), None, None, None, 0, record)
    record["max_stp"] = 1.0
    with pytest.raises(KeyError, match="max_step"):
        core.problem(compiled(model), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                     np.zeros(0, np.int64), np.zeros(0, np.int64), None, None, None, 0, record)


@pytest.mark.slow
def test_a_python_table_that_disagrees_with_the_core_fails_at_import():
    import subprocess
    import sys

    script = ("import shiftsim.core.library as library\n"
              "library.core.RESULT_FLAGS = library.core.RESULT_FLAGS[::-1]\n"
              "import shiftsim.core.problem\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode != 0 and "ImportError" in done.stderr and "RESULT_FLAGS" in done.stderr
    assert "'converged', 'iterations'" in done.stderr and "'force_floor', 'size'" in done.stderr


def test_the_model_is_written_only_through_its_declared_cache():
    """The frozen Model keeps derived data in one declared place (``Model.cache``, its keys in ``ModelCache``): after
    solving, kinematics and the derived tables, nothing else was written on it, and a pickle leaves the cache out."""
    import dataclasses
    import pickle

    from shiftsim.model import ModelCache

    model = load_model(MODELS / "shift/excavator_hydraulic.json")
    assert solve(model).converged and forward(model, model.q0).frames.shape[0] == len(model.frame_names)
    assert model.subtree[0].all() and model.joint_names and model.frame_index(model.frame_names[-1]) >= 0
    assert set(vars(model)) == {f.name for f in dataclasses.fields(model)}
    assert {"subtree", "joint_names", "core_model"} <= set(model.cache) <= set(ModelCache.__annotations__)
    assert pickle.loads(pickle.dumps(model)).cache == {}


def test_an_iteration_that_is_stuck_stops_where_every_further_one_would_repeat_it():
    """A machine pulled far past tipping: the line search finds no step that lowers the energy, so q and the
    evaluation stay as they are and every further iteration would be the same one. The iteration stops there: any
    iteration limit beyond that point gives the same iterate, bit for bit, and the same count."""
    from helpers.ground import GRAVITY, free_of, machine, standing

    from shiftsim.forces import AppliedLoad

    stand, q = standing(machine())
    hook = [AppliedLoad(stand.model.frame_index("upper:hook"), np.array([0.0, 0.0, -5e4]), np.zeros(3), False)]
    runs = [stand.solve(q, free_of(stand.model), GRAVITY, hook,
                        options=SolverOptions(max_iterations=n, full_load_iterations=n, load_stepping=False))[0]
            for n in (25, 60)]
    assert not runs[0].converged and not runs[1].converged
    assert runs[0].iterations == runs[1].iterations < 25 and np.array_equal(runs[0].q, runs[1].q)
