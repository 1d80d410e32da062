"""``shiftsim run SCENARIO``: solve a scenario's sweep and write results.json, a tidy CSV and plots."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TextIO

from ..errors import InputError, Problem
from ..scenario import DaskExecutor, LocalExecutor, check_folder, default_folder, execute, load_scenario, write_results
from ..scenario.digest import step_text, summary_lines
from ..scenario.runner import StepResult


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "run", help="run a scenario: sweep, results.json, CSV and plots",
        description="Run a scenario file headless. Exit 0 all steps converged, 1 some failed (results still written), "
                    "2 bad scenario, model or option.")
    parser.add_argument("scenario", help="scenario file (.json), see docs/scenarios.md")
    parser.add_argument("-o", "--output", metavar="DIR", help="output folder (default plots/<scenario name>/)")
    parser.add_argument("--jobs", type=_positive, default=1, metavar="N",
                        help="local processes solving continuation chains in parallel (results do not depend on N)")
    parser.add_argument("--executor", choices=("local", "dask"), default="local",
                        help="local processes, or a Dask cluster (needs --scheduler; install shiftsim[cluster])")
    parser.add_argument("--scheduler", metavar="ADDR", help="Dask scheduler address, e.g. tcp://10.0.0.5:8786")
    parser.add_argument("--force", action="store_true",
                        help="replace shiftsim's result files in a non-empty output folder (other files are kept)")
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument("-v", "--verbose", action="store_true", help="one line per step on stderr")
    verbosity.add_argument("-q", "--quiet", action="store_true", help="no progress, warnings or summary")
    parser.set_defaults(func=run)


class _ProgressBar:
    """A one-line progress bar redrawn in place on a terminal."""

    width = 32

    def __init__(self, total: int, stream: TextIO):
        self.total, self.stream, self.done, self.failed = total, stream, 0, 0
        self._draw()

    def update(self, step: StepResult) -> None:
        self.done += 1
        self.failed += not step.converged
        self._draw()

    def _draw(self) -> None:
        filled = self.width * self.done // max(self.total, 1)
        failed = f", {self.failed} failed" if self.failed else ""
        self.stream.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} steps{failed}")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


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
    scenario = load_scenario(args.scenario)
    executor, how = _executor(args)
    folder = Path(args.output) if args.output else default_folder(scenario)
    check_folder(folder, args.force, scenario.input_files)
    if not args.quiet:
        for warning in scenario.warnings:
            print(f"warning: {warning}", file=sys.stderr)

    total = len(scenario.sweep.table())
    bar = _ProgressBar(total, sys.stderr) if sys.stderr.isatty() and not (args.quiet or args.verbose) else None

    def on_step(step: StepResult) -> None:
        if bar is not None:
            bar.update(step)
        if args.verbose:
            residual = "-" if step.residual is None else f"{step.residual:.3g}"
            print(f"{step_text(scenario, step)}: {step.status}, {step.iterations} iterations, residual {residual}",
                  file=sys.stderr)

    started = time.perf_counter()
    try:
        steps = execute(scenario, executor, on_step,
                        on_warning=None if args.quiet else lambda w: print(f"warning: {w}", file=sys.stderr))
    finally:
        if bar is not None:
            bar.close()
    elapsed = time.perf_counter() - started
    files = write_results(scenario, steps, folder)
    if not args.quiet:
        for line in summary_lines(scenario, steps, f"{folder}/", files, f"{how}, {elapsed:.1f} s"):
            print(line)
    return 0 if all(step.converged for step in steps) else 1
