"""What a run's results amount to: peaks per quantity and entity, the worst step, and how to label numbers.

Shared by the end-of-run summary, the plots and the report. Efforts are split by
what they are: coordinates of prismatic motion carry forces (N), revolute ones
torques (N m). A joint's *pin load* is the magnitude of the force its parent side
exerts on its child side (N, the force part of ``wrench_world``), loop-closing
joints included. Numbers are printed by :func:`number`, which never prints ``-0``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Iterable, Sequence

import numpy as np

from ..loads import CARRIES_NOTHING
from ..model import PRISMATIC
from ..scenario.definition import Scenario, angle_unit_of
from ..scenario.run import Run
from ..scenario.chain import BlockStep, StepBlock
from ..scenario.runner import StepResult
from ..scenario.sweep import Parameter

FORCE, TORQUE = "force", "torque"
NO_DEFLECTION = 1e-9  # m: deflections below this are rounding noise of rigid structures


@dataclass(frozen=True)
class Peak:
    """The largest magnitude of a quantity: its signed value, where (entity) and when (step)."""

    value: float
    entity: str
    step: StepResult


def number(value: float, digits: int = 4) -> str:
    """``value`` to ``digits`` significant digits; a value that rounds to zero prints ``0``, never ``-0``."""
    text = f"{value:.{digits}g}"
    return text[1:] if text.startswith("-") and float(text) == 0.0 else text


def effort_kinds(scenario: Scenario) -> dict[str, tuple[str, ...]]:
    """Per joint (scenario name): ``force`` or ``torque`` for each of its coordinates."""
    kinds = {}
    for machine in scenario.machines:
        model = machine.model
        for joint in model.joints:
            kinds[machine.name(joint.name)] = tuple(
                FORCE if model.node_kind[model.coordinate_node[c]] == PRISMATIC else TORQUE for c in joint.coordinates)
    return kinds


def efforts(scenario: Scenario, step: StepResult,
            kinds: dict[str, tuple[str, ...]] | None = None) -> dict[str, list[tuple[str, float]]]:
    """The step's tracked efforts by kind: ``{force: [(label, N)], torque: [(label, N m)]}``.

    A multi-coordinate joint gives one entry per coordinate, labelled ``name[i]``. ``kinds``:
    :func:`effort_kinds` of the scenario, when the caller has it (it is the same at every step).
    """
    kinds = effort_kinds(scenario) if kinds is None else kinds
    out: dict[str, list[tuple[str, float]]] = {FORCE: [], TORQUE: []}
    for name, joint in step.joints.items():
        values = joint["effort"] if isinstance(joint["effort"], list) else [joint["effort"]]
        for i, (kind, value) in enumerate(zip(kinds[name], values)):
            out[kind].append((name if len(values) == 1 else f"{name}[{i}]", float(value)))
    return out


def lengths(vectors: np.ndarray) -> np.ndarray:
    """The lengths (...) of 3-vectors (..., 3), the same number for a vector alone as inside a batch (a run's digest
    gets them step by step or a block of steps at a time)."""
    v = np.asarray(vectors, float)
    return np.sqrt(v[..., 0] * v[..., 0] + v[..., 1] * v[..., 1] + v[..., 2] * v[..., 2])


def deflections(step: StepResult) -> dict[str, float]:
    """Magnitude of every tracked frame's deflection at a step (m)."""
    return {name: float(lengths(frame["deflection"])) for name, frame in step.frames.items()}


def pin_forces(step: StepResult) -> dict[str, np.ndarray]:
    """Every tracked joint's reaction force at a step, world axes (3,), N: the parent side on the child side."""
    return {name: np.asarray(joint["wrench_world"][:3], float) for name, joint in step.joints.items()}


def _peaks(entries: Iterable[tuple[str, float, StepResult]],
           best: dict[str, Peak] | None = None) -> dict[str, Peak]:
    """Per entity, the entry of largest magnitude (the lowest step index on ties), in order of first appearance: a
    running maximum over ``entries`` (consumed one at a time, never held, in any step order), kept in ``best`` when
    given."""
    best = {} if best is None else best
    for entity, value, step in entries:
        held = best.get(entity)
        if held is None or abs(value) > abs(held.value) or abs(value) == abs(held.value) and step.index < held.step.index:
            best[entity] = Peak(value, entity, step)
    return best


def _block_peaks(names: Sequence[str], values: np.ndarray, steps: Sequence[StepResult], index: np.ndarray,
                 best: dict[str, Peak]) -> None:
    """:func:`_peaks` of the entries ``values`` (k, n) of k steps (their indices ``index`` (k,)) for n entities
    ``names``, folded into ``best``: per entity the largest magnitude, the lowest step index on ties."""
    if not len(steps) or not len(names):
        return
    size = np.abs(values)
    at = np.where(size == size.max(axis=0), index[:, None], np.iinfo(np.int64).max).argmin(axis=0)
    for n, name in enumerate(names):
        row = at[n]
        value, held = float(values[row, n]), best.get(name)
        if held is None or abs(value) > abs(held.value) or abs(value) == abs(held.value) and index[row] < held.step.index:
            best[name] = Peak(value, name, steps[row])


class _BlockRows:
    """Steps of a block by position among ``rows``, made when asked for (a peak holds its step; the others are not
    made)."""

    def __init__(self, block: StepBlock, rows: np.ndarray):
        self.block, self.rows = block, rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, k: int) -> BlockStep:
        return BlockStep(self.block, int(self.rows[k]))


def deflection_peaks(steps: Iterable[StepResult]) -> dict[str, Peak]:
    """Per tracked frame, its largest deflection magnitude (m) and where."""
    return _peaks((name, value, s) for s in steps for name, value in deflections(s).items())


def effort_peaks(scenario: Scenario, steps: Iterable[StepResult]) -> dict[str, dict[str, Peak]]:
    """Per kind (force, torque) and tracked joint coordinate, its largest |effort| (signed value, N or N m)."""
    kinds = effort_kinds(scenario)
    found: dict[str, dict[str, Peak]] = {FORCE: {}, TORQUE: {}}
    for s in steps:
        _add_efforts(scenario, s, kinds, found)
    return {kind: peaks for kind, peaks in found.items() if peaks}


def _add_efforts(scenario: Scenario, step: StepResult, kinds: dict[str, tuple[str, ...]],
                 found: dict[str, dict[str, Peak]]) -> None:
    """Fold a step's efforts into ``found`` (kind -> coordinate -> peak)."""
    for kind, entries in efforts(scenario, step, kinds).items():
        _peaks(((label, value, step) for label, value in entries), found[kind])


def pin_load_peaks(steps: Iterable[StepResult]) -> dict[str, Peak]:
    """Per tracked joint, its largest pin load (force magnitude, N) and where."""
    return _peaks((name, float(lengths(f)), s) for s in steps for name, f in pin_forces(s).items())


def force_level(scenario: Scenario, steps: Sequence[StepResult]) -> float:
    """The run's force scale: its largest tracked effort or pin load (N; N m as if at a 1 m lever). An effort below
    :data:`CARRIES_NOTHING` of it is round-off, even when every effort is as small (a joint nothing turns)."""
    return _level(effort_peaks(scenario, steps), pin_load_peaks(steps))


def _level(found: dict[str, dict[str, Peak]], pins: dict[str, Peak]) -> float:
    """The largest of the effort peaks ``found`` (kind -> coordinate -> peak) and the pin load peaks ``pins``."""
    return max([*(abs(p.value) for peaks in found.values() for p in peaks.values()), *(p.value for p in pins.values())],
               default=0.0)


def closest_approaches(steps: Sequence[StepResult]) -> dict[str, tuple[dict[str, Any], StepResult]]:
    """Per machine pair (``a - b``), its pair result (``distance`` m, ``in_collision``, ``closest``, ``points``)
    at the step of least distance, and that step; empty without collision checks."""
    best: dict[str, tuple[dict[str, Any], StepResult]] = {}
    for step in steps:
        for pair in step.collisions or []:
            key = f"{pair['a']} - {pair['b']}"
            if key not in best or pair["distance"] < best[key][0]["distance"]:
                best[key] = (pair, step)
    return best


def peak_deflection(steps: Sequence[StepResult]) -> Peak | None:
    return _largest(deflection_peaks(steps))


def _largest(peaks: dict[str, Peak]) -> Peak | None:
    return max(peaks.values(), key=lambda p: p.value, default=None)


def peak_efforts(scenario: Scenario, steps: Sequence[StepResult]) -> dict[str, Peak]:
    """Largest |effort| of each kind over every step and tracked joint."""
    return _largest_efforts(effort_peaks(scenario, steps))


def _largest_efforts(found: dict[str, dict[str, Peak]]) -> dict[str, Peak]:
    return {kind: max(peaks.values(), key=lambda p: abs(p.value)) for kind, peaks in found.items() if peaks}


def closest_step(steps: Sequence[StepResult]) -> StepResult | None:
    """The converged step where two machines come closest (collision scenarios), else None."""
    found = closest_approaches([s for s in steps if s.converged])
    return min(found.values(), key=lambda item: item[0]["distance"])[1] if found else None


def worst_step(scenario: Scenario, steps: Sequence[StepResult]) -> StepResult | None:
    """The converged step with the largest tracked deflection; when nothing deflects measurably
    (under :data:`NO_DEFLECTION`), the one with the largest tracked force, else torque. First on ties."""
    converged = [s for s in steps if s.converged]
    peak = peak_deflection(converged)
    if peak is not None and peak.value >= NO_DEFLECTION:
        return peak.step
    loads = peak_efforts(scenario, converged)
    for kind in (FORCE, TORQUE):
        if kind in loads:
            return loads[kind].step
    return converged[0] if converged else None


def carrying(peaks: dict[str, dict[str, Peak]], level: float | None = None) -> dict[str, dict[str, Peak]]:
    """The peaks above :data:`CARRIES_NOTHING` of ``level`` (default: the largest of all kinds; N and N m compared as
    if at a 1 m lever)."""
    if level is None:
        level = max((abs(p.value) for found in peaks.values() for p in found.values()), default=0.0)
    return {kind: {n: p for n, p in found.items() if abs(p.value) > CARRIES_NOTHING * level}
            for kind, found in peaks.items()}


def shown_value(scenario: Scenario, parameter: Parameter, value: float) -> tuple[float, str]:
    """A swept value as people read it, and its unit: angles in the scenario's ``angle_unit``."""
    if parameter.unit == "rad":
        return float(scenario.angle(value)), angle_unit_of(parameter.unit, scenario.angle_unit)
    return value, parameter.unit


def parameter_text(scenario: Scenario, step: StepResult) -> str:
    """``name = value unit, ...`` of a step's swept values ('' without a sweep); angles in the scenario's unit."""
    parts = []
    for p in scenario.sweep.parameters:
        value, unit = shown_value(scenario, p, step.parameters[p.name])
        parts.append(f"{p.name} = {number(value)}{'' if unit in ('-', '') else ' ' + unit}")
    return ", ".join(parts)


def step_text(scenario: Scenario, step: StepResult) -> str:
    values = parameter_text(scenario, step)
    return f"step {step.index}" + (f" ({values})" if values else "")


def force_unit(value: float, kind: str) -> tuple[float, str]:
    """The scale and unit an effort of this size reads best in: (1e-3, kN) from 10 kN on, else (1, N); N m alike."""
    unit = "N" if kind == FORCE else "N m"
    return (1e-3, f"k{unit}") if abs(value) >= 1e4 else (1.0, unit)


def force_text(value: float, kind: str) -> str:
    """An effort with a readable unit: N or kN, N m or kN m."""
    scale, unit = force_unit(value, kind)
    return f"{number(value * scale)} {unit}"


FAILED_SHOWN = 5  # failed steps the summary lists with their reasons


def _earlier(step: StepResult, held: StepResult | None) -> bool:
    return held is None or step.index < held.index


def _detached(held: Any, plain: dict[int, StepResult]) -> Any:
    """``held`` (a digest's field: steps, peaks, in dicts, lists and tuples) with every step that is not a plain
    :class:`StepResult` (a block-path step) replaced by a plain copy of what it reports, one copy per step (``plain``:
    those made so far, by id)."""
    if isinstance(held, StepResult):
        if type(held) is StepResult:
            return held
        if id(held) not in plain:
            plain[id(held)] = StepResult(**{f.name: getattr(held, f.name) for f in fields(StepResult)})
        return plain[id(held)]
    if isinstance(held, Peak):
        return Peak(held.value, held.entity, _detached(held.step, plain))
    if isinstance(held, dict):
        return {key: _detached(value, plain) for key, value in held.items()}
    if isinstance(held, (list, tuple)):
        return type(held)(_detached(value, plain) for value in held)
    return held


class RunDigest:
    """What a run's steps amount to, reduced one step at a time in any order (:meth:`add`), holding a bounded number
    of steps (those at a peak, the few the summary names), so a run needs not keep its steps for its summary and
    report: the peaks per frame, joint coordinate and pin (:func:`deflection_peaks`, :func:`effort_peaks`,
    :func:`pin_load_peaks`), each standing machine's least tipping margin, each Mdx platform's largest actuator force
    and legs out of range, the steps that tell the collision summary, the loop joints' pin reactions, the machine
    pairs' shapes in collision, and the failed steps. Ties go to the lower step index, so the order steps are added
    in does not matter (:meth:`of`: the digest of steps held in a list)."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.kinds = effort_kinds(scenario)
        self.count = 0
        self.failed: list[int] = []  # step indices, as added
        self.failures: dict[int, str] = {}  # failed step -> its machines' messages
        self.neutral: dict[int, str] = {}  # step -> its neutral directions
        self.first_failed: list[StepResult] = []  # the FAILED_SHOWN lowest indices
        self.joints: set[str] = set()  # the joints reported at some step
        self._deflection: dict[str, Peak] = {}
        self._efforts: dict[str, dict[str, Peak]] = {FORCE: {}, TORQUE: {}}
        self._pins: dict[str, Peak] = {}
        self.margins: dict[str, tuple[float, list[str], StepResult]] = {}
        self.actuators: dict[str, dict[str, Any]] = {}
        self._pin_reactions: dict[str, dict[str, Any]] = {}
        self.telling: dict[str, StepResult] = {}  # the steps the collision summary names
        self.touching: dict[str, dict[str, int]] = {}  # pair a - b -> the closest shapes in collision -> first step
        self.least: dict[str, tuple[float, int, list[str]]] = {}  # pair a - b -> least distance, its step, shapes
        self._block: StepBlock | None = None  # the block of the block-path steps added but not reduced yet
        self._rows: list[int] = []  # their rows in it
        self._kinds_at: dict[tuple, dict[str, tuple[list[int], list[str]]]] = {}  # _effort_columns, by labels

    # the peaks of block-path steps are reduced a block at a time, from its arrays, when next read
    deflection = property(lambda self: self._reduced()._deflection)
    efforts = property(lambda self: self._reduced()._efforts)
    pins = property(lambda self: self._reduced()._pins)
    pin_reactions = property(lambda self: self._reduced()._pin_reactions)

    @classmethod
    def of(cls, scenario: Scenario, steps: Iterable[StepResult]) -> RunDigest:
        digest = cls(scenario)
        for step in steps:
            digest.add(step)
        return digest

    def add(self, step: StepResult) -> None:
        """Reduce one more step. A step of the block path (:class:`~shiftsim.scenario.chain.BlockStep`) is reduced
        with the other steps of its block added next to it, from the block's arrays (no per-step dictionaries)."""
        if isinstance(step, BlockStep):
            if step.collisions:
                self._collisions(step)
            self.add_rows(step.block, step.row, step.row + 1)
            return
        self.count += 1
        self._reduce_block()  # the steps before this one first: peaks keep the order entities first appear in
        self.joints.update(step.joints)
        if step.failures:
            self.failures[step.index] = "; ".join(f"{f['machine']}: {f['message']}" for f in step.failures)
        if not step.converged:
            self.failed.append(step.index)
            self.first_failed = sorted([*self.first_failed, step], key=lambda s: s.index)[:FAILED_SHOWN]
        if step.neutral:
            self.neutral[step.index] = "; ".join(d for directions in step.neutral.values() for d in directions)
        _peaks(((name, value, step) for name, value in deflections(step).items()), self._deflection)
        _add_efforts(self.scenario, step, self.kinds, self._efforts)
        _peaks(((name, float(lengths(f)), step) for name, f in pin_forces(step).items()), self._pins)
        for machine_id, record in step.ground.items():
            margin, held = record["tipping_margin"], self.margins.get(machine_id)
            if margin is not None and (held is None or (margin, step.index) < (held[0], held[2].index)):
                self.margins[machine_id] = (margin, record["tipping_edge"], step)
        for machine_id, record in step.actuators.items():
            self._actuators(machine_id, record, step)
        for name, row in step.pin_reactions.items():
            self._pin_reaction(name, row, step.index)
        if step.collisions:
            self._collisions(step)

    def add_rows(self, block: StepBlock, start: int, stop: int) -> None:
        """Reduce rows ``start`` to ``stop - 1`` of ``block`` (steps of the block path), with the other rows of the
        block added next to them, from the block's arrays."""
        self.count += stop - start
        if block is not self._block:
            self._reduce_block()
            self._block = block
            self.joints.update(block.tracked_joints)
        self._rows.extend(range(start, stop))
        if len(self._rows) == len(block):  # the whole block (each of its steps is added once)
            self._reduce_block()

    def _reduced(self) -> RunDigest:
        """This digest with the block-path steps added so far reduced."""
        self._reduce_block()
        return self

    def _reduce_block(self) -> None:
        """Reduce the pending block-path steps (of one block) from their block's arrays, as :meth:`add` reduces a step
        from its dictionaries: the same peaks, value for value."""
        block, rows = self._block, np.array(self._rows, int)
        self._block, self._rows = None, []
        if not len(rows):
            return
        arrays, index = block.digest_arrays(rows), block.indices[rows].astype(np.int64)
        steps = _BlockRows(block, rows)
        _block_peaks(arrays.frames, lengths(arrays.deflections), steps, index, self._deflection)
        for kind, (columns, labels) in self._effort_columns(arrays.effort_labels).items():
            _block_peaks(labels, arrays.efforts[:, columns], steps, index, self._efforts[kind])
        _block_peaks(arrays.joints, lengths(arrays.joint_forces), steps, index, self._pins)
        peaks = [self._pin_reactions.setdefault(name, {"role": role, "force": -1.0, "moment": -1.0, "force_step": None,
                                                       "moment_step": None, "determinate": True})
                 for name, role in arrays.pins]
        for what, values in (("force", arrays.pin_forces), ("moment", arrays.pin_moments)):
            if not peaks:
                break
            tops = values.max(axis=0)
            firsts = np.where(values == tops, index[:, None], np.iinfo(np.int64).max).min(axis=0)
            for peak, top, first in zip(peaks, tops.tolist(), firsts.tolist()):
                if top > peak[what] or top == peak[what] and first < peak[what + "_step"]:
                    peak[what], peak[what + "_step"] = top, first

    def _effort_columns(self, labels: list[tuple[str, int]]) -> dict[str, tuple[list[int], list[str]]]:
        """Per kind (force, torque) the columns of a block's efforts (labelled ``labels``: joint, coordinate within
        it) that are of that kind, and their entities' names; worked out once per set of labels."""
        key = tuple(labels)
        if key not in self._kinds_at:
            self._kinds_at[key] = {}
            for kind in (FORCE, TORQUE):
                columns = [k for k, (joint, i) in enumerate(labels) if self.kinds[joint][i] == kind]
                self._kinds_at[key][kind] = (columns, [joint if len(self.kinds[joint]) == 1 else f"{joint}[{i}]"
                                                       for joint, i in (labels[k] for k in columns)])
        return self._kinds_at[key]

    def _actuators(self, machine_id: str, record: dict[str, Any], step: StepResult) -> None:
        held = self.actuators.setdefault(machine_id, {"solved": 0, "outside": 0, "first_outside": None, "peak": None})
        held["solved"] += 1
        if not all(record["in_range"]):
            held["outside"] += 1
            if _earlier(step, held["first_outside"]):
                held["first_outside"] = step
        for k, force in enumerate(record["forces"]):
            peak = held["peak"]
            if peak is None or abs(force) > abs(peak[0]) or abs(force) == abs(peak[0]) and (step.index, k) < peak[3]:
                held["peak"] = (force, k, step, (step.index, k))

    def _pin_reaction(self, name: str, row: dict[str, Any], index: int,
                      sizes: tuple[str, ...] = ("force", "moment")) -> None:
        peak = self._pin_reactions.setdefault(name, {"role": row["role"], "force": -1.0, "moment": -1.0, "force_step": None,
                                                    "moment_step": None, "determinate": True})
        for what in sizes:
            if row[what] > peak[what] or row[what] == peak[what] and index < peak[what + "_step"]:
                peak[what], peak[what + "_step"] = row[what], index
        peak["determinate"] = peak["determinate"] and row["determinate"]

    def _collisions(self, step: StepResult) -> None:
        from ..scenario.collisions import closest_pair, collision_settings

        margin = collision_settings(self.scenario).margin
        for kind, test in (("within", lambda d: 0.0 < d < margin), ("colliding", lambda d: d <= 0.0)):
            if any(test(pair["distance"]) for pair in step.collisions) and _earlier(step, self.telling.get(kind)):
                self.telling[kind] = step
        least, held = closest_pair(step.collisions)["distance"], self.telling.get("least")
        if held is None or (least, step.index) < (closest_pair(held.collisions)["distance"], held.index):
            self.telling["least"] = step
        for pair in step.collisions:
            name = f"{pair['a']} - {pair['b']}"
            if pair["distance"] <= 0.0:
                shapes = self.touching.setdefault(name, {})
                key = " / ".join(pair["closest"])
                shapes[key] = min(shapes.get(key, step.index), step.index)
            held_pair = self.least.get(name)
            if held_pair is None or (pair["distance"], step.index) < held_pair[:2]:
                self.least[name] = (pair["distance"], step.index, list(pair["closest"]))

    def merge(self, other: RunDigest) -> None:
        """Fold in ``other``, the digest of other steps of the same run (reduced in another process): as if its steps
        had been added here, whatever the order."""
        self._reduce_block()
        self.count += other.count
        self.joints |= other.joints
        self.failed += other.failed
        self.failures.update(other.failures)
        self.neutral.update(other.neutral)
        self.first_failed = sorted([*self.first_failed, *other.first_failed], key=lambda s: s.index)[:FAILED_SHOWN]
        for mine, theirs in ((self.deflection, other.deflection), (self.pins, other.pins),
                             *((self.efforts.setdefault(kind, {}), peaks) for kind, peaks in other.efforts.items())):
            _peaks(((peak.entity, peak.value, peak.step) for peak in theirs.values()), mine)
        for machine_id, (margin, edge, step) in other.margins.items():
            held = self.margins.get(machine_id)
            if held is None or (margin, step.index) < (held[0], held[2].index):
                self.margins[machine_id] = (margin, edge, step)
        for machine_id, record in other.actuators.items():
            held = self.actuators.setdefault(machine_id, {"solved": 0, "outside": 0, "first_outside": None, "peak": None})
            held["solved"] += record["solved"]
            held["outside"] += record["outside"]
            if record["first_outside"] is not None and _earlier(record["first_outside"], held["first_outside"]):
                held["first_outside"] = record["first_outside"]
            peak, mine = record["peak"], held["peak"]
            if peak is not None and (mine is None or abs(peak[0]) > abs(mine[0])
                                     or abs(peak[0]) == abs(mine[0]) and peak[3] < mine[3]):
                held["peak"] = peak
        for name, row in other.pin_reactions.items():  # its peaks, each as a row at its step
            for what in ("force", "moment"):
                self._pin_reaction(name, row, row[what + "_step"], (what,))
        for kind in ("within", "colliding"):
            if kind in other.telling and _earlier(other.telling[kind], self.telling.get(kind)):
                self.telling[kind] = other.telling[kind]
        if "least" in other.telling:
            from ..scenario.collisions import closest_pair

            step, held = other.telling["least"], self.telling.get("least")
            if held is None or (closest_pair(step.collisions)["distance"], step.index) < \
                    (closest_pair(held.collisions)["distance"], held.index):
                self.telling["least"] = step
        for name, shapes in other.touching.items():
            mine = self.touching.setdefault(name, {})
            for key, index in shapes.items():
                mine[key] = min(mine.get(key, index), index)
        for name, least in other.least.items():
            if name not in self.least or least[:2] < self.least[name][:2]:
                self.least[name] = least

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (to travel from a worker to the run) without the scenario (its compiled models; the receiver sets
        its own), its block-path steps reduced, each held step as a plain :class:`StepResult` (a block-path step would
        drag its whole block)."""
        self._reduce_block()
        return {key: _detached(value, {}) for key, value in self.__dict__.items() if key != "scenario"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, scenario=None)

    def shapes_in_collision(self, pair: str) -> list[str]:
        """The closest shapes of ``pair`` (``a - b``) at its steps in collision, distinct, by their first step."""
        shapes = self.touching.get(pair, {})
        return sorted(shapes, key=shapes.__getitem__)

    def effort_peaks(self) -> dict[str, dict[str, Peak]]:
        """As :func:`effort_peaks` of the steps added."""
        return {kind: peaks for kind, peaks in self.efforts.items() if peaks}

    def peak_deflection(self) -> Peak | None:
        return _largest(self.deflection)

    def peak_efforts(self) -> dict[str, Peak]:
        """Largest |effort| of each kind over every step and tracked joint."""
        return _largest_efforts(self.efforts)

    def force_level(self) -> float:
        """The run's force scale (:func:`force_level`)."""
        return _level(self.efforts, self.pins)


def result_lines(scenario: Scenario, steps: list[StepResult] | RunDigest) -> list[str]:
    """What the run found (its steps, or their :class:`RunDigest`): peak deflection, forces and torques, actuators,
    the least tipping margin of each machine standing on the ground, collisions, failed steps."""
    digest = steps if isinstance(steps, RunDigest) else RunDigest.of(scenario, steps)
    lines = []
    deflection = digest.peak_deflection()
    if deflection is not None and deflection.value < NO_DEFLECTION:
        lines.append("  peak deflection  none measurable (< 1 nm) at the tracked frames")
    elif deflection is not None:
        lines.append(f"  peak deflection  {number(deflection.value * 1e3)} mm at {deflection.entity}, "
                     f"{step_text(scenario, deflection.step)}")
    found = digest.peak_efforts()
    # round-off is not a peak: an effort below CARRIES_NOTHING of the run's force level (pin loads included)
    carried = carrying({kind: {peak.entity: peak} for kind, peak in found.items()}, digest.force_level())
    for kind, peak in found.items():
        if carried[kind]:
            lines.append(f"  peak {kind:11s} {force_text(peak.value, kind)} at {peak.entity}, "
                         f"{step_text(scenario, peak.step)}")
    if found and not any(carried.values()):
        lines.append("  peak effort      none: every tracked joint's effort is 0 or round-off")
    lines += actuator_lines(scenario, digest)
    for machine_id, (margin, edge, step) in digest.margins.items():
        lines.append(f"  least margin    {number(margin)} m to tipping, {machine_id} over {' - '.join(edge)}, "
                     f"{step_text(scenario, step)}")
    if "collision" in (scenario.document or {}):
        from ..scenario.collisions import collision_summary

        lines.append(f"  collisions      {collision_summary(scenario, list(digest.telling.values()))}")
    for step in digest.first_failed:
        lines.append(f"  FAILED {step_text(scenario, step)}: {_clip(digest.failures.get(step.index, ''), 160)}")
    if len(digest.failed) > FAILED_SHOWN:
        lines.append(f"  ... and {len(digest.failed) - FAILED_SHOWN} more failed steps (see results.json)")
    return lines


def count_line(scenario: Scenario, steps: list[StepResult] | RunDigest) -> str:
    digest = steps if isinstance(steps, RunDigest) else RunDigest.of(scenario, steps)
    count, failed = digest.count, len(digest.failed)
    return f"{scenario.name}: {count} step" + ("s" if count != 1 else "") + f", {count - failed} converged, {failed} failed"


def capacity_lines(document: dict[str, Any] | None) -> list[str]:
    """The summary's capacity line from a run's capacity document (None: the scenario has no capacity analysis, or
    the run was stopped): the smallest rated load over the lift points and where, or why there is none."""
    if document is None:
        return []
    if "error" in document:
        return [f"  capacity        not computed: {document['error']}"]
    invalid = [p for p in document["points"] if not p["valid"]]
    lines = [f"  capacity        {document['load']}: lift point INVALID, no rating (step {p['step']}: "
             f"{'; '.join(p['invalid'])})" for p in invalid[:3]]
    if len(invalid) > 3:
        lines.append(f"                  ... and {len(invalid) - 3} more invalid lift points (capacity.csv)")
    rated = [p for p in document["points"] if p["rated_mass"] is not None]
    if not rated:
        return [f"  capacity        {document['load']}: no lift point has a rated load", *lines]
    least = min(rated, key=lambda p: p["rated_mass"])
    return [f"  capacity        {document['load']}: rated {least['rated_mass'] / 1000:.3g} t at least (step "
            f"{least['step']}: radius {least['radius']:.2f} m, height {least['height']:.2f} m, {least['governs']} "
            f"governs) over {len(document['points'])} lift points; capacity.csv", *lines]


def summary_lines(run: Run, folder: str, files: list[str], how: str, skipped: dict[str, str],
                  digest: RunDigest | None = None) -> list[str]:
    """The one-screen report printed at the end of ``shiftsim run``; ``skipped``: the plots not drawn, file name ->
    why (:func:`shiftsim.plots.registry.skipped_plots`); ``digest``: the run's steps reduced (by default from the
    steps it holds)."""
    scenario = run.scenario
    digest = RunDigest.of(scenario, run.steps) if digest is None else digest
    lines = [f"{count_line(scenario, digest)} ({how})", *result_lines(scenario, digest), *capacity_lines(run.capacity)]
    for name, reason in skipped.items():
        lines.append(f"  not plotted     {name}: {reason}")
    lines.append(f"  outputs in {folder}: {', '.join(files)}")
    return lines


def actuator_lines(scenario: Scenario, digest: RunDigest) -> list[str]:
    """Per Mdx platform: its largest actuator force, and the steps with legs outside the actuator range."""
    lines = []
    for machine in scenario.machines:
        held = digest.actuators.get(machine.id)
        if machine.vocabulary.kind != "mdx" or held is None:
            continue
        value, k, step, _ = held["peak"]
        low, high = (1e3 * v for v in machine.vocabulary.limits)
        reach = (f"legs outside actuatorLen [{number(low)}, {number(high)}] mm at {held['outside']} of {held['solved']} "
                 f"steps (first: {step_text(scenario, held['first_outside'])})" if held["outside"]
                 else f"all legs within actuatorLen [{number(low)}, {number(high)}] mm")
        lines.append(f"  actuators       {machine.id}: peak {force_text(value, FORCE)} at "
                     f"{machine.name(machine.vocabulary.legs[k])}, {step_text(scenario, step)}; {reach}")
    return lines


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."
