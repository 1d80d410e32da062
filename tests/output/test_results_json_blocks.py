"""results.json's per-step sections written a block at a time (``results_document(..., as_json=True)``:
:mod:`shiftsim.output.steps_json`, :func:`shiftsim.output.scene.scene_steps_json`) against the same document built
from every step's own objects (``step.as_dict()``, ``machine_scene`` per step) and serialized by orjson: equal once
parsed, on the shipped scenarios, on a sweep whose middle step leaves the block path, and on a sweep of three blocks."""

from __future__ import annotations

import json

import orjson
import pytest
from helpers.plots import SHIPPED, short_run
from helpers.scenario import SCENARIOS, write_scenario

from shiftsim.jsonio import dumps
from shiftsim.output.writers import results_document
from shiftsim.scenario import LocalExecutor, execute, load_scenario
from shiftsim.scenario.chain import BLOCK_STEPS, BlockStep


def assert_same_document(scenario, steps):
    fast = orjson.loads(dumps(results_document(scenario, steps, as_json=True)))
    assert fast == orjson.loads(dumps(results_document(scenario, steps)))
    assert len(fast["steps"]) == len(fast["scene"]["steps"]) == len(steps) > 0


def lift(tmp_path, boom_cylinder):
    """The shipped excavator lift with these boom cylinder lengths (m), its oil column held."""
    document = json.loads((SCENARIOS / "excavator_lift.json").read_text())
    for machine in document["machines"]:
        machine["model"] = str((SCENARIOS / machine["model"]).resolve())
        machine["hold"] = [*machine["hold"], "arm:boom_cyl_oil"]
    document["sweep"]["parameters"]["ex1:arm:boom_cyl"] = boom_cylinder
    return load_scenario(write_scenario(tmp_path, document))


@pytest.mark.slow
@pytest.mark.parametrize("source", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_every_shipped_scenario_s_steps_and_scene_are_their_step_objects(source):
    assert_same_document(*short_run(source))


def test_a_step_off_the_block_path_splits_its_block_and_keeps_its_failure(tmp_path):
    """The middle stroke's loops cannot close: that step comes from the step path (its failure message), the steps
    around it from their blocks' templates."""
    scenario = lift(tmp_path, [1.9, 2.0, 40.0, 2.1, 2.2])
    steps = execute(scenario, LocalExecutor(1))
    assert [type(step).__name__ for step in steps] == ["BlockStep", "BlockStep", "StepResult", "BlockStep",
                                                       "BlockStep"]
    assert_same_document(scenario, steps)
    written = orjson.loads(dumps(results_document(scenario, steps, as_json=True)))
    assert "cannot close" in written["steps"][2]["failures"][0]["message"] and written["scene"]["steps"][2]


@pytest.mark.slow
def test_a_sweep_of_three_blocks_is_written_as_its_step_objects(tmp_path):
    strokes = [1.9 + 0.4 * k / (2 * BLOCK_STEPS + 75) for k in range(2 * BLOCK_STEPS + 76)]
    scenario = lift(tmp_path, strokes)
    steps = execute(scenario, LocalExecutor(1))
    assert all(isinstance(step, BlockStep) for step in steps) and len({id(step.block) for step in steps}) == 3
    assert_same_document(scenario, steps)
