"""``shiftsim mfk``: inspect Topcon MFK resource configurations and their replicate buffers.

* ``shiftsim mfk show CONFIG [--set REF=VALUE]... [--site-origin LAT,LON,ALT] [--json]``: poses of
  nodes, collision shapes and points of interest in the machine and site
  frames, and the measurements, after the measurement scripts and the given
  values; a machine placed by WGS84 coordinates is shown in the tangent plane
  about ``--site-origin`` (degrees, degrees, metres; default its own position);
* ``shiftsim mfk encode CONFIG [--set REF=VALUE]...``: the replicate buffers,
  ``{"rc_uuid": ..., "manifest": [base64 per component]}``;
* ``shiftsim mfk decode CONFIG FILE``: the values in such an object (FILE or
  ``-`` for standard input), ``{"values": {"cC:REF": value}}``.

``REF`` is an MFK value reference, optionally prefixed by the component's
assembly name (``c1:topcon.nodes.boom.ry=0.4``; names: ``docs/naming.md``).
Exit codes: 0 ok, 2 bad input.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import orjson

from ..errors import InputError, Problem, Problems
from ..formats.mfk import load_configuration, read_mfk_file
from ..formats.mfk.replicate import decode_message, encode_message
from ..formats.mfk.report import describe
from ..formats.mfk.wgs import Geodetic
from ._common import emit_json


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("mfk", help="Topcon MFK resource configurations: show, encode, decode",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="mfk_command", required=True)
    set_help = "set an MFK value before and after the measurement scripts, e.g. c1:topcon.nodes.boom.ry=0.4"

    show = actions.add_parser("show", help="poses of nodes, shapes and points; measurements")
    show.add_argument("config", help="MFK resource configuration (JSON)")
    show.add_argument("--set", action="append", default=[], metavar="REF=VALUE", help=set_help)
    show.add_argument("--site-origin", metavar="LAT,LON,ALT", type=parse_origin,
                      help="WGS84 origin of the site (degrees, degrees, metres above the ellipsoid) for a machine "
                           "placed by a 'wgs' transform; default: the machine's own position. Write "
                           "--site-origin=-23.4,119.7,520 for a southern latitude")
    show.add_argument("--json", action="store_true", help="print JSON instead of a table")

    encode = actions.add_parser("encode", help="replicate buffers of the configuration's current values")
    encode.add_argument("config", help="MFK resource configuration (JSON)")
    encode.add_argument("--set", action="append", default=[], metavar="REF=VALUE", help=set_help)

    decode = actions.add_parser("decode", help="values carried by replicate buffers")
    decode.add_argument("config", help="MFK resource configuration (JSON)")
    decode.add_argument("file", help='{"rc_uuid", "manifest"} JSON file, or - for standard input')
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    values = parse_settings(getattr(args, "set", []))
    data, warnings = read_mfk_file(args.config)
    config = load_configuration(data, args.config, values, values_source="--set")
    for warning in [*warnings, *config.warnings]:
        print(f"warning: {warning}", file=sys.stderr)
    if args.mfk_command == "show" and not args.json:
        print(format_table(describe(config, args.site_origin)))
    elif args.mfk_command == "show":
        emit_json(describe(config, args.site_origin))
    elif args.mfk_command == "encode":
        emit_json(encode_message(config))
    else:
        decoded = decode_message(config, read_message(args.file), args.file)
        emit_json({"values": {str(ref): value for ref, value in decoded}})
    return 0


def parse_settings(items: list[str]) -> dict[str, float]:
    """``REF=VALUE`` strings -> ``{REF: value}``. Raises InputError naming each bad one."""
    problems = Problems("--set", InputError)
    values: dict[str, float] = {}
    for item in items:
        ref, sep, text = item.partition("=")
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not sep or not ref.strip() or not math.isfinite(value):
            problems.add(item, "not REF=VALUE with a finite number", "e.g. c1:topcon.nodes.boom.ry=0.4")
            continue
        values[ref.strip()] = value
    problems.raise_if_any()
    return values


def parse_origin(text: str) -> Geodetic:
    """``LAT,LON,ALT`` (degrees, degrees, metres) -> a geodetic origin; argparse reports a bad one (exit 2)."""
    parts = text.split(",")
    try:
        lat, lon, alt = (float(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not LAT,LON,ALT (three numbers)") from None
    if not (-90 <= lat <= 90 and -180 <= lon <= 360 and abs(alt) <= 1e6):
        raise argparse.ArgumentTypeError(f"{text!r}: latitude in [-90, 90], longitude in [-180, 360] degrees and "
                                         "altitude within 1e6 m expected")
    return Geodetic(lat, lon, alt)


def read_message(path: str) -> Any:
    """The JSON object of a replicate message from a file or ``-`` (standard input)."""
    expected = '{"rc_uuid": ..., "manifest": [...]}'
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise InputError([Problem(path, "", f"cannot read the file: {exc.strerror}", expected)]) from None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputError([Problem(path, f"line {exc.lineno}, column {exc.colno}", f"not valid JSON: {exc.msg}",
                                  expected)]) from None


def format_table(report: dict[str, Any]) -> str:
    """A readable text version of :func:`~shiftsim.formats.mfk.report.describe`."""

    def vec(v: Any) -> str:
        return " ".join(f"{x:9.3f}" for x in v)

    width = max([len(k) for section in ("nodes", "collision_shapes", "points", "measurements")
                 for k in report[section]] + [10]) + 2
    lines = [f"{report['description']}  (uuid {report['uuid']})", ""]
    lines.append(f"{'node':<{width}}{'machine x, y, z [m]':>30}   {'site E, N, U [m]':>30}")
    for key, node in report["nodes"].items():
        lines.append(f"{key:<{width}}{vec(node['machine']['position']):>30}   {vec(node['site']['position']):>30}")
    lines += ["", f"{'collision shape':<{width}}{'type':<7}{'node':<{width}}{'centre (machine) [m]':>30}   size [m]"]
    for key, shape in report["collision_shapes"].items():
        size = f"half extents {vec(shape['half_extents'])}" if "half_extents" in shape else \
            f"radius {shape['radius']:.3f}"
        lines.append(f"{key:<{width}}{shape['type']:<7}{shape['node']:<{width}}{vec(shape['centre_machine']):>30}   "
                     f"{size}")
    lines += ["", f"{'point':<{width}}{'machine x, y, z [m]':>30}   {'site E, N, U [m]':>30}"]
    for key, point in report["points"].items():
        lines.append(f"{key:<{width}}{vec(point['machine']):>30}   {vec(point['site']):>30}")
    lines += ["", f"{'measurement':<{width}}value"]
    for key, value in report["measurements"].items():
        lines.append(f"{key:<{width}}{value:g}")
    return "\n".join(lines)

