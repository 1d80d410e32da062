"""``shiftsim mdx``: Mdx motion platform kinematics and the simulated middleware and effector.

* ``shiftsim mdx ik GEOMETRY --xyzrpy v0 .. v5 [--real] [--json]``: leg lengths (mm),
  raw values and whether each leg is within actuatorLen;
* ``shiftsim mdx fk GEOMETRY (--lengths l0 .. l5 | --raw r0 .. r5) [--real] [--json]``:
  the pose (normalized, or mm and degrees with ``--real``), the solver status
  and the leg length residual (mm); exit 1 when it does not converge;
* ``shiftsim mdx serve --geometry FILE [--client-port 10002] [--watch-port 10004] [--effector HOST:PORT]``;
* ``shiftsim mdx effector --geometry FILE [--port 10003] [--payload KG]``.

The services log JSON lines (stdout unless ``--log FILE``), the first being
``{"event": "listening", ...}`` with the bound ports, and stop cleanly on
SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import sys
from pathlib import Path
from typing import IO, Iterator

import numpy as np

from ..errors import InputError, Problem
from ..typed import bound_of
from ..jsonio import dumps, read_json
from ..mdx.geometry import MODEL_EXTRA_KEYS, Platform, platform_from_reply
from ..mdx.kinematics import (forward, inverse, lengths_from_raw, normalized_pose, pose_scale, real_pose,
                              workspace_violations)
from ..mdx.service import DEFAULT_CLIENT_PORT, DEFAULT_EFFECTOR_PORT, DEFAULT_WATCH_PORT, EventLog, run_until_signalled

MAX_POSE_FACTOR = 100.0
"""``mdx ik`` poses and ``mdx fk`` leg lengths beyond this many times the rated range are refused (exit 2)."""


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0 to 65535)") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port number (0 to 65535)")
    return value


def _host_port(text: str) -> tuple[str, int]:
    host, separator, port = text.rpartition(":")
    if not separator or not host:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return host, _port(port)


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def _check_pose(platform: Platform, pose: np.ndarray, units: str) -> None:
    """Refuse a pose more than MAX_POSE_FACTOR times the rated range (a typo, and 1e308 overflows the legs)."""
    normalized = pose / pose_scale(platform) if units == "real" else pose
    names = ("x", "y", "z", "roll", "pitch", "yaw")
    far = [f"{name} {value:g}" for name, value, n in zip(names, pose, normalized) if abs(n) > MAX_POSE_FACTOR]
    if far:
        unit = "mm and degrees" if units == "real" else "normalized"
        raise InputError([Problem("--xyzrpy", " ".join(f"{v:g}" for v in pose), f"{', '.join(far)} ({unit}) is more "
                                  f"than {MAX_POSE_FACTOR:g} times the rated range",
                                  f"each value within ±{MAX_POSE_FACTOR:g} x maxTranslation (mm) or maxRotation "
                                  f"(degrees), normalized within ±{MAX_POSE_FACTOR:g}")])


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "mdx", help="Mdx motion platform: kinematics, simulated middleware and effector",
        description="Mdx (Stewart) motion platform tools. Geometry files are Mdx geometry replies (mm, degrees).",
    )
    commands = parser.add_subparsers(dest="mdx_command", required=True)

    ik = commands.add_parser("ik", help="leg lengths and raw values for a pose")
    ik.add_argument("geometry", type=Path, help="geometry reply file (JSON)")
    ik.add_argument("--xyzrpy", type=_finite, nargs=6, required=True, metavar="V",
                    help="x y z roll pitch yaw, normalized (default) or mm and degrees with --real")
    ik.add_argument("--real", action="store_true", help="the pose is in mm and degrees")
    ik.add_argument("--json", action="store_true", help="print JSON")
    ik.set_defaults(func=run_ik)

    fk = commands.add_parser("fk", help="platform pose for six leg lengths (Newton from the neutral pose)")
    fk.add_argument("geometry", type=Path, help="geometry reply file (JSON)")
    legs = fk.add_mutually_exclusive_group(required=True)
    legs.add_argument("--lengths", type=_finite, nargs=6, metavar="MM", help="leg lengths in mm")
    legs.add_argument("--raw", type=_finite, nargs=6, metavar="R", help="raw actuator values (-1 = min, 1 = max)")
    fk.add_argument("--real", action="store_true", help="print the pose in mm and degrees (default normalized)")
    fk.add_argument("--json", action="store_true", help="print JSON")
    fk.set_defaults(func=run_fk)

    serve = commands.add_parser("serve", help="run the simulated middleware")
    serve.add_argument("--geometry", type=Path, required=True, help="geometry reply file (JSON)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--client-port", type=_port, default=DEFAULT_CLIENT_PORT, help="client port (0 = any free)")
    serve.add_argument("--watch-port", type=_port, default=DEFAULT_WATCH_PORT, help="watcher port (0 = any free)")
    serve.add_argument("--effector", type=_host_port, metavar="HOST:PORT", help="effector to drive")
    serve.add_argument("--log", type=Path, help="append the JSON-lines event log here (default stdout)")
    serve.set_defaults(func=run_serve)

    effector = commands.add_parser("effector", help="run the simulated effector")
    effector.add_argument("--geometry", type=Path, required=True, help="geometry reply file (JSON)")
    effector.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    effector.add_argument("--port", type=_port, default=DEFAULT_EFFECTOR_PORT, help="port (0 = any free)")
    effector.add_argument("--payload", type=_finite, metavar="KG",
                          help="payload mass on the platform (default: the file's payloadMass, else 80 kg)")
    effector.add_argument("--log", type=Path, help="append the JSON-lines event log here (default stdout)")
    effector.set_defaults(func=run_effector)


def _read_platform(path: Path) -> tuple[Platform, object]:
    """The platform of a geometry file and the file's parsed data; warnings go to stderr."""
    data, warnings = read_json(path)
    platform, more = platform_from_reply(data, str(path), extra_keys=MODEL_EXTRA_KEYS)
    for warning in warnings + more:
        print(f"warning: {warning}", file=sys.stderr)
    return platform, data


def _print_json(data: object) -> None:
    sys.stdout.write(dumps(data).decode("utf-8"))


def run_ik(args: argparse.Namespace) -> int:
    platform, _ = _read_platform(args.geometry)
    units = "real" if args.real else "normalized"
    pose = np.array(args.xyzrpy)
    _check_pose(platform, pose, units)
    legs = inverse(platform, pose, units)
    for problem in workspace_violations(platform, real_pose(platform, pose, units)):
        print(f"warning: outside the workspace: {problem}", file=sys.stderr)
    if args.json:
        _print_json(legs.as_json())
        return 0
    print(f"{'leg':>3}  {'length mm':>10}  {'raw':>8}  in range [{platform.actuator_min_mm:g}, {platform.actuator_max_mm:g}] mm")
    for i, (length, raw, ok) in enumerate(zip(legs.lengths_mm, legs.raw, legs.in_range)):
        print(f"{i:>3}  {length:>10.3f}  {raw:>8.4f}  {'yes' if ok else 'NO'}")
    return 0


def run_fk(args: argparse.Namespace) -> int:
    platform, _ = _read_platform(args.geometry)
    if args.lengths is not None:
        lengths = np.array(args.lengths)
        bad = [f"leg {i} is {v:g} mm" for i, v in enumerate(lengths) if v <= 0]
        if bad:
            raise InputError([Problem("--lengths", "", "; ".join(bad), "positive leg lengths in mm")])
        too_long = [f"leg {i} is {v:g} mm" for i, v in enumerate(lengths) if v > MAX_POSE_FACTOR * platform.actuator_max_mm]
        if too_long:
            raise InputError([Problem("--lengths", "", "; ".join(too_long),
                                      f"leg lengths up to {MAX_POSE_FACTOR:g} x actuatorLen's maximum "
                                      f"({MAX_POSE_FACTOR * platform.actuator_max_mm:g} mm)")])
    else:
        outside = [f"raw {i} is {v:g}" for i, v in enumerate(args.raw) if not -1.0 <= v <= 1.0]
        if outside:
            raise InputError([Problem("--raw", "", "; ".join(outside), "raw values from -1 (shortest) to 1 (longest)")])
        lengths = lengths_from_raw(platform, np.array(args.raw))
    solution = forward(platform, lengths)
    pose = solution.xyzrpy_real if args.real else normalized_pose(platform, solution.xyzrpy_real)
    result = {"xyzrpy": pose.tolist(), "status": solution.status, "residual": solution.residual_mm}
    if args.json:
        _print_json(result)
    else:
        units = "mm, mm, mm, deg, deg, deg" if args.real else "normalized"
        print(f"xyzrpy ({units}): " + " ".join(f"{v:.6g}" for v in pose))
        print(f"status: {solution.status}; leg length residual {solution.residual_mm:.3g} mm")
    if not solution.converged:
        print(f"shiftsim mdx fk: {solution.message()}", file=sys.stderr)
        return 1
    return 0


@contextlib.contextmanager
def _log_stream(path: Path | None) -> Iterator[IO[str]]:
    if path is None:
        yield sys.stdout
        return
    try:
        stream = path.open("a", encoding="utf-8")
    except OSError as error:
        raise InputError([Problem(str(path), "", f"cannot open the log: {error.strerror}", "a writable file")]) from None
    with stream:
        yield stream


def run_serve(args: argparse.Namespace) -> int:
    from ..mdx.middleware import Middleware, MiddlewareSettings

    platform, _ = _read_platform(args.geometry)
    settings = MiddlewareSettings(
        host=args.host, client_port=args.client_port, watch_port=args.watch_port, effector=args.effector
    )
    with _log_stream(args.log) as stream:
        asyncio.run(run_until_signalled(Middleware(platform, EventLog(stream), settings)))
    return 0


def run_effector(args: argparse.Namespace) -> int:
    from ..formats.mdx import mdx_model_spec
    from ..mdx.effector import Effector
    from ._mdx_statics import ActuatorStatics

    if args.payload is not None and not 0 <= args.payload <= bound_of("kg"):
        raise InputError([Problem("--payload", "", f"is {args.payload:g}",
                                  f"a mass in kg from 0 to {bound_of('kg'):g}")])
    platform, data = _read_platform(args.geometry)
    spec = mdx_model_spec(args.geometry, data, payload_kg=args.payload)
    forces = ActuatorStatics(spec)
    with _log_stream(args.log) as stream:
        service = Effector(
            platform, EventLog(stream), host=args.host, port=args.port, forces=forces,
            payload_kg=spec.extras["mdx"]["payload_kg"],
        )
        asyncio.run(run_until_signalled(service))
    return 0
