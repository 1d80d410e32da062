"""The single solve's Python work (issue 27): a small solve does not ask the system how much memory is left, a large
one still does and is refused when it would not fit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from shiftsim.core import memory
from shiftsim.model import compile_model
from shiftsim.statics import SMALL_SOLVE_BYTES, solve

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_statics import planar_chain_spec  # noqa: E402


def test_a_small_solve_skips_the_memory_check_and_a_large_one_is_still_refused(monkeypatch):
    small, large = compile_model(planar_chain_spec(10)), compile_model(planar_chain_spec(130))
    assert 2 * memory.solve_bytes(small.nq, 0) < SMALL_SOLVE_BYTES < memory.solve_bytes(large.nq, 0)
    monkeypatch.setattr(memory, "usable_bytes", lambda: 0.0)  # as if nothing were left
    assert solve(small).converged
    with pytest.raises(memory.SolveTooLarge, match="more than the memory this process may still take"):
        solve(large)
