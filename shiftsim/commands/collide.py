"""``shiftsim collide SCENARIO [--json]``: distances between the scenario's machines at every step of its sweep.

Steps are posed by kinematics only (no equilibrium solve). ``--json`` prints
``{"steps": [{"index", "parameters", "pairs": [...]}]}`` (pair objects as in
docs/collision.md; a step whose machine could not be posed also lists
``failures``). A pair line is marked ``COLLISION`` when the shapes touch or
overlap (distance <= 0) and ``WITHIN MARGIN`` when they are only closer than
the margin. ``-q`` prints only the one-line verdict (no warnings, no lines
per step). Exit codes: 0 no collision, 3 a collision at some step (the
result is printed all the same), 1 a step could not be posed (loops that do
not close; takes precedence over 3), 2 bad scenario or model.
"""

from __future__ import annotations

import argparse
import sys

from ..collision.queries import pair_text
from ..scenario import load_scenario
from ..scenario.collisions import check, collided, collision_settings, step_label, summary_line
from ..scenario.sweep import check_size
from ._common import emit_json, scenario_parser

EXIT_COLLISION = 3


def add_parser(subparsers) -> None:
    parser = scenario_parser(
        subparsers, "collide", run,
        help="distances between a scenario's machines at every sweep step (kinematics only)",
        description="Pose every step of the scenario's sweep by kinematics (no equilibrium solve) and report, per "
                    "pair of machines, the least signed distance between their collision shapes. Exit 0 no "
                    "collision, 3 a collision or a pair within the margin (distance below the scenario's "
                    "collision.margin) at some step, "
                    "1 a step could not be posed, 2 bad scenario or model.",
        scenario_help="scenario file (.json); its optional \"collision\": {\"margin\", \"self\"} section is "
                      "described in docs/collision.md")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the result as JSON")
    output.add_argument("-q", "--quiet", action="store_true",
                        help="only the one-line verdict: no warnings, no lines per step (the exit code says it too)")


def _mark(pair: dict) -> str:
    """``COLLISION`` when the shapes touch or overlap, ``WITHIN MARGIN`` when closer than the margin only."""
    if pair["distance"] <= 0.0:
        return "COLLISION "
    return "WITHIN MARGIN " if pair["in_collision"] else ""


def run(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.scenario)
    check_size(scenario.sweep, str(scenario.source))
    steps, warnings = check(scenario)
    for warning in [] if args.quiet else [*scenario.warnings, *warnings]:
        print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        emit_json({"steps": [step.as_dict() for step in steps]})
    else:
        for step in [] if args.quiet else steps:
            print(step_label(scenario, step))
            for pair in step.collisions:
                print(f"  {_mark(pair)}{pair_text(pair)}")
            for failure in step.failures:
                print(f"  NOT POSED {failure['machine']}: {failure['message']}")
        print(summary_line(scenario, steps, collision_settings(scenario).margin))
    if any(step.failures for step in steps):
        return 1
    return EXIT_COLLISION if collided(steps) else 0
