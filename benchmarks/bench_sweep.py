"""Sweep throughput: end-to-end ``shiftsim run`` steps/s beside the compiled core's batch rate.

The shipped ``scenarios/excavator_lift.json`` is stretched to ``--steps`` boom-cylinder lengths over
the same range and run as a user runs it, ``shiftsim run FILE -o DIR --jobs J -q`` in a fresh
process, 1 and 2 jobs (the sweep cut into two chains for 2). Outputs: the columnar store (streamed
while solving), results.json (with every step up to 10,000 steps, else the summary), the tidy CSV
tables (up to 10,000 steps) and the report; ``--plots`` adds the shipped four plots (their cost
grows with the steps: the convergence chart draws one bar per step). Reported: wall time (process
start, solving and writing), steps/s, CPU seconds of the run (its processes, ``wait4``: what a
loaded machine does not distort), the peak resident memory of its largest process (its own: see
:func:`launched`), the size of what it wrote (the store's part files included).

Beside it, the core's rate for the same steps: every step's two cases (the loaded equilibrium and its
unloaded reference, as ``solve`` solves them) in one ``solve_batch`` call per 10,000 steps, on one
thread and on every core; starts are the steps' assembled poses (assembled beforehand in Python, about
1 ms a step, not timed). Above ``--core-sample`` steps the core runs on that many of the steps,
evenly spaced (its cost per step does not depend on the batch's length past a few hundred).

Every rate is given twice, side by side: per wall second and per CPU second (``time.process_time`` for the core and
the in-process part, ``wait4`` for a run: the CPU seconds of every thread of its processes). CPU seconds are what a
loaded machine does not distort; wall seconds are what a user waits for, and a run that puts work on a second core
(the store's writer thread, the core solving the next block while the last one is handed on) is compared in wall
time, with the machine quiet (the load average is printed after each run). A share of the core divides like by
like: a run's steps per wall second by the core's per wall second, per CPU second by the core's per CPU second
(``--jobs 1`` against the core on one thread, ``--jobs J`` against the core on every thread).
A run whose peak memory, extrapolated from the growth between the two largest sizes measured before it (most of a
small run's peak is the process's base, which does not grow with the steps; with one size measured, in proportion to
it: an overestimate), would pass half of the memory available is skipped and says so. The default sizes measure
30,000 steps between 3,000 and 300,000 for this.

``--threads-here`` adds, beside each ``--jobs J`` above 1, ``--jobs 1`` on the same J chains: one process, whose
block path hands the chains' blocks to the core together, on the core's threads (against the core on every thread):
what ``--jobs J``'s processes are measured against.

``--dask N`` also runs each size on a local Dask cluster of N worker processes (one thread each; ``--executor dask``,
the sweep cut into ``--dask-chains`` chains): CPU seconds and peak memory then include the workers'.
``--verify K``: after each run, the first K steps of (at most) three of its chains are solved again in this process
(the block path, from each chain's start, as one process solves them) and compared value for value with the run's
store (largest difference printed; the bench fails on any).

Beside both, in this process: the part of a run that solves and streams, as ``shiftsim run --jobs 1`` runs it
(``scenario.run.run`` with the results folder's output: every step solved along its chain and streamed into the
store and the run's digest, by the block path: ``scenario.chain``, the compiled continuation, outputs per block with
numpy) and, up to 3,000 steps, by the step path (``blocks=False``: per step a ``Solution`` and its dictionaries,
into a store), the ``--stream-steps`` first steps (default all up to 30,000).

    python benchmarks/bench_sweep.py [--steps 3000 30000 300000] [--jobs 1 2] [--dask 2] [--dask-chains 20]
                                     [--core-sample 3000] [--plots] [--stream-steps 30000] [--verify 300]
                                     [--threads-here]
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
from typing import Any, NamedTuple

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
    """Peak bytes at ``steps``: the largest size measured plus the growth per step between the two largest sizes
    measured (never less than none) times the steps more; in proportion to the one size measured (an overestimate:
    it scales the process's base too); 0 if none."""
    if not measured:
        return 0.0
    (n1, p1) = max(measured)
    smaller = [m for m in measured if m[0] < n1]
    if not smaller:
        return p1 * steps / n1
    (n0, p0) = max(smaller)
    return p1 + max(p1 - p0, 0) / (n1 - n0) * max(steps - n1, 0)


class Run(NamedTuple):
    """One ``shiftsim run``: wall and CPU seconds (its processes, Dask workers included), the peak resident memory of
    its largest process, bytes written (all) and of the store, and the largest difference of re-solved steps against
    its store (None: not checked) over how many values."""

    seconds: float
    cpu: float
    peak: int
    written: int
    store: int
    difference: float | None = None
    compared: int = 0


def _worker_usage() -> tuple[float, int]:
    """CPU seconds and peak resident bytes of this process (run on each Dask worker)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


LAUNCHER = """
import json, os, subprocess, sys, time
started = time.perf_counter()
process = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(process.pid, 0)
print(json.dumps([time.perf_counter() - started, os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime,
                  usage.ru_maxrss * 1024]))
"""


def launched(argv: list[str]) -> tuple[float, int, float, int]:
    """Run ``argv`` and wait for it: wall seconds, exit code, CPU seconds (``wait4``: its processes) and peak resident
    bytes of its largest process. Started by a small fresh interpreter: a process's peak counts the memory of the
    process that started it (Linux records the resident size of the memory it leaves at ``exec``), so a child of this
    process (which grows to hundreds of MB re-solving steps for ``--verify``) would report at least this one's size."""
    done = subprocess.run([sys.executable, "-S", "-c", LAUNCHER, *argv], stdout=subprocess.PIPE, text=True, check=True)
    seconds, code, cpu, peak = json.loads(done.stdout)
    return seconds, code, cpu, peak


def end_to_end(steps: int, jobs: int, plots: bool, dask: Any = None, chains: int | None = None,
               verify: int = 0) -> Run:
    """``shiftsim run`` of the stretched scenario in a fresh process, with ``jobs`` local processes or on the Dask
    ``dask`` client's cluster (the sweep cut into ``chains``, by default ``jobs``); ``verify``: re-solve that many
    steps of up to three chains and compare them with the store (:func:`resolved_difference`)."""
    document = stretched(steps, chains or jobs, plots)
    with tempfile.TemporaryDirectory() as folder:
        scenario = Path(folder) / "excavator_lift.json"
        scenario.write_text(json.dumps(document))
        output = Path(folder) / "out"
        where = ["--jobs", str(jobs)] if dask is None else ["--executor", "dask", "--scheduler",
                                                             dask.scheduler.address]
        before = dask.run(_worker_usage) if dask is not None else {}
        seconds, code, cpu, peak = launched([sys.executable, "-m", "shiftsim", "run", str(scenario), "-o", str(output),
                                             *where, "-q"])
        if code != 0:
            raise SystemExit(f"shiftsim run of {steps} steps, {' '.join(where)} exited {code}")
        if dask is not None:
            after = dask.run(_worker_usage)
            cpu += sum(after[w][0] - before.get(w, (0.0, 0))[0] for w in after)
            peak = max([peak, *(after[w][1] for w in after)])
        written = sum(p.stat().st_size for p in output.rglob("*") if p.is_file())
        store = sum(p.stat().st_size for name in ("steps", "values") for p in (output / name).rglob("*") if p.is_file())
        difference, compared = resolved_difference(output, document, verify) if verify else (None, 0)
    return Run(seconds, cpu, peak, written, store, difference, compared)


def resolved_difference(output: Path, document: dict, sample: int) -> tuple[float, int]:
    """The largest difference between the store at ``output`` and the first ``sample`` steps of (at most) three of
    the run's chains (first, middle, last) solved again in this process by the block path, and how many values were
    compared; the names of every value (entity, quantity, component, unit) must match too."""
    from shiftsim.output.store import ResultsStore, open_store
    from shiftsim.output.write import ResultsStream
    from shiftsim.scenario import build_scenario
    from shiftsim.scenario.chain import run_chain

    scenario = build_scenario(SCENARIO, document)
    chains = scenario.sweep.chains()
    picked = [chains[k] for k in sorted({0, len(chains) // 2, len(chains) - 1})]
    indices = [index for chain in picked for index in chain[:sample]]
    stored = open_store(output).select(steps=indices)
    with tempfile.TemporaryDirectory() as folder:
        with ResultsStream(Path(folder), scenario) as stream:
            for chain in picked:
                run_chain(scenario, chain[:sample], stream.add)
            stream.writer.close()
            again = ResultsStore(stream.staging).select()
    for name in ("step", "entity", "quantity", "component", "unit"):
        if stored.column(name).to_pylist() != again.column(name).to_pylist():
            raise SystemExit(f"re-solved steps: the store's {name} column differs")
    ours, theirs = (table.column("value").to_numpy(zero_copy_only=False).astype(float) for table in (again, stored))
    if not np.array_equal(np.isnan(ours), np.isnan(theirs)):
        raise SystemExit("re-solved steps: values missing in one and not the other")
    finite = ~np.isnan(ours)
    return float(np.max(np.abs(ours[finite] - theirs[finite]), initial=0.0)), int(len(ours))


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


class Rate(NamedTuple):
    """Steps per wall second and per CPU second."""

    wall: float
    cpu: float

    def share(self, core: Rate) -> str:
        """This rate as a share of the core's, like by like."""
        return f"{self.wall / core.wall:5.1%} of the core's {core.wall:.0f} in wall time, " \
               f"{self.cpu / core.cpu:5.1%} of its {core.cpu:.0f} per CPU s"


def core_rate(threads: int | None, cases) -> Rate:
    """Steps per wall and per CPU second of solve_batch over every step's loaded and reference case."""
    model, starts, free, rows, loads, gravity = cases
    steps = len(starts)
    seconds = cpu = 0.0
    for first in range(0, steps, BATCH):
        chunk = starts[first:first + BATCH]
        n = len(chunk)
        both = np.concatenate([chunk, chunk])
        gravities = np.concatenate([np.broadcast_to(gravity, (n, 3)), np.zeros((n, 3))])
        batch_loads = applied(model, loads, 2 * n)
        for load in batch_loads:  # the reference half carries no load
            load.force[n:], load.torque[n:] = 0.0, 0.0
        started, used = time.perf_counter(), time.process_time()
        result = solve_batch(model, both, free, gravities, batch_loads, rows=rows, threads=threads)
        seconds += time.perf_counter() - started
        cpu += time.process_time() - used
        assert np.all(result.converged), "a core case did not converge"
    return Rate(steps / seconds, steps / cpu)


def solve_and_stream(steps: int, blocks: bool) -> Rate:
    """Steps per wall and per CPU second of solving the stretched scenario's chain and streaming it into a results
    store (and, by the block path, the run's digest), as a one-process run does."""
    from shiftsim.analysis.digest import RunDigest
    from shiftsim.output.partitions import RunOutput
    from shiftsim.output.write import ResultsStream
    from shiftsim.scenario import LocalExecutor, build_scenario, run
    from shiftsim.scenario.chain import run_chain

    scenario = build_scenario(SCENARIO, stretched(steps, 1, plots=False))
    chain, = scenario.sweep.chains()
    with tempfile.TemporaryDirectory() as folder:
        started, used = time.perf_counter(), time.process_time()
        with ResultsStream(Path(folder), scenario) as stream:
            if blocks:
                run(scenario, LocalExecutor(1), keep_steps=False,
                    output=RunOutput(scenario, stream, RunDigest(scenario)))
            else:
                run_chain(scenario, chain, stream.add, blocks=False)
            stream.writer.close()
        return Rate(steps / (time.perf_counter() - started), steps / (time.process_time() - used))


STEP_PATH_STEPS = 3000  # the step path (the old per-step solve, for comparison) is measured up to this many steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[3000, 30_000, 300_000])
    parser.add_argument("--jobs", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--dask", type=int, metavar="WORKERS", help="also run on a local Dask cluster of so many "
                        "worker processes")
    parser.add_argument("--dask-chains", type=int, default=20, help="chains the sweep is cut into for Dask")
    parser.add_argument("--core-sample", type=int, default=3000)
    parser.add_argument("--plots", action="store_true", help="draw the shipped scenario's four plots too")
    parser.add_argument("--stream-steps", type=int, default=30_000,
                        help="solve and stream in this process at most this many steps")
    parser.add_argument("--verify", type=int, default=0, metavar="K",
                        help="re-solve the first K steps of up to three chains of each run and compare with its store")
    parser.add_argument("--threads-here", action="store_true",
                        help="beside each --jobs J > 1, --jobs 1 on the same J chains (one process, the chains "
                             "together on the core's threads)")
    args = parser.parse_args()
    runs = [(f"--jobs {jobs}" + (f" ({jobs} chains in {jobs} processes)" if jobs > 1 else ""), jobs, jobs)
            for jobs in args.jobs]  # (what ran, jobs, chains)
    runs += [(f"--jobs 1 ({jobs} chains in one process, on the core's threads)", 1, jobs)
             for jobs in args.jobs if jobs > 1 and args.threads_here]
    runs += [(f"Dask, {args.dask} workers ({args.dask_chains} chains)", None, args.dask_chains)] if args.dask else []
    peaks: dict[str, list[tuple[int, int]]] = {name: [] for name, _, _ in runs}  # run -> [(steps, peak bytes)]
    cluster = client = None
    if args.dask:
        from dask.distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=args.dask, threads_per_worker=1, processes=True, dashboard_address=None,
                               memory_limit=0)
        client = Client(cluster)
    try:
        for steps in sorted(args.steps):
            started = time.perf_counter()
            cases = core_cases(steps, args.core_sample)
            print(f"{steps} steps: {len(cases[1])} starts assembled in {time.perf_counter() - started:.1f} s "
                  f"(not timed below)", flush=True)
            one, every = core_rate(1, cases), core_rate(None, cases)
            print(f"  core solve_batch (loaded + reference case per step): on 1 thread {one.wall:6.0f} steps/s, "
                  f"{one.cpu:6.0f} per CPU s; on {os.cpu_count()} {every.wall:6.0f} steps/s, {every.cpu:6.0f} per CPU s",
                  flush=True)
            if steps <= args.stream_steps:
                for blocks in (True, False) if steps <= STEP_PATH_STEPS else (True,):
                    rate = solve_and_stream(steps, blocks)
                    print(f"  solve and stream, {'block' if blocks else 'step'} path: {rate.wall:6.0f} steps/s, "
                          f"{rate.cpu:6.0f} per CPU s ({rate.share(one)} on 1 thread)", flush=True)
            for name, jobs, chains in runs:
                estimate = extrapolated_peak(peaks[name], steps)
                if estimate > 0.5 * available_memory():
                    print(f"  shiftsim run {name}: skipped, its peak memory would be about {estimate / 1e9:.1f} GB "
                          f"(extrapolated) and {available_memory() / 1e9:.1f} GB are available", flush=True)
                    continue
                run = end_to_end(steps, jobs or 1, args.plots, client if jobs is None else None, chains, args.verify)
                peaks[name].append((steps, run.peak))
                core = one if chains == 1 else every
                load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
                checked = "" if run.difference is None else \
                    f"; {run.compared} re-solved values, largest difference {run.difference:.3g}"
                rate = Rate(steps / run.seconds, steps / run.cpu)
                print(f"  shiftsim run {name}: {run.seconds:7.1f} s, {run.cpu:7.1f} CPU s: {rate.wall:6.0f} steps/s, "
                      f"{rate.cpu:6.0f} per CPU s ({rate.share(core)}), peak memory {run.peak / 1e9:.2f} GB, "
                      f"{run.written / 1e6:.0f} MB written (store {run.store / 1e6:.0f} MB){checked}; "
                      f"load average {load}", flush=True)
                if run.difference:
                    raise SystemExit(f"re-solved steps differ from the store by {run.difference:.3g}")
    finally:
        if client is not None:
            client.close()
            cluster.close()


if __name__ == "__main__":
    main()
