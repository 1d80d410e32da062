"""Reading JSON input files: strict JSON through orjson, lenient JSON5 as a fallback.

Real model files are sometimes not strict JSON (comments, trailing commas).
:func:`read_json` accepts them through ``json5`` and returns a warning naming
the file; a file that is neither is a :class:`~shiftsim.errors.InputError`
naming the line and column. Writing uses :func:`dumps` (orjson, indented).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import json5
import numpy as np
import orjson

from .errors import InputError, ModelError, Problem


def read_json(path: str | Path, error_type: type[InputError] = ModelError) -> tuple[Any, list[str]]:
    """Parse a JSON file; return ``(data, warnings)``.

    Raises ``error_type`` when the file is missing, unreadable or not JSON/JSON5.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise error_type([Problem(str(path), "", f"cannot read the file: {exc.strerror}", "a readable file")]) from None
    try:
        return orjson.loads(raw), []
    except orjson.JSONDecodeError as strict_error:
        try:
            text = raw.decode("utf-8")
            data = json5.loads(text)
        except (UnicodeDecodeError, ValueError):
            where = f"line {strict_error.lineno}, column {strict_error.colno}"
            raise error_type(
                [Problem(str(path), where, f"not valid JSON: {strict_error.msg}", "a JSON document")]
            ) from None
        return data, [f"{path}: not strict JSON (comments or trailing commas); read leniently"]


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
