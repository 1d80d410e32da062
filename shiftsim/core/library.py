"""The compiled core's extension module and the thread count for batches.

The C sources in ``src/`` are built into the extension ``shiftsim.core._core`` when the package is installed
(``pip install``; see pyproject.toml): importing it costs about a millisecond and nothing is compiled at run
time. Its functions take numpy arrays through the buffer protocol (C-contiguous float64, int64 or uint8, as
each says) and write their outputs in place; ``src/api.c`` documents every entry point.
"""

from __future__ import annotations

import os

from ..errors import ShiftsimError

try:
    from . import _core as core
except ImportError as error:  # pragma: no cover - an install without its build step
    raise ShiftsimError("shiftsim's compiled core is not built: reinstall the package "
                        "(`pip install -e .` or `make test` builds it; it needs a C compiler)") from error


def check_names(table: str, names: tuple[str, ...]) -> None:
    """Raise ImportError when ``names`` (a Python module's side of a boundary table) differ from the compiled core's
    ``_core.<table>`` (defined once in src/fields.h), with both lists."""
    compiled = tuple(getattr(core, table))
    if tuple(names) != compiled:
        raise ImportError(f"shiftsim's compiled core and its Python side disagree on {table}: Python has "
                          f"{list(names)}, the core (src/fields.h) {list(compiled)}; change both together "
                          "(docs/core.md: how to add a field) and rebuild")


STATUSES = ("ok", "no_memory", "callback_failed", "singular", "not_definite", "not_closed", "not_converged")
"""What a core function that can fail returns (``_core.STATUSES``, src/fields.h), by code: 0 = ok. The entry points
raise with the status's message (``_core.STATUS_MESSAGES``): MemoryError for ``no_memory``, a callback's own
exception for ``callback_failed``; the others are carried in results (``converged``) or returned by the test entry
``_core.linear_algebra``."""


def threads() -> int:
    """Threads for batches: every core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


check_names("STATUSES", STATUSES)
