"""``shiftsim jacobian MODEL --frame FRAME [--set JOINT=VALUE]... [--wrt JOINT,...] [--json]``: the Jacobian of a frame.

Prints ``{"frame", "joints", "eliminated", "held", "chosen_by", "jacobian",
"configuration"}``: one column per independent coordinate (``joints``), rows
linear velocity of the frame origin then angular velocity, in world axes unless
``--relative-to`` / ``--expressed-in`` say otherwise. Closed loops are kept
closed (:func:`shiftsim.ik.loops.closed_loop_jacobian`): the loop-closing
coordinates (``eliminated``) move with the columns, so on an excavator a column
is d(tip)/d(cylinder stroke). The columns are chosen by pivoted QR, actuators
and cylinders first (``chosen_by: "pivoted QR"``), or named with ``--wrt``
(uncoupled coordinates no loop involves and ``--wrt`` leaves out are ``held``).
Coupled joints follow their sources and have no column. The configuration is
assembled as ``shiftsim fk`` does: ``--set`` joints are held, the others start
from the file's values and move to close the loops.
"""

from __future__ import annotations

import argparse

import numpy as np

from ..errors import InputError, Problem
from ..ik.frames import frame_index
from ..ik.loops import closed_loop_jacobian
from ..kinematics import assemble
from ..loading import load_model
from ..model import Model
from ..statics import resolve_prescribed
from ._common import emit_json
from ._limits import joint_settings

ROWS = ("vx", "vy", "vz", "wx", "wy", "wz")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("jacobian", help="Jacobian of a frame (linear then angular rows)",
                                   description="Print the 6 x n Jacobian of a frame at its origin: rows vx vy vz "
                                               "wx wy wz (world axes by default), one column per independent "
                                               "coordinate (rad or m) with closed loops kept closed: the "
                                               "loop-closing coordinates move with the columns (d tip / d stroke). "
                                               "Exit 0 ok, 1 the loops cannot close at the --set values, "
                                               "2 bad input.")
    parser.add_argument("model")
    parser.add_argument("--frame", required=True, metavar="FRAME", help="frame path body:frame (or a body: its origin)")
    parser.add_argument("--set", action="append", default=[], metavar="JOINT=VALUE",
                        help="hold a joint at a value (rad or m; comma-separated for multi-dof joints)")
    parser.add_argument("--wrt", action="append", default=[], metavar="JOINT[,JOINT...]",
                        help="the columns: coordinates that fix the loops (default: chosen by pivoted QR, "
                             "actuated and prismatic joints such as cylinders first)")
    parser.add_argument("--relative-to", metavar="FRAME", help="motion as seen from this frame (default: the world)")
    parser.add_argument("--expressed-in", metavar="FRAME",
                        help="axes of the rows (default: those of --relative-to, else the world's)")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=run)


def prescribed_configuration(model: Model, texts: list[str], option: str = "--set") -> tuple[np.ndarray, np.ndarray]:
    """Start coordinates with the ``JOINT=VALUE`` settings applied, and the indices of the set coordinates.

    A coupled joint cannot be set (it follows the joints its law names).
    """
    values = joint_settings(texts, option)
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


def wrt_coordinates(model: Model, texts: list[str]) -> list[int] | None:
    """Coordinate indices the ``--wrt`` options name (joints, comma-separated; a multi-dof joint gives all its
    coordinates, ``joint[k]`` one of them); None without ``--wrt``."""
    names = [name.strip() for text in texts for name in text.split(",") if name.strip()]
    if not texts:
        return None
    indices: list[int] = []
    problems = []
    for name in names:
        if name in model.coordinate_names:
            indices.append(model.coordinate_names.index(name))
            continue
        try:
            indices.extend(model.coordinates_of(name))
        except InputError as error:
            problems += [Problem("--wrt", name, p.what, "one of: " + ", ".join(model.coordinate_names))
                         for p in error.problems]
    if not names:
        problems.append(Problem("--wrt", ",".join(texts), "no joint named", "JOINT[,JOINT...]"))
    if problems:
        raise InputError(problems)
    return sorted(set(indices))


def run(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    frame = frame_index(model, args.frame, ("--frame", args.frame))
    relative_to, expressed_in = (None if name is None else frame_index(model, name, (option, name))
                                 for name, option in ((args.relative_to, "--relative-to"),
                                                      (args.expressed_in, "--expressed-in")))
    q, held = prescribed_configuration(model, args.set)
    q = assemble(model, q, held=held, start=model.q0).q
    wrt = wrt_coordinates(model, args.wrt)
    matrix, basis = closed_loop_jacobian(model, q, frame, wrt=wrt, relative_to=relative_to,
                                         expressed_in=expressed_in, where=("--wrt", ",".join(args.wrt)))
    joints = basis.names(model)
    out = {
        "frame": model.frame_names[frame],
        "joints": joints,
        "eliminated": basis.names(model, "dependent"),
        "held": basis.names(model, "held"),
        "chosen_by": basis.chosen_by,
        "jacobian": matrix.tolist(),
        "configuration": {name: float(q[i]) for i, name in enumerate(model.coordinate_names)},
    }
    if args.json:
        emit_json(out)
        return 0
    print(f"Jacobian of {out['frame']} (rows: linear m/s then angular rad/s per unit joint rate)")
    print(f"columns: {', '.join(joints) or 'none'} (chosen by {basis.chosen_by})")
    if out["eliminated"]:
        print(f"loop-closing coordinates eliminated (they move to keep the loops closed): "
              f"{', '.join(out['eliminated'])}")
    if out["held"]:
        print(f"held still: {', '.join(out['held'])}")
    width = max([12, *map(len, joints)])
    print(" " * 4 + "".join(f"{name:>{width + 1}s}" for name in joints))
    for label, row in zip(ROWS, matrix):
        print(f"{label:4s}" + "".join(f"{value:>{width + 1}.6g}" for value in row))
    return 0
