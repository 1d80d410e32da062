"""``shiftsim check MODEL [--json]``: validate a model file and summarize it."""

from __future__ import annotations

import argparse

from ..loading import load_model
from ..summary import summarize
from ._common import emit_json


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("check", help="validate a model and summarize it",
                                   description="Validate a model file and print its counts. Exit 0 valid, 2 invalid.")
    parser.add_argument("model", help="model file (.json, .xml, .mira)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    summary = summarize(load_model(args.model))
    if args.json:
        emit_json(summary)
        return 0
    print(f"{args.model}: valid {summary['format']} model")
    for key in ("bodies", "joints", "coordinates", "loops", "closure_equations", "redundant_equations", "mobility"):
        print(f"  {key.replace('_', ' '):20s} {summary[key]}")
    print(f"  {'total mass':20s} {summary['total_mass']:.6g} kg")
    for warning in summary["warnings"]:
        print(f"  warning: {warning}")
    return 0
