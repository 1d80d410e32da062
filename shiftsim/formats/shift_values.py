"""Typed reading of JSON values for the Shift model reader.

Each reader function takes a :class:`Findings` (the file's problems and
warnings), the raw JSON value and its JSON path (``assemblies[0].bodies[2].R``).
It returns the converted value, or ``None`` after recording a problem, so the
caller can keep going and report every problem of a file at once.

Numbers are JSON numbers only (``true`` is not 1) and must be finite: the
lenient JSON5 reader lets ``NaN`` and ``Infinity`` through, this module does not.
Rotation matrices must be orthonormal with determinant +1 within
:data:`ROTATION_TOLERANCE`; accepted matrices are projected onto the nearest
rotation so that small rounding in a file does not accumulate in kinematics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from ..errors import Problem, Problems

ROTATION_TOLERANCE = 1e-6
"""Largest accepted ``max |R^T R - I|`` (and ``|det R - 1|``) for a rotation matrix."""


@dataclass
class Findings:
    """The problems (fatal, raised together) and warnings (kept in the spec) of one file."""

    problems: Problems
    warnings: list[str] = field(default_factory=list)

    def error(self, where: str, what: str, expected: str = "") -> None:
        self.problems.add(where, what, expected)

    def warn(self, where: str, what: str) -> None:
        self.warnings.append(str(Problem(self.problems.file, where, what)))


def at(where: str, key: str | int) -> str:
    """JSON path of ``key`` inside the value at ``where``: ``a.b``, ``a[3]``."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def describe(value: Any) -> str:
    """A JSON value's type in words, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_object(f: Findings, value: Any, where: str) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    f.error(where, f"expected an object, got {describe(value)}", "a JSON object {...}")
    return None


def read_list(f: Findings, value: Any, where: str) -> list[Any]:
    """A list; ``null`` reads as an empty list (real files write ``"frames": null``)."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    f.error(where, f"expected a list, got {describe(value)}", "a JSON list [...]")
    return []


def read_bool(f: Findings, value: Any, where: str) -> bool | None:
    if isinstance(value, bool):
        return value
    f.error(where, f"expected true or false, got {describe(value)}", "a boolean")
    return None


def read_string(f: Findings, value: Any, where: str) -> str | None:
    if isinstance(value, str):
        return value
    f.error(where, f"expected a string, got {describe(value)}", "a string")
    return None


def read_number(f: Findings, value: Any, where: str, unit: str = "") -> float | None:
    expected = f"a finite number{f' ({unit})' if unit else ''}"
    if not is_number(value):
        f.error(where, f"expected a number, got {describe(value)}", expected)
        return None
    if not math.isfinite(value):
        f.error(where, f"{value} is not a finite number", expected)
        return None
    return float(value)


def read_numbers(f: Findings, value: Any, where: str, length: int | None = None, unit: str = "") -> np.ndarray | None:
    """A list of finite numbers, of exactly ``length`` entries when given."""
    if not isinstance(value, list):
        shape = f"a list of {length} numbers" if length else "a list of numbers"
        f.error(where, f"expected {shape}, got {describe(value)}", shape)
        return None
    if length is not None and len(value) != length:
        f.error(where, f"expected {length} numbers, got {len(value)}", f"a list of {length} numbers")
        return None
    numbers = [read_number(f, item, at(where, i), unit) for i, item in enumerate(value)]
    if any(n is None for n in numbers):
        return None
    return np.array(numbers, dtype=float)


def read_matrix3(f: Findings, value: Any, where: str) -> np.ndarray | None:
    """A 3x3 matrix written row-major as three lists of three numbers."""
    if not (isinstance(value, list) and len(value) == 3 and all(isinstance(row, list) for row in value)):
        f.error(where, f"expected a 3x3 matrix, got {describe(value)}", "three rows of three numbers")
        return None
    rows = [read_numbers(f, row, at(where, i), 3) for i, row in enumerate(value)]
    if any(row is None for row in rows):
        return None
    return np.array(rows)


def read_rotation(f: Findings, value: Any, where: str) -> np.ndarray | None:
    """A rotation matrix (columns = the frame's axes in parent coordinates)."""
    matrix = read_matrix3(f, value, where)
    if matrix is None:
        return None
    error = float(np.max(np.abs(matrix.T @ matrix - np.eye(3))))
    det = float(np.linalg.det(matrix))
    if error > ROTATION_TOLERANCE or abs(det - 1.0) > ROTATION_TOLERANCE:
        f.error(
            where,
            f"not a rotation matrix: max |R^T R - I| = {error:.3g}, det R = {det:.6g}",
            f"an orthonormal matrix with det +1 (tolerance {ROTATION_TOLERANCE:g})",
        )
        return None
    return Rotation.from_matrix(matrix).as_matrix()


def read_transform(f: Findings, value: Any, where: str) -> np.ndarray | None:
    """A 4x4 transform from ``{"R": 3x3, "T": [x, y, z]}``; a missing part is identity / zero."""
    obj = read_object(f, value, where)
    if obj is None:
        return None
    transform = np.eye(4)
    ok = True
    if obj.get("R") is not None:
        rotation = read_rotation(f, obj["R"], at(where, "R"))
        ok &= rotation is not None
        if rotation is not None:
            transform[:3, :3] = rotation
    if obj.get("T") is not None:
        translation = read_numbers(f, obj["T"], at(where, "T"), 3, "m")
        ok &= translation is not None
        if translation is not None:
            transform[:3, 3] = translation
    for key in obj.keys() - {"R", "T"}:
        f.warn(at(where, key), f"unknown key {key!r} ignored (a displacement has only R and T)")
    return transform if ok else None
