"""Sweep tables and their partition into continuation chains (fixed by the scenario, never by --jobs)."""

from __future__ import annotations

import pytest

import numpy as np
from helpers.scenario import beam_scenario, write_scenario

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


# -- issue 17, item 5: sweep sizes are counted before anything is built ----------------------------------

import pytest  # noqa: E402
from helpers.scenario import model_path, run_cli  # noqa: E402

from shiftsim.errors import ScenarioError  # noqa: E402
from shiftsim.scenario.sweep import MAX_STEPS, OversizedRange, check_size  # noqa: E402


@pytest.mark.slow
def test_a_billion_step_range_is_counted_not_built():
    values = expand({"from": 0, "to": 1, "steps": 1_000_000_000})
    assert isinstance(values, OversizedRange) and len(values) == 1_000_000_000
    with pytest.raises(ScenarioError, match="a range of 1,000,000,000 steps"):
        values[0]
    with pytest.raises(ScenarioError, match="a range of 1,000,000,000 steps"):
        list(zip(values, values))
    limit = expand({"from": 0, "to": 1, "steps": MAX_STEPS})  # the limit itself is built, as np.linspace does
    assert limit == tuple(np.linspace(0, 1, MAX_STEPS).tolist())


def test_sizes_are_counted_from_value_counts():
    grid = Sweep("grid", (A, B), (expand({"from": 0, "to": 1, "steps": 100_000}),) * 2)
    assert grid.size == 10**10
    with pytest.raises(ScenarioError) as error:
        check_size(grid, "grid.json")
    assert str(error.value) == ("grid.json: sweep: 10,000,000,000 steps (100,000 x 100,000 grid), more than a run "
                                "can hold (expected at most 1,000,000 steps)")
    for build in (grid.table, grid.chains):
        with pytest.raises(ScenarioError, match="10,000,000,000 steps"):
            build()
    at_limit = Sweep("grid", (A, B), (tuple(range(1000)), tuple(range(1000))))
    assert at_limit.size == MAX_STEPS
    check_size(at_limit, "ok.json")
    assert Sweep("line", (A,), ((1.0, 2.0),)).size == 2 and Sweep().size == 1


def test_the_table_is_built_once_and_read_only():
    sweep = Sweep("grid", (A, B), ((1.0, 2.0), (3.0, 4.0, 5.0)))
    table = sweep.table()
    assert sweep.table() is table and table.shape == (6, 2) and not table.flags.writeable
    np.testing.assert_array_equal(table, [(a, b) for a in (1.0, 2.0) for b in (3.0, 4.0, 5.0)])


@pytest.mark.parametrize("command", ["run", "collide"])
@pytest.mark.parametrize("sweep, count", [
    ({"parameters": {"fb:four_bar:crank_pin": {"from": -1, "to": 1, "steps": 1_000_000_000}}}, "1,000,000,000 steps"),
    ({"mode": "grid", "parameters": {"fb:four_bar:crank_pin": {"from": -1, "to": 1, "steps": 100_000},
                                     "load:tip": {"from": 0, "to": 1, "steps": 100_000}}},
     "10,000,000,000 steps (100,000 x 100,000 grid)"),
    ({"parameters": {"time": {"from": 0, "to": 1, "steps": 100_000_000}}}, "100,000,000 steps"),
])
def test_absurd_sweeps_are_refused_with_the_count(tmp_path, capsys, command, sweep, count):
    document = beam_scenario(machines=[{"id": "fb", "model": model_path("four_bar")}],
                             loads=[{"name": "tip", "frame": "fb:four_bar:coupler:tip", "force": [0, 0, -50.0]}],
                             track={}, sweep=sweep)
    path = write_scenario(tmp_path, document)
    args = [command, path] + (["-o", tmp_path / "out"] if command == "run" else [])
    code, _, err = run_cli(capsys, *args)
    assert code == 2 and f"{path}: sweep: {count}, more than a run can hold (expected at most 1,000,000 steps)" in err
    assert not (tmp_path / "out").exists()
