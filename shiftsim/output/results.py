"""A run's results as numpy arrays: :class:`RunResults`, what :func:`shiftsim.run_scenario` and
:func:`shiftsim.load_results` (:mod:`shiftsim.output.run_results`) return.

>>> results = shiftsim.run_scenario("scenarios/excavator_lift.json", jobs=2)
>>> results["ex1:arm:boom_cyl", "effort"]          # (n_steps,) N, one value per step
>>> results["ex1:arm:bucket:tip", "position"]      # (n_steps, 3) m, world axes
>>> results.steps["ex1:arm:boom_cyl"]              # the swept values, (n_steps,)
>>> results.to_dataframe()                         # the tidy table of results.csv (needs pandas)
>>> shiftsim.load_results("plots/excavator_lift")  # the same object from a results folder

Both are backed by the columnar results store (:mod:`shiftsim.output.store`): a results folder's is
opened lazily (its part files are listed, nothing else is read until asked), and each
``results[entity, quantity]`` reads that entity's and quantity's rows only, once; a run's is the same
store held in memory. So a run and its folder read back give equal arrays. Arrays are indexed by
step position (``steps.index`` gives the step numbers), in SI units (angles in rad, whatever the
scenario's ``angle_unit``); a value a step does not have (a failed step, a machine that did not
converge) is NaN. Keys are ``(entity, quantity)`` with the scenario's canonical names
(``machine:...``); an unambiguous ending works too, with or without the machine in front
(``results["boom_cyl", "effort"]``, ``results["ex1:boom_cyl", "effort"]``, docs/naming.md):

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
machine on the ground       ``ground_reaction_force``, ...; contacts     (n, 3); ``contact_force`` (n, 3)
machine                     ``coordinates``, ``reference_coordinates``   (n, nq)
==========================  ===========================================  ==================

(k: coordinates of a multi-coordinate joint; ``coordinates``: the machine's solved coordinates, loaded
and unloaded, in its solved model's coordinate order, m or rad.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import numpy as np

from .arrow_arrays import arrow_array, numpy_array
from .store import Key, ResultsStore, rows_tables

ROTATION_COMPONENTS = ["xx", "xy", "xz", "yx", "yy", "yz", "zx", "zy", "zz"]


@dataclass(frozen=True, eq=False)
class StepTable:
    """Per step: its number (``index``), swept values by parameter name, solver figures (``status``, ``iterations``,
    ``residual``, ``stable``, and ``stability``: that of the least stable machine, ``unknown`` for a failed step)."""

    index: np.ndarray
    values: dict[str, np.ndarray]
    status: np.ndarray
    iterations: np.ndarray
    residual: np.ndarray
    stable: np.ndarray
    stability: np.ndarray

    def __getitem__(self, parameter: str) -> np.ndarray:
        try:
            return self.values[parameter]
        except KeyError:
            raise KeyError(f"{parameter!r} is not a swept parameter; the sweep has {sorted(self.values)}") from None

    def __len__(self) -> int:
        return len(self.index)

    @classmethod
    def from_store(cls, store: ResultsStore) -> StepTable:
        table = store.step_table()
        residual = numpy_array(table.column("residual")).astype(float)  # null -> nan
        return cls(index=numpy_array(table.column("step")).astype(int),
                   values={name: numpy_array(table.column(name)).astype(float) for name in store.parameters},
                   status=np.array(table.column("status").to_pylist(), dtype=str),
                   iterations=numpy_array(table.column("iterations")).astype(int),
                   residual=residual,
                   stable=numpy_array(table.column("stable")).astype(bool),
                   stability=np.array(table.column("stability").to_pylist(), dtype=str))


@dataclass(frozen=True, eq=False)
class RunResults:
    """The step table and every reported quantity of a run as numpy arrays (see the module docstring).

    ``document`` is the run's results document (results.json: its summary and metadata, and for a small run
    its steps); ``store`` the :class:`~shiftsim.output.store.ResultsStore` the arrays are read from, each once;
    ``partial`` is true for a run stopped before its last step.
    """

    document: dict[str, Any] = field(repr=False)
    store: ResultsStore = field(repr=False)
    steps: StepTable = field(repr=False)
    _arrays: dict[Key, np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, document: dict[str, Any], store: ResultsStore) -> RunResults:
        """The results of ``document`` (results.json) with their values in ``store``."""
        return cls(document, store, StepTable.from_store(store))

    @classmethod
    def from_document(cls, document: dict[str, Any]) -> RunResults:
        """The results of a results document holding its steps, with a store in memory built from them."""
        from .writers import store_step_row, store_value_rows

        joint_units = document.get("units", {}).get("joints", {})
        records = document["steps"]
        steps, values = rows_tables(document["parameters"], [store_step_row(r, document["parameters"]) for r in records],
                                    [row for r in records for row in store_value_rows(r, joint_units)])
        return cls.open(document, ResultsStore.from_tables(steps, values))

    @classmethod
    def from_steps(cls, document: dict[str, Any], steps: list[Any], joint_units: dict[str, list[str]]) -> RunResults:
        """The results of a run's solved steps (:class:`~shiftsim.scenario.runner.StepResult`, their coordinates
        included) with its results document, with a store in memory."""
        from .writers import store_rows

        step_rows, value_rows = [], []
        for step in steps:
            step_row, rows = store_rows(step, document["parameters"], joint_units)
            step_rows.append(step_row)
            value_rows += rows
        return cls.open(document, ResultsStore.from_tables(*rows_tables(document["parameters"], step_rows, value_rows)))

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
        return self.select([key])[key]

    def select(self, keys: Iterable[Key]) -> dict[Key, np.ndarray]:
        """The arrays of several ``(entity, quantity)`` keys (names as for ``results[entity, quantity]``), read in
        one scan of the store (those not read before), by key as given; each is kept for the next call."""
        keys = list(keys)
        resolved = {key: self._resolve(key) for key in keys}
        unread = [full for full in dict.fromkeys(resolved.values()) if full not in self._arrays]
        if unread:
            self._read(unread)
        return {key: self._arrays[full] for key, full in resolved.items()}

    def _resolve(self, key: Key) -> Key:
        """The stored (entity, quantity) a key means (:meth:`full_name`); KeyError naming what there is."""
        catalog = self.store.catalog()
        if isinstance(key, tuple) and key in catalog:
            return key
        entity, quantity = (*key, "")[:2] if isinstance(key, tuple) else (key, "")
        entity = self.full_name(str(entity))
        if (entity, quantity) in catalog:
            return entity, quantity
        known = sorted({q for e, q in catalog if e == entity})
        if known:
            raise KeyError(f"{entity!r} has no quantity {quantity!r}; it has {', '.join(known)}")
        from ..errors import suggest

        raise KeyError(f"no entity {entity!r} in the results of {self.scenario!r}: "
                       f"{suggest(str(entity), {e for e, _ in catalog})}")

    def _read(self, keys: list[Key]) -> None:
        """Read the rows of ``keys`` (stored pairs) in one scan and keep each pair's (n_steps, ...) array."""
        import pyarrow as pa
        import pyarrow.compute as pc

        texts = pa.string()
        catalog = self.store.catalog()
        entities = sorted({entity for entity, _ in keys})
        quantities = sorted({quantity for _, quantity in keys})
        table = self.store.select(entities, quantities, columns=["step", "entity", "quantity", "component", "value"])
        # each row's key as a number: (entity, quantity) -> position in keys; -1 for the pairs not asked for
        lookup = np.full((len(entities), len(quantities)), -1)
        for k, (entity, quantity) in enumerate(keys):
            lookup[entities.index(entity), quantities.index(quantity)] = k
        row_entity = numpy_array(pc.index_in(table.column("entity"), value_set=arrow_array(entities, texts)))
        row_quantity = numpy_array(pc.index_in(table.column("quantity"), value_set=arrow_array(quantities, texts)))
        code = lookup[row_entity, row_quantity]
        order = np.argsort(code, kind="stable")  # rows grouped by key, in step order within each
        bounds = np.searchsorted(code[order], np.arange(len(keys) + 1))
        step = numpy_array(table.column("step"))
        component = table.column("component")
        value = numpy_array(table.column("value")).astype(float)  # null -> nan
        for k, key in enumerate(keys):
            rows = order[bounds[k]:bounds[k + 1]]
            components = catalog[key]
            column = pc.index_in(component.take(arrow_array(rows, pa.int64())), value_set=arrow_array(components, texts))
            array = np.full((len(self.steps), len(components)), np.nan)
            array[np.searchsorted(self.steps.index, step[rows]), numpy_array(column).astype(int)] = value[rows]
            if components == [""]:
                array = array[:, 0]
            elif components == ROTATION_COMPONENTS:
                array = array.reshape(-1, 3, 3)
            array.flags.writeable = False
            self._arrays[key] = array

    def __contains__(self, key: object) -> bool:
        return key in self.store.catalog()

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
        return iter(self.store.catalog())

    def keys(self) -> list[Key]:
        return list(self.store.catalog())

    def entities(self) -> list[str]:
        """Every entity name (joints, frames, bodies, machine pairs, Mdx machines and legs, contacts, machines),
        first written first."""
        return list(dict.fromkeys(entity for entity, _ in self.store.catalog()))

    def to_dataframe(self):
        """The tidy table of results.csv (``step, entity, quantity, component, value, unit``, angles in the
        scenario's ``angle_unit``) as a pandas DataFrame (pandas is imported here, only when called)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        from ..scenario.definition import angle_factor
        from .writers import STORE_ONLY

        table = self.store.select()
        table = table.filter(pc.invert(pc.is_in(table.column("quantity"), value_set=pa.array(STORE_ONLY))))
        angle_unit = self.document.get("angle_unit", "rad")
        if angle_unit != "rad":  # as results.csv shows angles: value * factor, unit the scenario's
            radians = pc.equal(table.column("unit"), "rad")
            table = table.set_column(4, "value", pc.if_else(radians, pc.multiply(table.column("value"),
                                                                                 angle_factor(angle_unit)),
                                                            table.column("value")))
            table = table.set_column(5, "unit", pc.if_else(radians, angle_unit, table.column("unit")))
        return table.to_pandas()

    def steps_dataframe(self):
        """The table of steps.csv (``step``, one column per swept parameter, ``status``, ``iterations``,
        ``stability``; swept angles in the scenario's ``angle_unit``) as a pandas DataFrame."""
        from ..scenario.definition import angle_factor
        from .writers import STEP_STATUS_COLUMNS

        frame = self.store.step_table().select(["step", *self.parameters, *STEP_STATUS_COLUMNS]).to_pandas()
        factor = angle_factor(self.document.get("angle_unit", "rad"))
        for name, unit in self.document.get("units", {}).get("parameters", {}).items():
            if unit == "rad" and name in frame:
                frame[name] = frame[name] * factor
        return frame

    def __str__(self) -> str:
        """A short summary: steps converged, the sweep's ranges, what was reported, capacity and collisions."""
        converged = int(np.sum(self.steps.status == "converged"))
        planned = self.document.get("steps_planned", len(self.steps))
        lines = [f"results of {self.scenario!r}: {converged} of {len(self.steps)} steps converged"
                 + (f" (run stopped; {planned} planned)" if self.partial else "")]
        units = self.document.get("units", {}).get("parameters", {})
        for name, values in self.steps.values.items():
            lines.append(f"  {name}: {np.nanmin(values):.4g} .. {np.nanmax(values):.4g} {units.get(name, '')}"
                         f" ({len(np.unique(values))} values)")
        failed = [int(i) for i, status in zip(self.steps.index, self.steps.status) if status != "converged"]
        if failed:
            shown = ", ".join(map(str, failed[:10])) + (", ..." if len(failed) > 10 else "")
            lines.append(f"  not converged: step {shown}")
        kinds: dict[str, set[str]] = {}
        for entity, quantity in self.store.catalog():
            kinds.setdefault(quantity, set()).add(entity)
        lines.append("  reported: " + ", ".join(f"{q} of {len(e)}" for q, e in kinds.items()))
        points = (self.document.get("capacity") or {}).get("points") or []
        rated = [p for p in points if p.get("rated_mass") is not None]
        if rated:
            least = min(rated, key=lambda p: p["rated_mass"])
            lines.append(f"  capacity: least rated {least['rated_mass'] / 1e3:.4g} t at step {least['step']} "
                         f"({least['governs']} governs) over {len(points)} lift points")
        pairs = [entity for entity, quantity in self.store.catalog() if quantity == "distance"]
        distances = [(pair, np.nanmin(self[pair, "distance"])) for pair in pairs[:5]
                     if np.any(np.isfinite(self[pair, "distance"]))]
        for pair, distance in distances:
            lines.append(f"  closest {pair}: {distance:.4g} m")
        return "\n".join(lines[:30])

    def __repr__(self) -> str:
        partial = ", partial" if self.partial else ""
        return (f"RunResults({self.scenario!r}, {len(self.steps)} steps{partial}, "
                f"{len(self.entities())} entities, {len(self.store.catalog())} arrays)")


__all__ = ["ROTATION_COMPONENTS", "RunResults", "StepTable"]
