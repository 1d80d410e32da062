"""The block path of a chain (shiftsim.scenario.chain) against the step-by-step path it replaces.

The oracle is the step path (``run_chain(..., blocks=False)``: per step ``solve_step``, a ``Solution`` and its
dictionaries). Both runs stream into a results store (``ResultsStream``, as ``shiftsim run`` does); the stores must hold
the same rows, names for names and values to 1e-12 relative, and the steps' results.json objects the same fields.
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from helpers.scenario import SCENARIOS, shortened_scenario, write_scenario
from helpers.statics import loop_spec, twin_cylinder_spec

from shiftsim.loads import indeterminate_directions, statically_open
from shiftsim.output.store import ResultsStore
from shiftsim.output.write import ResultsStream
from shiftsim.scenario import load_scenario
from shiftsim.analysis.digest import RunDigest, result_lines
from shiftsim.scenario.chain import (BlockRows, BlockStep, _verdict_ranks, attach_blocks, block_path_problem,
                                     block_runs, run_chain, run_chains)
from shiftsim.model import compile_model
from shiftsim.kinematics import closure_jacobian, state
from shiftsim.statics import STABILITY, free_coordinates, solve, solve_chain

BLOCK_SCENARIOS = ("cantilever_tip_load", "excavator_lift", "four_bar_drive", "mira_slider", "two_excavators")
STEP_SCENARIOS = {"excavator_capacity": "stands on the ground", "mdx_heave": "a time sweep",
                  "vehicle_on_tyres": "stands on the ground"}


def _store(scenario, steps, folder):
    stream = ResultsStream(folder, scenario)
    for step in steps:
        stream.add(step)
    stream.writer.close()
    return ResultsStore(stream.staging)


def _assert_same_store(block, step):
    a, b = block.step_table(), step.step_table()
    assert a.column_names == b.column_names
    for name in a.column_names:
        if a.schema.field(name).type == "double":
            np.testing.assert_allclose(a[name].to_numpy(zero_copy_only=False), b[name].to_numpy(zero_copy_only=False),
                                       rtol=1e-12, atol=0)
        else:
            assert a[name].to_pylist() == b[name].to_pylist(), name
    a, b = block.select(), step.select()
    assert a.num_rows == b.num_rows > 0
    for name in ("step", "entity", "quantity", "component", "unit"):
        assert a[name].to_pylist() == b[name].to_pylist(), name
    assert a["value"].null_count == b["value"].null_count
    ours, theirs = a["value"].to_numpy(zero_copy_only=False), b["value"].to_numpy(zero_copy_only=False)
    scale = np.maximum(np.abs(theirs), 1e-9 * np.nanmax(np.abs(theirs)))
    assert np.nanmax(np.abs(ours - theirs) / scale) <= 1e-12


def _assert_same_record(ours, theirs, where):
    """Two results.json step objects: the same keys and texts, numbers to 1e-12 relative."""
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys(), where
        for key in theirs:
            _assert_same_record(ours[key], theirs[key], f"{where}/{key}")
    elif isinstance(theirs, list):
        assert len(ours) == len(theirs), where
        for k, (a, b) in enumerate(zip(ours, theirs)):
            _assert_same_record(a, b, f"{where}/{k}")
    elif isinstance(theirs, float) and not isinstance(theirs, bool):
        assert abs(ours - theirs) <= 1e-12 * max(abs(theirs), 1e-3), (where, ours, theirs)
    else:
        assert ours == theirs, (where, ours, theirs)


def _shortened(name, steps, folder):
    return load_scenario(shortened_scenario(name, steps, folder))


@pytest.mark.parametrize("name", BLOCK_SCENARIOS)
def test_the_block_path_writes_the_step_paths_store_on_every_shipped_scenario_it_applies_to(name, tmp_path):
    scenario = _shortened(name, 3, tmp_path)
    assert block_path_problem(scenario) is None
    chain = scenario.sweep.chains()[0]
    blocks, steps = run_chain(scenario, chain), run_chain(scenario, chain, blocks=False)
    assert all(isinstance(step, BlockStep) for step in blocks) and not any(isinstance(s, BlockStep) for s in steps)
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    _assert_same_store(_store(scenario, blocks, tmp_path / "a"), _store(scenario, steps, tmp_path / "b"))
    for ours, theirs in zip(blocks, steps):
        _assert_same_record(ours.as_dict(), theirs.as_dict(), f"step {theirs.index}")


def test_a_tracked_subset_of_bodies_frames_and_joints_of_rotated_machines_by_blocks_equals_step_by_step(tmp_path):
    """Two excavators placed turned (rotation not the identity), each reporting some of its bodies (not consecutive
    in the model: ex1's boom and tracks, ex2's body and bucket), frames and joints: the block path writes the step
    path's store and step objects, and only the tracked items."""
    document = json.loads(shortened_scenario("two_excavators", 4, tmp_path).read_text())
    document["track"] = {"bodies": ["ex1:c1:boom", "ex1:c1:tracks", "ex2:c1:body", "ex2:c0:bucket"],
                         "frames": ["ex1:c0:bucket:bucket_r", "ex2:c1:boom:origin", "ex2:c1:tracks:base_fl"],
                         "joints": ["ex1:c1:tracks.rz", "ex2:c1:boom.ry", "ex2:c0:bucket.ry"]}
    scenario = load_scenario(write_scenario(tmp_path, document))
    chain = scenario.sweep.chains()[0]
    blocks, steps = run_chain(scenario, chain), run_chain(scenario, chain, blocks=False)
    assert all(isinstance(step, BlockStep) for step in blocks)
    assert [list(blocks[0].bodies), list(blocks[0].frames), list(blocks[0].joints)] == [
        document["track"]["bodies"], document["track"]["frames"], document["track"]["joints"]]
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    _assert_same_store(_store(scenario, blocks, tmp_path / "a"), _store(scenario, steps, tmp_path / "b"))
    for ours, theirs in zip(blocks, steps):
        _assert_same_record(ours.as_dict(), theirs.as_dict(), f"step {theirs.index}")


@pytest.mark.parametrize("name, reason", sorted(STEP_SCENARIOS.items()))
def test_scenarios_the_block_path_cannot_do_say_why_and_run_step_by_step(name, reason):
    scenario = load_scenario(SCENARIOS / f"{name}.json")
    assert reason in block_path_problem(scenario)


@pytest.mark.slow
def test_a_200_step_sweep_gives_the_same_store_by_blocks_as_step_by_step(tmp_path):
    scenario = _shortened("excavator_lift", 200, tmp_path)
    chain = scenario.sweep.chains()[0]
    blocks = run_chain(scenario, chain)
    assert len(blocks) == 200 and all(isinstance(step, BlockStep) for step in blocks)
    assert len({id(step.block) for step in blocks}) >= 1
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    _assert_same_store(_store(scenario, blocks, tmp_path / "a"),
                       _store(scenario, run_chain(scenario, chain, blocks=False), tmp_path / "b"))


def test_steps_the_block_path_cannot_report_go_step_by_step_within_a_block(tmp_path):
    """A boom cylinder stroke whose loops cannot close fails in the middle of the sweep: that step is solved (and
    reported failed, with the step path's message) by the step path, the steps around it by blocks."""
    document = json.loads((SCENARIOS / "excavator_lift.json").read_text())
    for machine in document["machines"]:
        machine["model"] = str((SCENARIOS / machine["model"]).resolve())
        machine["hold"] = [*machine["hold"], "arm:boom_cyl_oil"]
    document["sweep"]["parameters"]["ex1:arm:boom_cyl"] = [1.9, 2.0, 40.0, 2.1, 2.2]
    scenario = load_scenario(write_scenario(tmp_path, document))
    chain = scenario.sweep.chains()[0]
    blocks, steps = run_chain(scenario, chain), run_chain(scenario, chain, blocks=False)
    assert [type(step).__name__ for step in blocks] == ["BlockStep", "BlockStep", "StepResult", "BlockStep",
                                                        "BlockStep"]
    assert [s.status for s in blocks] == [s.status for s in steps] == ["converged", "converged", "failed",
                                                                       "converged", "converged"]
    assert blocks[2].failures == steps[2].failures and "cannot close" in blocks[2].failures[0]["message"]
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    _assert_same_store(_store(scenario, blocks, tmp_path / "a"), _store(scenario, steps, tmp_path / "b"))


def test_the_batched_open_test_agrees_with_the_directions_one_pose_at_a_time():
    """statically_open over a batch of equilibria against indeterminate_directions pose by pose, on models whose held
    or rigid parts share the loop forces (twin cylinders held, welded; the pentagon with a rigid joint) and models
    where nothing is open (oil columns, the pentagon without a rigid joint)."""
    seen = set()
    for model, hold in ((compile_model(twin_cylinder_spec(None, 20.0, 10.0)), ["cylinder1", "cylinder2"]),
                        (compile_model(twin_cylinder_spec(None, 20.0, 10.0, welded=True)), []),
                        (compile_model(twin_cylinder_spec((3e5, 6e5))), []),
                        (compile_model(loop_spec(None)), []), (compile_model(loop_spec(2)), [])):
        held = np.array([c for joint in hold for c in model.coordinates_of(joint)], dtype=int)
        free = free_coordinates(model, held)
        poses = []
        for gravity in (model.gravity, 0.5 * model.gravity, 2.0 * model.gravity):
            solution = solve(model, hold=hold, gravity=gravity)
            assert solution.converged
            poses.append(solution.q)
        one_by_one = [sum(d.shape[1] for d in indeterminate_directions(model, q, free)) > 0 for q in poses]
        assert statically_open(model, np.array(poses), free).tolist() == one_by_one
        seen.update(one_by_one)
    assert seen == {True, False}


def _open_by_svd(model, q, free, held):
    """The oracle: the closure Jacobian's columns on the held coordinates reach beyond the span of those on the free
    ones (numpy's SVD ranks at 1e-9 of the largest singular value); no rigid joint in these models."""
    jac = closure_jacobian(model, state(model, q[None]))[0]

    def rank(columns):
        sigma = np.linalg.svd(columns, compute_uv=False)
        return int(np.count_nonzero(sigma > 1e-9 * sigma[0]))

    return rank(jac[:, np.concatenate([free, held])]) > rank(jac[:, free])


def test_the_core_ends_a_chain_at_a_step_whose_held_cylinders_share_the_loop_forces():
    """Twin cylinders lifting a boom: one held (the other's oil column carries its share) is determinate, both held
    is not (any split of the load between them balances): the compiled continuation ends the chain with
    ``loads_open`` at once, where the SVD of the closure Jacobian says the held columns reach beyond the free ones',
    and goes on plainly otherwise; a single solve of the same step reports the indeterminate split."""
    model = compile_model(twin_cylinder_spec((3e5, 6e5)))
    for hold, expected in ((["cylinder1"], "plain"), (["cylinder1", "cylinder2"], "loads_open")):
        held = np.array([c for joint in hold for c in model.coordinates_of(joint)], dtype=int)
        free = free_coordinates(model, held)
        start = solve(model, hold=hold)
        assert start.converged
        target = np.repeat(start.q[None], 3, axis=0)
        target[:, held] += np.linspace(0.0, 0.02, 3)[:, None]  # the held strokes lengthen
        result = solve_chain(model, start.q[None], target, held, np.array([0, 3]),
                             np.broadcast_to(model.gravity, (3, 3)))
        assert result.outcome[0] == expected
        assert _open_by_svd(model, start.q, free, held) is (expected == "loads_open")
        if expected == "plain":
            assert result.plain.all()
            for k in range(3):
                assert not _open_by_svd(model, result.q[k], free, held)
        else:
            assert list(result.outcome[1:]) == ["not_solved", "not_solved"]
            assert any("statically indeterminate" in remark for remark in start.remarks)


def test_chains_solved_together_on_the_cores_threads_equal_each_chain_alone(tmp_path):
    """run_chains hands several chains' blocks to the core at once (on its threads): the same numbers, bit for bit,
    as each chain alone, and each chain's steps in order."""
    document = json.loads((SCENARIOS / "excavator_lift.json").read_text())
    for machine in document["machines"]:
        machine["model"] = str((SCENARIOS / machine["model"]).resolve())
    document["sweep"]["parameters"]["ex1:arm:boom_cyl"]["steps"] = 12
    document["sweep"]["segment"] = 5
    scenario = load_scenario(write_scenario(tmp_path, document))
    chains = scenario.sweep.chains()
    assert [len(chain) for chain in chains] == [5, 5, 2]
    together = run_chains(scenario, chains)
    for chain in chains:
        mine = [step for step in together if step.index in chain]
        assert [step.index for step in mine] == list(chain)
        for ours, alone in zip(mine, run_chain(scenario, chain)):
            np.testing.assert_array_equal(ours.store_values(), alone.store_values())
            assert ours.as_dict() == alone.as_dict()


def test_a_block_travels_between_processes_without_its_scenario(tmp_path):
    """A worker's block steps are pickled without the compiled models (each chain's result would carry a copy of the
    scenario) and attached to the receiving process's scenario: the same store values and results.json objects."""
    scenario = _shortened("two_excavators", 3, tmp_path)
    steps = run_chain(scenario, scenario.sweep.chains()[0])
    payload = pickle.dumps(steps)
    model = scenario.machines[0].model
    assert model.spec.name.encode() in pickle.dumps(model) and model.spec.name.encode() not in payload  # no model
    arrived = attach_blocks(scenario, pickle.loads(payload))
    for ours, theirs in zip(arrived, steps):
        assert ours.block.scenario is scenario
        np.testing.assert_array_equal(ours.store_values(), theirs.store_values())
        assert ours.as_dict() == theirs.as_dict()


def test_a_part_streams_runs_of_a_blocks_rows_as_the_store_takes_them_one_by_one(tmp_path):
    """A sink takes a part's batch of steps: ``block_runs`` groups consecutive rows of one block (never across blocks,
    gaps, or a step carrying collisions), and the store fed those runs at once (``ResultsStream.add_rows``, the
    digest likewise) holds what the same steps fed one at a time hold, value for value."""
    document = json.loads((SCENARIOS / "excavator_lift.json").read_text())
    for machine in document["machines"]:
        machine["model"] = str((SCENARIOS / machine["model"]).resolve())
        machine["hold"] = [*machine["hold"], "arm:boom_cyl_oil"]
    document["sweep"]["parameters"]["ex1:arm:boom_cyl"] = [1.9, 2.0, 2.05, 40.0, 2.1, 2.15, 2.2]
    scenario = load_scenario(write_scenario(tmp_path, document))
    steps = run_chain(scenario, scenario.sweep.chains()[0])
    assert [type(step).__name__ for step in steps] == ["BlockStep"] * 3 + ["StepResult"] + ["BlockStep"] * 3
    steps[5].collisions = []  # as if checked after solving: it goes on its own
    runs = list(block_runs(steps))
    assert [(run.start, run.stop) if isinstance(run, BlockRows) else run.index for run in runs] == \
        [(0, 3), 3, (0, 1), 5, (1, 2)]  # after a step-path step blocks start at one step and double
    assert runs[0].block is steps[0].block and runs[2].block is steps[4].block and runs[4].block is steps[6].block
    assert list(block_runs(steps[1:3] + steps[0:1])) == [BlockRows(steps[0].block, 1, 3),
                                                         BlockRows(steps[0].block, 0, 1)]  # only rows that follow
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    together = ResultsStream(tmp_path / "a", scenario)
    for run in runs:
        together.add_rows(*run) if isinstance(run, BlockRows) else together.add(run)
    together.writer.close()
    one_by_one = _store(scenario, steps, tmp_path / "b")
    a, b = ResultsStore(together.staging), one_by_one
    assert a.step_table().equals(b.step_table()) and a.select().equals(b.select()) and a.catalog() == b.catalog()
    assert together.added.all()
    digest = RunDigest(scenario)
    for run in runs:
        digest.add_rows(*run) if isinstance(run, BlockRows) else digest.add(run)
    assert result_lines(scenario, digest) == result_lines(scenario, RunDigest.of(scenario, steps))
    assert digest.count == len(steps)


def test_a_blocks_verdict_ranks_are_their_places_in_the_stability_order():
    """The ranks a block takes its steps' worst verdict by: each verdict's place in STABILITY (the oracle: list.index
    per verdict), an unknown verdict refused with the valid ones named."""
    verdicts = np.array([STABILITY[k] for k in np.random.default_rng(4).integers(0, len(STABILITY), 200)])
    assert _verdict_ranks(verdicts).tolist() == [STABILITY.index(v) for v in verdicts]
    with pytest.raises(ValueError, match=r"verdicts \['wobbly'\]: expected one of \('stable'"):
        _verdict_ranks(np.array(["stable", "wobbly"]))
