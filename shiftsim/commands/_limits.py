"""Limits the commands apply before and after a solve: command-line magnitudes, solve memory, finite results.

Command-line numbers must be finite (``_common``) and, for the solver, of a
size a machine can have; beyond these bounds the arithmetic overflows or the
continuation from the file's pose to a ``--set`` value would take millions of
loop closures (0.1 rad or m per increment):

* ``--set``, ``--start``: within ±:data:`MAX_JOINT_VALUE` (1000 rad or m);
* ``--gravity``: each component within ±:data:`MAX_GRAVITY` (1000 m/s^2, about 100 g);
* ``--load``: forces within ±:data:`MAX_FORCE` (1e12 N), torques within
  ±:data:`MAX_TORQUE` (1e12 N m).

A value beyond its bound is bad input (exit 2).

Memory: a solve works on dense matrices of the system's size
``n = coordinates + 6 x closures``. :func:`solve_memory_bytes` estimates the
peak as :data:`DENSE_MATRICES` float64 matrices of ``n x (n + 1)`` (measured:
a peak of about 7.9 such matrices for flat models of 300 to 900 bodies, as the
growth of the process's peak resident memory, which counts the compiled core's
own allocations; the test keeps the estimate above the measured peak). A solve whose estimate is
more than the machine's physical memory is refused before it starts, with the
estimate: exit 1, since the input is valid and only this machine cannot hold
the solve.
"""

from __future__ import annotations

import math
import os
from typing import Iterable

import numpy as np

from ..errors import InputError, Problem, ShiftsimError, SolveError
from ..model import Model
from ._common import parse_assignment

MAX_JOINT_VALUE = 1e3
MAX_GRAVITY = 1e3
MAX_FORCE = 1e12
MAX_TORQUE = 1e12
DENSE_MATRICES = 10


class SolveTooLarge(ShiftsimError):
    """A solve needs more memory than the machine has (exit 1: the input is valid, the machine too small)."""

    exit_code = 1


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


def physical_memory_bytes() -> int:
    """The machine's physical memory (``SC_PHYS_PAGES`` x ``SC_PAGE_SIZE``)."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _system_size(model: Model) -> int:
    """``n = coordinates + 6 x closures``: the rows of the dense matrices a solve of ``model`` works on."""
    return model.nq + 6 * len(model.closures)


def solve_memory_bytes(model: Model) -> int:
    """Estimated peak memory (bytes) of one static solve of ``model`` (see the module docstring)."""
    n = _system_size(model)
    return DENSE_MATRICES * 8 * n * (n + 1)


def check_solve_memory(model: Model, what: str, copies: int = 1) -> None:
    """Raise :class:`SolveTooLarge` when ``copies`` solves of ``model`` at once would not fit in memory."""
    need, have = copies * solve_memory_bytes(model), physical_memory_bytes()
    if need > have:
        n = _system_size(model)
        per = f" ({copies} processes at once)" if copies > 1 else ""
        raise SolveTooLarge(
            f"{what}: a solve of {model.nq} coordinates and {_count(len(model.closures), 'loop')} works on dense "
            f"{n} x {n + 1} matrices and needs about {_gib(need)}{per}, more than this machine's "
            f"{_gib(have)} of memory; refused before starting"
        )


def check_finite_result(values: np.ndarray, what: str) -> None:
    """SolveError (exit 1) when a solve produced values that are not finite (an overflow)."""
    if not np.all(np.isfinite(values)):
        raise SolveError(f"{what}: the solve overflowed (results are not finite numbers); "
                         "the loads, gravity or values given are too large for double precision")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _gib(size: float) -> str:
    return f"{size / 2**30:.3g} GiB" if size >= 2**30 else f"{math.ceil(size / 2**20)} MiB"
