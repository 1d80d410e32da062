"""``shiftsim sensitivity MODEL|SCENARIO --of OUTPUT,... [--wrt PARAMETER,...] [...] [--json]``: exact derivatives
of an equilibrium's outputs with respect to design parameters (docs/sensitivity.md).

``--of`` and ``--wrt`` take names or kinds (``--wrt all``: every parameter; ``--wrt mass,load``: every parameter
of those kinds), repeated or comma-separated. A model's equilibrium is solved as ``shiftsim solve`` does
(``--set``, ``--hold``, ``--load``, ``--gravity``); a scenario's steps are solved as ``shiftsim run`` does (nothing
written but what is asked) and each converged step is differentiated, names carrying the machine's prefix
(``ex1:arm:boom_cyl.effort``; ``--of``/``--wrt``/``--mode``/``--normalized``/``--top`` override the scenario's
``analysis.sensitivity``). Prints per output its value and the parameters ranked by the size of their effect
(``--normalized``: by elasticity, the % change of the output per 1 % of the parameter). ``--json`` prints
``{"mode", "outputs": {name: {"value", "reason", "derivative": {parameter: value}}}}`` for a model and the
results.json ``sensitivity`` section for a scenario; ``--csv`` writes the table and ``--tornado`` a chart (a
model's first output; a scenario's every output, at the step where it is largest). Exit 0 ok, 1 a solve did not
converge (a scenario: some step has no sensitivities), 2 bad input.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import Problems, ScenarioError
from ..loading import load_model
from ..sensitivity import document as section_table
from ..sensitivity import sensitivity, table
from ._common import emit_json
from ._limits import joint_settings
from .check import _scenario_document
from .solve import _gravity, _load


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("sensitivity", help="exact derivatives of an equilibrium's outputs w.r.t. design "
                                   "parameters", description="Differentiate a static equilibrium (a model's, or every "
                                   "step of a scenario): joint values, frame positions, joint and loop pin wrenches "
                                   "and held efforts with respect to masses, centres of mass, pin, mount and load "
                                   "points, springs, restraint laws, loads and gravity "
                                   "(docs/sensitivity.md). Exit 0 ok, 1 the solve did not converge, 2 bad input.")
    parser.add_argument("model", help="a model file, or a scenario file (.json)")
    parser.add_argument("--of", action="append", default=[], metavar="OUTPUT[,OUTPUT...]",
                        help="output names or kinds: joint, frame, pin, wrench, effort, wrench_joint; a standing machine's "
                             "reaction, "
                             "cop, margin (a scenario: MACHINE:name or MACHINE:kind, and MACHINE:tipping_load, "
                             "hydraulic_load, rated_load or capacity for its analysis.capacity chart; default its "
                             "analysis.sensitivity.of)")
    parser.add_argument("--wrt", action="append", default=[], metavar="PARAMETER[,PARAMETER...]",
                        help="parameter names or kinds: mass, com, frame, spring, restraint, pair, load, gravity; "
                             "a standing machine's ground, contact, tyre; all (default)")
    parser.add_argument("--set", action="append", default=[], metavar="JOINT=VALUE",
                        help="prescribe a joint at a value")
    parser.add_argument("--hold", action="append", default=[], metavar="JOINT",
                        help="prescribe a joint at its file value")
    parser.add_argument("--load", action="append", default=[], metavar="FRAME=fx,fy,fz[,mx,my,mz]",
                        help="external load at a frame (world axes, N and N m)")
    parser.add_argument("--gravity", metavar="gx,gy,gz", help="gravity vector (m/s^2), overrides the model's")
    parser.add_argument("--mode", choices=("auto", "forward", "adjoint"),
                        help="forward (few parameters) or adjoint (few outputs); auto (default) picks")
    parser.add_argument("--normalized", action="store_true", help="rank by elasticity (%% per %%)")
    parser.add_argument("--top", type=int, metavar="N", help="parameters printed per output (default 10)")
    parser.add_argument("--csv", metavar="FILE", help="write the table (one row per output and parameter) as CSV")
    parser.add_argument("--tornado", metavar="FILE.png",
                        help="write a tornado chart (change of the output per 1 %% of each parameter)")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=run)


def _names(texts: list[str]) -> list[str]:
    return [name.strip() for text in texts for name in text.split(",") if name.strip()]


def _write_csv(path: str, rows: list[Sequence[Any]]) -> None:
    with open(path, "w", newline="") as stream:
        csv.writer(stream).writerows(rows)


ROUND_OFF_NOTE = ("0: round-off ({count} output value{plural} at most 1e-9 of the output's largest change p dy/dp over "
                  "the parameters, elasticities nan; --json and --csv keep the raw values)")


def _value_text(value: float, parameter_values: np.ndarray, derivative: np.ndarray) -> tuple[str, bool]:
    """An output's value as printed, and whether it is round-off printed as 0 (:func:`.table.at_round_off`: the rule
    that makes its elasticities NaN). A zero prints as 0, never -0."""
    zeroed = bool(value != 0 and table.at_round_off(derivative[None], parameter_values, [value])[0])
    return f"{0.0 if zeroed else value + 0.0:.6g}", zeroed


def _print_ranked(name: str, value: float, reason: str | None, parameters: Sequence[str],
                  parameter_values: np.ndarray, derivative: np.ndarray, elasticity: np.ndarray, normalized: bool,
                  top: int, indent: str = "") -> bool:
    """One output's value and its ``top`` parameters by |derivative| (``normalized``: by |elasticity|); whether the
    value was round-off printed as 0."""
    text, zeroed = _value_text(value, parameter_values, derivative)
    print(f"{indent}{name} = {text}")
    if reason:
        print(f"{indent}  {reason}")
        return zeroed
    ranked = elasticity if normalized else derivative
    for j in np.argsort(-np.nan_to_num(np.abs(ranked)), kind="stable")[:top]:
        print(f"{indent}  {parameters[j]:50s} d/dp {derivative[j] + 0.0:14.6g}   elasticity {elasticity[j] + 0.0:10.4g}")
    return zeroed


def _print_round_off_note(zeroed: int) -> None:
    if zeroed:
        print(ROUND_OFF_NOTE.format(count=zeroed, plural="s" if zeroed > 1 else ""))


def run(args: argparse.Namespace) -> int:
    found = _scenario_document(Path(args.model))
    if found is not None:
        return _run_scenario(args, *found)
    if not args.of:
        problems = Problems(args.model)
        problems.add("--of", "no outputs named", "--of OUTPUT[,OUTPUT...] (names or kinds)")
        problems.raise_if_any()
    model = load_model(args.model)
    top = 10 if args.top is None else args.top
    result = sensitivity(model, of=_names(args.of), wrt=_names(args.wrt) or ["all"],
                         set=joint_settings(args.set, "--set"), hold=args.hold,
                         loads=[_load(text) for text in args.load],
                         gravity=_gravity(args.gravity) if args.gravity else None, mode=args.mode or "auto")
    if args.csv:
        _write_csv(args.csv, [table.CSV_HEADER, *table.csv_rows(result)])
    if args.tornado:
        from ..plots.tornado import tornado_png  # matplotlib: loaded only to draw

        first = result.outputs[0]
        Path(args.tornado).write_bytes(tornado_png(
            result.parameters, table.change_per_percent(result, first),
            f"{first} = {_value_text(result.values[0], result.parameter_values, result.derivative[0])[0]}",
            f"change of {first} per 1 % change of the parameter", result.reasons[0], top=top))
    if args.json:
        emit_json(result.as_dict())
        return 0
    print(f"{len(result.outputs)} outputs x {len(result.parameters)} parameters, {result.mode} mode")
    elasticity = result.elasticity
    zeroed = sum(_print_ranked(name, result.values[i], result.reasons[i], result.parameters, result.parameter_values,
                               result.derivative[i], elasticity[i], args.normalized, top)
                 for i, name in enumerate(result.outputs))
    _print_round_off_note(zeroed)
    return 0


def _run_scenario(args: argparse.Namespace, document: Any, json_warnings: list[str]) -> int:
    """Every step of the scenario solved, then differentiated (the results.json ``sensitivity`` section)."""
    from ..scenario import build_scenario, execute
    from ..scenario.executors import LocalExecutor
    from ..scenario.run import check_fits
    from ..scenario.sensitivity_analysis import read_sensitivity, run_sensitivity

    scenario = build_scenario(Path(args.model), document, json_warnings)
    problems = Problems(args.model, ScenarioError)
    for flag in ("set", "hold", "load", "gravity"):
        if getattr(args, flag):
            problems.add(f"--{flag}", "a scenario sets its joints, loads and gravity itself",
                         "these options with a model file, or the scenario's joints, loads and world.gravity")
    entry = dict((scenario.document.get("analysis") or {}).get("sensitivity") or {})
    flags = {key for key in ("of", "wrt") if getattr(args, key)}
    for key in flags:
        entry[key] = _names(getattr(args, key))
    entry.update({key: value for key, value in (("mode", args.mode), ("top", args.top)) if value is not None})
    entry["normalized"] = args.normalized or entry.get("normalized", False)
    if "of" not in entry:
        problems.add("--of", "no outputs named and the scenario has no analysis.sensitivity",
                     "--of MACHINE:OUTPUT[,...], or an \"analysis\": {\"sensitivity\": {\"of\": [...]}} section")
        problems.raise_if_any()
    spec = read_sensitivity(scenario, entry, "analysis.sensitivity", problems,
                            lambda key, i: f"--{key} {entry[key][i]}" if key in flags else
                            f"analysis.sensitivity.{key}[{i}]")
    problems.raise_if_any()
    executor = LocalExecutor(1)
    check_fits(scenario, executor)
    section = run_sensitivity(scenario, spec, execute(scenario, executor))
    if args.csv:
        _write_csv(args.csv, section_table.csv_rows(section))
    if args.tornado:
        from ..plots.tornado import sensitivity_chart  # matplotlib: loaded only to draw

        chart = sensitivity_chart(section)
        if chart is not None:
            Path(args.tornado).write_bytes(chart)
    failed = [p for p in section["points"] if "error" in p]
    if args.json:
        emit_json(section)
        return 1 if failed else 0
    zeroed = 0
    for point in section["points"]:
        swept = ", ".join(f"{k} = {v:g}" for k, v in point["parameters"].items())
        print(f"step {point['step']}" + (f" ({swept})" if swept else "") + f", {point['machine']}")
        if "error" in point:
            print(f"  no sensitivities: {point['error']}")
            continue
        values = point["parameter_values"]
        for name, o in point["outputs"].items():
            value = np.nan if o["value"] is None else o["value"]
            derivative = np.array([np.nan if v is None else v for v in o["derivative"].values()], float)
            parameter_values = np.array([values[p] for p in o["derivative"]], float)
            elasticity = table.elasticities(derivative[None], parameter_values, [value])[0]
            zeroed += _print_ranked(name, value, o["reason"], list(o["derivative"]), parameter_values, derivative,
                                    elasticity, spec.normalized, spec.top, "  ")
            if "governs" in o:
                print(f"    {o['governs']} governs" + (" (within 1 % of the switch)" if o["near_switch"] else ""))
    _print_round_off_note(zeroed)
    return 1 if failed else 0
