"""Typed reading of parsed JSON values, shared by every JSON reader.

Each check takes a raw JSON value and returns it converted (``float``,
``int``, ``str``, ``list``, ``dict``, a numpy vector) or raises
:class:`Mismatch` saying what the value is and what was expected; the reader
catches it and records a :class:`~shiftsim.errors.Problem` at the value's
place, in its own collector.

One wording for every reader:

* :func:`json_type` names a value's JSON type ("the number 3", "the string
  'a'", "an array of 4 items", "an object", "a boolean", "null");
* :func:`shown` echoes a value as JSON text of at most :data:`ECHO_LIMIT`
  characters, so a million-item array is not printed back in full;
* numbers are JSON numbers only (``true`` is not 1), finite (the lenient JSON5
  reader lets ``NaN``, ``Infinity`` and integers of any size through) and
  within a magnitude bound that depends on the unit (:data:`BOUNDS`), so that
  products, norms and squares of model values cannot overflow.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

ECHO_LIMIT = 200
"""Most characters of a value echoed in a message."""

GENERAL_BOUND = 1e12
"""Largest magnitude of any number in a model file whose unit has no bound of its own."""

BOUNDS: dict[str, float] = {
    "m": 1e6,  # a thousand kilometres
    "mm": 1e9,
    "kg": 1e9,  # a million tonnes
    "m/s^2": 1e4,  # a thousand g
    "rad": 1e6,
    "deg": 1e8,
}
"""Largest magnitude accepted for a number in a given unit (see docs/security.md)."""


class Mismatch(ValueError):
    """A value that is not what the reader expected.

    ``what`` says what is wrong ("is the string 'x'"), ``expected`` what would
    do; ``place`` is a JSON-path suffix inside the value (``[2]``), or empty.
    """

    def __init__(self, what: str, expected: str, place: str = ""):
        super().__init__(f"{place}: {what} (expected {expected})" if place else f"{what} (expected {expected})")
        self.what, self.expected, self.place = what, expected, place


def is_number(value: Any) -> bool:
    """True for JSON numbers (``bool`` is not a number here), finite or not."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def finite_float(value: Any) -> float | None:
    """``value`` as a finite float, or ``None`` when it is not a number, not finite or too large for a float."""
    if not is_number(value):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer of hundreds of digits from the JSON5 reader
        return None
    return number if math.isfinite(number) else None


def is_finite_number(value: Any) -> bool:
    """True for a JSON number that is a finite float."""
    return finite_float(value) is not None


def shown(value: Any, limit: int = ECHO_LIMIT) -> str:
    """``value`` as JSON text, cut to at most ``limit`` characters (``...`` marks the cut)."""
    parts: list[str] = []
    size = 0
    stack: list[Any] = [value]
    while stack and size <= limit:
        item = stack.pop()
        if isinstance(item, _Text):
            text = item.text
        elif isinstance(item, list):  # at most ``limit`` items can show: the rest are never pushed
            text = "["
            stack.append(_Text("]" if len(item) <= limit else ", ...]"))
            for i in range(min(len(item), limit) - 1, -1, -1):
                stack.append(item[i])
                if i:
                    stack.append(_Text(", "))
        elif isinstance(item, dict):
            text = "{"
            stack.append(_Text("}" if len(item) <= limit else ", ...}"))
            entries = list(itertools.islice(item.items(), limit))
            for i in range(len(entries) - 1, -1, -1):
                key, member = entries[i]
                stack.append(member)
                stack.append(_Text(_scalar(str(key)) + ": "))
                if i:
                    stack.append(_Text(", "))
        else:
            text = _scalar(item)
        parts.append(text)
        size += len(text)
    text = "".join(parts)
    if stack or len(text) > limit:
        return text[: limit - 3] + "..."
    return text


class _Text:
    """Literal JSON punctuation on :func:`shown`'s stack."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if _huge(value):
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else {math.inf: "Infinity", -math.inf: "-Infinity"}.get(value, "NaN")
    if isinstance(value, str):
        return repr(value) if len(value) <= ECHO_LIMIT else repr(value[:ECHO_LIMIT]) + "..."
    return type(value).__name__


def _huge(value: Any) -> bool:
    """An integer too long to echo (the JSON5 reader keeps integers of any size)."""
    return isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200


def json_type(value: Any) -> str:
    """A value's JSON type in words, with the value for scalars: ``the number 3``, ``an array of 2 items``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if _huge(value):
        return _scalar(value)
    if is_number(value):
        return f"the number {shown(value)}"
    if isinstance(value, str):
        return f"the string {shown(value)}"
    if isinstance(value, list):
        return f"an array of {len(value)} item{'' if len(value) == 1 else 's'}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def bound_of(unit: str) -> float:
    """Largest magnitude accepted for a number in ``unit`` (:data:`BOUNDS`, else :data:`GENERAL_BOUND`)."""
    return BOUNDS.get(unit, GENERAL_BOUND)


def number(value: Any, unit: str = "", minimum: float | None = None) -> float:
    """A finite JSON number of at least ``minimum`` (when given) within the unit's magnitude bound, as a float."""
    bound = bound_of(unit)
    low = -bound if minimum is None else max(minimum, -bound)
    in_unit = f" ({unit})" if unit else ""
    if minimum is not None:
        expected = f"a number{in_unit} of at least {minimum:g} and at most {bound:g}"
    else:
        expected = f"a finite number{in_unit} between {low:g} and {bound:g}"
    if not is_number(value):
        raise Mismatch(f"is {json_type(value)}", expected)
    result = finite_float(value)
    if result is None:
        reason = "too large for a floating-point number" if isinstance(value, int) else "not finite"
        raise Mismatch(f"is {shown(value)}, {reason}", expected)
    if not low <= result <= bound:
        raise Mismatch(f"is {shown(value)}", expected)
    return result


def integer(value: Any, minimum: int | None = None, maximum: int | None = None) -> int:
    """A JSON integer (``3`` or ``3.0``) within ``[minimum, maximum]`` (default: the general bound)."""
    low = -int(GENERAL_BOUND) if minimum is None else minimum
    high = int(GENERAL_BOUND) if maximum is None else maximum
    expected = f"an integer from {low} to {high}"
    if not is_number(value):
        raise Mismatch(f"is {json_type(value)}", expected)
    if (isinstance(value, float) and not value.is_integer()) or not low <= value <= high:
        raise Mismatch(f"is {shown(value)}", expected)
    return int(value)


def string(value: Any, choices: tuple[str, ...] = ()) -> str:
    """A JSON string; one of ``choices`` when given."""
    expected = "one of " + ", ".join(repr(c) for c in choices) if choices else "a string"
    if not isinstance(value, str) or (choices and value not in choices):
        raise Mismatch(f"is {json_type(value)}", expected)
    return value


def array(value: Any, length: int | None = None) -> list[Any]:
    """A JSON array, of exactly ``length`` items when given."""
    expected = f"an array of {length} items" if length is not None else "an array"
    if not isinstance(value, list) or (length is not None and len(value) != length):
        raise Mismatch(f"is {json_type(value)}", expected)
    return value


def obj(value: Any) -> dict[str, Any]:
    """A JSON object."""
    if not isinstance(value, dict):
        raise Mismatch(f"is {json_type(value)}", "an object")
    return value


def vector(value: Any, length: int, unit: str = "") -> np.ndarray:
    """An array of ``length`` finite numbers as a float vector; a bad item is named by its ``place``."""
    in_unit = f" ({unit})" if unit else ""
    if not isinstance(value, list) or len(value) != length:
        raise Mismatch(f"is {json_type(value)}", f"an array of {length} numbers{in_unit}")
    result = np.empty(length)
    for i, item in enumerate(value):
        try:
            result[i] = number(item, unit)
        except Mismatch as error:
            raise Mismatch(error.what, error.expected, f"[{i}]") from None
    return result


def direction(value: Any) -> np.ndarray:
    """A non-zero 3-vector (an axis) scaled to unit length."""
    axis = vector(value, 3)
    norm = float(np.linalg.norm(axis))
    if not norm > 0.0:
        raise Mismatch(f"is {shown(value)}, of zero length", "a non-zero direction [x, y, z]")
    return axis / norm
