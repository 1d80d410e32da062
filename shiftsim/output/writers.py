"""Result files of a run: results.json, the tidy tables, and writing them safely as one set.

Files (see docs/scenarios.md "Outputs"):

* ``results.json`` (``shiftsim/schemas/results.schema.json``): the summary and metadata, and every step for runs of up
  to :data:`JSON_STEP_LIMIT` steps, SI units (angles in rad);
* ``results.csv``: tidy, one number per row, the same header for every scenario:
  ``step, entity, quantity, component, value, unit`` (:func:`tidy_rows`);
* ``steps.csv``: one row per step: ``step``, one column per swept parameter, ``status``,
  ``iterations``, ``stability`` (:func:`step_rows`);
* ``capacity.csv``: one row per lift point of a scenario's capacity analysis (:func:`capacity_rows`).

Both tables are built from the results document alone (so a results folder read
back gives the same tables, see :mod:`shiftsim.output.run_results`). A scenario with
``"angle_unit": "deg"`` gets joint angles and swept angles in degrees in both
tables (the ``unit`` column and the steps.csv header say so); results.json stays in radians.

Safety rules:

* the output folder is checked before anything is solved (:func:`check_folder`):
  it must be creatable and writable (exit 2 otherwise); an existing, non-empty
  folder is refused unless ``force``; with ``force`` only shiftsim's own output
  files (:func:`output_files`) in it are replaced or removed, anything else is
  left alone; an output file that is an input file (scenario or model) is refused always;
* the whole set is first written into a staging folder ``DIR/.staging-PID-XXXX/`` (the columnar
  store's part folders :data:`OUTPUT_FOLDERS` while the run solves, the other files after it)
  and only then swapped in, file by file and folder by folder, with SIGINT/SIGTERM held back during
  the swap, so a stopped or failed run never leaves a mixed set: a failure or a
  signal while writing leaves the old set untouched; a staging folder left by a
  killed run (its process gone) is removed by the next write into the folder.
  (The swap is one rename per file: only SIGKILL landing within those renames,
  or a reader listing the folder during them, can meet parts of both sets.)
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np

from ..analysis.digest import RunDigest
from ..errors import InputError, Problem, ShiftsimError
from ..interrupts import signals_deferred
from ..model import PRISMATIC
from ..scenario.definition import Scenario, angle_factor, angle_unit_of
from ..scenario.runner import StepResult

RESULTS_JSON = "results.json"
RESULTS_CSV = "results.csv"
STEPS_CSV = "steps.csv"
REPORT_HTML = "report.html"
CAPACITY_CSV, CAPACITY_PNG = "capacity.csv", "capacity.png"  # a scenario's analysis.capacity (docs/ground.md)
SENSITIVITY_CSV, SENSITIVITY_PNG = "sensitivity.csv", "sensitivity.png"  # analysis.sensitivity (docs/sensitivity.md)
STEPS_PARQUET, VALUES_PARQUET = "steps.parquet", "values.parquet"  # the store as single files (earlier versions)


def output_files() -> tuple[str, ...]:
    """Every file name shiftsim writes into a results folder (the plots' from the plot registry, imported here only:
    it brings matplotlib)."""
    from ..plots.registry import PLOTS

    return (RESULTS_JSON, RESULTS_CSV, STEPS_CSV, REPORT_HTML, *(f"{plot}.png" for plot in PLOTS), CAPACITY_CSV,
            CAPACITY_PNG, SENSITIVITY_CSV, SENSITIVITY_PNG, STEPS_PARQUET, VALUES_PARQUET)


OUTPUT_FOLDERS = ("steps", "values")  # the columnar store's part folders (output/store.py), streamed while solving
STAGING_PREFIX = ".staging-"
PAUSE_ENV = "SHIFTSIM_TEST_WRITE_PAUSE"  # test hook: seconds to pause after the first staged file
CSV_STEP_LIMIT = 1_000  # steps up to which results.csv and steps.csv are written unless the scenario or --csv says
JSON_STEP_LIMIT = 1_000  # steps up to which results.json holds every step (:func:`keeps_steps`)
FAILED_LISTED = 1_000  # failed steps listed in results.json's summary

CSV_HEADER = ("step", "entity", "quantity", "component", "value", "unit")
STEP_STATUS_COLUMNS = ("status", "iterations", "stability")
WRENCH_COMPONENTS = ("fx", "fy", "fz", "mx", "my", "mz")
WRENCH_UNITS = ("N", "N", "N", "N m", "N m", "N m")
AXES = "xyz"
POSE_COMPONENTS = ("x", "y", "z", "roll", "pitch", "yaw")
POSE_UNITS = ("mm", "mm", "mm", "deg", "deg", "deg")  # an Mdx platform pose, as Mdx states it
ACTUATOR_QUANTITIES = {"actuator_length": ("lengths", "m"), "actuator_raw": ("raw", "-"),
                       "actuator_in_range": ("in_range", "-"), "actuator_force": ("forces", "N")}
EFFORT_UNIT = {"m": "N", "rad": "N m"}
CAPACITY_COLUMNS = ("step", "radius", "height", "tipping_load", "tips_below", "does_not_tip_below", "tipping_event",
                    "event_load", "balance_load", "hydraulic_load", "hydraulic_event", "rated_load", "rated_mass", "governs", "limiting_cylinder", "invalid",
                    "tipping_edge")


class OutputError(ShiftsimError):
    """The results could not be written (exit code 1)."""

    exit_code = 1


def writes_csv(asked: bool | None, steps: int) -> bool:
    """Whether a run of ``steps`` steps gets results.csv and steps.csv: as ``asked`` (the scenario's
    ``outputs.csv`` or ``shiftsim run --csv/--no-csv``), else only up to :data:`CSV_STEP_LIMIT` steps (the tidy CSV
    holds about 11 kB a step, and writing it costs more than solving the step; the store's ``steps/`` and ``values/``
    hold the same rows)."""
    return steps <= CSV_STEP_LIMIT if asked is None else asked


def default_folder(scenario: Scenario) -> Path:
    return Path("plots") / scenario.name


# ---------------------------------------------------------------------- the folder
def check_folder(folder: Path, force: bool, inputs: Iterable[Path]) -> None:
    """Refuse, before anything is solved, an output folder that cannot be written, would overwrite
    results without ``force``, or would overwrite an input file."""
    problem = _unusable(folder)
    if problem:
        raise InputError([Problem("output folder", str(folder), problem,
                                  "a folder path that can be created and written")])
    targets = {(folder / name).resolve(): name for name in output_files()}
    clashes = [p for p in inputs if p.resolve() in targets]
    if clashes:
        raise InputError([Problem("output folder", str(folder),
                                  f"writing {targets[p.resolve()]} would overwrite input file {p}",
                                  "an output folder that holds no input file named like an output")
                          for p in clashes])
    foreign = [folder / name for name in OUTPUT_FOLDERS if not _store_folder(folder / name)]
    if foreign:
        raise InputError([Problem("output folder", str(path), "is not a results store's part folder (it holds other "
                                  "files, or is a file)", "an output folder without it, or its files moved") for path in foreign])
    if folder.is_dir() and any(not p.name.startswith(STAGING_PREFIX) for p in folder.iterdir()) and not force:
        raise InputError([Problem("output folder", str(folder), "exists and is not empty",
                                  "a new or empty folder, or --force to replace shiftsim's result files in it")])


def _store_folder(path: Path) -> bool:
    """Whether ``path`` is absent or a store's part folder (part files, hidden partial ones), which a run replaces."""
    if not path.exists() and not path.is_symlink():
        return True
    return path.is_dir() and not path.is_symlink() and all(
        entry.name.startswith(("part-", ".part-")) and entry.is_file() for entry in path.iterdir())


def _unusable(folder: Path) -> str:
    """Why ``folder`` cannot receive results ('' when it can): a file in the way, a dangling link,
    a place where nothing can be created (a probe folder is made and removed)."""
    if folder.is_symlink() and not folder.exists():
        return f"is a symbolic link to {os.readlink(folder)}, which does not exist"
    if folder.exists() and not folder.is_dir():
        return "exists and is not a folder"
    existing = folder
    while not existing.exists():
        if existing.is_symlink():
            return f"{existing} is a symbolic link to {os.readlink(existing)}, which does not exist"
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    try:
        Path(tempfile.mkdtemp(dir=existing, prefix=STAGING_PREFIX)).rmdir()
    except OSError as error:
        return f"nothing can be created in {existing}: {error.strerror or error}"
    return ""


# ---------------------------------------------------------------------- results.json
def results_document(scenario: Scenario, steps: list[StepResult], planned: int | None = None,
                     interrupted: str | None = None, capacity: dict[str, Any] | None = None,
                     sensitivity: dict[str, Any] | None = None, with_steps: bool = True,
                     digest: RunDigest | None = None, as_json: bool = False) -> dict[str, Any]:
    """The results.json object (see ``shiftsim/schemas/results.schema.json``).

    ``planned``: the sweep's step count when ``steps`` holds only part of it (a run stopped by
    ``interrupted``, the signal's name): the document is then marked ``partial``. ``capacity``: the
    scenario's capacity analysis (:func:`shiftsim.scenario.capacity_analysis.run_analysis`), kept under ``capacity``. ``sensitivity``: its ``analysis.sensitivity`` section
    (:func:`shiftsim.scenario.sensitivity_analysis.run_analysis`), kept under ``sensitivity``.
    ``with_steps``: hold every step (``steps``) and the viewer's poses of every step (``scene``); without,
    the document is the run's summary (``summary``) and metadata, its size independent of the step count,
    and the steps are in the columnar store only (:func:`keeps_steps`). ``digest``: the run's steps reduced, for a
    run that did not hold them (``steps`` then needs to hold only what ``with_steps`` writes). ``as_json``: ``steps``
    and ``scene.steps`` as JSON text (``orjson.Fragment``) written a block of steps at a time
    (:func:`~shiftsim.output.steps_json.steps_json`, :func:`~shiftsim.output.scene.scene_steps_json`), for writing the
    document: the same document once parsed.
    """
    from .. import __version__
    from .scene import scene_document

    if digest is None:
        count, failed, reported = len(steps), [step.index for step in steps if not step.converged], \
            {name for step in steps for name in step.joints}
    else:
        count, failed, reported = digest.count, sorted(digest.failed), digest.joints
    document = {"scenario": scenario.name, "shiftsim_version": __version__, "parameters": scenario.sweep.names,
                "angle_unit": scenario.angle_unit, "units": _units(scenario, reported),
                "partial": planned is not None and count < planned,
                "steps_planned": count if planned is None else planned}
    if interrupted:
        document["interrupted"] = interrupted
    document["summary"] = {"steps": count, "converged": count - len(failed),
                           "failed": failed[:FAILED_LISTED], "in_results_json": with_steps}
    if with_steps and as_json:
        import orjson

        from .scene import machine_layout, scene_steps_json
        from .steps_json import steps_json

        document["steps"] = orjson.Fragment(steps_json(steps))
        document["scene"] = {"machines": {machine.id: machine_layout(machine) for machine in scenario.machines},
                             "steps": orjson.Fragment(scene_steps_json(scenario, steps))}
    elif with_steps:
        document["steps"] = [step.as_dict() for step in steps]
        document["scene"] = scene_document(scenario, steps)
    if capacity is not None:
        document["capacity"] = capacity
    if sensitivity is not None:
        document["sensitivity"] = sensitivity
    return document


def keeps_steps(steps: int) -> bool:
    """Whether results.json holds the steps of a run of ``steps`` steps: up to :data:`JSON_STEP_LIMIT` (about 10 kB
    of JSON a step, written after the solve; the columnar store holds them, and ``shiftsim.load_results`` reads it)."""
    return steps <= JSON_STEP_LIMIT


def _units(scenario: Scenario, reported: set[str]) -> dict[str, Any]:
    """Units the numbers of results.json cannot tell by themselves: per swept parameter, and per
    coordinate of every ``reported`` joint (``m`` prismatic, ``rad`` revolute)."""
    joints = {name: units for name, units in joint_units(scenario).items() if name in reported}
    return {"parameters": {p.name: p.unit for p in scenario.sweep.parameters}, "joints": joints}


def joint_units(scenario: Scenario) -> dict[str, list[str]]:
    """Per joint of every machine (scenario name), the unit of each coordinate: ``m`` prismatic, ``rad`` revolute."""
    joints = {}
    for machine in scenario.machines:
        model = machine.model
        for joint in model.joints:
            joints[machine.name(joint.name)] = ["m" if model.node_kind[model.coordinate_node[c]] == PRISMATIC else "rad"
                                                for c in joint.coordinates]
    return joints


# ---------------------------------------------------------------------- tables
def _joint_components(quantity: str, value: Any, units: list[str], angle_unit: str) -> list[tuple[str, Any, str]]:
    """(component, value, unit) of a joint quantity; angles (rad) in ``angle_unit``."""
    if quantity.startswith("wrench"):
        return list(zip(WRENCH_COMPONENTS, value, WRENCH_UNITS))
    values = value if isinstance(value, list) else [value]
    if quantity == "effort":
        shown = [EFFORT_UNIT.get(u, "-") for u in units]
    else:
        shown = [angle_unit_of(u, angle_unit) for u in units]
        values = [v * angle_factor(angle_unit) if u == "rad" else v for v, u in zip(values, units)]
    components = [str(i) for i in range(len(values))] if isinstance(value, list) else [""]
    return list(zip(components, values, shown))


def _pose_components(quantity: str, value: Any) -> list[tuple[str, Any, str]]:
    if quantity == "rotation":
        return [(AXES[i] + AXES[j], value[i][j], "-") for i in range(3) for j in range(3)]
    return [(axis, v, "m") for axis, v in zip(AXES, value)]


def tidy_rows(document: dict[str, Any]) -> Iterable[list[Any]]:
    """results.csv rows from a results document: :data:`CSV_HEADER` first, then one number per row.

    Joint ``position``/``deflection`` (m or rad, deg with ``angle_unit`` deg), ``effort`` (N or N m),
    ``wrench_joint``/``wrench_world`` (``fx … mz``, N and N m) — multi-coordinate joints have
    components ``0, 1, …`` (the joint's coordinates in order); frame ``position``/``deflection``
    and body ``position`` (``x, y, z``, m); body ``rotation`` (``xx, xy, …``, row then column). An Mdx
    platform adds, per actuator joint, ``actuator_length`` (m), ``actuator_raw``, ``actuator_in_range``
    (1/0) and ``actuator_force`` (N), and for the machine its ``platform_pose`` (``x, y, z`` mm,
    ``roll, pitch, yaw`` deg). Collisions add, per machine pair ``a|b``, ``distance`` (m) and
    ``in_collision`` (1/0). A machine standing on the ground adds ``contact_force`` per contact (``fx, fy,
    fz``, N), and for the machine ``ground_reaction_force`` (N), ``ground_reaction_moment`` (N m, about the
    world origin), ``centre_of_pressure`` (m) and ``tipping_margin`` (m). The solver's figures per step are in steps.csv.
    """
    angle_unit = document.get("angle_unit", "rad")
    joint_units = document.get("units", {}).get("joints", {})
    yield list(CSV_HEADER)
    for step in document["steps"]:
        yield from step_value_rows(step, joint_units, angle_unit)


def step_value_rows(step: dict[str, Any], joint_units: dict[str, list[str]],
                    angle_unit: str = "rad") -> Iterator[list[Any]]:
    """The results.csv rows of one step object of results.json (:func:`tidy_rows`), angles in ``angle_unit``;
    ``joint_units``: per joint, the unit of each coordinate (results.json ``units.joints``)."""
    i = step["index"]
    for name, joint in step["joints"].items():
        units = joint_units.get(name) or ["-"] * len(joint["position"] if isinstance(joint["position"], list) else [0])
        for quantity in ("position", "deflection", "effort", "wrench_joint", "wrench_world"):
            for component, number, unit in _joint_components(quantity, joint[quantity], units, angle_unit):
                yield [i, name, quantity, component, number, unit]
    for group in (step["frames"], step["bodies"]):
        for name, item in group.items():
            for quantity, value in item.items():
                for component, number, unit in _pose_components(quantity, value):
                    yield [i, name, quantity, component, number, unit]
    for machine_id, record in step.get("actuators", {}).items():
        for component, number, unit in zip(POSE_COMPONENTS, record["pose"], POSE_UNITS):
            yield [i, machine_id, "platform_pose", component, number, unit]
        for k, leg in enumerate(record["joints"]):
            for quantity, (key, unit) in ACTUATOR_QUANTITIES.items():
                yield [i, leg, quantity, "", _number(record[key][k]), unit]
    for pair in step.get("collisions") or []:
        entity = f"{pair['a']}|{pair['b']}"
        yield [i, entity, "distance", "", pair["distance"], "m"]
        yield [i, entity, "in_collision", "", _number(pair["in_collision"]), "-"]
    for machine_id, record in step.get("ground", {}).items():
        for contact, force in record["contact_forces"].items():
            for component, number in zip(("fx", "fy", "fz"), force):
                yield [i, contact, "contact_force", component, number, "N"]
        reaction = record["ground_reaction"]
        for quantity, value, components, unit in (
                ("ground_reaction_force", reaction["force"], ("fx", "fy", "fz"), "N"),
                ("ground_reaction_moment", reaction["moment"], ("mx", "my", "mz"), "N m"),
                ("centre_of_pressure", record["centre_of_pressure"], ("x", "y", "z"), "m")):
            for component, number in zip(components, value):
                yield [i, machine_id, quantity, component, number, unit]
        yield [i, machine_id, "tipping_margin", "", record["tipping_margin"], "m"]


def step_rows(document: dict[str, Any]) -> Iterable[list[Any]]:
    """steps.csv rows: the header ``step``, each swept parameter by name, :data:`STEP_STATUS_COLUMNS`;
    then per step its swept values (in the units of results.json ``units.parameters``, angles in
    the document's ``angle_unit``), status (converged/failed), Newton iterations and stability
    (``stable``, ``neutral``, ``unstable``, or ``unknown`` for a failed step)."""
    factor = angle_factor(document.get("angle_unit", "rad"))
    units = document.get("units", {}).get("parameters", {})
    yield ["step", *document["parameters"], *STEP_STATUS_COLUMNS]
    for step in document["steps"]:
        values = [step["parameters"][name] * (factor if units.get(name) == "rad" else 1.0)
                  for name in document["parameters"]]
        stability = step.get("stability") or ("unknown" if step["status"] != "converged"
                                               else "stable" if step["stable"] else "unstable")
        yield [step["index"], *values, step["status"], step["iterations"], stability]


STORE_ONLY = ("pin_force", "pin_moment", "coordinates", "reference_coordinates", "closest_points", "contact_point")
"""Quantities the columnar store holds beyond results.csv's (:func:`store_value_rows`)."""
FLAGS = ("in_collision", "actuator_in_range")
"""Quantities results.csv writes as 1/0 (true/false), which the store holds as 1.0/0.0."""
CSV_BATCH_VALUES = 131_072  # store values turned into results.csv rows at a time (:func:`write_store_csvs`)


def write_store_csvs(store: Any, document: dict[str, Any], results_csv: Path, steps_csv: Path) -> None:
    """Write results.csv and steps.csv from a run's columnar store (:class:`~shiftsim.output.store.ResultsStore`),
    the same bytes as ``csv_bytes(tidy_rows(document))`` and ``csv_bytes(step_rows(document))`` of the run's
    results document with every step, holding about :data:`CSV_BATCH_VALUES` values at a time however long the
    run: the steps are read in ranges of step numbers, each range's rows ordered by step (as written within a
    step), the store's own quantities (:data:`STORE_ONLY`) left out, angles in the document's ``angle_unit``.
    ``document`` gives the parameters, their units and the angle unit (a summary document will do).
    A range's rows are formatted a column at a time (:func:`_csv_lines`), its names read as dictionaries."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .arrow_arrays import arrow_array, numpy_array

    steps = store.step_table()
    with open(steps_csv, "w", newline="", encoding="utf-8") as stream:
        csv.writer(stream, lineterminator="\n").writerows(
            csv_cells(row) for row in step_rows(_steps_document(document, steps.to_pylist())))
    numbers = numpy_array(steps.column("step"))
    per_step = max(1, store.count_values() // max(1, len(numbers)))
    chunk = max(1, CSV_BATCH_VALUES // per_step)
    angle_unit = document.get("angle_unit", "rad")
    store_only = arrow_array(STORE_ONLY, pa.string())
    with open(results_csv, "wb") as stream:
        stream.write(",".join(CSV_HEADER).encode() + b"\n")
        for start in range(0, len(numbers), chunk):  # each name decoded once per row group, not once per row
            table = store.select(steps=numbers[start:start + chunk], coded=True)
            table = table.filter(pc.invert(pc.is_in(table.column("quantity"), value_set=store_only)))
            stream.write(_csv_lines(table, angle_unit))


def _csv_lines(table: Any, angle_unit: str) -> bytes:
    """results.csv's lines (UTF-8) of a store ``values`` table, as :func:`step_value_rows` gives them (angles times
    the factor of ``angle_unit``, in that unit; flags as 1/0) and the csv module writes them: a float by its ``repr``
    (:func:`float_texts`), an integer in decimal, a null as nothing, a text through :func:`csv_text` and the module's
    quoting (:func:`_csv_text_cells`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .arrow_arrays import arrow_array, arrow_scalar, numpy_array

    table = table.unify_dictionaries()
    radians = _per_name(table.column("unit"), lambda unit: unit == "rad", pa.bool_())
    flags = _per_name(table.column("quantity"), lambda quantity: quantity in FLAGS, pa.bool_())
    radians, flags = (numpy_array(column, null=False).astype(bool) for column in (radians, flags))
    value = table.column("value")
    nulls = numpy_array(value.is_null())
    numbers = numpy_array(value).astype(float)  # null -> nan (written as nothing)
    numbers[radians] *= angle_factor(angle_unit)
    flagged = flags & ~radians & ~nulls
    texts = pc.replace_with_mask(float_texts(numbers), arrow_array(flagged, pa.bool_()),
                                 arrow_array([str(int(v)) for v in numbers[flagged].tolist()], pa.string()))
    unit_cell = _csv_text_cells()
    cells = [pc.cast(table.column("step"), pa.string()),
             *(_per_name(table.column(name), _csv_text_cells(), pa.string()) for name in ("entity", "quantity",
                                                                                       "component")),
             pc.if_else(arrow_array(nulls, pa.bool_()), arrow_scalar(None, pa.string()), texts),
             _per_name(table.column("unit"), lambda unit: unit_cell(angle_unit_of(unit, angle_unit)) + "\n",
                       pa.string())]
    lines = pc.binary_join_element_wise(*cells, arrow_scalar(",", pa.string()), null_handling="replace",
                                        null_replacement="").combine_chunks()
    if not len(lines):
        return b""
    _, offsets, data = lines.buffers()  # the lines' UTF-8 bytes, one after the other, from offsets[0] to offsets[n]
    ends = np.frombuffer(offsets, np.int32)[[lines.offset, lines.offset + len(lines)]]
    return data.to_pybytes()[ends[0]:ends[1]]


def _per_name(column: Any, function: Any, kind: Any) -> Any:
    """``function`` of each cell of a text ``column`` (plain or dictionary-encoded), as an Arrow column of type
    ``kind``, calling it once per distinct text (a null cell gives null)."""
    import pyarrow as pa

    from .arrow_arrays import arrow_array

    if not pa.types.is_dictionary(column.type):
        column = column.dictionary_encode()
    return pa.chunked_array([arrow_array([function(text) for text in chunk.dictionary.to_pylist()], kind).take(
        chunk.indices) for chunk in column.chunks], kind)


def _csv_text_cells() -> Any:
    """A function giving a text cell as the csv module writes it after :func:`csv_text` (quoted where it must be),
    remembering the texts it has seen."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    seen: dict[str, str] = {}

    def cell(text: str) -> str:
        if text not in seen:
            buffer.seek(0)
            buffer.truncate()
            writer.writerow([csv_text(text), ""])  # two cells: a lone empty cell would be quoted
            seen[text] = buffer.getvalue()[:-2]  # the first cell, without "," and the line's end
        return seen[text]
    return cell


FLOAT_POSITIONAL = (1e-4, 1e16)
"""Magnitudes ``repr`` writes a float in without an exponent (Python's ``'r'`` format: from 1e-4, below 1e16)."""


def float_texts(numbers: np.ndarray) -> Any:
    """``repr`` of each float of ``numbers`` (as the csv module writes it), as an Arrow string array.

    Arrow's cast to text writes the same shortest round-trip digits as ``repr``, in the same notation for a number in
    :data:`FLOAT_POSITIONAL` that is not whole (``0.25``, ``-1234.5``); a whole one there gets ``.0`` added (Arrow
    writes ``12``, ``repr`` ``12.0``); a zero is ``0.0`` or ``-0.0``; the others (exponents, NaN, infinities, and what
    Arrow writes with an exponent where ``repr`` does not, ``1e+15``) are written by ``repr`` itself, one by one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .arrow_arrays import arrow_array, arrow_scalar, numpy_array

    flags, text = pa.bool_(), pa.string()
    texts = pc.cast(arrow_array(numbers, pa.float64()), text)
    magnitude = np.abs(numbers)
    exponent = numpy_array(pc.match_substring(texts, "e")).astype(bool)
    with np.errstate(invalid="ignore"):  # NaN and infinities are not positional
        positional = (magnitude >= FLOAT_POSITIONAL[0]) & (magnitude < FLOAT_POSITIONAL[1])
        whole = positional & ~exponent & (numbers == np.trunc(numbers))
    texts = pc.if_else(arrow_array(whole, flags), pc.binary_join_element_wise(
        texts, arrow_scalar(".0", text), arrow_scalar("", text)), texts)
    zero = numbers == 0.0
    texts = pc.if_else(arrow_array(zero, flags), pc.if_else(arrow_array(np.signbit(numbers), flags),
                                                           arrow_scalar("-0.0", text), arrow_scalar("0.0", text)), texts)
    others = ~positional & ~zero | exponent
    return pc.replace_with_mask(texts, arrow_array(others, flags),
                                arrow_array(list(map(float.__repr__, numbers[others].tolist())), text))


def _steps_document(document: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The part of a results document :func:`step_rows` reads, its steps from the store's steps rows."""
    steps = [{"index": row["step"], "parameters": {name: row[name] for name in document["parameters"]},
              "status": row["status"], "iterations": row["iterations"], "stability": row["stability"],
              "stable": row["stable"]} for row in rows]
    return {**{key: document[key] for key in ("parameters", "angle_unit", "units") if key in document}, "steps": steps}


def store_step_row(record: dict[str, Any], parameters: list[str]) -> list[Any]:
    """A step's row of the store's ``steps`` table from its results.json step object: ``step``, its swept values
    (SI, as results.json), ``status``, ``iterations``, ``stability``, ``residual`` (None without a solve), ``stable``."""
    stability = record.get("stability") or ("unknown" if record["status"] != "converged"
                                            else "stable" if record["stable"] else "unstable")
    return [record["index"], *(record["parameters"][name] for name in parameters), record["status"],
            record["iterations"], stability, record["residual"], record["stable"]]


def step_status_row(step: StepResult, parameters: list[str]) -> list[Any]:
    """A step's row of the store's ``steps`` table from the step itself (:func:`store_step_row` without its
    results.json object)."""
    return [step.index, *(step.parameters[name] for name in parameters), step.status, step.iterations, step.stability,
            step.residual, step.stable]


def store_rows(step: StepResult, parameters: list[str],
               joint_units: dict[str, list[str]]) -> tuple[list[Any], list[list[Any]]]:
    """A solved step's ``steps`` row and ``values`` rows of the store (:func:`store_step_row`,
    :func:`store_value_rows` with its coordinates)."""
    record = step.as_dict()
    return (store_step_row(record, parameters),
            store_value_rows(record, joint_units, step.q, step.q_reference))


def store_value_rows(record: dict[str, Any], joint_units: dict[str, list[str]],
                     q: dict[str, Any] | None = None, q_reference: dict[str, Any] | None = None) -> list[list[Any]]:
    """A step's rows of the store's ``values`` table: its results.csv rows in SI units (angles in rad) from its
    results.json step object ``record``, then :data:`STORE_ONLY`: per loop joint and held actuator ``pin_force``
    (N) and ``pin_moment`` (N m) in its joint frame (``x, y, z``), and per machine its solved coordinates
    ``coordinates`` and ``reference_coordinates`` (the unloaded equilibrium) from ``q`` / ``q_reference``
    (machine id -> (nq,) m or rad, in the solved model's coordinate order; components ``0 … nq-1``, unit ``-``);
    per machine pair ``closest_points`` (``ax, ay, az, bx, by, bz``: the closest point on each, m) and per contact
    ``contact_point`` (``x, y, z``, m), which the plots draw."""
    rows = list(step_value_rows(record, joint_units))
    i = record["index"]
    for name, reaction in record.get("pin_reactions", {}).items():
        rows += [[i, name, "pin_force", axis, value, "N"] for axis, value in zip(AXES, reaction["force_joint"])]
        rows += [[i, name, "pin_moment", axis, value, "N m"] for axis, value in zip(AXES, reaction["moment_joint"])]
    for pair in record.get("collisions") or []:  # the closest points, on a then on b (the pose plot draws them)
        for side, point in zip("ab", pair.get("points") or []):
            rows += [[i, f"{pair['a']}|{pair['b']}", "closest_points", side + axis, value, "m"]
                     for axis, value in zip(AXES, point)]
    for ground in record.get("ground", {}).values():  # where each contact is (the footprint plot draws them)
        for contact, point in ground.get("contact_points", {}).items():
            rows += [[i, contact, "contact_point", axis, value, "m"] for axis, value in zip(AXES, point)]
    for quantity, coordinates in (("coordinates", q or {}), ("reference_coordinates", q_reference or {})):
        for machine_id, values in coordinates.items():
            if values is not None:
                rows += [[i, machine_id, quantity, str(k), float(v), "-"] for k, v in enumerate(values)]
    return rows


def capacity_rows(document: dict[str, Any]) -> list[list[Any]]:
    """capacity.csv: a header (``step``, each swept parameter, then the lift point's radius and height (m), the loads
    (N) and the events that ended their paths (``lift-off``, ``limit point``, ``path ends``, ``cylinder limit
    <joint>``), the rated mass (kg), what governs, the limiting cylinder and the tipping edge), one row per lift point;
    an empty value where there is none; ``invalid`` the reasons a point has no rating, joined by ``; ``."""
    points = document["points"]
    names = list(points[0]["parameters"]) if points else []
    rows: list[list[Any]] = [[CAPACITY_COLUMNS[0], *names, *CAPACITY_COLUMNS[1:]]]
    for p in points:
        edge = " - ".join(p["tipping_edge"])
        rows.append([p["step"], *(p["parameters"][n] for n in names),
                     *(_capacity_cell(p[c]) for c in CAPACITY_COLUMNS[1:-1]), edge])
    return rows


def _capacity_cell(value: Any) -> Any:
    """A capacity.csv cell: empty for none, reasons joined by '; '."""
    if isinstance(value, list):
        return "; ".join(value)
    return "" if value is None else value


def _number(value: Any) -> Any:
    """Booleans as 1/0, numbers as they are."""
    return int(value) if isinstance(value, bool) else value


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""First characters with which a spreadsheet reads a text cell as a formula (CSV injection)."""


def csv_text(cell: Any) -> Any:
    """A text ``cell`` that a spreadsheet would run as a formula (a user's name such as ``=HYPERLINK(...)``) with
    a ``'`` in front, which spreadsheets show as text; numbers, other text and the unit ``-`` (dimensionless) as
    they are."""
    return f"'{cell}" if isinstance(cell, str) and len(cell) > 1 and cell.startswith(FORMULA_STARTS) else cell


def csv_cells(row: list[Any]) -> list[Any]:
    """A CSV row's cells as written: text through :func:`csv_text`, numbers as they are (without a call each)."""
    return [csv_text(cell) if cell.__class__ is str else cell for cell in row]


def csv_bytes(rows: Iterable[list[Any]]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(csv_cells(row) for row in rows)
    return buffer.getvalue().encode("utf-8")


# ---------------------------------------------------------------------- writing the set
def open_staging(folder: Path) -> tuple[Path, list[Path]]:
    """A new staging folder in ``folder`` (created, with its missing parents), for a set of results written into it
    and then swapped in by :func:`write_files`; and the folders created for it, deepest first. Stale staging folders
    of runs that are gone are removed first."""
    created = _missing_parents(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        remove_stale_staging(folder)
        return Path(tempfile.mkdtemp(dir=folder, prefix=f"{STAGING_PREFIX}{os.getpid()}-")), created
    except OSError as error:
        remove_created(created)
        raise OutputError(f"cannot write the results in {folder}: {error.strerror or error}") from None


def remove_created(created: list[Path]) -> None:
    """Remove the folders a failed write created (deepest first), as far as they are empty."""
    for path in created:
        try:
            path.rmdir()
        except OSError:
            break


def write_files(folder: Path, files: dict[str, bytes], staging: Path | None = None,
                created: list[Path] | None = None, staged: Iterable[str] = ()) -> None:
    """Write ``files`` into ``folder`` as one set (see the module docstring); shiftsim's own output
    files and folders not in the set are removed in the same swap (stale results of an earlier run).

    ``staging``: a staging folder from :func:`open_staging` that already holds part of the set (the store's
    :data:`OUTPUT_FOLDERS`, and the files named in ``staged``, written there already), with the folders ``created``
    for it; it is swapped in with ``files`` and removed.
    """
    staged = [name for name in staged if name not in files]
    written = False
    try:
        if staging is None:
            staging, created = open_staging(folder)
        mode = 0o666 & ~_umask()
        for k, (name, data) in enumerate(files.items()):
            _write(staging / name, data, mode)
            if k == 0:
                _test_pause()
        for name in staged:
            _fsync_file(staging / name)
        _fsync_folder(staging)
        with signals_deferred():
            for name in OUTPUT_FOLDERS:  # the old part folder goes into the staging folder, removed with it
                if (folder / name).is_dir():
                    os.replace(folder / name, staging / f".old-{name}")
                if (staging / name).is_dir():
                    os.replace(staging / name, folder / name)
            for name in [*files, *staged]:
                os.replace(staging / name, folder / name)
            for name in output_files():
                if name not in files and name not in staged:
                    (folder / name).unlink(missing_ok=True)
        written = True
        _fsync_folder(folder)
    except OSError as error:
        raise OutputError(f"cannot write the results in {folder}: {error.strerror or error}") from None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        if not written:  # folders made for this write, which failed
            remove_created(created or [])


def remove_stale_staging(folder: Path) -> list[Path]:
    """Remove staging folders of runs that are gone (and ``.NAME.XXXX.tmp`` files of older versions)."""
    removed = []
    for path in folder.iterdir():
        name = path.name
        if name.startswith(STAGING_PREFIX) and path.is_dir() and not _alive(name[len(STAGING_PREFIX):].split("-")[0]):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        elif name.endswith(".tmp") and any(name.startswith(f".{output}.") for output in output_files()) and path.is_file():
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _alive(pid_text: str) -> bool:
    """Whether the process that made a staging folder still runs (a folder without a pid is stale)."""
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _missing_parents(folder: Path) -> list[Path]:
    """The folders that do not exist yet on the way to ``folder``, deepest first."""
    missing = []
    path = folder
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing


def _write(path: Path, data: bytes, mode: int) -> None:
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    if hasattr(os, "fchmod"):  # POSIX: the mode a plain open() would give
        os.fchmod(handle, mode)
    with os.fdopen(handle, "wb") as stream:
        stream.write(data)
        stream.flush()
        os.fsync(stream.fileno())


def _fsync_file(path: Path) -> None:
    """Make a file written by another writer (a plain open(), so with the mode :func:`_write` gives) durable."""
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _fsync_folder(folder: Path) -> None:
    """Make the folder's entries (renames) durable, where the platform can."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    try:
        handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass  # some file systems cannot sync a folder; the files themselves are synced
    finally:
        os.close(handle)


def _test_pause() -> None:
    """Test hook: pause the write phase (seconds in :data:`PAUSE_ENV`) so a test can signal or kill it."""
    pause = os.environ.get(PAUSE_ENV)
    if pause:
        time.sleep(float(pause))


def _umask() -> int:
    """The process's file-creation mask (files are created 0600; results get the usual mode)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
