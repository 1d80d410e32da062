"""``shiftsim plot RESULTS_FOLDER [--only NAME ...] [-o OUT] [--dpi N]``: draw a results folder's plots again.

The plots are drawn from the folder's results (:func:`shiftsim.load_results`), as ``shiftsim run`` drew them (and,
without ``--only``, capacity.png and sensitivity.png from results.json's ``capacity`` and ``sensitivity``); the
machines (what the pose and footprint plots draw) are built again from the inputs results.json's ``metadata``
records: the scenario as it was read, and every input file, which must still be where it was with the same
SHA-256 (a file changed or gone is refused, naming it). Nothing is solved. Every plot is drawn before any file is
written; each PNG is then written whole (a temporary file renamed into place). Exit codes: 0 written, 2 bad input
(not a results folder, no metadata, an input changed or gone, an unknown plot name or one that does not apply,
a bad --dpi), 1 a file could not be written.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

from ..errors import InputError, Problem, ScenarioError, suggest

HELP = "draw a results folder's plots again (from its results and the inputs it records)"
DPI_RANGE = (20, 600)  # as the scenario schema's outputs.dpi


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "plot", help=HELP,
        description="Draw the plots of a results folder written by shiftsim run again, from its results; the "
                    "machines are rebuilt from the inputs results.json records (each must be unchanged: same "
                    "SHA-256). Nothing is solved. Exit 0 written, 2 bad input (folder, changed input, plot name, "
                    "--dpi), 1 a file could not be written.")
    parser.add_argument("folder", help="a results folder (or its results.json) written by shiftsim run")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="draw only these plots (default: the ones the "
                                                                  "scenario asks for)")
    parser.add_argument("-o", "--output", metavar="DIR", help="where the PNGs go (default: the results folder)")
    parser.add_argument("--dpi", type=int, metavar="N", help=f"resolution, {DPI_RANGE[0]} to {DPI_RANGE[1]} "
                                                              "(default: the scenario's outputs.dpi)")
    parser.set_defaults(func=run)


def changed_inputs(metadata: dict[str, Any]) -> list[Problem]:
    """A problem per recorded input file that is gone or whose bytes changed since the run (SHA-256)."""
    from ..output.provenance import file_digest

    problems = []
    for entry in metadata.get("inputs", []):
        path, recorded = Path(entry["path"]), entry.get("sha256")
        if recorded is None:  # a scenario given as a document: results.json's scenario_document is its record
            continue
        if not path.is_file():
            problems.append(Problem(str(path), "", "is gone (the run read it)", "the input file the run read"))
        elif file_digest(path) != recorded:
            problems.append(Problem(str(path), "", f"changed since the run (SHA-256 {file_digest(path)[:12]}..., "
                                                   f"recorded {recorded[:12]}...)", "the file as the run read it"))
    return problems


def rebuilt_scenario(results_file: Path, metadata: dict[str, Any] | None):
    """The scenario of a run, built again from results.json's ``metadata`` (the scenario as read, model paths from
    the recorded scenario file's folder); InputError when it is missing or an input changed or is gone."""
    from ..scenario import build_scenario

    if not metadata or "scenario_document" not in metadata or not metadata.get("inputs"):
        raise InputError([Problem(str(results_file), "metadata", "records no inputs (written by an older shiftsim)",
                                  "results.json with metadata.inputs and metadata.scenario_document; run the "
                                  "scenario again")])
    problems = changed_inputs(metadata)
    if problems:
        raise InputError(problems)
    try:
        return build_scenario(Path(metadata["inputs"][0]["path"]), metadata["scenario_document"])
    except ScenarioError as error:
        raise InputError([Problem(str(results_file), "metadata.scenario_document",
                                  f"cannot be built again: {error}", "the scenario as the run read it")]) from None


def _names(only: list[str] | None, scenario) -> tuple[str, ...] | None:
    """The plots ``--only`` names, checked: known and applying to the scenario."""
    from ..plots.registry import PLOTS

    if only is None:
        return None
    problems = []
    for name in only:
        if name not in PLOTS:
            problems.append(Problem("--only", name, f"is not a plot: {suggest(name, PLOTS)}",
                                    f"one of {', '.join(PLOTS)}"))
        elif PLOTS[name].applies(scenario) is not None:
            problems.append(Problem("--only", name, f"cannot be drawn: {PLOTS[name].applies(scenario)}",
                                    "plots that apply to the scenario"))
    if problems:
        raise InputError(problems)
    return tuple(dict.fromkeys(only))


def _write(folder: Path, files: dict[str, bytes]) -> None:
    """Each file written whole: a temporary file in ``folder`` renamed onto its name."""
    from ..output.writers import OutputError

    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
            try:
                with os.fdopen(handle, "wb") as stream:
                    stream.write(data)
                os.replace(temporary, folder / name)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
    except OSError as error:
        raise OutputError(f"cannot write the plots in {folder}: {error.strerror or error}") from None


def run(args: argparse.Namespace) -> int:
    from ..output.run_results import load_results
    from ..plots.registry import analysis_charts, chosen_plots, render

    source = Path(args.folder)
    if not source.exists():
        raise InputError([Problem(str(source), "", "no such file or folder", "a results folder written by shiftsim "
                                                                             "run (with results.json)")])
    if args.dpi is not None and not DPI_RANGE[0] <= args.dpi <= DPI_RANGE[1]:
        raise InputError([Problem("--dpi", str(args.dpi), "is out of range",
                                  f"a whole number from {DPI_RANGE[0]} to {DPI_RANGE[1]}")])
    results = load_results(source)
    results_file = source / "results.json" if source.is_dir() else source
    scenario = rebuilt_scenario(results_file, results.document.get("metadata"))
    names = _names(args.only, scenario)
    try:
        names = chosen_plots(scenario) if names is None else names
    except ScenarioError as error:
        raise InputError([Problem(str(results_file), "metadata.scenario_document", str(error),
                                  "plots that apply to the scenario")]) from None
    files, skipped = render(scenario, results, args.dpi, names)
    if args.only is None:  # the analyses' charts, from results.json's summary
        files.update(analysis_charts(results.document, scenario.outputs.dpi if args.dpi is None else args.dpi))
    folder = Path(args.output) if args.output else results_file.parent
    _write(folder, files)
    print(f"{results.scenario}: {len(files)} plot{'s' if len(files) != 1 else ''} in {folder}/: "
          f"{', '.join(files) or 'none'}")
    for name, reason in skipped.items():
        print(f"  not plotted     {name}: {reason}")
    return 0
