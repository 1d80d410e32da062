"""Reading JSON input files: strict JSON through orjson, lenient JSON5 as a fallback.

Real model files are sometimes not strict JSON (comments, trailing commas).
:func:`read_json` accepts them through ``json5`` and returns a warning naming
the file; a file that is neither is a :class:`~shiftsim.errors.InputError`
naming the line and column. Writing uses :func:`dumps` (orjson, indented).

Documents nested deeper than :data:`MAX_DEPTH` levels of arrays and objects
are refused with the line where the limit is passed (orjson's own limit; the
recursive JSON5 parser gets a recursion allowance that covers this depth).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import json5
import numpy as np
import orjson

from .errors import InputError, ModelError, Problem

MAX_DEPTH = 1024
"""Deepest nesting of arrays and objects read (orjson's limit)."""

_FRAMES_PER_LEVEL = 20  # Python frames the json5 parser uses per nesting level (measured: 16)


def nesting_depth(text: str, limit: int = MAX_DEPTH) -> tuple[int, int]:
    """``(depth, line)``: the deepest nesting of ``[``/``{`` in JSON or JSON5 ``text`` (strings and comments
    skipped), scanning no further than the first place deeper than ``limit``; ``line`` is where that depth is."""
    depth = deepest = 0
    line = deepest_line = 1
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        elif c in "[{":
            depth += 1
            if depth > deepest:
                deepest, deepest_line = depth, line
                if depth > limit:
                    break
        elif c in "]}":
            depth -= 1
        elif c in "\"'":
            i += 1
            while i < n and text[i] != c:
                if text[i] == "\n":
                    line += 1
                i += 2 if text[i] == "\\" else 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end - 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 1
            line += text.count("\n", i, end)
            i = end
        i += 1
    return deepest, deepest_line


def _too_deep(path: Path, line: int, error_type: type[InputError]) -> InputError:
    return error_type([Problem(str(path), f"line {line}", f"arrays and objects nested more than {MAX_DEPTH} "
                               "levels deep", f"at most {MAX_DEPTH} levels of nesting")])


def read_json(path: str | Path, error_type: type[InputError] = ModelError) -> tuple[Any, list[str]]:
    """Parse a JSON file; return ``(data, warnings)``.

    Raises ``error_type`` when the file is missing, unreadable, not JSON/JSON5, or nested deeper than
    :data:`MAX_DEPTH` levels (naming the line). A file read leniently as JSON5 gets one warning.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise error_type([Problem(str(path), "", f"cannot read the file: {exc.strerror}", "a readable file")]) from None
    try:
        return orjson.loads(raw), []
    except orjson.JSONDecodeError as strict_error:
        where = f"line {strict_error.lineno}, column {strict_error.colno}"
        if "surrogate" in strict_error.msg:
            raise error_type([Problem(str(path), where, f"a lone UTF-16 surrogate escape ({strict_error.msg})",
                                      SURROGATE_EXPECTED)]) from None
        try:
            text = raw.decode("utf-8")
            depth, line = nesting_depth(text)
            if depth > MAX_DEPTH:
                raise _too_deep(path, line, error_type) from None
            data = _json5_loads(text, depth)
        except (UnicodeDecodeError, ValueError):
            raise error_type(
                [Problem(str(path), where, f"not valid JSON: {strict_error.msg}", "a JSON document")]
            ) from None
        refuse_lone_surrogates(data, path, error_type)
        return data, [f"{path}: not strict JSON (comments or trailing commas); read leniently"]


SURROGATE_EXPECTED = "text of Unicode characters (a \\uD800-\\uDFFF escape only as half of a high-low pair)"
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate_place(data: Any) -> str | None:
    """The JSON path (``bodies[0].name``, ``''`` for the document itself) of the first key or string in
    ``data`` holding a lone UTF-16 surrogate, which no text file or terminal can carry; ``None`` if none."""
    pending: list[tuple[str, Any]] = [("", data)]
    while pending:
        place, value = pending.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return place
        elif isinstance(value, dict):
            for key, item in reversed(value.items()):
                key_place = f"{place}.{key}" if place else str(key)
                if isinstance(key, str) and _SURROGATE.search(key):
                    return f"{place or 'the document'}: a key"
                pending.append((key_place, item))
        elif isinstance(value, list):
            pending.extend((f"{place}[{i}]", item) for i, item in reversed(list(enumerate(value))))
    return None


def refuse_lone_surrogates(data: Any, path: str | Path, error_type: type[InputError] = ModelError) -> None:
    """Raise ``error_type`` naming the place of the first lone surrogate in ``data`` (read leniently, which
    lets them through; the strict parser refuses them itself)."""
    place = lone_surrogate_place(data)
    if place is not None:
        raise error_type([Problem(str(path), place or "the document", "a lone UTF-16 surrogate escape",
                                  SURROGATE_EXPECTED)])


def _json5_loads(text: str, depth: int) -> Any:
    """``json5.loads`` with a recursion allowance for ``depth`` levels (the parser recurses per level)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 1000 + _FRAMES_PER_LEVEL * depth))
    try:
        return json5.loads(text)
    finally:
        sys.setrecursionlimit(limit)


def _default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"cannot serialize {type(obj).__name__}")


def dumps(data: Any, indent: bool = True) -> bytes:
    """Serialize to JSON bytes (numpy arrays and scalars allowed), with a final newline."""
    option = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE
    if indent:
        option |= orjson.OPT_INDENT_2
    return orjson.dumps(data, option=option, default=_default)
