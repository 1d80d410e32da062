"""Model readers, one per format, each returning a :class:`~shiftsim.spec.ModelSpec`.

:func:`read_model` picks the reader from the file's extension and, for JSON,
from its top-level keys (an MFK resource configuration has ``components`` or
the ``mfk::ResourceConfiguration`` envelope; an Mdx geometry reply has
``baseRadius``; anything else is a Shift model).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ModelError, Problem
from ..spec import ModelSpec


def sniff_json_format(data: object) -> str:
    """Name the JSON model format of already-parsed data: ``mfk``, ``mdx`` or ``shift``."""
    if isinstance(data, dict):
        if data.get("type") == "mfk::ResourceConfiguration" or "components" in data:
            return "mfk"
        if "baseRadius" in data or (isinstance(data.get("result"), dict) and "baseRadius" in data["result"]):
            return "mdx"
    return "shift"


def _mfk_with_hash_comments(path: Path, error: ModelError) -> tuple[object, list[str]]:
    """An MFK configuration written like the specification's examples, with ``#`` comments; else ``error``."""
    from .mfk.source import read_mfk_file

    try:
        data, warnings = read_mfk_file(path)
    except ModelError:
        raise error from None
    if sniff_json_format(data) != "mfk":
        raise error
    return data, warnings


def read_model(path: str | Path) -> ModelSpec:
    """Read a model file of any supported format."""
    path = Path(path)
    suffix = path.suffix.lower()
    if not path.is_file():
        raise ModelError([Problem(str(path), "", "no such file", "a model file (.json, .xml, .mira)")])
    if suffix == ".xml":
        from .claraty import read_claraty

        return read_claraty(path)
    if suffix == ".mira":
        from .mirabuf import read_mirabuf

        return read_mirabuf(path)
    if suffix in (".json", ".json5", ".mfk"):
        from ..jsonio import read_json

        try:
            data, warnings = read_json(path)
        except ModelError as error:
            data, warnings = _mfk_with_hash_comments(path, error)
        kind = sniff_json_format(data)
        if kind == "mfk":
            from .mfk import mfk_model_spec

            spec = mfk_model_spec(path, data)
        elif kind == "mdx":
            from .mdx import mdx_model_spec

            spec = mdx_model_spec(path, data)
        else:
            from .shift import shift_model_spec

            spec = shift_model_spec(path, data)
        spec.warnings[:0] = warnings
        return spec
    raise ModelError([Problem(str(path), "", f"unknown model file type {suffix!r}", ".json, .xml or .mira")])
