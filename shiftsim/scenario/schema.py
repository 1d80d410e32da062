"""Validation of scenario documents against the shipped JSON Schema (draft 2020-12).

Every schema violation becomes a :class:`~shiftsim.errors.Problem` whose
``where`` is the JSON path of the offending value (``machines[0].placement.rotation``),
with a short statement of what is wrong and what was expected. Paths are
written as by :func:`json_path`: object keys joined with ``.``, array indices in
brackets, keys that are not plain words (containing ``.``, spaces, brackets or
quotes) in ``["..."]``. A schema node may carry an ``x-expected`` annotation:
the text used as "expected ..." when a value there is wrong.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any, Iterable

import jsonschema

from ..errors import Problems, suggest
from ..typed import json_type

_PLAIN_KEY = re.compile(r"^[^.\s\[\]\"']+$")
EXPECTED = "x-expected"  # schema annotation: what a valid value looks like, for error messages


def json_path(parts: Iterable[str | int]) -> str:
    """Render a path of keys and indices: ``machines[0].joints.arm:boom_cyl``; ``(top level)`` when empty."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part)}]"
    return text or "(top level)"


@cache
def load_schema(name: str) -> dict[str, Any]:
    """A schema shipped in ``shiftsim/schemas/`` (``scenario`` or ``results``)."""
    text = resources.files("shiftsim").joinpath("schemas", f"{name}.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@cache
def validator(name: str) -> jsonschema.protocols.Validator:
    """The validator of a shipped schema, for its draft. The schema is not checked against its metaschema here (that
    takes 0.15 s for the scenario schema, 0.25 s for the results schema): it is ours, and a test checks it once."""
    schema = load_schema(name)
    return jsonschema.validators.validator_for(schema)(schema)


_TYPE_NAMES = {"object": "an object", "array": "an array", "string": "a string", "number": "a number",
               "integer": "an integer", "boolean": "true or false", "null": "null"}


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _expected_type(spec: str | list[str]) -> str:
    names = [spec] if isinstance(spec, str) else spec
    return " or ".join(_TYPE_NAMES.get(n, n) for n in names)


def _describe(error: jsonschema.ValidationError) -> list[tuple[list[str | int], str, str]]:
    """(path, what, expected) for one schema error; ``required``/``additionalProperties`` may give several."""
    path = list(error.absolute_path)
    value, schema, rule = error.instance, error.schema, error.validator
    expected = schema.get(EXPECTED, "") if isinstance(schema, dict) else ""
    if rule == "type":
        return [(path, f"{json_type(value)} given", expected or _expected_type(error.validator_value))]
    if rule == "required":
        missing = [key for key in error.validator_value if key not in value]
        return [(path, f"missing required key {key!r}", f"an object with {key!r}") for key in missing]
    if rule == "additionalProperties":
        known = list(schema.get("properties", {}))
        unknown = [key for key in value if key not in known]
        return [(path + [key], f"unknown key {key!r}", suggest(key, known)) for key in unknown]
    if rule == "enum":
        return [(path, f"{_short(value)} is not allowed",
                 "one of " + ", ".join(json.dumps(v) for v in error.validator_value))]
    if rule == "not":
        return [(path, f"{_short(value)} is reserved", expected or "another value")]
    if rule == "pattern":
        return [(path, f"{_short(value)} is not allowed here", expected or f"text matching {error.validator_value}")]
    if rule in ("minItems", "maxItems"):
        bound = "at least" if rule == "minItems" else "at most"
        return [(path, f"{len(value)} items given", expected or f"{bound} {error.validator_value} items")]
    if rule == "minProperties":
        return [(path, "an empty object", expected or f"at least {error.validator_value} entries")]
    if rule == "minLength":
        return [(path, "an empty string", "a non-empty string")]
    if rule == "maxLength":
        return [(path, f"{len(value)} characters", f"at most {error.validator_value}")]
    if rule in ("minimum", "maximum"):
        relation = ">=" if rule == "minimum" else "<="
        return [(path, f"{_short(value)} is out of range", f"a value {relation} {error.validator_value}")]
    if rule == "uniqueItems":
        return [(path, "an item is repeated", "each item once")]
    if rule in ("oneOf", "anyOf"):
        return [(path, f"{_short(value)} has the wrong form", expected or "a value of one of the allowed forms")]
    return [(path, error.message, expected)]


def validate(document: Any, problems: Problems, schema: str = "scenario") -> None:
    """Add one problem per schema violation of ``document`` to ``problems`` (sorted by JSON path)."""
    found = []
    for error in validator(schema).iter_errors(document):
        for path, what, expected in _describe(error):
            found.append((json_path(path), what, expected))
    for where, what, expected in sorted(found):
        problems.add(where, what, expected)
