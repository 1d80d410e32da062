"""Messages of the Mdx platform protocol (JSON-RPC 2.0 style), parsed and produced.

Client -> middleware, one JSON object per line:

* ``{"jsonrpc": "2.0", "method": "xyzrpy", "args": [6 numbers], "units": "real"?}``
  normalized values in [-1, 1], or with ``"units": "real"`` mm and degrees
  within maxTranslation / maxRotation (``"units": "norm"`` is the default);
* ``{"method": "raw", "args": [6]}``: raw actuator values in [-1, 1], or leg
  lengths in mm within actuatorLen with ``"units": "real"``;
* ``{"method": "config", "gainX": ..., "washoutYaw": ..., "blocking": false}``;
* ``{"method": "activate"}``, ``{"method": "deactivate"}``;
* ``{"method": "geometry"}``: asks for the geometry (answered with the reply below).

Middleware -> effector: ``geometry`` request, ``moveEvent``, ``activate``,
``deactivate``. Effector -> middleware: the ``geometry`` reply
``{"jsonrpc": "2.0", "reply": "geometry", "baseRadius": ..., ...}``.
Middleware -> watchers and effector: ``{"jsonrpc": "2.0", "method": "moveEvent",
"rawArgs": [6], "xyzrpyArgs": [6], "extents": [4]}`` (``xyzArgs``, the
original middleware's name, is accepted when reading; ``xyzrpyArgs`` is written).

Every parse either returns a message object or raises :class:`ProtocolError`
with a JSON-RPC error code and a message saying what was wrong and what was
expected; :meth:`ProtocolError.reply` is the error reply to send back.
Unknown fields are refused (a mistyped ``"unit": "real"`` must not move the
platform in the wrong units).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Any, Literal, Union

import orjson

from ..errors import ModelError
from ..typed import is_finite_number
from ..jsonio import dumps
from .geometry import GEOMETRY_KEYS, PROTOCOL_KEYS, Platform, geometry_fields, platform_from_reply
from .shaping import config_problems

Units = Literal["normalized", "real"]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602

FRAME_HEADER = struct.Struct(">H")
MAX_FRAME_BYTES = 0xFFFF

ENVELOPE_KEYS = frozenset({"jsonrpc", "method", "id"})
METHODS = ("xyzrpy", "raw", "config", "activate", "deactivate", "geometry", "moveEvent")


class ProtocolError(Exception):
    """A message that cannot be accepted: a JSON-RPC error ``code`` and a message."""

    def __init__(self, code: int, message: str, request_id: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id

    def reply(self) -> dict[str, Any]:
        """The JSON-RPC error reply for this error."""
        return {"jsonrpc": "2.0", "error": {"code": self.code, "message": self.message}, "id": self.request_id}


@dataclass(frozen=True)
class XyzrpyRequest:
    """A pose request: x, y, z, roll, pitch, yaw (normalized, or mm and degrees)."""

    args: tuple[float, ...]
    units: Units = "normalized"

    def to_json(self) -> dict[str, Any]:
        return _move_json("xyzrpy", self.args, self.units)


@dataclass(frozen=True)
class RawRequest:
    """Six raw actuator values in [-1, 1] (or leg lengths in mm with real units)."""

    args: tuple[float, ...]
    units: Units = "normalized"

    def to_json(self) -> dict[str, Any]:
        return _move_json("raw", self.args, self.units)


@dataclass(frozen=True)
class ConfigRequest:
    """Gain and washout settings (``gainX`` ... ``washoutYaw``, ``gain``) to apply."""

    settings: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "method": "config", **self.settings}


@dataclass(frozen=True)
class ActivationRequest:
    """``activate`` (True) or ``deactivate`` (False) the effector."""

    active: bool

    def to_json(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "method": "activate" if self.active else "deactivate"}


@dataclass(frozen=True)
class GeometryRequest:
    """Asks for the platform geometry; ``id`` is echoed in the reply when given."""

    id: Any = None

    def to_json(self) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": "geometry"}
        if self.id is not None:
            message["id"] = self.id
        return message


@dataclass(frozen=True)
class GeometryReply:
    """The effector's geometry reply."""

    platform: Platform
    id: Any = None
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def to_json(self) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "reply": "geometry", **self.platform.reply_fields()}
        if self.id is not None:
            message["id"] = self.id
        return message


@dataclass(frozen=True)
class MoveEvent:
    """A move as sent to the effector and watchers: raw values, shaped normalized pose, extents."""

    raw_args: tuple[float, ...]
    xyzrpy_args: tuple[float, ...]
    extents: tuple[float, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "jsonrpc": "2.0",
            "method": "moveEvent",
            "rawArgs": list(self.raw_args),
            "xyzrpyArgs": list(self.xyzrpy_args),
            "extents": list(self.extents),
        }


Message = Union[
    XyzrpyRequest, RawRequest, ConfigRequest, ActivationRequest, GeometryRequest, GeometryReply, MoveEvent
]


def _move_json(method: str, args: tuple[float, ...], units: Units) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "args": list(args)}
    if units == "real":
        message["units"] = "real"
    return message


def encode_line(message: Message | dict[str, Any]) -> bytes:
    """One compact JSON line (UTF-8, ending in a newline)."""
    data = message if isinstance(message, dict) else message.to_json()
    return dumps(data, indent=False)


def frame(line: bytes) -> bytes:
    """Middleware -> effector framing: 2-byte big-endian length, then the line."""
    if len(line) > MAX_FRAME_BYTES:
        raise ValueError(f"message of {len(line)} bytes exceeds the {MAX_FRAME_BYTES}-byte frame limit")
    return FRAME_HEADER.pack(len(line)) + line


def decode_line(line: bytes | str) -> dict[str, Any]:
    """The JSON object on one line; ProtocolError when it is not JSON or not an object."""
    text = line.strip()
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise ProtocolError(PARSE_ERROR, f"not valid JSON: {error}; expected one JSON object per line") from None
    if not isinstance(data, dict):
        raise ProtocolError(INVALID_REQUEST, f"found a JSON {type(data).__name__}, expected a JSON object")
    if isinstance(data.get("id"), float):
        data["id"] = _exact_id(text)
    return data


def _exact_id(text: bytes | str) -> Any:
    """The message's ``id`` as written: orjson reads an integer beyond 64 bits as a float, which
    would echo a different id; such an integer is kept as its digits (an ``orjson.Fragment``)."""

    def integer(digits: str) -> int | orjson.Fragment:
        return int(digits) if len(digits.lstrip("-")) < 19 else orjson.Fragment(digits)

    try:
        return json.loads(text, parse_int=integer)["id"]
    except RecursionError:
        raise ProtocolError(INVALID_REQUEST, "nested too deeply; expected a flat JSON-RPC message") from None


def parse_message(data: dict[str, Any], platform: Platform) -> Message:
    """Validate one decoded message; ``platform`` gives the ranges of real-unit moves."""
    request_id = data.get("id")
    if data.get("jsonrpc", "2.0") != "2.0":
        raise ProtocolError(INVALID_REQUEST, f'jsonrpc is {data["jsonrpc"]!r}, expected "2.0"', request_id)
    if "reply" in data or isinstance(data.get("result"), dict):
        return _parse_geometry_reply(data, request_id)
    method = data.get("method")
    if not isinstance(method, str):
        raise ProtocolError(
            INVALID_REQUEST, f"method is {method!r}, expected a string naming a method (one of {', '.join(METHODS)})",
            request_id,
        )
    if method in ("xyzrpy", "raw"):
        return _parse_move(data, method, platform, request_id)
    if method == "config":
        return _parse_config(data, request_id)
    if method in ("activate", "deactivate"):
        _refuse_unknown_keys(data, ENVELOPE_KEYS, request_id)
        return ActivationRequest(method == "activate")
    if method == "geometry":
        _refuse_unknown_keys(data, ENVELOPE_KEYS, request_id)
        return GeometryRequest(request_id)
    if method == "moveEvent":
        return _parse_move_event(data, request_id)
    raise ProtocolError(METHOD_NOT_FOUND, f"unknown method {method!r}, expected one of {', '.join(METHODS)}", request_id)


def parse_line(line: bytes | str, platform: Platform) -> Message:
    """:func:`decode_line` then :func:`parse_message`."""
    return parse_message(decode_line(line), platform)


def _refuse_unknown_keys(
    data: dict[str, Any], allowed: frozenset[str] | set[str], request_id: Any, what: str | None = None
) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        what = what or repr(data.get("method") or data.get("reply"))
        fields = ", ".join(map(repr, unknown))
        raise ProtocolError(
            INVALID_PARAMS,
            f"unknown field{'s' if len(unknown) > 1 else ''} {fields} in {what}; expected only {', '.join(sorted(allowed))}",
            request_id,
        )


def _numbers(data: dict[str, Any], key: str, count: int, request_id: Any) -> tuple[float, ...]:
    values = data.get(key)
    if not isinstance(values, list) or len(values) != count:
        shown = "missing" if key not in data else repr(values)
        raise ProtocolError(INVALID_PARAMS, f"{key} is {shown}, expected an array of {count} numbers", request_id)
    bad = [f"{key}[{i}] is {v!r}" for i, v in enumerate(values) if not is_finite_number(v)]
    if bad:
        raise ProtocolError(INVALID_PARAMS, f"{'; '.join(bad)}, expected finite numbers", request_id)
    return tuple(float(v) for v in values)


def _parse_units(data: dict[str, Any], request_id: Any) -> Units:
    units = data.get("units", "norm")
    if units == "norm":
        return "normalized"
    if units == "real":
        return "real"
    raise ProtocolError(INVALID_PARAMS, f'units is {units!r}, expected "norm" (the default) or "real"', request_id)


def _parse_move(data: dict[str, Any], method: str, platform: Platform, request_id: Any) -> Message:
    _refuse_unknown_keys(data, ENVELOPE_KEYS | {"args", "units"}, request_id)
    units = _parse_units(data, request_id)
    args = _numbers(data, "args", 6, request_id)
    if units == "normalized":
        limits = [(-1.0, 1.0, "")] * 6
    elif method == "xyzrpy":
        t, r = platform.max_translation_mm, platform.max_rotation_deg
        limits = [(-t, t, " mm")] * 3 + [(-r, r, " degrees")] * 3
    else:
        limits = [(platform.actuator_min_mm, platform.actuator_max_mm, " mm")] * 6
    out = [
        f"args[{i}] is {value:g}, outside [{low:g}, {high:g}]{unit}"
        for i, (value, (low, high, unit)) in enumerate(zip(args, limits))
        if not low <= value <= high
    ]
    if out:
        meaning = "normalized values" if units == "normalized" else "real units"
        raise ProtocolError(INVALID_PARAMS, f"{method} out of range ({meaning}): {'; '.join(out)}", request_id)
    return XyzrpyRequest(args, units) if method == "xyzrpy" else RawRequest(args, units)


def _parse_config(data: dict[str, Any], request_id: Any) -> ConfigRequest:
    settings = {key: value for key, value in data.items() if key not in ENVELOPE_KEYS and key != "blocking"}
    problems = config_problems(settings)
    if "blocking" in data and data["blocking"] is not False:
        problems.insert(0, f"blocking is {data['blocking']!r}, expected false (the only mode supported)")
    if problems:
        raise ProtocolError(INVALID_PARAMS, "config refused: " + "; ".join(problems), request_id)
    return ConfigRequest({key: float(value) for key, value in settings.items()})


def _parse_move_event(data: dict[str, Any], request_id: Any) -> MoveEvent:
    _refuse_unknown_keys(data, ENVELOPE_KEYS | {"rawArgs", "xyzrpyArgs", "xyzArgs", "extents"}, request_id)
    if "xyzrpyArgs" in data and "xyzArgs" in data:
        raise ProtocolError(INVALID_PARAMS, "moveEvent has both xyzrpyArgs and xyzArgs, expected one", request_id)
    raw = _numbers(data, "rawArgs", 6, request_id)
    out = [f"rawArgs[{i}] is {v:g}" for i, v in enumerate(raw) if not -1.0 <= v <= 1.0]
    if out:
        raise ProtocolError(INVALID_PARAMS, f"moveEvent out of range: {'; '.join(out)}, expected [-1, 1]", request_id)
    xyzrpy = _numbers(data, "xyzArgs" if "xyzArgs" in data else "xyzrpyArgs", 6, request_id)
    extents = _numbers(data, "extents", 4, request_id)
    return MoveEvent(raw, xyzrpy, extents)


def _parse_geometry_reply(data: dict[str, Any], request_id: Any) -> GeometryReply:
    """A ``geometry`` reply (fields at the top level, or in a JSON-RPC ``result``)."""
    if data.get("reply", "geometry") != "geometry":
        raise ProtocolError(INVALID_REQUEST, f'reply is {data["reply"]!r}, expected "geometry"', request_id)
    fields, _ = geometry_fields(data)
    assert fields is not None
    if fields is not data:
        _refuse_unknown_keys(data, {"jsonrpc", "id", "result"}, request_id, "the geometry reply")
    _refuse_unknown_keys(fields, {*PROTOCOL_KEYS, *GEOMETRY_KEYS}, request_id, "the geometry reply")
    try:
        platform, warnings = platform_from_reply(data, "geometry reply")
    except ModelError as error:
        raise ProtocolError(INVALID_PARAMS, "; ".join(str(p) for p in error.problems), request_id) from None
    return GeometryReply(platform, request_id, tuple(warnings))
