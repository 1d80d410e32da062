"""Time of a full lift-capacity chart: 8 boom strokes x 8 stick strokes x 2 slews (128 lift points).

The shipped ``scenarios/excavator_capacity.json`` (20 t class excavator on a tracked
undercarriage, four ground contacts) is run through the capacity analysis
(``shiftsim.scenario.capacity_analysis.run_capacity``: tipping search, hydraulic search, rated
load). Timed: the analysis, not loading the scenario. Where the time goes is
measured by wrapping the solver entry points: batched standing solves (contacts
as a force field), the part of them spent in the contact field, and the
welded (base held) solves of the hydraulic search and of seating the starts.
The solver's load stepping after a failed full-load try runs inside the
compiled core and is not timed apart.
The issue's target is 10 s on one core.

    python benchmarks/bench_capacity.py [--repeat 1]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from shiftsim.errors import Problems
from shiftsim.ground import contacts, rating, stand
from shiftsim.scenario import load_scenario
from shiftsim.scenario.capacity_analysis import read_capacity, run_capacity

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "excavator_capacity.json"


class Clock:
    """Accumulated wall time of a wrapped function."""

    def __init__(self, owner, name: str):
        self.owner, self.name, self.original = owner, name, getattr(owner, name)
        self.seconds, self.calls = 0.0, 0

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return self.original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started
                self.calls += 1

        setattr(owner, name, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    scenario = load_scenario(SCENARIO)
    spec = read_capacity(scenario, scenario.document["analysis"]["capacity"], "analysis.capacity", Problems(str(SCENARIO)))
    best = None
    for _ in range(args.repeat):
        started = time.perf_counter()
        document = run_capacity(scenario, spec)
        elapsed = time.perf_counter() - started
        best = elapsed if best is None else min(best, elapsed)
    points = len(document["points"])
    print(f"capacity chart, {points} lift points: {best:.1f} s ({1000 * best / points:.0f} ms per point), "
          f"{document['batched_solves']} batched solves; target 10 s")
    seating = Clock(stand, "solve_grouped")  # the base-held solves that seat the starts
    searches = Clock(rating, "solve_grouped")  # the tipping and hydraulic searches' batched solves
    field = Clock(contacts.ContactField, "terms")
    started = time.perf_counter()
    run_capacity(scenario, spec)
    total = time.perf_counter() - started
    solved = seating.seconds + searches.seconds
    print(f"where the time goes (one more run, {total:.1f} s): batched solves {solved:.1f} s "
          f"({searches.calls + seating.calls} calls), of which the contact field (called back from the compiled "
          f"core) {field.seconds:.1f} s ({field.calls} evaluations); the rest (assembly, footprints, cylinder forces) "
          f"{total - solved:.1f} s")


if __name__ == "__main__":
    main()
