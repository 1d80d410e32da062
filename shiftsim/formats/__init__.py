"""Model readers, one per format, each returning a :class:`~shiftsim.spec.ModelSpec`.

Every reader has one signature, ``read(path, data=None) -> ModelSpec`` (``data``: the file's content when the
caller has already parsed it; readers of binary or XML files take none), and :data:`READERS` maps a file
suffix to its reader; to add a format, add its reader there. No reader imports the solver.

:func:`read_model` picks the reader from the file's extension and, for JSON,
from its content (:func:`detect_json_format`): an MFK resource configuration
has ``components`` or the ``mfk::ResourceConfiguration`` envelope; an Mdx
geometry reply has geometry keys (``baseRadius``, ``platformAngles``, ...)
or ``"reply": "geometry"``; a Shift model has Shift sections
(``model_parameters``, ``assemblies``, ``bodies``, ...). A scenario
(``machines``) or an object with none of these keys is refused with that
verdict, and a reader's problems end with the format that was assumed and why.
A model without bodies is refused.

Readers' warnings stay in ``spec.warnings`` and are also issued, grouped by kind
(:func:`~shiftsim.errors.group_warnings`), as Python warnings of category
:class:`~shiftsim.errors.ShiftsimWarning`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import ModelError, Problem, group_warnings, issue_warnings
from ..spec import ModelSpec
from ..typed import json_type

MFK_ENVELOPE = "mfk::ResourceConfiguration"
MDX_KEYS = ("baseRadius", "platformRadius", "baseAngles", "platformAngles", "actuatorLen", "initialHeight",
            "maxTranslation", "maxRotation")
SHIFT_KEYS = ("model_parameters", "fixed", "frames", "lights", "terrain", "assemblies", "bodies", "joints",
              "restraints")
SCENARIO_KEYS = ("machines", "sweep", "track", "outputs", "world", "loads")
LABELS = {"shift": "a Shift model", "mfk": "an MFK configuration", "mdx": "an Mdx geometry reply",
          "scenario": "a scenario", "unknown": "no known format"}


@dataclass(frozen=True)
class Verdict:
    """The format of a parsed JSON document (``shift``, ``mfk``, ``mdx``, ``scenario`` or ``unknown``)
    and the keys that decided it."""

    kind: str
    keys: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.kind == "unknown":
            return LABELS["unknown"]
        shown = ", ".join(repr(k) for k in self.keys[:4]) + (", ..." if len(self.keys) > 4 else "")
        return f"{LABELS[self.kind]} (it has {shown})"


def detect_json_format(data: object) -> Verdict:
    """Decide the format of already-parsed JSON from its content (see the module docstring)."""
    if not isinstance(data, dict):
        return Verdict("unknown")
    if data.get("type") == MFK_ENVELOPE:
        return Verdict("mfk", ("type",))
    if "components" in data:
        return Verdict("mfk", ("components",))
    result = data.get("result")
    fields = result if isinstance(result, dict) and any(k in result for k in MDX_KEYS) else data
    mdx = tuple(k for k in MDX_KEYS if k in fields)
    if mdx or fields.get("reply") == "geometry":
        return Verdict("mdx", tuple(f"result.{k}" if fields is result else k for k in mdx) or ("reply",))
    if "machines" in data:
        return Verdict("scenario", tuple(k for k in SCENARIO_KEYS if k in data))
    shift = tuple(k for k in SHIFT_KEYS if k in data)
    if shift:
        return Verdict("shift", shift)
    return Verdict("unknown")


def sniff_json_format(data: object) -> str:
    """The format name of already-parsed JSON: ``mfk``, ``mdx``, ``shift``, ``scenario`` or ``unknown``."""
    return detect_json_format(data).kind


def _refuse_verdict(path: Path, data: object, verdict: Verdict) -> None:
    """Raise the ModelError for a document that is a scenario or of no known format."""
    if verdict.kind == "scenario":
        raise ModelError([Problem(str(path), "(top level)", f"is {verdict}, not a model",
                                  "a model file; check a scenario with 'shiftsim check SCENARIO', run it with "
                                  "'shiftsim run'")])
    if not isinstance(data, dict):
        what = f"is {json_type(data)}"
    elif not data:
        what = "is an empty object"
    else:
        keys = ", ".join(repr(k) for k in list(data)[:6]) + (", ..." if len(data) > 6 else "")
        what = f"has no key of a known model format (its keys: {keys})"
    raise ModelError([Problem(
        str(path), "(top level)", what,
        f"a Shift model ({', '.join(SHIFT_KEYS[:6])}, ...), an MFK configuration (components or the "
        f"{MFK_ENVELOPE} envelope) or an Mdx geometry reply ({', '.join(MDX_KEYS[:3])}, ...)")])


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


def read_json_model(path: Path, data: object | None = None) -> ModelSpec:
    """A Shift, MFK or Mdx model from a JSON file (``data``: its parsed content, if the caller has it), the format
    decided by :func:`detect_json_format`."""
    from ..jsonio import read_json

    warnings: list[str] = []
    if data is None:
        try:
            data, warnings = read_json(path)
        except ModelError as error:
            data, warnings = _mfk_with_hash_comments(path, error)
    verdict = detect_json_format(data)
    if verdict.kind not in JSON_READERS:
        _refuse_verdict(path, data, verdict)
    try:
        spec = JSON_READERS[verdict.kind](path, data)
    except ModelError as error:
        assumed = Problem(str(path), "", f"read as {verdict}")
        raise ModelError([*error.problems, assumed]) from None
    spec.warnings[:0] = warnings
    return spec


def _read_mfk(path: Path, data: object | None = None) -> ModelSpec:
    from .mfk import mfk_model_spec

    return mfk_model_spec(path, data)


def _read_mdx(path: Path, data: object | None = None) -> ModelSpec:
    from .mdx import mdx_model_spec

    return mdx_model_spec(path, data)


def _read_shift(path: Path, data: object | None = None) -> ModelSpec:
    from .shift import shift_model_spec

    return shift_model_spec(path, data)


def _read_claraty(path: Path, data: object | None = None) -> ModelSpec:
    from .claraty import read_claraty

    return read_claraty(path)


def _read_mirabuf(path: Path, data: object | None = None) -> ModelSpec:
    from .mirabuf import read_mirabuf

    return read_mirabuf(path)


Reader = Callable[[Path, "object | None"], ModelSpec]
"""``read(path, data=None) -> ModelSpec``: one format's reader (each imports its format's modules when called, so
reading one format loads no other)."""

JSON_READERS: dict[str, Reader] = {"mfk": _read_mfk, "mdx": _read_mdx, "shift": _read_shift}
"""The JSON formats by :func:`detect_json_format`'s verdict."""

READERS: dict[str, Reader] = {".xml": _read_claraty, ".mira": _read_mirabuf, ".json": read_json_model,
                              ".json5": read_json_model, ".mfk": read_json_model}
"""Every model file suffix (lower case) and its reader."""


def read_model(path: str | Path, data: object | None = None) -> ModelSpec:
    """Read a model file of any supported format (:data:`READERS`); its warnings are also issued as
    :class:`ShiftsimWarning`.

    Parameters
    ----------
    path : str or Path
        A Shift, MFK or Mdx .json, a CLARAty .xml or a mirabuf .mira file.
    data : object, optional
        The file's parsed content, if the caller has it (JSON formats).

    Returns
    -------
    ModelSpec
        What the file describes, not yet compiled (:func:`shiftsim.compile_model` compiles it).

    Raises
    ------
    ModelError
        The file is missing, of an unknown type, or not a valid model of its format (file, place, what, expected).

    Examples
    --------
    >>> shiftsim.read_model("models/shift/cantilever10.json").name
    'cantilever10'
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if not path.is_file():
        raise ModelError([Problem(str(path), "", "no such file", "a model file (.json, .xml, .mira)")])
    if suffix not in READERS:
        raise ModelError([Problem(str(path), "", f"unknown model file type {suffix!r}",
                                  f"one of {', '.join(sorted(READERS))}")])
    spec = READERS[suffix](path, data)
    if not spec.bodies:
        raise ModelError([Problem(str(path), "", f"the {spec.format} model has no bodies",
                                  "a model with at least one body")])
    issue_warnings(group_warnings(spec.warnings))
    return spec
