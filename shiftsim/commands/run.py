"""``shiftsim run SCENARIO``: solve a scenario's sweep and write results.json, a tidy CSV and plots."""

from __future__ import annotations

import argparse
import ctypes
import sys
import time
from pathlib import Path

from ..analysis.digest import RunDigest, summary_lines
from ..errors import InputError, Problem
from ..interrupts import Interrupted, signals_raise
from ..output.partitions import RunOutput
from ..output.write import ResultsStream, write_results
from ..output.writers import CSV_STEP_LIMIT, check_folder, default_folder, keeps_steps
from ..plots.registry import chosen_plots
from ..progress import progress
from ..scenario import DaskExecutor, LocalExecutor, load_scenario, run as run_scenario
from ..scenario.run import check_fits
from ._common import scenario_parser


# glibc's malloc settings (malloc.h) for a sweep's arrays: a block's arrays (a few MB each, freed when the next block
# comes) are taken from the heap and the heap keeps what they free, instead of each array being mapped afresh or the
# heap's freed top going back to the system at once, when every page of the next block's arrays is faulted in again:
# 3.6 page faults a step, about 7 us of the main thread's 26 on the 30,000-step excavator lift, and more on the core's
# thread. At most 128 MB of freed heap stays with the process until it ends (its peak use is not raised).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
HEAP_KEPT = 128 << 20  # bytes of freed heap top kept (glibc's default: 128 kB, rising with the arrays freed)
HEAP_ARRAYS_UP_TO = 32 << 20  # bytes: arrays up to this size come from the heap (glibc's largest setting on 64 bits)


def keep_freed_heap() -> bool:
    """Set glibc's malloc for a sweep (see above); False where the C library is not glibc (nothing is changed)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):  # musl and others: their own allocators
            return False
        return bool(libc.mallopt(M_MMAP_THRESHOLD, HEAP_ARRAYS_UP_TO) and libc.mallopt(M_TRIM_THRESHOLD, HEAP_KEPT))
    except (OSError, AttributeError):
        return False


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def add_parser(subparsers) -> None:
    parser = scenario_parser(
        subparsers, "run", run,
        help="run a scenario: sweep, results.json, CSV and plots",
        description="Run a scenario file headless. Progress on stderr: a bar on a terminal, else a line every few "
                    "seconds. Ctrl-C or SIGTERM writes the steps solved so far (marked partial) and exits 130 / 143. "
                    "Exit 0 all steps converged, 1 some failed or a capacity point is invalid (results still written; "
                    "analysis.capacity.expected_invalid lists documented ones) or the results could not be "
                    "written, 2 bad scenario, model, option or output folder (checked before solving).",
        scenario_help="scenario file (.json), see docs/scenarios.md")
    parser.add_argument("-o", "--output", metavar="DIR", help="output folder (default plots/<scenario name>/)")
    parser.add_argument("--jobs", type=_positive, default=1, metavar="N",
                        help="local processes solving continuation chains in parallel (results do not depend on N)")
    parser.add_argument("--executor", choices=("local", "dask"), default="local",
                        help="local processes, or a Dask cluster (needs --scheduler; install shiftsim[cluster])")
    parser.add_argument("--scheduler", metavar="ADDR", help="Dask scheduler address, e.g. tcp://10.0.0.5:8786")
    parser.add_argument("--csv", action=argparse.BooleanOptionalAction, default=None,
                        help="write results.csv and steps.csv (--no-csv: not); default as the scenario's outputs.csv, "
                             f"else only for runs of up to {CSV_STEP_LIMIT} steps (the Parquet tables are always written)")
    parser.add_argument("--force", action="store_true",
                        help="replace shiftsim's result files in a non-empty output folder (other files are kept)")
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument("-v", "--verbose", action="store_true", help="one line per step on stderr (instead of the progress bar)")
    verbosity.add_argument("-q", "--quiet", action="store_true", help="no progress, warnings or summary")


def _executor(args: argparse.Namespace) -> tuple[LocalExecutor | DaskExecutor, str]:
    """The executor the options ask for, and how to describe it in the summary."""
    if args.executor == "dask":
        if not args.scheduler:
            raise InputError([Problem("--executor", "dask", "no scheduler address given", "--scheduler ADDRESS")])
        if args.jobs != 1:
            raise InputError([Problem("--jobs", str(args.jobs), "--jobs sets local processes; the Dask cluster "
                                      "decides its own parallelism", "no --jobs with --executor dask")])
        return DaskExecutor(args.scheduler), f"Dask scheduler {args.scheduler}"
    if args.scheduler:
        raise InputError([Problem("--scheduler", args.scheduler, "a scheduler is only used by the Dask executor",
                                  "--executor dask --scheduler ADDRESS")])
    return LocalExecutor(args.jobs), f"{args.jobs} process" + ("es" if args.jobs > 1 else "")


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    keep_freed_heap()  # this process's (and its local workers') allocator, for the sweep's arrays
    with signals_raise():
        try:
            return _run(args, started)
        except Interrupted as stop:  # before any step was solved, or while writing
            print(f"shiftsim run: stopped by {stop.name}; no results written", file=sys.stderr)
            return stop.exit_code


def _unexpected_invalid(capacity: dict | None) -> list[int]:
    """:func:`~shiftsim.scenario.capacity_analysis.unexpected_invalid` of a run's capacity document (its module imported
    only for a run that has one)."""
    if capacity is None:
        return []
    from ..scenario.capacity_analysis import unexpected_invalid

    return unexpected_invalid(capacity)


def _run(args: argparse.Namespace, started: float) -> int:
    """The run; SIGINT/SIGTERM (``Interrupted``) while solving writes the steps solved so far."""
    executor, how = _executor(args)  # options first: a bad --scheduler is refused before any work
    scenario = load_scenario(args.scenario)
    chosen_plots(scenario)  # a plot that does not apply is a scenario error, before solving
    check_fits(scenario, executor)
    folder = Path(args.output) if args.output else default_folder(scenario)
    check_folder(folder, args.force, scenario.input_files)
    warn = None if args.quiet else (lambda warning: print(f"warning: {warning}", file=sys.stderr))
    for warning in scenario.warnings if warn else ():
        warn(warning)

    total = scenario.sweep.size
    bar = progress(total, sys.stderr) if not (args.quiet or args.verbose) else None

    stream = ResultsStream(folder, scenario)  # the steps go to the store in the output folder as they are solved
    digest = RunDigest(scenario)  # and are reduced for the summary and report: the run does not hold them
    output = RunOutput(scenario, stream, digest, echo=args.verbose)  # where they are solved (workers write their own)

    def on_progress(solved: int, failed: int) -> None:
        for k in range(solved):
            bar.update(failed=k < failed)

    solving = time.perf_counter()
    try:
        ran = run_scenario(scenario, executor, on_warning=warn, keep_steps=keeps_steps(total), output=output,
                           progress=None if bar is None else on_progress)
    except BaseException:
        stream.discard()
        raise
    finally:
        if bar is not None:
            bar.close()
    solve_time = time.perf_counter() - solving
    stop = ran.interrupted
    if stop is not None and not ran.solved:
        stream.discard()
        print(f"shiftsim run: stopped by {stop.name} before any step was solved; no results written", file=sys.stderr)
        return stop.exit_code
    try:
        files, skipped = write_results(ran, folder, args.csv, stream, digest)
    except Interrupted as caught:
        print(f"shiftsim run: stopped by {caught.name} while writing; {folder}/ holds a complete set of results, "
              "the earlier one if the new one was not yet in place", file=sys.stderr)
        return caught.exit_code
    wall = time.perf_counter() - started
    if not args.quiet:
        how = f"{how}, {wall:.1f} s wall, {solve_time:.1f} s solving"
        for line in summary_lines(ran, f"{folder}/", files, how, skipped, digest):
            print(line)
    if stop is not None:
        print(f"shiftsim run: stopped by {stop.name} after {ran.solved} of {total} steps; "
              f"partial results (marked \"partial\" in results.json) in {folder}/", file=sys.stderr)
        if not args.quiet:
            print(f"  PARTIAL: stopped by {stop.name} after {ran.solved} of {total} steps")
        return stop.exit_code
    invalid = _unexpected_invalid(ran.capacity)  # a capacity point that failed its checks is no rating
    if invalid and not args.quiet:
        print("  INVALID capacity " + ("analysis: " + ran.capacity["error"] if invalid == [-1] else
                                       f"at step(s) {', '.join(map(str, invalid))} (not in analysis.capacity."
                                       "expected_invalid): see capacity.csv"))
    return 0 if not ran.failed and not invalid else 1
