"""Time of a full lift-capacity chart: 8 boom strokes x 8 stick strokes x 2 slews (128 lift points).

The shipped ``scenarios/excavator_capacity.json`` (20 t class excavator on a tracked
undercarriage, four ground contacts) is run through the capacity analysis
(``shiftsim.scenario.capacity_analysis.run_capacity``: the standing and the hydraulic paths,
rated load). Timed: the analysis, not loading the scenario, in CPU seconds of this process (the
compiled core's threads included) and wall seconds. Where the time goes is measured by wrapping
the solver entry points: the batched solves of the paths (``shiftsim.ground.path``) and of seating
the starts, and the evaluations of the reduced stiffness on the paths. Also: solves per lift point
on the standing path (``path_solves``). The issue's target is 1 s on one core.

    python benchmarks/bench_capacity.py [--repeat 1]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from shiftsim.errors import Problems
from shiftsim.ground import path, stand
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
        started, cpu = time.perf_counter(), time.process_time()
        document = run_capacity(scenario, spec)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        best = (elapsed, cpu) if best is None or cpu < best[1] else best
    points = document["points"]
    solves = sum(p["path_solves"] for p in points) / len(points)
    print(f"capacity chart, {len(points)} lift points: {best[1]:.2f} CPU s, {best[0]:.2f} s wall "
          f"({1000 * best[1] / len(points):.1f} CPU ms per point), {document['batched_solves']} batched solves, "
          f"{solves:.1f} solves per point on the standing path; target 1 s")
    seating = Clock(stand, "solve_grouped")  # the base-held solves that seat the starts
    followed = Clock(path, "solve_grouped")  # the paths' batched solves
    stiffness = Clock(path, "reduced")  # the reduced stiffness (limit point) at each equilibrium
    started = time.process_time()
    run_capacity(scenario, spec)
    total = time.process_time() - started
    print(f"where the time goes (one more run, {total:.2f} CPU s): batched solves "
          f"{seating.seconds + followed.seconds:.2f} s wall ({followed.calls + seating.calls} calls), the reduced "
          f"stiffness {stiffness.seconds:.2f} s wall ({stiffness.calls} evaluations)")


if __name__ == "__main__":
    main()
