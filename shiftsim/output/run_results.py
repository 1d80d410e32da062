"""Running a scenario or reading a results folder from Python: :func:`run_scenario` and :func:`load_results`,
both returning a :class:`~shiftsim.output.results.RunResults` (numpy arrays by step; see :mod:`shiftsim.output.results`).

>>> results = shiftsim.run_scenario("scenarios/excavator_lift.json", jobs=2)
>>> results["ex1:arm:boom_cyl", "effort"]          # (n_steps,) N, one value per step
>>> shiftsim.load_results("plots/excavator_lift")  # the same object from a results folder

This module runs scenarios and writes their folders (:mod:`shiftsim.output.write`), so it sits above the writers;
:class:`RunResults` sits below them, so that the report and the plots read a run through it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from ..errors import InputError, Problem, Problems
from .results import RunResults, StepTable
from .store import ResultsStore

def run_scenario(scenario: str | Path | dict[str, Any], jobs: int = 1, output: str | Path | None = None,
                 force: bool = False) -> RunResults:
    """Run a scenario (a file path, or a parsed document whose model paths are relative to the
    current folder) on ``jobs`` local processes and return its results.

    ``output``: also write the results folder there (as ``shiftsim run -o``; ``force`` replaces
    shiftsim's files in a non-empty folder). Scenario warnings are issued as
    :class:`~shiftsim.errors.ShiftsimWarning`. Bad input raises
    :class:`~shiftsim.errors.ScenarioError`; failed steps do not raise (see ``steps.status``).
    BLAS is held to one thread while the run works (:func:`shiftsim.threads.single_blas_thread`).

    Parameters
    ----------
    scenario : str, Path or dict
        A scenario file, or its parsed content.
    jobs : int, optional
        Local processes solving steps in parallel.
    output : str or Path, optional
        Also write the results folder there; the results returned are then read from it lazily, as
        :func:`load_results` reads them (the run holds no step it does not need for results.json, and with ``jobs``
        above 1 each process writes the steps it solves into the folder's store itself). Without ``output`` the
        steps are streamed into a store in a temporary folder in the same way, which is then read into memory and
        removed: the results hold the document results.json would (every step up to
        :data:`~shiftsim.output.writers.JSON_STEP_LIMIT` steps) and every value.
    force : bool, optional
        Replace shiftsim's files in a non-empty ``output``.

    Returns
    -------
    RunResults
        Every reported quantity as numpy arrays, the step table, and the results document; print it for a summary.

    Raises
    ------
    ScenarioError
        The scenario or a model it names is not valid (file, place, what, expected).
    InputError
        ``jobs`` is not a positive whole number, or ``output`` cannot be used.

    Examples
    --------
    >>> results = shiftsim.run_scenario("scenarios/four_bar_drive.json")
    >>> len(results.steps), results.parameters
    (25, ['fb:four_bar:crank_pin'])
    """
    import warnings

    from ..errors import ShiftsimWarning
    from ..plots.registry import chosen_plots
    from ..analysis.digest import RunDigest
    from ..scenario import LocalExecutor, build_scenario, load_scenario, run
    from ..threads import single_blas_thread
    from .partitions import RunOutput
    from .write import ResultsStream, finish_stream, write_results
    from .writers import check_folder, keeps_steps, results_document

    if not isinstance(jobs, int) or jobs < 1:
        raise InputError([Problem("run_scenario", "jobs", f"{jobs!r} is not a positive whole number",
                                  "1 or more processes")])
    with single_blas_thread():
        with warnings.catch_warnings():  # the readers' warnings come back grouped in built.warnings, issued below
            warnings.simplefilter("ignore", ShiftsimWarning)
            if isinstance(scenario, dict):
                built = build_scenario(Path("<scenario>"), scenario)
            else:
                built = load_scenario(scenario)
        chosen_plots(built)  # a plot that does not apply is a scenario error, before solving
        if output is not None:
            check_folder(Path(output), force, built.input_files)

        def warn(message: str) -> None:
            warnings.warn(message, ShiftsimWarning, stacklevel=3)

        for message in built.warnings:
            warn(message)

        def solved(stream: ResultsStream) -> tuple[Any, RunDigest]:
            """The run, its steps streamed into ``stream`` (as they are solved) and reduced into its digest."""
            digest = RunDigest(built)
            return run(built, LocalExecutor(jobs), on_warning=warn, keep_steps=keeps_steps(built.sweep.size),
                       output=RunOutput(built, stream, digest)), digest

        if output is not None:
            with ResultsStream(Path(output), built) as stream:
                ran, digest = solved(stream)
                write_results(ran, Path(output), stream=stream, digest=digest)
            return load_results(output)
        with tempfile.TemporaryDirectory(prefix="shiftsim-run-") as scratch, \
                ResultsStream(Path(scratch), built) as stream:
            ran, digest = solved(stream)
            finish_stream(ran, stream, digest)
            store = ResultsStore(stream.staging).held()
    with_steps = keeps_steps(ran.solved) and len(ran.steps) == ran.solved
    document = results_document(built, ran.steps, ran.planned,
                                ran.interrupted.name if ran.interrupted else None, ran.capacity, ran.sensitivity,
                                with_steps=with_steps, digest=digest)
    return RunResults.open(document, store)


def load_results(folder: str | Path) -> RunResults:
    """The results of a run from its folder, as :func:`run_scenario` returns them: results.json read, the
    columnar store beside it opened lazily (values are read when asked for, ``results[entity, quantity]``).

    Parameters
    ----------
    folder : str or Path
        A results folder written by ``shiftsim run`` (or :func:`run_scenario` with ``output``), or its results.json.

    Returns
    -------
    RunResults
        Equal to what :func:`run_scenario` returned for that run.

    Raises
    ------
    InputError
        The file is missing, not JSON, or not a results document (the schema's complaint, with its place; the
        per-step sections are checked by their first step, the values being read from the store), or the store
        beside it cannot be read.

    Examples
    --------
    >>> results = shiftsim.run_scenario("scenarios/four_bar_drive.json", output=tmp / "run")
    >>> shiftsim.load_results(tmp / "run").steps.status.tolist() == results.steps.status.tolist()
    True
    """
    from ..jsonio import read_json

    path = Path(folder)
    path = path / "results.json" if path.is_dir() else path
    document, _ = read_json(path, InputError)
    stored = (path.parent / "values").is_dir() or "steps" not in document
    check_document(document, path, whole=not stored)
    if not stored:
        return RunResults.from_document(document)  # written before the streamed store: its steps are in results.json
    return RunResults.open(document, ResultsStore(path.parent))


PER_STEP_SECTIONS = ("steps", "scene")
"""results.json's sections holding one item per step (``steps``, ``scene.steps``): what a run's store holds too."""


def check_document(document: Any, path: Path, whole: bool = True) -> None:
    """Raise an InputError naming ``path`` and the place of every way ``document`` is not a results document (the
    results schema). ``whole=False`` checks the document with its per-step arrays (:data:`PER_STEP_SECTIONS`) cut to
    their first item: everything a results folder with a store is read for (its per-step values are read from the
    store), at a cost that does not grow with the steps."""
    from ..scenario.schema import validate

    problems = Problems(str(path), InputError)
    validate(document if whole else _outline(document), problems, "results")
    problems.raise_if_any()


def _outline(document: Any) -> Any:
    """``document`` with its per-step arrays cut to their first item (a shallow copy; the document is not changed)."""
    if not isinstance(document, dict):
        return document
    outline = dict(document)
    if isinstance(outline.get("steps"), list):
        outline["steps"] = outline["steps"][:1]
    scene = outline.get("scene")
    if isinstance(scene, dict) and isinstance(scene.get("steps"), list):
        outline["scene"] = {**scene, "steps": scene["steps"][:1]}
    return outline


__all__ = ["RunResults", "StepTable", "check_document", "load_results", "run_scenario"]
