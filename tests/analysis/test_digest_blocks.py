"""A run's digest of block-path steps (shiftsim.scenario.chain.BlockStep), reduced a block at a time from the block's
arrays, against the digest of the same steps reduced one at a time from their results.json dictionaries (the oracle:
``RunDigest.add`` of plain ``StepResult`` copies), value for value, and against the digest of the step path's steps
(``blocks=False``, solved one by one) to round-off."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.scenario import SCENARIOS, shortened_scenario, write_scenario

from shiftsim.analysis.digest import RunDigest, lengths, result_lines
from shiftsim.scenario import load_scenario
from shiftsim.scenario.chain import BlockStep, run_chain
from shiftsim.scenario.runner import StepResult

BLOCK_SCENARIOS = ("cantilever_tip_load", "excavator_lift", "four_bar_drive", "mira_slider", "two_excavators")


def _shortened(name, steps, folder):
    return load_scenario(shortened_scenario(name, steps, folder))


def _plain(step):
    """A StepResult holding a step's dictionaries (the digest reduces it from them, one step at a time)."""
    return StepResult(step.index, dict(step.parameters), step.status, step.iterations, step.residual, step.stable,
                      step.joints, step.frames, step.bodies, list(step.failures), dict(step.actuators), step.collisions,
                      step.stability, dict(step.ground), dict(step.neutral), step.pin_reactions, dict(step.remarks),
                      dict(step.q), dict(step.q_reference))


def _state(digest):
    """Everything a digest holds, by entity in the order first added: values, and steps by index."""
    def peaks(found):
        return [(name, peak.value, peak.entity, peak.step.index) for name, peak in found.items()]

    return {"count": digest.count, "joints": sorted(digest.joints), "failed": digest.failed,
            "failures": digest.failures, "first_failed": [s.index for s in digest.first_failed],
            "deflection": peaks(digest.deflection), "pins": peaks(digest.pins),
            "efforts": {kind: peaks(found) for kind, found in digest.efforts.items()},
            "pin_reactions": list(digest.pin_reactions.items()),
            "telling": {kind: s.index for kind, s in digest.telling.items()}, "least": digest.least,
            "touching": digest.touching}


def _assert_close(ours, theirs, where=""):
    """Two digest states: the same names, steps and texts, numbers to 1e-12 relative."""
    if isinstance(theirs, dict):
        assert list(ours) == list(theirs), where
        for key in theirs:
            _assert_close(ours[key], theirs[key], f"{where}/{key}")
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs), where
        for k, (a, b) in enumerate(zip(ours, theirs)):
            _assert_close(a, b, f"{where}/{k}")
    elif isinstance(theirs, float):
        assert abs(ours - theirs) <= 1e-12 * max(abs(theirs), 1e-9), (where, ours, theirs)
    else:
        assert ours == theirs, (where, ours, theirs)


@pytest.mark.parametrize("name", BLOCK_SCENARIOS)
def test_the_digest_of_a_blocks_arrays_is_the_digest_of_its_steps_dictionaries(name, tmp_path):
    scenario = _shortened(name, 3, tmp_path)
    steps = [step for chain in scenario.sweep.chains() for step in run_chain(scenario, chain)]
    assert steps and all(isinstance(step, BlockStep) for step in steps)
    if name == "two_excavators":  # collisions as the run attaches them (after solving)
        from shiftsim.scenario.collisions import attach_collisions

        attach_collisions(scenario, steps)
        assert all(step.collisions for step in steps)
    by_blocks = RunDigest.of(scenario, steps)
    by_steps = RunDigest.of(scenario, [_plain(step) for step in steps])
    assert _state(by_blocks) == _state(by_steps)  # value for value
    assert by_blocks.deflection and by_blocks.efforts and by_blocks.pins
    assert result_lines(scenario, by_blocks) == result_lines(scenario, by_steps)
    backward = RunDigest.of(scenario, steps[::-1])  # any order, a block's rows not in order
    assert _state(backward) == _state(by_steps)
    step_path = [s for chain in scenario.sweep.chains() for s in run_chain(scenario, chain, blocks=False)]
    if name == "two_excavators":
        attach_collisions(scenario, step_path)
    _assert_close(_state(by_blocks), _state(RunDigest.of(scenario, step_path)))


def test_a_failing_step_inside_a_block_and_blocks_on_either_side_digest_as_step_by_step(tmp_path):
    """A boom stroke whose loops cannot close in the middle of the sweep: the step path reports it, the blocks around
    it are reduced from their arrays; the peaks, pins and failures are those of the steps reduced one by one, and the
    largest deflection is checked against the tracked frames' deflections read from each step (a second route)."""
    document = json.loads((SCENARIOS / "excavator_lift.json").read_text())
    for machine in document["machines"]:
        machine["model"] = str((SCENARIOS / machine["model"]).resolve())
        machine["hold"] = [*machine["hold"], "arm:boom_cyl_oil"]
    document["sweep"]["parameters"]["ex1:arm:boom_cyl"] = [1.9, 2.0, 40.0, 2.1, 2.05, 2.2]
    scenario = load_scenario(write_scenario(tmp_path, document))
    steps = run_chain(scenario, scenario.sweep.chains()[0])
    assert [type(s).__name__ for s in steps] == ["BlockStep", "BlockStep", "StepResult", "BlockStep", "BlockStep",
                                                 "BlockStep"]
    assert len({id(s.block) for s in steps if isinstance(s, BlockStep)}) >= 2
    by_blocks = RunDigest.of(scenario, steps)
    assert _state(by_blocks) == _state(RunDigest.of(scenario, [_plain(s) for s in steps]))
    assert by_blocks.failed == [2] and "cannot close" in by_blocks.failures[2]
    largest = max((float(np.linalg.norm(f["deflection"])), s.index) for s in steps for f in s.frames.values())
    peak = by_blocks.peak_deflection()
    assert abs(peak.value - largest[0]) <= 1e-15 * largest[0] and peak.step.index == largest[1]


def test_lengths_are_the_same_number_alone_and_in_a_batch():
    vectors = np.random.default_rng(7).normal(size=(50, 3)) * 10.0 ** np.arange(-5, 5, 0.2)[:, None]
    batch = lengths(vectors)
    assert [float(lengths(v)) for v in vectors] == batch.tolist()
    np.testing.assert_allclose(batch, np.linalg.norm(vectors, axis=1), rtol=1e-15)
