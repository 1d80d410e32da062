"""``shiftsim jacobian MODEL --frame FRAME [--set JOINT=VALUE]... [--json]``: the Jacobian of a frame.

Prints ``{"frame", "joints", "jacobian", "configuration"}``: one column per
independent coordinate (coupled joints follow their sources and have no
column), rows linear velocity of the frame origin then angular velocity, in
world axes unless ``--relative-to`` / ``--expressed-in`` say otherwise. The
configuration is assembled as ``shiftsim fk`` does: ``--set`` joints are held,
the others start from the file's values and move to close the loops.
"""

from __future__ import annotations

import argparse

import numpy as np

from ..errors import InputError, Problem
from ..ik import jacobian
from ..ik.frames import frame_index, independent_coordinates
from ..kinematics import assemble
from ..loading import load_model
from ..model import Model
from ..statics import resolve_prescribed
from ._common import emit_json, parse_assignment

ROWS = ("vx", "vy", "vz", "wx", "wy", "wz")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("jacobian", help="Jacobian of a frame (linear then angular rows)",
                                   description="Print the 6 x n Jacobian of a frame at its origin: rows vx vy vz "
                                               "wx wy wz (world axes by default), one column per independent "
                                               "joint coordinate (rad or m). Exit 0 ok, 2 bad input.")
    parser.add_argument("model")
    parser.add_argument("--frame", required=True, metavar="FRAME", help="frame path body:frame (or a body: its origin)")
    parser.add_argument("--set", action="append", default=[], metavar="JOINT=VALUE",
                        help="hold a joint at a value (rad or m; comma-separated for multi-dof joints)")
    parser.add_argument("--relative-to", metavar="FRAME", help="motion as seen from this frame (default: the world)")
    parser.add_argument("--expressed-in", metavar="FRAME",
                        help="axes of the rows (default: those of --relative-to, else the world's)")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=run)


def prescribed_configuration(model: Model, texts: list[str], option: str = "--set") -> tuple[np.ndarray, np.ndarray]:
    """Start coordinates with the ``JOINT=VALUE`` settings applied, and the indices of the set coordinates.

    A coupled joint cannot be set (it follows the joints its law names).
    """
    values = dict(parse_assignment(text, option) for text in texts)
    coupled = {c.target for c in model.couplings}
    problems = []
    for name in values:
        try:
            coordinates = model.coordinates_of(name)
        except InputError:
            continue  # resolve_prescribed reports unknown names with suggestions
        if coupled & set(coordinates):
            law = next(c.text for c in model.couplings if c.target in coordinates)
            problems.append(Problem(option, name, f"joint {name!r} is coupled ({law}): it follows other joints",
                                    "an independent joint"))
    if problems:
        raise InputError(problems)
    return resolve_prescribed(model, values, [])


def run(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    frame = frame_index(model, args.frame, ("--frame", args.frame))
    relative_to, expressed_in = (None if name is None else frame_index(model, name, (option, name))
                                 for name, option in ((args.relative_to, "--relative-to"),
                                                      (args.expressed_in, "--expressed-in")))
    q, held = prescribed_configuration(model, args.set)
    q = assemble(model, q, held=held, start=model.q0).q
    matrix = jacobian(model, q, frame, relative_to=relative_to, expressed_in=expressed_in)
    joints = [model.coordinate_names[i] for i in independent_coordinates(model)]
    out = {
        "frame": model.frame_names[frame],
        "joints": joints,
        "jacobian": matrix.tolist(),
        "configuration": {name: float(q[i]) for i, name in enumerate(model.coordinate_names)},
    }
    if args.json:
        emit_json(out)
        return 0
    print(f"Jacobian of {out['frame']} (rows: linear m/s then angular rad/s per unit joint rate)")
    width = max([12, *map(len, joints)])
    print(" " * 4 + "".join(f"{name:>{width + 1}s}" for name in joints))
    for label, row in zip(ROWS, matrix):
        print(f"{label:4s}" + "".join(f"{value:>{width + 1}.6g}" for value in row))
    return 0
