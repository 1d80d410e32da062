"""``shiftsim fk MODEL [--set JOINT=VALUE]... [--from FRAME --to FRAME] [--json]``: assemble and print world poses."""

from __future__ import annotations

import argparse

import numpy as np

from ..errors import InputError, Problem
from ..kinematics import assemble, closure_residual, forward, state
from ..loading import load_model
from ..statics import resolve_prescribed
from ._common import emit_json
from ._limits import joint_settings


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("fk", help="forward kinematics: world poses of every body and frame",
                                   description="Assemble the model (joints given with --set are held, the others start "
                                               "from the file's values and move to close the loops) and print poses.")
    parser.add_argument("model")
    parser.add_argument("--set", action="append", default=[], metavar="JOINT=VALUE",
                        help="hold a joint at a value (rad or m; comma-separated for multi-dof joints)")
    parser.add_argument("--from", dest="from_frame", metavar="FRAME", help="with --to: also print the pose of --to in --from")
    parser.add_argument("--to", dest="to_frame", metavar="FRAME")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=run)


def _pose(matrix: np.ndarray) -> dict:
    return {"position": matrix[:3, 3].tolist(), "rotation": matrix[:3, :3].tolist()}


def _frame(model, name: str, option: str) -> int:
    try:
        return model.frame_index(name)
    except InputError as error:
        raise InputError([Problem(option, name, p.what, p.expected) for p in error.problems]) from None


def run(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    values = joint_settings(args.set, "--set")
    q, held = resolve_prescribed(model, values, [])
    if (args.from_frame is None) != (args.to_frame is None):
        raise InputError([Problem("command line", "--from/--to", "only one of --from and --to given", "both or neither")])
    result = assemble(model, q, held=held, start=model.q0)
    poses = forward(model, result.q)
    out = {
        "frames": {name: _pose(poses.frames[i]) for i, name in enumerate(model.frame_names)},
        "bodies": {name: _pose(poses.bodies[i]) for i, name in enumerate(model.body_names) if i},
        "joints": {j.name: (float(result.q[j.coordinates[0]]) if len(j.coordinates) == 1
                            else result.q[list(j.coordinates)].tolist()) for j in model.joints},
        "closure_residual": float(np.linalg.norm(closure_residual(model, state(model, result.q[None]))[0])),
    }
    if args.from_frame is not None:
        a = poses.frames[_frame(model, args.from_frame, "--from")]
        b = poses.frames[_frame(model, args.to_frame, "--to")]
        out["transform"] = (np.linalg.inv(a) @ b).tolist()
    if args.json:
        emit_json(out)
        return 0
    print(f"{'frame':40s} {'x (m)':>12s} {'y (m)':>12s} {'z (m)':>12s}  (world axes)")
    for name, pose in out["frames"].items():
        x, y, z = pose["position"]
        print(f"{name:40s} {x:12.6f} {y:12.6f} {z:12.6f}")
    if "transform" in out:
        print(f"transform {args.to_frame} in {args.from_frame}:")
        print(np.array2string(np.array(out["transform"]), precision=6, suppress_small=True))
    print(f"closure residual {out['closure_residual']:.3g}")
    return 0
