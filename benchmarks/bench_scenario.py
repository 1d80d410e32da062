"""Time per sweep step of the excavator scenario, with 1 and 2 local processes.

The shipped ``scenarios/excavator_lift.json`` is stretched to ``--steps`` boom
cylinder lengths over the same range and cut into chains of ``--segment``
steps, so that two processes have chains to share. Timed: solving every step
(``shiftsim.scenario.execute``, process start-up included), not loading the
scenario nor writing results. Each configuration is run ``--repeat`` times;
the best time is reported.

    python benchmarks/bench_scenario.py [--steps 48] [--segment 12] [--repeat 3]
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

from shiftsim.jsonio import read_json
from shiftsim.scenario import LocalExecutor, build_scenario, execute

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "excavator_lift.json"


def stretched(steps: int, segment: int | None):
    document, _ = read_json(SCENARIO)
    document = copy.deepcopy(document)
    (name, values), = document["sweep"]["parameters"].items()
    document["sweep"]["parameters"][name] = {**values, "steps": steps}
    if segment:
        document["sweep"]["segment"] = segment
    document["outputs"] = {"csv": False, "plots": []}
    return build_scenario(SCENARIO, document)


def best_time(scenario, jobs: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        steps = execute(scenario, LocalExecutor(jobs))
        times.append(time.perf_counter() - started)
        assert all(step.converged for step in steps)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=48)
    parser.add_argument("--segment", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for segment, jobs in ((None, 1), (args.segment, 1), (args.segment, 2)):
        scenario = stretched(args.steps, segment)
        seconds = best_time(scenario, jobs, args.repeat)
        chains = len(scenario.sweep.chains())
        rows.append((jobs, chains, seconds))
        print(f"excavator_lift, {args.steps} steps in {chains:2d} chain(s), {jobs} process(es): "
              f"{seconds * 1e3 / args.steps:7.2f} ms per step, {args.steps / seconds:7.1f} steps/s "
              f"(best of {args.repeat})")
    one, two = rows[1][2], rows[2][2]
    print(f"speed-up of 2 processes over 1 on the same chains: {one / two:.2f}x")


if __name__ == "__main__":
    main()
