"""Round-off in the commands' tables of efforts and pin reactions.

A force or moment below :data:`~shiftsim.loads.CARRIES_NOTHING` (1e-9) of the largest one a table shows
(N and N m compared as at a 1 m lever, as the plots and the report do) is round-off of the solve, not a result: it
prints as ``0``, and the table says so once (:meth:`ForceFloor.note`). ``--json`` output keeps the raw values.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from ..loads import CARRIES_NOTHING


class ForceFloor:
    """The round-off floor of one table: ``level`` (the largest |value| shown, N or N m), ``floor`` (N or N m) and
    ``zeroed`` (how many nonzero values printed as 0 so far)."""

    def __init__(self, values: Iterable[float]):
        magnitudes = np.abs(np.asarray(list(values), float))
        magnitudes = magnitudes[np.isfinite(magnitudes)]
        self.level = float(magnitudes.max(initial=0.0))
        self.floor = CARRIES_NOTHING * self.level
        self.zeroed = 0

    def format(self, value: float, spec: str) -> str:
        """``value`` formatted with ``spec``; ``0`` (never ``-0``) when at most :attr:`floor` in size."""
        if abs(value) <= self.floor:
            self.zeroed += value != 0
            return format(0.0, spec)
        return format(value, spec)

    def note(self) -> str | None:
        """The table's footnote when a value was printed as 0, else None."""
        if not self.zeroed:
            return None
        plural = "s" if self.zeroed > 1 else ""
        share = np.format_float_scientific(CARRIES_NOTHING, trim="-", exp_digits=1)
        return (f"0: round-off ({self.zeroed} value{plural} below {share} of the largest effort or pin "
                f"load, {self.level:.4g}; --json prints the raw values)")


__all__ = ["ForceFloor"]
