"""The single solve's Python work (issue 27): a small solve does not ask the system how much memory is left, a large
one still does and is refused when it would not fit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from shiftsim.core import memory
from shiftsim.model import compile_model
from shiftsim.statics import SMALL_SOLVE_BYTES, solve

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_statics import planar_chain_spec  # noqa: E402


def test_a_small_solve_skips_the_memory_check_and_a_large_one_is_still_refused(monkeypatch):
    small, large = compile_model(planar_chain_spec(10)), compile_model(planar_chain_spec(130))
    assert 2 * memory.solve_bytes(small.nq, 0) < SMALL_SOLVE_BYTES < memory.solve_bytes(large.nq, 0)
    monkeypatch.setattr(memory, "usable_bytes", lambda: 0.0)  # as if nothing were left
    assert solve(small).converged
    with pytest.raises(memory.SolveTooLarge, match="more than the memory this process may still take"):
        solve(large)


def test_the_pin_reaction_table_is_built_once_and_each_call_gets_its_own_copy():
    from shiftsim.loading import load_model
    from helpers.scenario import model_path

    solution = solve(load_model(model_path("excavator")), hold=["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"])
    first = solution.pin_reactions()
    first["arm:boom_cyl"]["force"] = -1.0
    second = solution.pin_reactions()
    assert second["arm:boom_cyl"]["force"] > 0 and second == solution.as_dict()["pin_reactions"]
    assert second["arm:boom_cyl"]["role"] == "held actuator" and len(second) > 3


def test_the_reference_is_solved_only_when_deflections_are_asked_for(monkeypatch):
    import numpy as np

    from shiftsim import statics
    from shiftsim.statics import Load

    model = compile_model(planar_chain_spec(6))
    calls = []
    real = statics._solve_cases
    monkeypatch.setattr(statics, "_solve_cases", lambda *args, **kw: calls.append(args[4].copy()) or real(*args, **kw))
    solution = solve(model, loads=[Load("link5:tip", (0.0, 0.0, -50.0))])
    assert solution.converged and len(calls) == 1 and np.any(calls[0])  # the loaded case only, with its gravity
    # the reference: no gravity, no loads, springs at rest (0 rad, their rest angle, from the straight start)
    assert np.allclose(solution.q_reference, 0.0, atol=1e-12) and len(calls) == 2 and not np.any(calls[1])
    deflection = solution.as_dict()["joints"]["joint3"]["deflection"]
    assert deflection == solution.q[3] - solution.q_reference[3] and abs(deflection) > 1e-3 and len(calls) == 2


def test_the_lazy_parts_of_a_solution_equal_the_ones_built_at_once():
    import numpy as np

    from shiftsim.loading import load_model
    from shiftsim.solution import joint_load_arrays, loop_joints
    from helpers.scenario import model_path

    model = load_model(model_path("excavator"))
    held = ["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"]
    solution = solve(model, hold=held)
    wrench, _, effort = joint_load_arrays(model, solution.q, solution.multipliers, solution.gravity, solution.loads)
    assert np.array_equal(solution.joint_loads.wrench_world, wrench) and np.array_equal(solution.joint_loads.effort, effort)
    assert solution.held == frozenset(held) and set(solution.pin_reactions()) >= set(held)
    assert len(solution.pin_reactions()) == len(set(held) | {model.joints[j].name for j in loop_joints(model)})
    # the loop forces balance: the multipliers the Solution reports are an equilibrium's (residual at tolerance)
    from shiftsim.solution import body_balance

    balance = body_balance(model, solution.q, solution.multipliers, solution.gravity, solution.loads)
    assert np.max(np.abs(balance)) < 1e-6 * model.total_mass * 9.81
