"""Sweep throughput: end-to-end ``shiftsim run`` steps/s beside the compiled core's batch rate.

The shipped ``scenarios/excavator_lift.json`` is stretched to ``--steps`` boom-cylinder lengths over
the same range and run as a user runs it, ``shiftsim run FILE -o DIR --jobs J -q`` in a fresh
process, 1 and 2 jobs (the sweep cut into two chains for 2). Outputs: the columnar store (streamed
while solving), results.json (with every step up to 10,000 steps, else the summary), the tidy CSV
tables (up to 10,000 steps) and the report; ``--plots`` adds the shipped four plots (their cost
grows with the steps: the convergence chart draws one bar per step). Reported: wall time (process
start, solving and writing), steps/s, CPU seconds of the run (its processes, ``wait4``: what a
loaded machine does not distort), the peak resident memory of its largest process, the size of what
it wrote (the store's part files included).

Beside it, the core's rate for the same steps: every step's two cases (the loaded equilibrium and its
unloaded reference, as ``solve`` solves them) in one ``solve_batch`` call per 10,000 steps, on one
thread and on every core; starts are the steps' assembled poses (assembled beforehand in Python, about
1 ms a step, not timed). Above ``--core-sample`` steps the core runs on that many of the steps,
evenly spaced (its cost per step does not depend on the batch's length past a few hundred).
A run whose peak memory, extrapolated linearly from the smaller sizes' peaks, would pass half of the
memory available is skipped and says so.

Beside both, in this process: the part of a run that solves and streams, every step solved along its chain and
streamed into a results store (``ResultsStream``), by the block path (``scenario.chain``: the compiled continuation,
outputs per block with numpy) and by the step path (``blocks=False``: per step a ``Solution`` and its dictionaries),
steps per CPU second (``time.process_time``) beside the core's rate on one thread (the ``--stream-steps`` first steps,
default all up to 30,000).

    python benchmarks/bench_sweep.py [--steps 3000 300000] [--jobs 1 2] [--core-sample 3000] [--plots]
                                     [--stream-steps 30000]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from shiftsim.jsonio import read_json
from shiftsim.kinematics import assemble
from shiftsim.statics import Load, applied, free_coordinates, independent_rows, resolve_prescribed, solve_batch

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios" / "excavator_lift.json"
BATCH = 10_000  # steps per solve_batch call


def stretched(steps: int, chains: int, plots: bool = True) -> dict:
    """The excavator lift with ``steps`` boom-cylinder lengths, cut into ``chains`` chains; without
    ``plots`` it draws none."""
    document, _ = read_json(SCENARIO)
    document = copy.deepcopy(document)
    for machine in document["machines"]:
        machine["model"] = str((SCENARIO.parent / machine["model"]).resolve())
    (name, values), = document["sweep"]["parameters"].items()
    document["sweep"]["parameters"][name] = {**values, "steps": steps}
    if chains > 1:
        document["sweep"]["segment"] = -(-steps // chains)
    if not plots:
        document["outputs"]["plots"] = []
    document["outputs"].pop("csv", None)  # the default: the tidy CSV tables up to 10,000 steps (the shipped file asks
    return document                       # for them whatever the length: 67 million rows at 300,000 steps)


def available_memory() -> int:
    """MemAvailable of /proc/meminfo, bytes."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def extrapolated_peak(measured: list[tuple[int, int]], steps: int) -> float:
    """Peak bytes at ``steps`` on the line through the last two (steps, peak) measured, or in
    proportion to the one measured (an overestimate: it scales the fixed part too); 0 if none."""
    if not measured:
        return 0.0
    if len(measured) == 1:
        (n, peak), = measured
        return peak * steps / n
    (n0, p0), (n1, p1) = measured[-2:]
    return p1 + (p1 - p0) / (n1 - n0) * (steps - n1)


def end_to_end(steps: int, jobs: int, plots: bool) -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds, peak RSS bytes, bytes written) of ``shiftsim run`` on the stretched
    scenario."""
    with tempfile.TemporaryDirectory() as folder:
        scenario = Path(folder) / "excavator_lift.json"
        scenario.write_text(json.dumps(stretched(steps, jobs, plots)))
        output = Path(folder) / "out"
        started = time.perf_counter()
        process = subprocess.Popen([sys.executable, "-m", "shiftsim", "run", str(scenario), "-o", str(output),
                                    "--jobs", str(jobs), "-q"])
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            raise SystemExit(f"shiftsim run of {steps} steps, {jobs} jobs exited {process.returncode}")
        written = sum(p.stat().st_size for p in output.rglob("*") if p.is_file())
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, written


def core_cases(steps: int, sample: int):
    """The cases of ``sample`` evenly spaced steps of ``steps`` for solve_batch: model, starts
    (sample, nq), free coordinates, independent closure rows, loads, gravity (m/s^2)."""
    from shiftsim.scenario import build_scenario

    scenario = build_scenario(SCENARIO, stretched(steps, 1))
    machine, = scenario.machines
    model = machine.model
    parameter, = scenario.sweep.parameters
    held = {name: float(value[0]) for name, value in machine.held_values().items()}
    joint = parameter.target
    picked = scenario.sweep.table()[np.linspace(0, steps - 1, min(steps, sample)).round().astype(int), 0]
    starts = np.empty((len(picked), model.nq))
    previous = machine.q_start
    prescribed = None
    for k, value in enumerate(picked):
        q, prescribed = resolve_prescribed(model, {**held, joint: float(value)}, [])
        previous = starts[k] = assemble(model, q, held=prescribed, start=previous).q
    free = free_coordinates(model, prescribed)
    loads = [Load(load.frame, tuple(load.force), tuple(load.torque), load.direction, load.factor)
             for load in scenario.loads]
    return model, starts, free, independent_rows(model, starts[0], free), loads, scenario.gravity


def core_rate(threads: int | None, cases) -> float:
    """Steps/s of solve_batch over every step's loaded and reference case."""
    model, starts, free, rows, loads, gravity = cases
    steps = len(starts)
    seconds = 0.0
    for first in range(0, steps, BATCH):
        chunk = starts[first:first + BATCH]
        n = len(chunk)
        both = np.concatenate([chunk, chunk])
        gravities = np.concatenate([np.broadcast_to(gravity, (n, 3)), np.zeros((n, 3))])
        batch_loads = applied(model, loads, 2 * n)
        for load in batch_loads:  # the reference half carries no load
            load.force[n:], load.torque[n:] = 0.0, 0.0
        started = time.perf_counter()
        result = solve_batch(model, both, free, gravities, batch_loads, rows=rows, threads=threads)
        seconds += time.perf_counter() - started
        assert np.all(result.converged), "a core case did not converge"
    return steps / seconds


def solve_and_stream(steps: int, blocks: bool) -> float:
    """Steps per CPU second of solving the stretched scenario's chain and streaming it into a results store."""
    from shiftsim.output.write import ResultsStream
    from shiftsim.scenario import build_scenario
    from shiftsim.scenario.chain import run_chain

    scenario = build_scenario(SCENARIO, stretched(steps, 1, plots=False))
    chain, = scenario.sweep.chains()
    with tempfile.TemporaryDirectory() as folder:
        started = time.process_time()
        with ResultsStream(Path(folder), scenario) as stream:
            run_chain(scenario, chain, stream.add, blocks=blocks)
            stream.writer.close()
        return steps / (time.process_time() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[3000, 300_000])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--core-sample", type=int, default=3000)
    parser.add_argument("--plots", action="store_true", help="draw the shipped scenario's four plots too")
    parser.add_argument("--stream-steps", type=int, default=30_000,
                        help="solve and stream in this process at most this many steps")
    args = parser.parse_args()
    peaks: dict[int, list[tuple[int, int]]] = {jobs: [] for jobs in args.jobs}  # jobs -> [(steps, peak bytes)]
    for steps in sorted(args.steps):
        started = time.perf_counter()
        cases = core_cases(steps, args.core_sample)
        print(f"{steps} steps: {len(cases[1])} starts assembled in {time.perf_counter() - started:.1f} s "
              f"(not timed below)", flush=True)
        one, every = core_rate(1, cases), core_rate(None, cases)
        print(f"  core solve_batch (loaded + reference case per step): {one:9.0f} steps/s on 1 thread, "
              f"{every:9.0f} steps/s on {os.cpu_count()}", flush=True)
        if steps <= args.stream_steps:
            for blocks in (True, False):
                rate = solve_and_stream(steps, blocks)
                print(f"  solve and stream, {'block' if blocks else 'step'} path: {rate:8.0f} steps per CPU s "
                      f"({rate / one:5.1%} of the core's {one:.0f} on 1 thread)", flush=True)
        for jobs in args.jobs:
            estimate = extrapolated_peak(peaks[jobs], steps)
            if estimate > 0.5 * available_memory():
                print(f"  shiftsim run --jobs {jobs}: skipped, its peak memory would be about {estimate / 1e9:.1f} GB "
                      f"(extrapolated) and {available_memory() / 1e9:.1f} GB are available", flush=True)
                continue
            seconds, cpu, peak, written = end_to_end(steps, jobs, args.plots)
            peaks[jobs].append((steps, peak))
            core = one if jobs == 1 else every
            print(f"  shiftsim run --jobs {jobs}: {seconds:7.1f} s, {steps / seconds:8.0f} steps/s "
                  f"({steps / seconds / core:5.1%} of the core's {core:.0f}), {cpu:7.1f} CPU s "
                  f"({steps / cpu:.0f} steps per CPU s), peak memory {peak / 1e9:.2f} GB, "
                  f"{written / 1e6:.0f} MB written", flush=True)


if __name__ == "__main__":
    main()
