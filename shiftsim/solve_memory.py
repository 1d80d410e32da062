"""The memory one static solve needs, and refusing a solve the machine cannot hold.

A solve works on dense matrices of the system's size
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

from .errors import ShiftsimError
from .model import Model

DENSE_MATRICES = 10


class SolveTooLarge(ShiftsimError):
    """A solve needs more memory than the machine has (exit 1: the input is valid, the machine too small)."""

    exit_code = 1


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


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _gib(size: float) -> str:
    return f"{size / 2**30:.3g} GiB" if size >= 2**30 else f"{math.ceil(size / 2**20)} MiB"
