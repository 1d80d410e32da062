"""``shiftsim sensitivity MODEL --of OUTPUT,... [--wrt PARAMETER,...] [...] [--json]``: exact derivatives of an
equilibrium's outputs with respect to design parameters (docs/sensitivity.md).

``--of`` and ``--wrt`` take names or kinds (``--wrt all``: every parameter; ``--wrt mass,load``: every parameter
of those kinds), repeated or comma-separated. The equilibrium is solved as ``shiftsim solve`` does (``--set``,
``--hold``, ``--load``, ``--gravity``). Prints per output its value and the parameters ranked by the size of
their effect (``--normalized``: by elasticity, the % change of the output per 1 % of the parameter); ``--json``
prints ``{"mode", "outputs": {name: {"value", "reason", "derivative": {parameter: value}}}}``; ``--csv`` writes
the table and ``--tornado`` a chart of the first output (the change per 1 % of each parameter).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from ..loading import load_model
from ..plots.tornado import tornado_png
from ..sensitivity import sensitivity, table
from ._common import emit_json
from ._limits import joint_settings
from .solve import _gravity, _load


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("sensitivity", help="exact derivatives of an equilibrium's outputs w.r.t. design "
                                   "parameters", description="Differentiate a static equilibrium: joint values, "
                                   "frame positions, joint and loop pin wrenches and held efforts with respect to "
                                   "masses, centres of mass, pin, mount and load points, springs, restraint laws, "
                                   "loads and gravity "
                                   "(docs/sensitivity.md). Exit 0 ok, 1 the solve did not converge, 2 bad input.")
    parser.add_argument("model")
    parser.add_argument("--of", action="append", required=True, metavar="OUTPUT[,OUTPUT...]",
                        help="output names or kinds: joint, frame, pin, wrench, effort")
    parser.add_argument("--wrt", action="append", default=[], metavar="PARAMETER[,PARAMETER...]",
                        help="parameter names or kinds: mass, com, frame, spring, restraint, pair, load, gravity; "
                             "all (default)")
    parser.add_argument("--set", action="append", default=[], metavar="JOINT=VALUE", help="prescribe a joint at a value")
    parser.add_argument("--hold", action="append", default=[], metavar="JOINT", help="prescribe a joint at its file value")
    parser.add_argument("--load", action="append", default=[], metavar="FRAME=fx,fy,fz[,mx,my,mz]",
                        help="external load at a frame (world axes, N and N m)")
    parser.add_argument("--gravity", metavar="gx,gy,gz", help="gravity vector (m/s^2), overrides the model's")
    parser.add_argument("--mode", choices=("auto", "forward", "adjoint"), default="auto",
                        help="forward (few parameters) or adjoint (few outputs); auto picks")
    parser.add_argument("--normalized", action="store_true", help="rank by elasticity (%% per %%)")
    parser.add_argument("--top", type=int, default=10, metavar="N", help="parameters printed per output (default 10)")
    parser.add_argument("--csv", metavar="FILE", help="write the table (one row per output and parameter) as CSV")
    parser.add_argument("--tornado", metavar="FILE.png",
                        help="write a tornado chart of the first output (change per 1 %% of each parameter)")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=run)


def _names(texts: list[str]) -> list[str]:
    return [name.strip() for text in texts for name in text.split(",") if name.strip()]


def run(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    result = sensitivity(model, of=_names(args.of), wrt=_names(args.wrt) or ["all"],
                         set=joint_settings(args.set, "--set"), hold=args.hold,
                         loads=[_load(text) for text in args.load],
                         gravity=_gravity(args.gravity) if args.gravity else None, mode=args.mode)
    if args.csv:
        with open(args.csv, "w", newline="") as stream:
            writer = csv.writer(stream)
            writer.writerow(table.CSV_HEADER)
            writer.writerows(table.csv_rows(result))
    if args.tornado:
        first = result.outputs[0]
        Path(args.tornado).write_bytes(tornado_png(
            result.parameters, table.change_per_percent(result, first), f"{first} = {result.values[0]:.6g}",
            f"change of {first} per 1 % change of the parameter", result.reasons[0], top=args.top))
    if args.json:
        emit_json(result.as_dict())
        return 0
    ranked = result.elasticity if args.normalized else result.derivative
    print(f"{len(result.outputs)} outputs x {len(result.parameters)} parameters, {result.mode} mode")
    for i, name in enumerate(result.outputs):
        print(f"{name} = {result.values[i]:.6g}")
        if result.reasons[i]:
            print(f"  {result.reasons[i]}")
            continue
        order = np.argsort(-np.nan_to_num(np.abs(ranked[i])), kind="stable")[: args.top]
        for j in order:
            print(f"  {result.parameters[j]:50s} d/dp {result.derivative[i, j]:14.6g}   "
                  f"elasticity {result.elasticity[i, j]:10.4g}")
    return 0
