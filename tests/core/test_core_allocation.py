"""Every allocation the compiled core makes can fail without a crash or a leak (issue 24, issue 25 item 2).

The core's debug hook fails the n-th allocation from now (``_core.fail_allocation``); each entry point is run
with n = 1, 2, ... until it needs fewer allocations than n. Every failing call must raise MemoryError naming the
model's size, leave no block allocated (``_core.live_allocations``), and the call that finally succeeds must
give the same numbers as one never disturbed. Each call fails exactly as many times as it allocates
(``_core.allocations``): its workspaces, one per entry point and thread (test_core_workspace.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.core import fails_cleanly_at_every_allocation

from shiftsim.core.library import core
from shiftsim.kinematics import forward, state
from shiftsim.loading import load_model
from shiftsim.statics import evaluate, free_coordinates, solve, solve_batch

MODELS = Path(__file__).resolve().parents[2] / "models" / "shift"


@pytest.fixture(scope="module")
def four_bar():
    return load_model(MODELS / "four_bar.json")


def allocations(call):
    """How many allocations call() makes."""
    before = core.allocations()[0]
    call()
    return core.allocations()[0] - before


def test_a_solve_fails_cleanly_at_every_allocation(four_bar):
    reference = solve(four_bar)
    result, failures = fails_cleanly_at_every_allocation(lambda: solve(four_bar))
    assert failures == allocations(lambda: solve(four_bar)) >= 2 and np.array_equal(result.q, reference.q)


def test_a_batch_on_two_threads_fails_cleanly_at_every_allocation(four_bar):
    free = free_coordinates(four_bar, np.zeros(four_bar.nq, bool))
    starts = np.tile(four_bar.q0, (4, 1))
    gravity = np.array([[0.0, 0.0, -9.81], [0.0, 0.0, -5.0], [0.0, 0.0, -9.81], [0.0, 0.0, -1.0]])
    reference = solve_batch(four_bar, starts, free, gravity, threads=2)
    call = lambda: solve_batch(four_bar, starts, free, gravity, threads=2)  # noqa: E731
    result, failures = fails_cleanly_at_every_allocation(call)
    assert failures == allocations(call) >= 2 and np.array_equal(result.q, reference.q)


def test_kinematics_and_evaluation_fail_cleanly_at_every_allocation(four_bar):
    q = np.tile(four_bar.q0, (80, 1))  # 64 or more: spread over threads
    for call in (lambda: forward(four_bar, q).frames, lambda: state(four_bar, q).position,
                 lambda: evaluate(four_bar, four_bar.q0, free_coordinates(four_bar, np.zeros(four_bar.nq, bool)),
                                  four_bar.gravity).hessian):
        reference = call()
        result, failures = fails_cleanly_at_every_allocation(call)
        assert failures == allocations(call) >= 1 and np.array_equal(result, reference)


def test_pivoted_rank_fails_cleanly():
    a = np.random.default_rng(3).normal(size=(6, 9))
    order = np.zeros(9, np.int64)
    rank, failures = fails_cleanly_at_every_allocation(lambda: core.pivoted_rank(a, 1e-9, order))
    assert failures == 1 and rank == np.linalg.matrix_rank(a) == 6


def test_the_other_entry_points_fail_cleanly_at_every_allocation(four_bar):
    """Closure rows, force terms, joint loads and loop assembly: each opens its own workspace, and a failure to get
    it is a MemoryError naming the model's size (the helper checks the message) that leaves nothing."""
    from shiftsim.forces import gravity_and_world_forces
    from shiftsim.kinematics import assemble, closure_jacobian
    from shiftsim.solution import joint_load_arrays

    solved = solve(four_bar)
    s = state(four_bar, four_bar.q0[None])
    opened = four_bar.q0 + 0.05
    for call in (lambda: closure_jacobian(four_bar, s),
                 lambda: gravity_and_world_forces(four_bar, s, four_bar.gravity[None], []).stiffness,
                 lambda: joint_load_arrays(four_bar, solved.q, solved.multipliers, four_bar.gravity, [])[2],
                 lambda: assemble(four_bar, opened).q):
        reference = call()
        result, failures = fails_cleanly_at_every_allocation(call)
        assert failures == allocations(call) >= 1 and np.array_equal(result, reference)
