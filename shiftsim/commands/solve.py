"""``shiftsim solve MODEL [...]``: one static equilibrium with deflections and joint loads."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ..errors import InputError, Problem, SolveError
from ..loading import load_model
from ..model import PRISMATIC
from ..statics import Load, solve
from ..solve_memory import check_solve_memory
from ._common import emit_json, parse_assignment, parse_vector
from ._round_off import ForceFloor
from ._limits import MAX_FORCE, MAX_GRAVITY, MAX_TORQUE, check_bounded, check_finite_result, joint_settings


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("solve", help="static equilibrium, deflections and joint loads",
                                   description="Solve static equilibrium. Exit 0 converged (stable or neutral), 1 failed (result still "
                                               "printed) or no equilibrium exists, 2 bad input. Efforts and pin loads "
                                               "below 1e-9 of the largest print as 0 (round-off; --json keeps the raw "
                                               "values).")
    parser.add_argument("model")
    parser.add_argument("--set", action="append", default=[], metavar="JOINT=VALUE", help="prescribe a joint at a value")
    parser.add_argument("--hold", action="append", default=[], metavar="JOINT", help="prescribe a joint at its file value")
    parser.add_argument("--load", action="append", default=[], metavar="FRAME=fx,fy,fz[,mx,my,mz]",
                        help="world-fixed force (N) and torque (N m) at a frame")
    parser.add_argument("--gravity", metavar="gx,gy,gz", help="gravity vector (m/s^2), overrides the model's")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=run)


def _load(text: str) -> Load:
    frame, values = parse_assignment(text, "--load")
    if len(values) not in (3, 6):
        raise InputError([Problem("--load", text, f"{len(values)} numbers given",
                                  "FRAME=fx,fy,fz (N) or FRAME=fx,fy,fz,mx,my,mz (N, N m)")])
    check_bounded(values[:3], MAX_FORCE, "--load", text, "N")
    check_bounded(values[3:], MAX_TORQUE, "--load", text, "N m")
    return Load(frame, tuple(values[:3]), tuple(values[3:6]) if len(values) == 6 else (0.0, 0.0, 0.0))


def _gravity(text: str) -> list[float]:
    gravity = parse_vector(text, "--gravity", 3)
    check_bounded(gravity, MAX_GRAVITY, "--gravity", text, "m/s^2")
    return gravity


def _print_pin_reactions(rows: dict, floor: ForceFloor) -> None:
    """The pin-reaction table: force and moment in the joint frame (N, N m), their sizes, the role; round-off
    (``floor``) as 0."""
    if not rows:
        return
    width = max(40, *(len(name) for name in rows))
    print("pin reactions (every joint in a loop and every held actuator; parent on child, joint frame; N, N m)")
    print(f"{'joint':{width}s} {'role':>14s} {'fx':>11s} {'fy':>11s} {'fz':>11s} {'|F|':>11s} {'|M|':>11s}")
    for name, row in rows.items():
        cells = " ".join(floor.format(v, "11.5g") for v in (*row["force_joint"], row["force"], row["moment"]))
        print(f"{name:{width}s} {row['role']:>14s} {cells}" + ("  indeterminate" if not row["determinate"] else ""))


def _table_floor(result: dict) -> ForceFloor:
    """The round-off floor of the solve's tables: 1e-9 of its largest effort, pin force or pin moment."""
    efforts = [v for joint in result["joints"].values() for v in np.ravel(joint["effort"])]
    pins = [v for row in result["pin_reactions"].values() for v in (row["force"], row["moment"])]
    return ForceFloor(efforts + pins)


def run(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    values = joint_settings(args.set, "--set")
    loads = [_load(text) for text in args.load]
    gravity = _gravity(args.gravity) if args.gravity else None
    check_solve_memory(model, args.model)
    try:
        solution = solve(model, set=values, hold=args.hold, loads=loads, gravity=gravity)
    except (np.linalg.LinAlgError, FloatingPointError, OverflowError) as error:
        raise SolveError(f"{args.model}: the solve failed in its arithmetic ({error}); "
                         "the model's or the options' numbers are too large for double precision") from None
    efforts = [load.effort for load in solution.joint_loads.values()]
    check_finite_result(np.concatenate([solution.q, *efforts]), args.model)
    result = solution.as_dict()
    if args.json:
        emit_json(result)
    else:
        if solution.status == "no equilibrium":
            print(f"no equilibrium (found before iterating): {solution.blame[0]}", file=sys.stderr)
            return 1
        print(f"{solution.status} after {solution.iterations} iterations, residual {solution.residual:.3g}, "
              f"{solution.stability}")
        for direction in solution.neutral:
            print(f"  neutral direction: {direction}")
        for remark in solution.remarks:
            print(f"  note: {remark}")
        floor = _table_floor(result)
        print(f"{'joint':40s} {'position':>14s} {'deflection':>14s} {'effort':>14s}  units (position, effort)")
        prismatic = {j.name for j in model.joints
                     if len(j.coordinates) == 1 and model.node_kind[model.coordinate_node[j.coordinates[0]]] == PRISMATIC}
        for name, joint in result["joints"].items():
            if isinstance(joint["position"], float):
                units = "m, N" if name in prismatic else "rad, N m"
                print(f"{name:40s} {joint['position']:14.6g} {joint['deflection']:14.6g} "
                      f"{floor.format(joint['effort'], '14.6g')}  {units}"
                      + ("  indeterminate" if not joint["determinate"] else ""))
        _print_pin_reactions(result["pin_reactions"], floor)
        if floor.note():
            print(floor.note())
        for line in solution.blame:
            print(f"  worst: {line}")
    return 0 if solution.converged else 1
