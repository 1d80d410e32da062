"""Typed reading of JSON values for the Shift model reader.

Each reader function takes a :class:`Findings` (the file's problems and
warnings), the raw JSON value and its JSON path (``assemblies[0].bodies[2].R``).
It returns the converted value, or ``None`` after recording a problem, so the
caller can keep going and report every problem of a file at once.

The checks and their wording are the shared ones of :mod:`shiftsim.typed`
(numbers finite and within the unit's magnitude bound); rotation matrices follow
the rule of :mod:`shiftsim.formats.rotations` (rounded matrices accepted up to
1e-3, made exact, one warning per file from :meth:`Findings.finish`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import Notice, Problems
from .. import typed
from .rotations import RotationRounding
from ..typed import Mismatch, json_type


@dataclass
class Findings:
    """The problems (fatal, raised together) and warnings (kept in the spec) of one file."""

    problems: Problems
    warnings: list[str] = field(default_factory=list)
    rotations: RotationRounding = field(default_factory=RotationRounding)

    def error(self, where: str, what: str, expected: str = "") -> None:
        self.problems.add(where, what, expected)

    def mismatch(self, where: str, error: Mismatch) -> None:
        """Record a :class:`~shiftsim.typed.Mismatch` found at ``where``."""
        self.problems.add(where + error.place, error.what, error.expected)

    def warn(self, where: str, what: str) -> None:
        self.warnings.append(Notice(self.problems.file, where, what))

    def finish(self) -> None:
        """Add the file-wide warnings (rotation rounding) once every value has been read."""
        rounding = self.rotations.warning()
        if rounding:
            self.warnings.append(Notice(self.problems.file, "", rounding))


def at(where: str, key: str | int) -> str:
    """JSON path of ``key`` inside the value at ``where``: ``a.b``, ``a[3]``."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def read_object(f: Findings, value: Any, where: str) -> dict[str, Any] | None:
    try:
        return typed.obj(value)
    except Mismatch as error:
        f.mismatch(where, error)
        return None


def read_list(f: Findings, value: Any, where: str) -> list[Any]:
    """A list; ``null`` reads as an empty list (real files write ``"frames": null``)."""
    if value is None:
        return []
    try:
        return typed.array(value)
    except Mismatch as error:
        f.mismatch(where, error)
        return []


def read_bool(f: Findings, value: Any, where: str) -> bool | None:
    if isinstance(value, bool):
        return value
    f.error(where, f"is {json_type(value)}", "true or false")
    return None


def read_string(f: Findings, value: Any, where: str) -> str | None:
    try:
        return typed.string(value)
    except Mismatch as error:
        f.mismatch(where, error)
        return None


def read_number(f: Findings, value: Any, where: str, unit: str = "") -> float | None:
    """A finite number within the unit's magnitude bound (:data:`~shiftsim.typed.BOUNDS`)."""
    try:
        return typed.number(value, unit)
    except Mismatch as error:
        f.mismatch(where, error)
        return None


def read_numbers(f: Findings, value: Any, where: str, length: int | None = None, unit: str = "") -> np.ndarray | None:
    """A list of finite numbers, of exactly ``length`` entries when given."""
    if not isinstance(value, list) or (length is not None and len(value) != length):
        shape = f"a list of {length} numbers" if length else "a list of numbers"
        f.error(where, f"is {json_type(value)}", shape)
        return None
    numbers = [read_number(f, item, at(where, i), unit) for i, item in enumerate(value)]
    if any(n is None for n in numbers):
        return None
    return np.array(numbers, dtype=float)


def read_matrix3(f: Findings, value: Any, where: str) -> np.ndarray | None:
    """A 3x3 matrix written row-major as three lists of three numbers."""
    if not (isinstance(value, list) and len(value) == 3 and all(isinstance(row, list) for row in value)):
        f.error(where, f"is {json_type(value)}", "a 3x3 matrix: three rows of three numbers")
        return None
    rows = [read_numbers(f, row, at(where, i), 3) for i, row in enumerate(value)]
    if any(row is None for row in rows):
        return None
    return np.array(rows)


def read_rotation(f: Findings, value: Any, where: str) -> np.ndarray | None:
    """A rotation matrix (columns = the frame's axes in parent coordinates), made exactly orthonormal."""
    matrix = read_matrix3(f, value, where)
    if matrix is None:
        return None
    try:
        return f.rotations.rotation(matrix, where)
    except Mismatch as error:
        f.mismatch(where, error)
        return None


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
