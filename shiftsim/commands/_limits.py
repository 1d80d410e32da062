"""Limits the commands apply before and after a solve: command-line magnitudes and finite results.

Command-line numbers must be finite (``_common``) and, for the solver, of a
size a machine can have; beyond these bounds the arithmetic overflows or the
continuation from the file's pose to a ``--set`` value would take millions of
loop closures (0.1 rad or m per increment):

* ``--set``, ``--start``: within ±:data:`MAX_JOINT_VALUE` (1000 rad or m);
* ``--gravity``: each component within ±:data:`MAX_GRAVITY` (1000 m/s^2, about 100 g);
* ``--load``: forces within ±:data:`MAX_FORCE` (1e12 N), torques within
  ±:data:`MAX_TORQUE` (1e12 N m).

A value beyond its bound is bad input (exit 2).

The memory a solve needs is checked before it starts by :mod:`shiftsim.solve_memory`.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from ..errors import InputError, Problem, SolveError
from ._common import parse_assignment

MAX_JOINT_VALUE = 1e3
MAX_GRAVITY = 1e3
MAX_FORCE = 1e12
MAX_TORQUE = 1e12


def check_bounded(values: Iterable[float], bound: float, option: str, text: str, unit: str) -> None:
    """InputError when a component of ``values`` (from ``option``'s ``text``) exceeds ``bound`` in magnitude."""
    big = [f"{v:g}" for v in values if abs(v) > bound]
    if big:
        raise InputError([Problem(option, text, f"{', '.join(big)} {unit} is beyond what a machine can have",
                                  f"values within ±{bound:g} {unit}")])


def joint_settings(texts: list[str], option: str) -> dict[str, list[float]]:
    """``JOINT=VALUE`` texts of ``option`` (``--set``, ``--start``) -> ``{joint: [values]}``, parsed and bounded."""
    values = dict(parse_assignment(text, option) for text in texts)
    check_joint_values(values, option)
    return values


def check_joint_values(values: dict[str, list[float]], option: str) -> None:
    """Bound ``--set``/``--start`` values (``{joint: [values]}``) by :data:`MAX_JOINT_VALUE`."""
    for name, numbers in values.items():
        check_bounded(numbers, MAX_JOINT_VALUE, option, f"{name}={','.join(f'{v:g}' for v in numbers)}", "rad or m")


def check_finite_result(values: np.ndarray, what: str) -> None:
    """SolveError (exit 1) when a solve produced values that are not finite (an overflow)."""
    if not np.all(np.isfinite(values)):
        raise SolveError(f"{what}: the solve overflowed (results are not finite numbers); "
                         "the loads, gravity or values given are too large for double precision")
