"""Continuation chains in compiled code (statics.solve_chain, core/src/chain.c) against the step-by-step solve.

The reference is what a sweep did before chains: per step :func:`shiftsim.solve` with ``q_start`` the previous
step's equilibrium (Python's assembly with increments, the rows chosen at the assembled pose, the loaded solve, the
lazily solved reference, the joint loads), so a chain must give the same numbers to round-off.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import shiftsim
from shiftsim.statics import Load, applied, resolve_prescribed, solve, solve_chain

MODEL = Path(__file__).resolve().parents[2] / "models" / "shift" / "excavator_hydraulic.json"
HELD = {"arm:stick_cyl": 3.16, "arm:bucket_cyl": 1.9}
PAYLOAD = [Load("arm:bucket:tip", (0.0, 0.0, -14715.0), (0.0, 0.0, 0.0), "world", 1.0)]


@pytest.fixture(scope="module")
def model():
    return shiftsim.load_model(MODEL)


def _targets(model, strokes, held=HELD):
    """Per step the coordinates with the prescribed values set; the prescribed coordinates."""
    rows, prescribed = [], None
    for stroke in strokes:
        q, prescribed = resolve_prescribed(model, {**held, "arm:boom_cyl": float(stroke)}, [])
        rows.append(q)
    return np.array(rows), prescribed


def _step_by_step(model, strokes, start, held=HELD):
    solutions, previous = [], start
    for stroke in strokes:
        solution = solve(model, set={**held, "arm:boom_cyl": float(stroke)}, loads=PAYLOAD, q_start=previous)
        solutions.append(solution)
        previous = solution.q
    return solutions


def _chain(model, strokes, chain_start, q_first, held=HELD):
    target, prescribed = _targets(model, strokes, held)
    steps = len(strokes)
    return solve_chain(model, q_first, target, prescribed, np.asarray(chain_start),
                       np.broadcast_to(model.gravity, (steps, 3)), applied(model, PAYLOAD, steps), threads=2)


def _start(model, held=HELD):
    target, prescribed = _targets(model, [2.0], held)
    return shiftsim.assemble(model, target[0], held=prescribed, start=model.q0).q


def test_a_chain_gives_the_step_by_step_equilibria_loads_and_references(model):
    strokes = np.linspace(1.9, 2.9, 12)
    start = _start(model)
    chain = _chain(model, strokes, [0, len(strokes)], start[None])
    assert chain.plain.all(), chain.outcome
    for k, solution in enumerate(_step_by_step(model, strokes, start)):
        scale = np.abs(solution.joint_loads.wrench_world).max()
        np.testing.assert_allclose(chain.q[k], solution.q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(chain.q_reference[k], solution.q_reference, rtol=0, atol=1e-12)
        np.testing.assert_allclose(chain.wrench_world[k], solution.joint_loads.wrench_world, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(chain.effort[k], solution.joint_loads.effort, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(chain.rotation[k], solution.joint_loads.rotation, rtol=0, atol=1e-12)
        assert chain.iterations[k] == solution.iterations and chain.stability[k] == solution.stability
    # the boom really moved, and the payload really loads it: the chain did not return its starts
    assert np.ptp(chain.q[:, model.coordinates_of("arm:boom_pivot")[0]]) > 0.3
    assert not np.allclose(chain.q, chain.q_reference)


def test_independent_chains_each_start_from_their_own_first_pose(model):
    strokes = np.concatenate([np.linspace(2.0, 2.4, 4), np.linspace(2.0, 1.95, 3)])
    start = _start(model)
    together = _chain(model, strokes, [0, 4, 7], np.stack([start, start]))
    apart = [_chain(model, strokes[:4], [0, 4], start[None]), _chain(model, strokes[4:], [0, 3], start[None])]
    np.testing.assert_array_equal(together.q, np.concatenate([a.q for a in apart]))
    np.testing.assert_array_equal(together.q_reference, np.concatenate([a.q_reference for a in apart]))
    solutions = _step_by_step(model, strokes[4:], start)
    np.testing.assert_allclose(together.q[4:], [s.q for s in solutions], rtol=0, atol=1e-12)


def test_a_step_whose_loops_cannot_close_ends_its_chain_there(model):
    held = {**HELD, "arm:boom_cyl_oil": 0.0}  # no oil column to give: a 40 m boom cylinder cannot close its loop
    strokes = np.array([2.0, 2.1, 40.0, 2.2])
    start = _start(model, held)
    with pytest.raises(shiftsim.SolveError, match="the loops cannot close"):
        _step_by_step(model, strokes, start, held)
    chain = _chain(model, strokes, [0, 4], start[None], held)
    assert list(chain.outcome) == ["plain", "plain", "not_closed", "not_solved"]


def test_chain_start_must_cover_the_steps(model):
    strokes = np.array([2.0, 2.1])
    with pytest.raises(ValueError, match="chain_start"):
        _chain(model, strokes, [0, 1], _start(model)[None])
