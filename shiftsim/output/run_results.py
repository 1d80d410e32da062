"""A run's results in Python: run a scenario, or read a results folder, and get numpy arrays.

>>> results = shiftsim.run_scenario("scenarios/excavator_lift.json", jobs=2)
>>> results["ex1:arm:boom_cyl", "effort"]          # (n_steps,) N, one value per step
>>> results["ex1:arm:bucket:tip", "position"]      # (n_steps, 3) m, world axes
>>> results.steps["ex1:arm:boom_cyl"]              # the swept values, (n_steps,)
>>> results.to_dataframe()                         # the tidy table of results.csv (needs pandas)
>>> shiftsim.load_results("plots/excavator_lift")  # the same object from a results folder

Both build the object from the results document (the content of results.json),
so a run and its folder read back give equal objects. Arrays are indexed by
step position (``index`` gives the step numbers), in SI units (angles in rad,
whatever the scenario's ``angle_unit``); a value a step does not have (a failed
step, a machine that did not converge) is NaN. Keys are ``(entity, quantity)``
with the scenario's canonical names (``machine:...``); an unambiguous ending works too, with or without the
machine in front (``results["boom_cyl", "effort"]``, ``results["ex1:boom_cyl", "effort"]``, docs/naming.md):

==========================  ===========================================  ==================
entity                      quantity                                     shape
==========================  ===========================================  ==================
joint                       ``position``, ``deflection``, ``effort``     (n,) or (n, k)
joint                       ``wrench_joint``, ``wrench_world``           (n, 6)
loop joint, held actuator   ``pin_force``, ``pin_moment`` (joint frame)  (n, 3)
frame                       ``position``, ``deflection``                 (n, 3)
body                        ``position``; ``rotation``                   (n, 3); (n, 3, 3)
machine pair ``a|b``        ``distance``, ``in_collision`` (1/0)         (n,)
Mdx machine; its legs       ``platform_pose``; ``actuator_length``, ...  (n, 6); (n,)
==========================  ===========================================  ==================

(k: coordinates of a multi-coordinate joint.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ..errors import InputError, Problem, Problems

JOINT_QUANTITIES = ("position", "deflection", "effort", "wrench_joint", "wrench_world")
ACTUATOR_QUANTITIES = {"actuator_length": "lengths", "actuator_raw": "raw", "actuator_in_range": "in_range",
                       "actuator_force": "forces"}
Key = tuple[str, str]


@dataclass(frozen=True, eq=False)
class StepTable:
    """Per step: its number (``index``), swept values by parameter name, solver figures."""

    index: np.ndarray
    values: dict[str, np.ndarray]
    status: np.ndarray
    iterations: np.ndarray
    residual: np.ndarray
    stable: np.ndarray

    def __getitem__(self, parameter: str) -> np.ndarray:
        try:
            return self.values[parameter]
        except KeyError:
            raise KeyError(f"{parameter!r} is not a swept parameter; the sweep has {sorted(self.values)}") from None

    def __len__(self) -> int:
        return len(self.index)


@dataclass(frozen=True, eq=False)
class RunResults:
    """The step table and every reported quantity of a run as numpy arrays (see the module docstring).

    ``document`` is the results document (results.json) it was built from; ``partial`` is true
    for a run stopped before its last step.
    """

    document: dict[str, Any] = field(repr=False)
    steps: StepTable = field(repr=False)
    arrays: dict[Key, np.ndarray] = field(repr=False)

    @classmethod
    def from_document(cls, document: dict[str, Any]) -> RunResults:
        records = document["steps"]
        n = len(records)
        columns: dict[Key, dict[int, Any]] = {}

        def put(entity: str, quantity: str, row: int, value: Any) -> None:
            columns.setdefault((entity, quantity), {})[row] = value

        for row, step in enumerate(records):
            for name, joint in step["joints"].items():
                for quantity in JOINT_QUANTITIES:
                    put(name, quantity, row, joint[quantity])
            for name, reaction in step.get("pin_reactions", {}).items():  # every loop joint and held actuator
                put(name, "pin_force", row, reaction["force_joint"])
                put(name, "pin_moment", row, reaction["moment_joint"])
            for group in (step["frames"], step["bodies"]):
                for name, item in group.items():
                    for quantity, value in item.items():
                        put(name, quantity, row, value)
            for machine_id, record in step.get("actuators", {}).items():
                put(machine_id, "platform_pose", row, record["pose"])
                for k, leg in enumerate(record["joints"]):
                    for quantity, key in ACTUATOR_QUANTITIES.items():
                        put(leg, quantity, row, float(record[key][k]))
            for pair in step.get("collisions") or []:
                put(f"{pair['a']}|{pair['b']}", "distance", row, pair["distance"])
                put(f"{pair['a']}|{pair['b']}", "in_collision", row, float(pair["in_collision"]))
        arrays = {}
        for key, values in columns.items():
            shape = np.shape(next(iter(values.values())))
            array = np.full((n, *shape), np.nan)
            for row, value in values.items():
                array[row] = value
            arrays[key] = array
        table = StepTable(
            index=np.array([s["index"] for s in records], dtype=int),
            values={name: np.array([s["parameters"][name] for s in records], float) for name in document["parameters"]},
            status=np.array([s["status"] for s in records], dtype=str),
            iterations=np.array([s["iterations"] for s in records], dtype=int),
            residual=np.array([np.nan if s["residual"] is None else s["residual"] for s in records], float),
            stable=np.array([s["stable"] for s in records], dtype=bool))
        return cls(document, table, arrays)

    @property
    def scenario(self) -> str:
        return self.document["scenario"]

    @property
    def parameters(self) -> list[str]:
        """Swept parameter names in sweep order."""
        return list(self.document["parameters"])

    @property
    def partial(self) -> bool:
        return bool(self.document.get("partial", False))

    def __getitem__(self, key: Key) -> np.ndarray:
        try:
            return self.arrays[key]
        except (KeyError, TypeError):
            pass
        entity, quantity = (*key, "")[:2] if isinstance(key, tuple) else (key, "")
        full = self.full_name(str(entity))
        if full != entity and (full, quantity) in self.arrays:
            return self.arrays[full, quantity]
        entity = full
        known = sorted({q for e, q in self.arrays if e == entity})
        if known:
            raise KeyError(f"{entity!r} has no quantity {quantity!r}; it has {', '.join(known)}")
        from ..errors import suggest

        raise KeyError(f"no entity {entity!r} in the results of {self.scenario!r}: "
                       f"{suggest(str(entity), {e for e, _ in self.arrays})}")

    def __contains__(self, key: object) -> bool:
        return key in self.arrays

    def full_name(self, name: str) -> str:
        """The entity a name means: itself, or the one entity it is an unambiguous ending of, with or without its
        machine in front (``boom_cyl`` and ``ex1:boom_cyl`` for ``ex1:arm:boom_cyl``; docs/naming.md). Raises
        KeyError naming the candidates when several entities end so."""
        entities = self.entities()
        if name in entities:
            return name
        machine, _, rest = name.partition(":")
        found = [e for e in entities if e.endswith(":" + name)
                 or (rest and e.startswith(machine + ":") and e.endswith(":" + rest))]
        if len(found) > 1:
            raise KeyError(f"{name!r} is ambiguous in the results of {self.scenario!r}: it could be "
                           f"{', '.join(sorted(found))}")
        return found[0] if found else name

    def __iter__(self) -> Iterator[Key]:
        return iter(self.arrays)

    def keys(self) -> list[Key]:
        return list(self.arrays)

    def entities(self) -> list[str]:
        """Every entity name (joints, frames, bodies, machine pairs, Mdx machines and legs), first seen first."""
        return list(dict.fromkeys(entity for entity, _ in self.arrays))

    def to_dataframe(self):
        """The tidy table of results.csv (``step, entity, quantity, component, value, unit``) as a
        pandas DataFrame (pandas is imported here, only when called)."""
        import pandas as pd

        from .writers import tidy_rows

        rows = tidy_rows(self.document)
        header = next(rows)
        frame = pd.DataFrame(list(rows), columns=header)
        return frame.astype({"step": "int64", "value": "float64"})

    def steps_dataframe(self):
        """The table of steps.csv (``step``, one column per swept parameter, ``status``, ``iterations``,
        ``stability``) as a pandas DataFrame."""
        import pandas as pd

        from .writers import step_rows

        rows = step_rows(self.document)
        header = next(rows)
        return pd.DataFrame(list(rows), columns=header)

    def __str__(self) -> str:
        """A short summary: steps converged, the sweep's ranges, what was reported, capacity and collisions."""
        converged = int(np.sum(self.steps.status == "converged"))
        planned = self.document.get("steps_planned", len(self.steps))
        lines = [f"results of {self.scenario!r}: {converged} of {len(self.steps)} steps converged"
                 + (f" (run stopped; {planned} planned)" if self.partial else "")]
        units = self.document["units"]["parameters"]
        for name, values in self.steps.values.items():
            lines.append(f"  {name}: {np.nanmin(values):.4g} .. {np.nanmax(values):.4g} {units.get(name, '')}"
                         f" ({len(np.unique(values))} values)")
        failed = [int(i) for i, status in zip(self.steps.index, self.steps.status) if status != "converged"]
        if failed:
            shown = ", ".join(map(str, failed[:10])) + (", ..." if len(failed) > 10 else "")
            lines.append(f"  not converged: step {shown}")
        kinds = {}
        for entity, quantity in self.arrays:
            kinds.setdefault(quantity, set()).add(entity)
        lines.append("  reported: " + ", ".join(f"{q} of {len(e)}" for q, e in kinds.items()))
        points = (self.document.get("capacity") or {}).get("points") or []
        rated = [p for p in points if p.get("rated_mass") is not None]
        if rated:
            least = min(rated, key=lambda p: p["rated_mass"])
            lines.append(f"  capacity: least rated {least['rated_mass'] / 1e3:.4g} t at step {least['step']} "
                         f"({least['governs']} governs) over {len(points)} lift points")
        distances = [(key[0], np.nanmin(array)) for key, array in self.arrays.items()
                     if key[1] == "distance" and np.any(np.isfinite(array))]
        for pair, distance in distances[:5]:
            lines.append(f"  closest {pair}: {distance:.4g} m")
        return "\n".join(lines[:30])

    def __repr__(self) -> str:
        partial = ", partial" if self.partial else ""
        return (f"RunResults({self.scenario!r}, {len(self.steps)} steps{partial}, "
                f"{len(self.entities())} entities, {len(self.arrays)} arrays)")


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
        Also write the results folder there.
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
    from ..scenario import LocalExecutor, build_scenario, load_scenario, run
    from ..threads import single_blas_thread
    from .write import write_results
    from .writers import check_folder, results_document

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
        if output is not None:
            check_folder(Path(output), force, built.input_files)

        def warn(message: str) -> None:
            warnings.warn(message, ShiftsimWarning, stacklevel=3)

        for message in built.warnings:
            warn(message)
        ran = run(built, LocalExecutor(jobs), on_warning=warn)
        if output is not None:
            write_results(ran, Path(output))
    return RunResults.from_document(results_document(built, ran.steps, capacity=ran.capacity,
                                                     sensitivity=ran.sensitivity))


def load_results(folder: str | Path) -> RunResults:
    """The results of a run from its folder (its results.json), as :func:`run_scenario` returns them.

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
        The file is missing, not JSON, or not a results document (the schema's complaint, with its place).

    Examples
    --------
    >>> results = shiftsim.run_scenario("scenarios/four_bar_drive.json", output=tmp / "run")
    >>> shiftsim.load_results(tmp / "run").steps.status.tolist() == results.steps.status.tolist()
    True
    """
    from ..jsonio import read_json
    from ..scenario.schema import validate

    path = Path(folder)
    path = path / "results.json" if path.is_dir() else path
    document, _ = read_json(path, InputError)
    problems = Problems(str(path), InputError)
    validate(document, problems, "results")
    problems.raise_if_any()
    return RunResults.from_document(document)


__all__ = ["RunResults", "StepTable", "run_scenario", "load_results"]
