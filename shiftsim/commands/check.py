"""``shiftsim check FILE [--json]``: validate a model file, or a scenario, and summarize it.

A JSON file that is recognisably a scenario (it has ``machines``) is validated
as one without running it: its document, its machines' model files, every name
it uses, its sweep and its outputs (:func:`shiftsim.scenario.build_scenario`).
Warnings are grouped by kind: one line with a count and the first places.
"""

from __future__ import annotations

import argparse
import warnings as python_warnings
from pathlib import Path
from typing import Any

from ..analysis.model_summary import summarize
from ..errors import ScenarioError, ShiftsimWarning, group_warnings
from ..formats import detect_json_format
from ..loading import load_model
from ._common import emit_json

JSON_SUFFIXES = (".json", ".json5")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("check", help="validate a model or a scenario and summarize it",
                                   description="Validate a model file (or a scenario file, without running it) "
                                               "and print its counts. Exit 0 valid, 2 invalid.")
    parser.add_argument("model", help="model file (.json, .xml, .mira) or scenario file (.json)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with python_warnings.catch_warnings():
        python_warnings.simplefilter("ignore", ShiftsimWarning)  # printed below, grouped, with the summary
        scenario = _scenario_document(Path(args.model))
        if scenario is not None:
            return _check_scenario(args, *scenario)
        summary = summarize(load_model(args.model))
    if args.json:
        emit_json(summary)
        return 0
    print(f"{args.model}: valid {summary['format']} model")
    for key in ("bodies", "joints", "coordinates", "loops", "closure_equations", "redundant_equations", "mobility"):
        print(f"  {key.replace('_', ' '):20s} {summary[key]}")
    print(f"  {'total mass':20s} {summary['total_mass']:.6g} kg")
    _print_warnings(summary["warnings"])
    return 0


def _scenario_document(path: Path) -> tuple[Any, list[str]] | None:
    """``(document, warnings)`` when ``path`` is a JSON file whose content is a scenario, else None."""
    if path.suffix.lower() not in JSON_SUFFIXES or not path.is_file():
        return None
    from ..jsonio import read_json

    try:
        document, warnings = read_json(path, ScenarioError)
    except ScenarioError:
        return None  # the model readers report it (they also try MFK's '#' comments)
    return (document, warnings) if detect_json_format(document).kind == "scenario" else None


def _check_scenario(args: argparse.Namespace, document: Any, json_warnings: list[str]) -> int:
    from ..plots.registry import chosen_plots
    from ..scenario import build_scenario

    scenario = build_scenario(Path(args.model), document, json_warnings)
    sweep = scenario.sweep
    steps = sweep.size
    summary = {
        "kind": "scenario",
        "name": scenario.name,
        "machines": [{"id": m.id, "format": m.model.spec.format, "model": str(m.source),
                      "bodies": len(m.model.body_names) - 1, "joints": len(m.model.joints)}
                     for m in scenario.machines],
        "loads": [load.name for load in scenario.loads],
        "sweep": {"mode": sweep.mode, "parameters": sweep.names, "steps": steps},
        "plots": list(chosen_plots(scenario)),
        "warnings": list(scenario.warnings),
    }
    if args.json:
        emit_json(summary)
        return 0
    print(f"{args.model}: valid scenario {scenario.name!r} (not run)")
    for machine in summary["machines"]:
        print(f"  machine {machine['id']:12s} {machine['format']} model {machine['model']} "
              f"({machine['bodies']} bodies, {machine['joints']} joints)")
    parameters = ", ".join(sweep.names) or "none"
    print(f"  {'sweep':20s} {steps} step{'s' if steps != 1 else ''} ({sweep.mode}; parameters: {parameters})")
    print(f"  {'loads':20s} {', '.join(summary['loads']) or 'none'}")
    print(f"  {'plots':20s} {', '.join(summary['plots']) or 'none'}")
    _print_warnings(summary["warnings"])
    return 0


def _print_warnings(warnings: list[str]) -> None:
    for line in group_warnings(warnings):
        print(f"  warning: {line}")
