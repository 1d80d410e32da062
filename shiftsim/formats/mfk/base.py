"""Building blocks of an MFK document: addressable objects, interfaces, field readers.

Every JSON object with an ``"id"`` inside an interface is an :class:`MfkObject`:
it is addressable as ``oem.interface.id`` and each of its scalar members as
``oem.interface.id.field``. Its scalar members live in :attr:`MfkObject.values`
(numbers as ``float``, strings as ``str``) so that measurement scripts, value
references and the replicate codec read and write them uniformly; typed
subclasses add the structure (children, references) and typed accessors with
the standard's defaults (``DEFAULTS``).

:class:`FieldReader` reads JSON members with type checks, recording every
problem (with its JSON path) in a :class:`~shiftsim.errors.Problems` collector.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable

import numpy as np

from ...errors import Problems
from ...typed import finite_float, is_number, json_type, shown

Scalar = float | str


def member_path(where: str, key: str | int) -> str:
    """JSON path of a member: ``a.b`` for keys, ``a[3]`` for array indices."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


@dataclass(eq=False)
class MfkObject:
    """An object with an ``id``: its scalar members by name, with class defaults."""

    id: str
    where: str
    values: dict[str, Scalar] = field(default_factory=dict)

    DEFAULTS: ClassVar[dict[str, float]] = {}
    UNITS: ClassVar[dict[str, str]] = {}
    """Units of numeric members that have a tighter magnitude bound than any number
    (:data:`shiftsim.typed.BOUNDS`)."""
    RANGES: ClassVar[dict[str, tuple[float, float]]] = {}
    """Closed intervals numeric members must lie in (a latitude in [-90, 90])."""

    def has_value(self, name: str) -> bool:
        return name in self.values or name in self.DEFAULTS

    def value(self, name: str) -> Scalar:
        """The member ``name`` (its default when absent); ``KeyError`` when it has neither."""
        if name in self.values:
            return self.values[name]
        return self.DEFAULTS[name]

    def number(self, name: str) -> float:
        """A numeric member (readers have checked that typed fields hold numbers)."""
        return float(self.value(name))

    def vector(self, *names: str) -> np.ndarray:
        """Several numeric members as an array, e.g. ``vector("cx", "cy", "cz")``."""
        return np.array([self.number(name) for name in names])

    def set_value(self, name: str, value: Scalar) -> None:
        self.values[name] = value

    def scalars(self) -> dict[str, Scalar]:
        """Every member with its default filled in: what measurement scripts see."""
        return {**self.DEFAULTS, **self.values}


@dataclass(eq=False)
class Interface:
    """An interface, keyed by ``(oem, name)``; ``objects`` are its addressable objects by id."""

    oem: str
    name: str
    version: str
    where: str
    objects: dict[str, MfkObject] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.oem, self.name)

    @property
    def label(self) -> str:
        return f"{self.oem}.{self.name}"


@dataclass(eq=False)
class GenericObject(MfkObject):
    """An addressable object of an interface shiftsim does not interpret."""


@dataclass(eq=False)
class GenericInterface(Interface):
    """An interface shiftsim does not interpret, kept so references into it resolve."""

    data: dict[str, Any] = field(default_factory=dict)


class FieldReader:
    """Reads typed JSON members, recording problems with JSON paths instead of raising."""

    def __init__(self, problems: Problems, warnings: list[str]):
        self.problems = problems
        self.warnings = warnings

    def warn(self, where: str, what: str) -> None:
        self.warnings.append(f"{self.problems.file}: {where}: {what}")

    def object(self, data: Any, where: str) -> dict[str, Any] | None:
        if isinstance(data, dict):
            return data
        self.problems.add(where, f"is {json_type(data)}", "an object")
        return None

    def objects(self, obj: dict[str, Any], key: str, where: str, required: bool = False):
        """(path, object) for every element of the array ``obj[key]`` that is an object; other
        elements are reported as problems and skipped."""
        for i, item in enumerate(self.array(obj, key, where, required)):
            path = member_path(member_path(where, key), i)
            element = self.object(item, path)
            if element is not None:
                yield path, element

    def _member(self, obj: dict[str, Any], key: str, where: str, required: bool, accepts, expected: str):
        """``(True, value)`` when ``obj[key]`` passes ``accepts``; otherwise the problem (missing when
        ``required``, or of the wrong type) is reported and ``(False, None)`` returned."""
        path = member_path(where, key)
        if key not in obj:
            if required:
                self.problems.add(path, "missing", expected)
            return False, None
        value = obj[key]
        if accepts(value):
            return True, value
        self.problems.add(path, f"is {json_type(value)}", expected)
        return False, None

    def array(self, obj: dict[str, Any], key: str, where: str, required: bool = False) -> list[Any]:
        ok, value = self._member(obj, key, where, required, lambda v: isinstance(v, list), "an array")
        return value if ok else []

    def string(self, obj: dict[str, Any], key: str, where: str, required: bool = True,
               default: str = "") -> str:
        ok, value = self._member(obj, key, where, required, lambda v: isinstance(v, str), "a string")
        return value if ok else default

    def number(self, obj: dict[str, Any], key: str, where: str, required: bool = True) -> float | None:
        ok, value = self._member(obj, key, where, required, is_number, "a number")
        return self.finite(value, member_path(where, key)) if ok else None

    def finite(self, value: Any, where: str) -> float | None:
        """A JSON number as a float; NaN, infinities and integers too large for a float (the JSON5
        reader lets them through) are problems at ``where``."""
        number = finite_float(value)
        if number is None:
            self.problems.add(where, f"is {shown(value)}, not a finite number", "a finite number")
        return number

    def integer(self, obj: dict[str, Any], key: str, where: str, required: bool = True) -> int | None:
        value = self.number(obj, key, where, required)
        if value is None:
            return None
        if not value.is_integer():
            self.problems.add(member_path(where, key), f"is {value:g}", "an integer")
            return None
        return int(value)

    def identified(self, cls: type[MfkObject], obj: dict[str, Any], where: str,
                   **structure: Any) -> MfkObject | None:
        """Build an addressable object: its ``id`` and scalar members (typed fields checked)."""
        identifier = self.string(obj, "id", where)
        if not identifier:
            if "id" in obj and isinstance(obj["id"], str):
                self.problems.add(member_path(where, "id"), "is empty", "a non-empty id")
            return None
        if "." in identifier:
            self.problems.add(member_path(where, "id"), f"id {shown(identifier)} contains '.'",
                              "an id without '.' (references are dot-separated)")
            return None
        values: dict[str, Scalar] = {}
        for key, value in obj.items():
            if key == "id":
                continue
            if key in cls.DEFAULTS and not is_number(value):
                self.problems.add(member_path(where, key), f"is {json_type(value)}", "a number")
            elif is_number(value):
                number = self.finite(value, member_path(where, key))
                if number is not None:
                    values[key] = number
            elif isinstance(value, str):
                values[key] = value
        return cls(id=identifier, where=where, values=values, **structure)


def register_objects(reader: FieldReader, interface: Interface, objects: Iterable[MfkObject]) -> None:
    """Index objects by id in ``interface.objects``; a repeated id is a problem."""
    for obj in objects:
        previous = interface.objects.get(obj.id)
        if previous is not None:
            reader.problems.add(obj.where, f"id {shown(obj.id)} is used twice in {interface.label} "
                                f"(first at {previous.where})", "ids unique within an interface")
            continue
        interface.objects[obj.id] = obj
