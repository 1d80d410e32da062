"""The collisions of report.html: per machine pair, when it first came within the margin and into collision, its
least distance, the shapes that touched, and its distance step by step.

Distances are read through :class:`~shiftsim.output.run_results.RunResults` (``results["a|b", "distance"]``, m by
step row, NaN where a machine of the pair was not posed) and the step table (``results.steps``); the names of the
closest shapes, which are not numbers, come with the run's pair records (``closest``). The states are the run
summary's: *in collision* when the distance is <= 0 (the shapes touch or overlap), *within margin* when it is
between 0 and the scenario's ``collision.margin``, else *clear*.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..analysis.digest import number, shown_value
from ..scenario.definition import Scenario
from .run_results import RunResults

DISTANCE_ROWS = 24  # steps of the per-step distance table beyond which it shows a spread of them
NOT_POSED = "not posed"

Table = tuple[list[str], list[list[Any]]]


def pair_distances(results: RunResults) -> dict[str, np.ndarray]:
    """``a - b`` -> (n_steps,) m: every machine pair's distance at each step row (NaN: not posed)."""
    return {entity.replace("|", " - "): results[entity, quantity] for entity, quantity in results.keys()
            if quantity == "distance" and "|" in entity}


def state(distance: float, margin: float) -> str:
    """``in collision`` (<= 0), ``within margin`` (0 < distance < margin), ``clear``, or :data:`NOT_POSED` (NaN)."""
    if np.isnan(distance):
        return NOT_POSED
    return "in collision" if distance <= 0.0 else "within margin" if distance < margin else "clear"


def step_ranges(index: np.ndarray, rows: np.ndarray) -> str:
    """``count (a-b, c)``: the steps at ``rows`` (positions in ``index``, increasing) as runs of neighbouring rows,
    by step number; ``0`` when there are none."""
    if len(rows) == 0:
        return "0"
    runs, start = [], rows[0]
    for previous, row in zip(rows, [*rows[1:], None]):
        if row is None or row != previous + 1:
            runs.append(str(index[start]) if start == previous else f"{index[start]}-{index[previous]}")
            start = row
    return f"{len(rows)} ({', '.join(runs)})"


def _swept(scenario: Scenario, results: RunResults, row: int) -> str:
    """The swept values at step row ``row`` as people read them (angles in the scenario's unit)."""
    parts = []
    for p in scenario.sweep.parameters:
        value, unit = shown_value(scenario, p, float(results.steps[p.name][row]))
        parts.append(f"{p.name} = {number(value)}{'' if unit in ('-', '') else ' ' + unit}")
    return ", ".join(parts)


def _first(rows: np.ndarray, index: np.ndarray) -> Any:
    return int(index[rows[0]]) if len(rows) else "none"


def _key_rows(distance: np.ndarray, margin: float) -> list[int]:
    """A pair's telling step rows: first within margin, first in collision, least distance."""
    finite = np.isfinite(distance)
    within, colliding = _states(distance, margin)
    return [int(found[0]) for found in (within, colliding) if len(found)] + (
        [int(np.nanargmin(distance))] if finite.any() else [])


def _states(distance: np.ndarray, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """The step rows within margin (0 < distance < margin) and in collision (distance <= 0), increasing."""
    finite = np.isfinite(distance)
    return (np.flatnonzero(finite & (distance > 0) & (distance < margin)),
            np.flatnonzero(finite & (distance <= 0)))


def pair_table(scenario: Scenario, results: RunResults, margin: float,
               closest: Mapping[tuple[str, int], Sequence[str]]) -> Table:
    """One row per machine pair: least distance (mm) with its step and swept values, the first step within the
    margin and in collision, the steps in each state as runs, the shapes closest at the steps in collision (distinct,
    in step order) and at the least distance. ``closest``: (pair ``a - b``, step number) -> the two shape names."""
    index = results.steps.index
    headers = ["pair", "least distance (mm)", "step", "swept values", "first step within margin",
               "first step in collision", "steps within margin", "steps in collision", "shapes in collision",
               "closest shapes at the least distance"]
    rows = []
    for pair, distance in pair_distances(results).items():
        finite = np.isfinite(distance)
        if not finite.any():
            rows.append([pair, NOT_POSED, "", "", "none", "none", "0", "0", "none", ""])
            continue
        within, colliding = _states(distance, margin)
        least = int(np.nanargmin(distance))
        touching = dict.fromkeys(" / ".join(closest.get((pair, int(index[r])), ())) for r in colliding)
        rows.append([pair, number(distance[least] * 1e3), int(index[least]), _swept(scenario, results, least),
                     _first(within, index), _first(colliding, index), step_ranges(index, within),
                     step_ranges(index, colliding), "; ".join(touching) or "none",
                     " / ".join(closest.get((pair, int(index[least])), ()))])
    return headers, rows


def distance_table(scenario: Scenario, results: RunResults, margin: float) -> tuple[str, Table]:
    """Every pair's distance (mm) and state per step: every step up to :data:`DISTANCE_ROWS` steps, else that many
    spread evenly (first and last included) together with each pair's telling steps (:func:`_key_rows`); and a note
    saying which."""
    pairs = pair_distances(results)
    n = len(results.steps)
    if n <= DISTANCE_ROWS:
        rows, note = list(range(n)), "every step"
    else:
        spread = np.linspace(0, n - 1, DISTANCE_ROWS).round().astype(int).tolist()
        rows = sorted({*spread, *(r for d in pairs.values() for r in _key_rows(d, margin))})
        note = (f"{len(rows)} of {n} steps: spread evenly, with each pair's first step within margin, first in "
                f"collision and least distance; every step in values.parquet")
    headers = ["step", "swept values", *(f"{pair} (mm)" for pair in pairs), *(f"{pair} state" for pair in pairs)]
    table = [[int(results.steps.index[r]), _swept(scenario, results, r),
              *(NOT_POSED if np.isnan(d[r]) else number(d[r] * 1e3) for d in pairs.values()),
              *(state(d[r], margin) for d in pairs.values())] for r in rows]
    return note, (headers, table)


__all__ = ["DISTANCE_ROWS", "distance_table", "pair_distances", "pair_table", "state", "step_ranges"]
