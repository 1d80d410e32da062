"""Plot helpers: a run's steps as the results object the plots draw from; the shipped scenarios cut short."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from shiftsim.output.run_results import RunResults
from shiftsim.output.writers import joint_units, results_document
from shiftsim.scenario import LocalExecutor, build_scenario, execute

from .scenario import SCENARIOS

SHIPPED = sorted(SCENARIOS.glob("*.json"))


def results_of(scenario, steps) -> RunResults:
    """The results object of ``steps`` (a run of ``scenario``), as a run builds it before drawing its plots."""
    return RunResults.from_steps(results_document(scenario, steps), steps, joint_units(scenario))


def short_run(source: Path, steps: int = 2):
    """A shipped scenario cut to ``steps`` steps (each swept parameter's first and last values, a grid's later
    parameters at their first), every plot that applies asked for, run in memory: (scenario, steps)."""
    document = copy.deepcopy(json.loads(source.read_text(encoding="utf-8")))
    sweep = document.get("sweep", {})
    for k, (name, values) in enumerate(sweep.get("parameters", {}).items()):
        if isinstance(values, dict) and "steps" in values:
            values = [values["from"], values["to"]]
        if isinstance(values, list):
            later = k > 0 and sweep.get("mode") == "grid"
            sweep["parameters"][name] = values[:1] if later or len(values) == 1 else [values[0], values[-1]][:steps]
    document.get("outputs", {}).pop("plots", None)
    scenario = build_scenario(source, document)
    return scenario, execute(scenario, LocalExecutor(1))
