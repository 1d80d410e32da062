"""How much memory a static solve needs, how much this process may still take, and the refusal when it does not fit.

A solve works on dense matrices of the system's size ``n = coordinates + 6 x closures``:
:func:`solve_bytes` estimates its peak as :data:`DENSE_MATRICES` float64 matrices of ``n x (n + 1)`` (measured:
a peak of about 7.9 such matrices for flat models of 300 to 900 bodies, as the growth of the process's peak
resident memory, which counts the compiled core's own allocations; tests/statics/test_hardening_solve_memory.py keeps
the estimate above the measured peak). A tree factorized in tree order (``structured``: core/src/tree.c)
needs :data:`TREE_BYTES_PER_COORDINATE` per coordinate and :data:`LOOP_ROW_ARRAYS` arrays of the coordinates' length
per closure equation (6 per loop), plus the dense matrices of at most
:data:`WRITTEN_OUT_UP_TO` coordinates (its stiffness is written out only that far, for the neutral directions).

:func:`usable_bytes` is what this process may still allocate: the least of the machine's physical memory, the
memory the kernel reports available (``MemAvailable``), and the room left under the process's address-space limit
(``RLIMIT_AS``, ``ulimit -v``) above what it already maps. A solve whose estimate is more is refused before it
starts (:class:`SolveTooLarge`, a ``MemoryError``; the command line exits 1 with the sizes).
"""

from __future__ import annotations

import math
import os
import resource
from pathlib import Path

from ..errors import ShiftsimError

DENSE_MATRICES = 10
# measured: a peak of 0.98 to 1.06 kB per coordinate (chains of 1,500 to 6,000 links, the case workspace included)
TREE_BYTES_PER_COORDINATE = 2048
LOOP_ROW_ARRAYS = 6  # per closure equation, arrays as long as the coordinates that a solve in tree order holds
STRUCTURED_FROM = 64  # free coordinates from which a loop-free tree is factorized in tree order (SolverOptions)
WRITTEN_OUT_UP_TO = 2000  # WRITTEN_OUT_UP_TO in core/src/newton.c


class SolveTooLarge(ShiftsimError, MemoryError):
    """A solve needs more memory than this process may take (exit 1: the input is valid, the machine too small)."""

    exit_code = 1


def system_size(nq: int, n_closures: int) -> int:
    """``n = coordinates + 6 x closures``: the rows of the dense matrices a solve works on."""
    return nq + 6 * n_closures


def solve_bytes(nq: int, n_closures: int, structured: bool = False) -> int:
    """Estimated peak memory (bytes) of one static solve of a model of ``nq`` coordinates and ``n_closures`` loops;
    ``structured``: factorized in tree order (linear in ``nq`` for a fixed number of loops)."""
    n = system_size(nq, n_closures)
    if not structured:
        return DENSE_MATRICES * 8 * n * (n + 1)
    dense = min(n, WRITTEN_OUT_UP_TO)
    loops = LOOP_ROW_ARRAYS * 8 * 6 * n_closures * nq  # closure Jacobian rows and the border's tree solves
    return TREE_BYTES_PER_COORDINATE * n + loops + DENSE_MATRICES * 8 * dense * (dense + 1)


def physical_bytes() -> int:
    """The machine's physical memory (``SC_PHYS_PAGES`` x ``SC_PAGE_SIZE``)."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _kib_entry(path: str, key: str) -> float:
    """A ``key: N kB`` entry of a /proc file in bytes; infinity where the system has no such file or entry."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return math.inf


def usable_bytes() -> float:
    """Memory this process may still allocate (bytes): the least of physical memory, the kernel's available
    memory, and the room under ``RLIMIT_AS`` above the address space the process already maps."""
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    room = math.inf if limit == resource.RLIM_INFINITY else limit - _kib_entry("/proc/self/status", "VmSize")
    return max(min(float(physical_bytes()), _kib_entry("/proc/meminfo", "MemAvailable"), room), 0.0)


def size_text(size: float) -> str:
    """Bytes as a short text: GiB from one GiB, MiB (rounded up) below."""
    return f"{size / 2**30:.3g} GiB" if size >= 2**30 else f"{math.ceil(size / 2**20)} MiB"


def check_fits(need: float, what: str, limit: float | None = None) -> None:
    """Raise :class:`SolveTooLarge` when ``need`` bytes exceed ``limit`` (None: :func:`usable_bytes`).

    ``what`` says what needs the memory (it starts the message); the message names both sizes and how to override
    (``SolverOptions(memory_limit=...)``)."""
    have = usable_bytes() if limit is None else float(limit)
    if need > have:
        source = "the given memory_limit" if limit is not None else "the memory this process may still take"
        raise SolveTooLarge(f"{what} needs about {size_text(need)}, more than {source} ({size_text(have)}: "
                            "physical, available and the address-space limit); refused before starting "
                            "(SolverOptions(memory_limit=...) sets another limit, math.inf none)")
