"""The shiftsim exception family and the problem collector readers use.

Every error a user can cause derives from :class:`ShiftsimError`. Each carries
an ``exit_code`` the command line returns: 2 for bad input (a model, a
scenario, a command-line value), 1 for a run that could not finish.

Readers do not stop at the first problem: they add every :class:`Problem` to a
:class:`Problems` collector and raise once, so a user fixes a file in one pass.
"""

from __future__ import annotations

import sys
import warnings as python_warnings
from dataclasses import dataclass, field
from difflib import get_close_matches
from typing import Iterable


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: where it is, what is wrong, what was expected."""

    file: str
    where: str
    what: str
    expected: str = ""

    def __str__(self) -> str:
        text = f"{self.file}: {self.where}: {self.what}" if self.where else f"{self.file}: {self.what}"
        return f"{text} (expected {self.expected})" if self.expected else text


class ShiftsimError(Exception):
    """Root of every error shiftsim raises on purpose."""

    exit_code = 1


class InputError(ShiftsimError):
    """Bad input: one or more problems in a file or on the command line."""

    exit_code = 2

    def __init__(self, problems: Iterable[Problem] | str):
        if isinstance(problems, str):
            problems = [Problem(file="", where="", what=problems)]
        self.problems: list[Problem] = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class ModelError(InputError):
    """A model file (any format) is invalid."""


class ScenarioError(InputError):
    """A scenario file is invalid."""


class SolveError(ShiftsimError):
    """A computation could not finish (no equilibrium, loop that cannot close, ...)."""

    exit_code = 1


class PlotError(ShiftsimError):
    """The results were written but a plot could not be drawn (the message names the folder and the cause)."""

    exit_code = 1


@dataclass
class Problems:
    """Collects problems found in one file and raises them together.

    ``error_type`` is the :class:`InputError` subclass raised by :meth:`raise_if_any`.
    """

    file: str
    error_type: type[InputError] = ModelError
    items: list[Problem] = field(default_factory=list)

    def add(self, where: str, what: str, expected: str = "") -> None:
        self.items.append(Problem(self.file, where, what, expected))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise self.error_type(self.items)


def suggest(name: str, valid: Iterable[str], limit: int = 8) -> str:
    """Text listing the valid names closest to ``name``, for error messages."""
    valid = sorted(set(valid))
    if not valid:
        return "none exist"
    close = get_close_matches(name, valid, n=limit, cutoff=0.4)
    shown = close or valid[:limit]
    more = "" if len(valid) <= len(shown) else f" ({len(valid)} in all)"
    return "one of " + ", ".join(shown) + more


class ShiftsimWarning(UserWarning):
    """Category of the warnings shiftsim issues about its input (``warnings.filterwarnings`` selects them)."""


class Notice(str):
    """The text of one warning about an input, keeping its ``file``, ``where`` and ``what`` for grouping.

    A ``str`` (``file: where: what``), so it sits in the ``warnings`` lists readers return.
    """

    file: str
    where: str
    what: str

    def __new__(cls, file: str, where: str, what: str) -> "Notice":
        notice = super().__new__(cls, str(Problem(file, where, what)))
        notice.file, notice.where, notice.what = file, where, what
        return notice

    def __getnewargs__(self) -> tuple[str, str, str]:  # type: ignore[override]
        return self.file, self.where, self.what


def group_warnings(warnings: Iterable[str], shown: int = 3) -> list[str]:
    """One line per kind of warning: identical ``what`` in one file becomes one line with a count and places.

    ``["m.json: a: no mass data", "m.json: b: no mass data"]`` (as :class:`Notice`) becomes
    ``["m.json: no mass data (2 places: a, b)"]``; plain strings group only when identical.
    Lines keep the order in which each kind first appeared.
    """
    groups: dict[tuple[str, ...], list[str]] = {}
    for warning in warnings:
        key = (warning.file, warning.what) if isinstance(warning, Notice) else (str(warning),)
        groups.setdefault(key, []).append(warning)
    lines = []
    for key, members in groups.items():
        if len(members) == 1:
            lines.append(str(members[0]))
        elif len(key) == 1:
            lines.append(f"{key[0]} ({len(members)} times)")
        else:
            places = [m.where for m in members[:shown]]
            more = ", ..." if len(members) > shown else ""
            lines.append(f"{key[0]}: {key[1]} ({len(members)} places: {', '.join(places)}{more})")
    return lines


def issue_warnings(lines: Iterable[str]) -> None:
    """Issue each line as a :class:`ShiftsimWarning` attributed to the first caller outside shiftsim."""
    level, frame = 2, sys._getframe(1)
    while frame.f_back is not None and frame.f_globals.get("__name__", "").split(".")[0] == "shiftsim":
        frame, level = frame.f_back, level + 1
    for line in lines:
        python_warnings.warn(line, ShiftsimWarning, stacklevel=level)
