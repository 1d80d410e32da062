"""The collisions of report.html: per machine pair, when it first came within the margin and into collision, its
least distance, the shapes that touched, and its distance step by step.

The tables are built from :class:`PairDistances`: per pair its distance as an array by step row, the arrays
:class:`~shiftsim.output.run_results.RunResults` gives as ``results["a|b", "distance"]`` and
``results.steps.index``, with the names of the closest shapes (not numbers) beside them. The states are the run
summary's: *in collision* when the distance is <= 0 (the shapes touch or overlap), *within margin* when it is
between 0 and the scenario's ``collision.margin``, else *clear*.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..analysis.digest import number

DISTANCE_ROWS = 24  # steps of the per-step distance table beyond which it shows a spread of them
RUNS_SHOWN = 10  # runs of steps, or shape pairs in collision, a pair's cell lists before "..."
TRANSITIONS = 8  # changes of state per pair whose steps the per-step table shows in a long run
NOT_POSED = "not posed"

Table = tuple[list[str], list[list[Any]]]


@dataclass(frozen=True)
class PairDistances:
    """The machine pairs over a run of n steps: ``index`` (n,) the step numbers; ``distance`` pair ``a - b`` ->
    (n,) m by step row (NaN where a machine of the pair was not posed); ``shapes`` pair -> the names of its closest
    shapes at its steps in collision (distinct, by first step) and at its least distance (a pair left out has
    none); ``swept`` step row -> its swept values as people read them."""

    index: np.ndarray
    distance: dict[str, np.ndarray]
    shapes: Mapping[str, tuple[Sequence[str], Sequence[str]]]
    swept: Callable[[int], str]


def state(distance: float, margin: float) -> str:
    """``in collision`` (<= 0), ``within margin`` (0 < distance < margin), ``clear``, or :data:`NOT_POSED` (NaN)."""
    if np.isnan(distance):
        return NOT_POSED
    return "in collision" if distance <= 0.0 else "within margin" if distance < margin else "clear"


def step_ranges(index: np.ndarray, rows: np.ndarray) -> str:
    """``count (a-b, c)``: the steps at ``rows`` (positions in ``index``, increasing) as runs of neighbouring rows,
    by step number, the first :data:`RUNS_SHOWN` of them (then ``...``); ``0`` when there are none."""
    if len(rows) == 0:
        return "0"
    runs, start = [], rows[0]
    for previous, row in zip(rows, [*rows[1:], None]):
        if row is None or row != previous + 1:
            runs.append(str(index[start]) if start == previous else f"{index[start]}-{index[previous]}")
            start = row
    more = ", ..." if len(runs) > RUNS_SHOWN else ""
    return f"{len(rows)} ({', '.join(runs[:RUNS_SHOWN])}{more})"


def _first(rows: np.ndarray, index: np.ndarray) -> Any:
    return int(index[rows[0]]) if len(rows) else "none"


def _key_rows(distance: np.ndarray, margin: float) -> list[int]:
    """A pair's telling step rows: both sides of its first :data:`TRANSITIONS` changes of state, and its least
    distance."""
    states = np.array([state(d, margin) for d in distance])
    changes = np.flatnonzero(states[1:] != states[:-1])[:TRANSITIONS]
    finite = np.isfinite(distance)
    return [*changes.tolist(), *(changes + 1).tolist(), *([int(np.nanargmin(distance))] if finite.any() else [])]


def _states(distance: np.ndarray, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """The step rows within margin (0 < distance < margin) and in collision (distance <= 0), increasing."""
    finite = np.isfinite(distance)
    return (np.flatnonzero(finite & (distance > 0) & (distance < margin)),
            np.flatnonzero(finite & (distance <= 0)))


def pair_table(pairs: PairDistances, margin: float) -> Table:
    """One row per machine pair: least distance (mm) with its step and swept values, the first step within the
    margin and in collision, the steps in each state as runs, the shapes closest at the steps in collision (distinct,
    in step order) and at the least distance."""
    index = pairs.index
    headers = ["pair", "least distance (mm)", "step", "swept values", "first step within margin",
               "first step in collision", "steps within margin", "steps in collision", "shapes in collision",
               "closest shapes at the least distance"]
    rows = []
    for pair, distance in pairs.distance.items():
        finite = np.isfinite(distance)
        if not finite.any():
            rows.append([pair, NOT_POSED, "", "", "none", "none", "0", "0", "none", ""])
            continue
        within, colliding = _states(distance, margin)
        least = int(np.nanargmin(distance))
        touching, closest = pairs.shapes.get(pair, ((), ()))
        touching = list(touching)
        if len(touching) > RUNS_SHOWN:
            touching = [*touching[:RUNS_SHOWN], f"... ({len(touching)} shape pairs in all)"]
        rows.append([pair, number(distance[least] * 1e3), int(index[least]), pairs.swept(least),
                     _first(within, index), _first(colliding, index), step_ranges(index, within),
                     step_ranges(index, colliding), "; ".join(touching) or "none",
                     " / ".join(closest)])
    return headers, rows


def distance_table(pairs: PairDistances, margin: float) -> tuple[str, Table]:
    """Every pair's distance (mm) and state per step: every step up to :data:`DISTANCE_ROWS` steps, else that many
    spread evenly (first and last included) together with each pair's telling steps (:func:`_key_rows`); and a note
    saying which."""
    distances = pairs.distance
    n = len(pairs.index)
    if n <= DISTANCE_ROWS:
        rows, note = list(range(n)), "every step"
    else:
        spread = np.linspace(0, n - 1, DISTANCE_ROWS).round().astype(int).tolist()
        rows = sorted({*spread, *(r for d in distances.values() for r in _key_rows(d, margin))})
        note = (f"{len(rows)} of {n} steps: spread evenly, with the steps on both sides of each pair's changes of "
                f"state and its least distance; every step in values.parquet")
    headers = ["step", "swept values", *(f"{pair} (mm)" for pair in distances),
               *(f"{pair} state" for pair in distances)]
    table = [[int(pairs.index[r]), pairs.swept(r),
              *(NOT_POSED if np.isnan(d[r]) else number(d[r] * 1e3) for d in distances.values()),
              *(state(d[r], margin) for d in distances.values())] for r in rows]
    return note, (headers, table)


__all__ = ["DISTANCE_ROWS", "PairDistances", "distance_table", "pair_table", "state", "step_ranges"]
