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
