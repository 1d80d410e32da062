"""Result files of a run: results.json, the tidy CSV, and writing them safely.

Safety rules:

* the output folder is checked before anything is solved: an existing,
  non-empty folder is refused unless ``force``; with ``force`` only
  shiftsim's own output files (:data:`OUTPUT_FILES`) in it are replaced or
  removed, anything else is left alone; an output file that is an input file
  (scenario or model) is refused always;
* every file is written to a temporary file in the output folder and renamed
  into place (``os.replace``) only once *all* files are complete, so a failure
  leaves no partial file behind (a folder created for the run and left empty is
  removed again).
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable

from .. import __version__
from ..errors import InputError, Problem, ShiftsimError
from .runner import StepResult
from .spec import ALL_PLOTS, Scenario

RESULTS_JSON = "results.json"
RESULTS_CSV = "results.csv"
OUTPUT_FILES = (RESULTS_JSON, RESULTS_CSV, *(f"{plot}.png" for plot in ALL_PLOTS))
CSV_COLUMNS_BEFORE = ("step",)
CSV_COLUMNS_AFTER = ("entity", "quantity", "component", "value")
WRENCH_COMPONENTS = ("fx", "fy", "fz", "mx", "my", "mz")
AXES = "xyz"
POSE_COMPONENTS = ("x", "y", "z", "roll", "pitch", "yaw")
ACTUATOR_QUANTITIES = {"actuator_length": "lengths", "actuator_raw": "raw", "actuator_in_range": "in_range",
                       "actuator_force": "forces"}


class OutputError(ShiftsimError):
    """The results could not be written (exit code 1)."""

    exit_code = 1


def default_folder(scenario: Scenario) -> Path:
    return Path("plots") / scenario.name


def check_folder(folder: Path, force: bool, inputs: Iterable[Path]) -> None:
    """Refuse an output folder that would overwrite results without ``force``, or any input file."""
    if folder.exists() and not folder.is_dir():
        raise InputError([Problem("output folder", str(folder), "exists and is not a folder", "a folder path")])
    targets = {(folder / name).resolve(): name for name in OUTPUT_FILES}
    clashes = [p for p in inputs if p.resolve() in targets]
    if clashes:
        raise InputError([Problem("output folder", str(folder),
                                  f"writing {targets[p.resolve()]} would overwrite input file {p}",
                                  "an output folder that holds no input file named like an output")
                          for p in clashes])
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise InputError([Problem("output folder", str(folder), "exists and is not empty",
                                  "a new or empty folder, or --force to replace shiftsim's result files in it")])


def results_document(scenario: Scenario, steps: list[StepResult]) -> dict[str, Any]:
    """The results.json object (see ``shiftsim/schemas/results.schema.json``)."""
    return {"scenario": scenario.name, "shiftsim_version": __version__, "parameters": scenario.sweep.names,
            "steps": [step.as_dict() for step in steps]}


def _joint_components(quantity: str, value: Any) -> list[tuple[str, Any]]:
    if quantity.startswith("wrench"):
        return list(zip(WRENCH_COMPONENTS, value))
    return [(str(i), v) for i, v in enumerate(value)] if isinstance(value, list) else [("", value)]


def _pose_components(quantity: str, value: Any) -> list[tuple[str, Any]]:
    if quantity == "rotation":
        return [(AXES[i] + AXES[j], value[i][j]) for i in range(3) for j in range(3)]
    return list(zip(AXES, value))


def tidy_rows(scenario: Scenario, steps: list[StepResult]) -> Iterable[list[Any]]:
    """CSV rows ``step, parameter values…, entity, quantity, component, value``; header first.

    Solver figures use entity ``solver`` (``converged`` and ``stable`` as 1/0,
    an empty ``residual`` when the step never reached a solve). Joint
    positions/deflections/efforts of multi-coordinate joints have components
    ``0, 1, …`` (the joint's coordinates in order); frame and body vectors ``x, y, z``;
    wrenches ``fx … mz``; body rotations ``xx, xy, …`` (row, column). An Mdx platform adds, per
    actuator joint, ``actuator_length`` (m), ``actuator_raw``, ``actuator_in_range`` (1/0) and
    ``actuator_force`` (N), and for the machine its ``platform_pose`` (``x, y, z`` mm, ``roll, pitch,
    yaw`` deg). Collisions add, per machine pair ``a|b``, ``distance`` (m) and ``in_collision`` (1/0).
    """
    yield [*CSV_COLUMNS_BEFORE, *scenario.sweep.names, *CSV_COLUMNS_AFTER]
    for step in steps:
        lead = [step.index, *(step.parameters[name] for name in scenario.sweep.names)]
        solver = {"converged": int(step.converged), "stable": int(step.stable), "iterations": step.iterations,
                  "residual": "" if step.residual is None else step.residual}
        for quantity, value in solver.items():
            yield [*lead, "solver", quantity, "", value]
        for name, joint in step.joints.items():
            for quantity in ("position", "deflection", "effort", "wrench_joint", "wrench_world"):
                for component, number in _joint_components(quantity, joint[quantity]):
                    yield [*lead, name, quantity, component, number]
        for group in (step.frames, step.bodies):
            for name, item in group.items():
                for quantity, value in item.items():
                    for component, number in _pose_components(quantity, value):
                        yield [*lead, name, quantity, component, number]
        for machine_id, record in step.actuators.items():
            machine = scenario.machine(machine_id)
            for component, number in zip(POSE_COMPONENTS, record["pose"]):
                yield [*lead, machine_id, "platform_pose", component, number]
            for k, leg in enumerate(machine.vocabulary.legs):
                for quantity, key in ACTUATOR_QUANTITIES.items():
                    yield [*lead, machine.name(leg), quantity, "", _number(record[key][k])]
        for pair in step.collisions or []:
            for quantity in ("distance", "in_collision"):
                yield [*lead, f"{pair['a']}|{pair['b']}", quantity, "", _number(pair[quantity])]


def _number(value: Any) -> Any:
    """Booleans as 1/0 (as the solver flags), numbers as they are."""
    return int(value) if isinstance(value, bool) else value


def csv_bytes(scenario: Scenario, steps: list[StepResult]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerows(tidy_rows(scenario, steps))
    return buffer.getvalue().encode("utf-8")


def write_files(folder: Path, files: dict[str, bytes]) -> None:
    """Write every file of ``files`` into ``folder`` atomically as a set (see the module docstring).

    shiftsim's own output files not in ``files`` are removed afterwards (stale results of an earlier run).
    """
    created = not folder.exists()
    staged: list[tuple[Path, Path]] = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
            staged.append((Path(temporary), folder / name))
            if hasattr(os, "fchmod"):  # POSIX: the mode a plain open() would give
                os.fchmod(handle, 0o666 & ~_umask())
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
        for temporary, target in staged:
            os.replace(temporary, target)
        for name in OUTPUT_FILES:
            if name not in files:
                (folder / name).unlink(missing_ok=True)
    except OSError as error:
        _discard(staged, folder, created)
        raise OutputError(f"cannot write the results in {folder}: {error.strerror or error}") from None
    except BaseException:
        _discard(staged, folder, created)
        raise


def _umask() -> int:
    """The process's file-creation mask (temporary files are created 0600; results get the usual mode)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _discard(staged: list[tuple[Path, Path]], folder: Path, created: bool) -> None:
    for temporary, _ in staged:
        temporary.unlink(missing_ok=True)
    if created and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
