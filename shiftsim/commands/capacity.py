"""``shiftsim capacity SCENARIO [--load NAME] [--centre FRAME] [--json] [--chart FILE]``: rated lift capacity.

For every step of the scenario's sweep (a lift point), the tipping load, the
hydraulic load and the rated load (ISO 10567: the smaller of 75 % of the
tipping load and 87 % of the hydraulic load) of the named load on a machine
standing on the ground (docs/ground.md). The analysis comes from the
scenario's ``analysis.capacity``; ``--load`` and ``--centre`` override its load
and slew-axis frame (or make one without it). A lift point whose rating cannot be
trusted (it cannot stand unloaded, an equilibrium on its path is impossible, its
tipping load fails the moment-balance self-check, the hydraulic search failed)
is printed as INVALID with its reasons, never as a rating. Exit codes: 0 ok,
1 a lift point has no valid rating, 2 bad input.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..errors import Problems, ScenarioError
from ..output.writers import OutputError
from ..scenario import load_scenario
from ._common import emit_json, scenario_parser


def add_parser(subparsers) -> None:
    parser = scenario_parser(
        subparsers, "capacity", run,
        help="tipping, hydraulic and rated lift capacity (ISO 10567) at every sweep step",
        description="Tipping load (continuation on the load factor with the solver's stability test), hydraulic "
                    "load (cylinder force limits) and rated load of a named load on a machine with 'contacts', "
                    "at every step of the scenario's sweep. Exit 0 ok, 1 a lift point has no valid rating (see its reasons), "
                    "2 bad input.",
        scenario_help="scenario file (.json) with a standing machine (docs/ground.md)")
    parser.add_argument("--load", help="the load whose factor is searched (default: analysis.capacity.load)")
    parser.add_argument("--centre", help="frame on the slew axis radii are measured from, MACHINE:body:frame")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--chart", help="write the capacity chart (PNG) to this file")


def run(args: argparse.Namespace) -> int:
    from ..scenario.capacity_analysis import read_capacity, run_capacity
    from ..scenario.sweep import check_size

    scenario = load_scenario(args.scenario)
    check_size(scenario.sweep, str(scenario.source))
    entry = dict((scenario.document.get("analysis") or {}).get("capacity") or {})
    load_where = None
    if args.load:
        entry["load"], load_where = args.load, "--load"
    if args.centre:
        entry["centre"] = args.centre
    problems = Problems(str(args.scenario), ScenarioError)
    if "load" not in entry:
        problems.add("--load", "no load named and the scenario has no analysis.capacity",
                     "--load NAME, or an \"analysis\": {\"capacity\": {\"load\": NAME}} section")
        problems.raise_if_any()
    spec = read_capacity(scenario, entry, "analysis.capacity", problems, load_where)
    chart = Path(args.chart).resolve() if args.chart else None
    if chart is not None and (chart in scenario.input_files or not chart.parent.is_dir() or chart.is_dir()):
        problems.add("--chart", f"{args.chart}: " + ("an input file of the scenario" if chart.exists() and chart
                                                    in scenario.input_files else "a folder" if chart.is_dir()
                                                    else "its folder does not exist"),
                     "a PNG file name in an existing folder, not an input file")
    problems.raise_if_any()
    for warning in scenario.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    document = run_capacity(scenario, spec)
    if chart is not None:  # written whole or not at all
        from ..plots.ground import capacity_chart  # matplotlib: loaded only to draw

        staging = chart.with_name(f".{chart.name}.{os.getpid()}.tmp")
        try:
            staging.write_bytes(capacity_chart(document))
            os.replace(staging, chart)
        except OSError as error:
            raise OutputError(f"cannot write the chart {args.chart}: {error.strerror or error}") from None
        finally:
            staging.unlink(missing_ok=True)
    if args.json:
        emit_json(document)
    else:
        print(f"{scenario.name}: {document['load']} at {document['frame']} ({document['load_size']:.0f} N at factor 1), "
              f"rated = min({document['tipping_fraction']:g} tipping, {document['hydraulic_fraction']:g} hydraulic)")
        print(f"{'step':>4} {'radius m':>9} {'height m':>9} {'tipping kN':>11} {'hydraulic kN':>13} "
              f"{'rated kN':>9} {'rated t':>8}  {'governs':<9}  tipping event")
        for p in document["points"]:
            print(f"{p['step']:>4} {p['radius']:9.2f} {p['height']:9.2f} {_kn(p['tipping_load']):>11} "
                  f"{_kn(p['hydraulic_load']):>13} {_kn(p['rated_load']):>9} "
                  f"{'-' if p['rated_mass'] is None else format(p['rated_mass'] / 1000, '.2f'):>8}  "
                  f"{p['governs']:<9}  {p['tipping_event']}")
        for p in document["points"]:
            if not p["valid"]:
                print(f"step {p['step']}: INVALID, no rating: {'; '.join(p['invalid'])}")
            elif p["path_ended"]:
                print(f"step {p['step']}: does not tip below {p['does_not_tip_below'] / 1000:.1f} kN (the path ends: "
                      f"{'; '.join(p['path_ended'])}); the hydraulic limit governs below it")
    invalid = [p["step"] for p in document["points"] if not p["valid"]]
    if invalid:
        print(f"error: {len(invalid)} of {len(document['points'])} lift points have no valid rating (steps "
              f"{', '.join(map(str, invalid))}; see 'invalid')", file=sys.stderr)
    return 1 if invalid else 0


def _kn(value: float | None) -> str:
    return "-" if value is None else f"{value / 1000:.1f}"
