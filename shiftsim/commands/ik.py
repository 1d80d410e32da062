"""``shiftsim ik MODEL --target FRAME=x,y,z[,roll,pitch,yaw] [--target ...] [--set JOINT=VALUE]... [--json]``.

Inverse kinematics: joint values that put every target frame at its world
position (m) and, when six numbers are given, orientation: roll, pitch, yaw in
**radians**, ``R = Rz(yaw) Ry(pitch) Rx(roll)`` (rotations about the fixed
world x, then y, then z axes). ``--set`` joints are held at their values;
``--start`` gives starting values for joints the solver moves. Prints
``{"status", "iterations", "residual", "joints", ...}``; exit 0 converged,
1 failed (the best configuration found is still printed), 2 bad input.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.spatial.transform import Rotation

from ..errors import InputError, Problem
from ..ik import EndEffectorConstraint, IKOptions, solve_ik
from ..ik.frames import frame_index
from ..ik.problem import MAX_ITERATIONS, MAX_RESTARTS
from ..loading import load_model
from ..model import Model
from ._common import emit_json, parse_assignment
from .jacobian import prescribed_configuration


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "ik", help="inverse kinematics: joint values that reach target frame poses",
        description="Solve for joint values that place each --target frame at a world position (m) and, with six "
                    "numbers, orientation (roll, pitch, yaw in rad: R = Rz(yaw) Ry(pitch) Rx(roll)). Joint limits "
                    "are respected and loops closed. Exit 0 converged, 1 failed, 2 bad input.")
    parser.add_argument("model")
    parser.add_argument("--target", action="append", required=True, metavar="FRAME=x,y,z[,roll,pitch,yaw]",
                        help="a frame's target position (m) and optional orientation (rad); repeat for several frames")
    parser.add_argument("--set", action="append", default=[], metavar="JOINT=VALUE", help="hold a joint at a value")
    parser.add_argument("--start", action="append", default=[], metavar="JOINT=VALUE",
                        help="start a moving joint from this value (default: the file's value)")
    parser.add_argument("--tolerance", type=float, default=1e-10, help="largest residual norm accepted (m, rad)")
    parser.add_argument("--max-iterations", type=int, default=100, help="iterations per start")
    parser.add_argument("--restarts", type=int, default=8,
                        help="further random starts within the joint limits while the solve fails (default 8)")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=run)


def parse_target(model: Model, text: str) -> EndEffectorConstraint:
    """``FRAME=x,y,z[,roll,pitch,yaw]`` as an absolute end-effector constraint (InputError when malformed)."""
    frame, numbers = parse_assignment(text, "--target")
    if len(numbers) not in (3, 6):
        raise InputError([Problem("--target", text, f"{len(numbers)} numbers",
                                  "3 (x,y,z in m) or 6 (x,y,z in m, roll,pitch,yaw in rad)")])
    name = model.frame_names[frame_index(model, frame, ("--target", text))]
    rotation = None
    if len(numbers) == 6:
        roll, pitch, yaw = numbers[3:]
        rotation = Rotation.from_euler("ZYX", [yaw, pitch, roll]).as_matrix()
    return EndEffectorConstraint(name, position=np.array(numbers[:3]), rotation=rotation, name=name)


def run(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    constraints = [parse_target(model, text) for text in args.target]
    seen: set[str] = set()
    for c, text in zip(constraints, args.target):
        if c.frame in seen:
            raise InputError([Problem("--target", text, f"frame {c.frame!r} has two targets", "one target per frame")])
        seen.add(c.frame)
    q, held = prescribed_configuration(model, args.set)
    start, moved = prescribed_configuration(model, args.start, "--start")
    overlap = sorted(set(held.tolist()) & set(moved.tolist()))
    if overlap:
        names = ", ".join(model.coordinate_names[i] for i in overlap)
        raise InputError([Problem("--start", names, "joint both held (--set) and given a start", "one or the other")])
    q[moved] = start[moved]
    held_joints = tuple(dict.fromkeys(model.joints[model.coordinate_joint[i]].name for i in held))
    if not (0 < args.tolerance < math.inf and 1 <= args.max_iterations <= MAX_ITERATIONS
            and 0 <= args.restarts <= MAX_RESTARTS):
        raise InputError([Problem("command line", "--tolerance/--max-iterations/--restarts",
                                  f"{args.tolerance}, {args.max_iterations}, {args.restarts}",
                                  f"a positive tolerance, 1 to {MAX_ITERATIONS:,} iterations, 0 to {MAX_RESTARTS:,} "
                                  "restarts")])
    options = IKOptions(tolerance=args.tolerance, max_iterations=args.max_iterations, held=held_joints,
                        restarts=args.restarts)
    result = solve_ik(model, constraints, q, options)
    if args.json:
        emit_json(result.as_dict())
    else:
        print(result.message)
        for name, value in result.joints.items():
            print(f"{name:40s} {value if isinstance(value, list) else f'{value:14.9g}'}")
    return 0 if result.converged else 1
