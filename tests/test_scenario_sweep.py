"""Sweep tables and their partition into continuation chains (fixed by the scenario, never by --jobs)."""

from __future__ import annotations

import numpy as np
from test_scenario_support import beam_scenario, write_scenario

from shiftsim.scenario import load_scenario
from shiftsim.scenario.sweep import Parameter, Sweep, expand

A, B, C = (Parameter(n, "load", "-", target=n) for n in "abc")


def test_expand_lists_and_ranges():
    assert expand([3, 1.5]) == (3.0, 1.5)
    assert expand({"from": 0, "to": 1, "steps": 5}) == (0.0, 0.25, 0.5, 0.75, 1.0)
    assert expand({"from": 2, "to": 9, "steps": 1}) == (2.0,)


def test_no_sweep_is_one_step():
    sweep = Sweep()
    assert sweep.table().shape == (1, 0) and sweep.chains() == [(0,)] and sweep.names == []


def test_line_steps_together_and_is_one_chain():
    sweep = Sweep("line", (A, B), ((1.0, 2.0, 3.0), (10.0, 20.0, 30.0)))
    np.testing.assert_array_equal(sweep.table(), [[1, 10], [2, 20], [3, 30]])
    assert sweep.chains() == [(0, 1, 2)]
    assert Sweep("line", (A,), ((1.0, 2.0, 3.0, 4.0, 5.0),), segment=2).chains() == [(0, 1), (2, 3), (4,)]


def test_grid_order_and_chains_along_the_last_parameter():
    sweep = Sweep("grid", (A, B, C), ((1.0, 2.0), (5.0, 6.0, 7.0), (0.0, 0.5)))
    table = sweep.table()
    assert table.shape == (12, 3)
    expected = [(a, b, c) for a in (1.0, 2.0) for b in (5.0, 6.0, 7.0) for c in (0.0, 0.5)]
    np.testing.assert_array_equal(table, expected)
    chains = sweep.chains()
    assert chains == [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11)]
    for chain in chains:  # along a chain only the last parameter changes
        assert len({tuple(table[i, :2]) for i in chain}) == 1
    segmented = Sweep("grid", (A, C), ((1.0, 2.0), (0.0, 0.1, 0.2)), segment=2).chains()
    assert segmented == [(0, 1), (2,), (3, 4), (5,)]


def test_chains_cover_every_step_once():
    sweep = Sweep("grid", (A, B), ((1.0, 2.0, 3.0), (1.0, 2.0, 3.0, 4.0)), segment=3)
    steps = [i for chain in sweep.chains() for i in chain]
    assert sorted(steps) == list(range(12))


def test_scenario_parameters_resolve_with_units(tmp_path):
    document = beam_scenario(sweep={"mode": "grid", "parameters": {"beam:hinge2": [0.0, 0.1], "load:tip": [1.0],
                                                                   "time": {"from": 0, "to": 2, "steps": 3}}})
    sweep = load_scenario(write_scenario(tmp_path, document)).sweep
    assert [(p.name, p.kind, p.unit, p.machine, p.target) for p in sweep.parameters] == [
        ("beam:hinge2", "joint", "rad", "beam", "hinge2"), ("load:tip", "load", "-", None, "tip"),
        ("time", "time", "s", None, None)]
    assert sweep.table().shape == (6, 3) and len(sweep.chains()) == 2
