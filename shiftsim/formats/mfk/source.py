"""Reading an MFK file's text: strict JSON, then JSON5, then JSON with ``#`` comments.

The specification's own examples annotate JSON with ``#`` line comments,
which neither JSON nor JSON5 allows. :func:`read_mfk_file` first tries
:func:`shiftsim.jsonio.read_json` (strict, then JSON5); only when both fail
does it remove ``#`` comments outside strings and read the rest as JSON5,
with a warning. A file that still does not parse gets the strict parser's
error (line and column).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import json5

from ...errors import ModelError
from ...jsonio import read_json, refuse_lone_surrogates


def read_mfk_file(path: str | Path) -> tuple[Any, list[str]]:
    """Parse an MFK JSON file; return ``(data, warnings)``. Raises ModelError."""
    try:
        return read_json(path)
    except ModelError as strict_error:
        try:
            text = Path(path).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            raise strict_error from None
        cleaned = strip_hash_comments(text)
        if cleaned == text:
            raise
        try:
            data = json5.loads(cleaned)
        except ValueError:
            raise strict_error from None
        refuse_lone_surrogates(data, path)
        return data, [f"{path}: '#' comments removed (JSON has no comments; the MFK specification's examples use them)"]


def strip_hash_comments(text: str) -> str:
    """``text`` with every ``#`` line comment outside a JSON string removed (line structure kept)."""
    out: list[str] = []
    in_string = escaped = in_comment = False
    for char in text:
        if in_comment:
            if char == "\n":
                in_comment = False
                out.append(char)
            continue
        if in_string:
            out.append(char)
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == "#":
            in_comment = True
        else:
            out.append(char)
            if char == '"':
                in_string = True
    return "".join(out)
