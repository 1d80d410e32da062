"""Test helpers shared by several test files (no tests here)."""

from __future__ import annotations

from shiftsim.core.library import STATUSES, core

NO_MEMORY = core.STATUS_MESSAGES[STATUSES.index("no_memory")]  # the message the core raises MemoryError with


def fails_cleanly_at_every_allocation(call):
    """Run ``call`` with its first, second, ... allocation failing; the first result of a call that succeeds."""
    failures, n = 0, 1
    while True:
        core.fail_allocation(n)
        try:
            result = call()
        except MemoryError as error:
            failures += 1
            assert NO_MEMORY in str(error) and ("nodes" in str(error) or "matrix" in str(error))
        else:
            return result, failures
        finally:
            core.fail_allocation(0)
            assert core.live_allocations() == 0, f"allocation {n} failed and left blocks behind"
        n += 1
