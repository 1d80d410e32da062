"""One chain of a sweep's steps: in blocks through the compiled continuation where the scenario allows, step by step
otherwise.

The *block path* hands up to :data:`BLOCK_STEPS` steps of a chain at a time to the core's continuation
(:func:`shiftsim.statics.solve_chain`: every step from the previous equilibrium, its loops closed, loaded and
reference solves, joint loads, all in C), machine by machine, and computes what the steps report for the whole
block with numpy: tracked joints' positions, deflections, efforts and wrenches, tracked frames' world positions and
deflections, bodies' world poses (one forward-kinematics pass per block, the placement applied as one matrix
product), pin reactions and coordinates. Its steps are :class:`BlockStep` objects: rows of the block's arrays, whose
dictionaries (joints, frames, bodies, pin reactions) are built only when read; the results store takes their values
straight from the block (``BlockStep.store_values``). The core solves the next blocks on a thread of its own while
the steps of the blocks before are handed on here (the core lets the GIL go), so what the steps' Python costs overlaps
the solve; the steps reach the caller in the same order.

A step the block path does not report itself goes through :func:`~.runner.solve_step` from the same states, which
gives it its messages: a step of any machine whose loops do not close, whose independent loop equations change,
that does not converge, has no equilibrium, is neutral, or whose loop forces are statically indeterminate (the
minimum-norm split; :func:`~shiftsim.loads.statically_open`: the core checks the held coordinates' share at every
step, this module the share of rigid joints a loop passes through, for the machines that have one). The chain then goes on in blocks from that step's equilibria (a block after such a step starts
with one step and doubles, so a chain where every step needs the step path wastes at most one step per step).
Large-motion remarks are kept, with the step path's words.

The block path applies to scenarios whose swept parameters are joints and load factors (no time axis: rates need
the previous steps' equilibria in Python) and whose machines neither stand on the ground nor are Mdx platforms nor
have coupled coordinates nor change their model or placement with the sweep (:func:`block_path_problem` says
which); the others run step by step. Both give the same numbers (to round-off; tests/scenario/test_chain_blocks.py).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Iterator, NamedTuple, Sequence

import numpy as np

from ..kinematics import Poses, forward
from ..loads import rigid_joints_in_loops, statically_open
from ..model import REVOLUTE
from ..solution import _large_motion, loop_joints
from ..statics import STABILITY, Load, applied, free_coordinates, resolve_prescribed, solve_chain
from .definition import Scenario
from .machines import Machine
from .runner import StepCallback, StepResult, _machine_loads, _MachineChainState, _set_values, machine_values, solve_step

BLOCK_STEPS = 512  # steps per block at most: its arrays stay a few MB, and a part file's worth reaches the store soon
CHAINS_AT_ONCE = 8  # chains whose blocks go to the core together (on its threads), at most


def block_path_problem(scenario: Scenario) -> str | None:
    """Why the scenario's steps cannot go through the block path (None when they can; see the module docstring)."""
    kinds = {p.kind for p in scenario.sweep.parameters}
    if "time" in kinds:
        return "a time sweep (dampers and friction take rates from the previous steps)"
    other = sorted(kinds - {"joint", "load"})
    if other:
        return f"swept {', '.join(other)} values (the block path sweeps joints and load factors)"
    first = {p.name: float(v) for p, v in zip(scenario.sweep.parameters, scenario.sweep.table()[0])}
    for machine in scenario.machines:
        if machine.support is not None:
            return f"machine {machine.id!r} stands on the ground"
        if machine.model.couplings:
            return f"machine {machine.id!r} has coupled coordinates"
        setup = machine.setup(machine_values(scenario, machine, first))
        if setup.actuators is not None or setup.legs:
            return f"machine {machine.id!r} is an Mdx platform"
        if setup.model is not machine.model or not _same_placement(setup.placement, machine.placement):
            return f"machine {machine.id!r} changes its model or placement with the sweep"
    return None


def _same_placement(a, b) -> bool:
    return bool(np.array_equal(a.rotation, b.rotation) and np.array_equal(a.position, b.position))


@dataclass(frozen=True)
class _MachinePlan:
    """What a machine's block needs, fixed for the chain: its prescribed coordinates and their per-step values
    (``template`` (nq,) with the held values, ``swept`` (coordinate, table column) pairs), loads in its model frame
    (factors by name), gravity in its model frame, and what it reports (tracked joints, frames, bodies; pin-reaction
    joints)."""

    machine: Machine
    prescribed: np.ndarray
    free: np.ndarray
    template: np.ndarray
    swept: tuple[tuple[int, int], ...]
    loads: tuple[tuple[Any, int | None], ...]  # (Load in the model frame, its factor's table column or None)
    gravity: np.ndarray
    joints: tuple[int, ...]
    frames: tuple[int, ...]
    bodies: tuple[int, ...]
    bodies_at: slice | np.ndarray  # the bodies as an index into a pose array's body axis (a slice when consecutive)
    pins: tuple[tuple[int, str], ...]  # (joint, role) in model order
    revolute: np.ndarray  # (nf,) of the free coordinates
    rigid_in_loops: bool  # a rigid joint some loop passes through (whose share of loop forces the core does not check)
    joints_at: np.ndarray  # (n,) the joints whose loads a block puts in their frames: the tracked ones, then other pins
    pins_at: np.ndarray  # (p,) where the pins' joints are in joints_at
    joint_columns: np.ndarray  # the tracked joints' values among [q, q - q_reference, effort, loads in joint frames
    #                            (6 per joints_at), loads in world axes (6 per tracked joint)] (_machine_columns)
    pin_extras: np.ndarray  # the pins' extras among [force sizes (p), moment sizes (p), effort (nq)]


def _plan(scenario: Scenario, machine: Machine) -> _MachinePlan:
    model = machine.model
    parameters = scenario.sweep.parameters
    first = {p.name: float(v) for p, v in zip(parameters, scenario.sweep.table()[0])}
    setup = machine.setup(machine_values(scenario, machine, first))
    template, prescribed = resolve_prescribed(model, _set_values(machine, setup.joints), [])
    swept = tuple((coordinate, column) for column, p in enumerate(parameters)
                  if p.kind == "joint" and p.machine == machine.id for coordinate in model.coordinates_of(p.target))
    columns = {p.target: column for column, p in enumerate(parameters) if p.kind == "load"}
    named = [load.name for load in scenario.loads if load.machine == machine.id]  # _machine_loads' order
    loads = tuple((load, columns.get(name)) for load, name in
                  zip(_machine_loads(scenario, machine, machine.placement, {}), named))
    free = free_coordinates(model, prescribed)
    track = scenario.track
    wanted = {kind: track.local(kind, machine) for kind in ("joints", "frames", "bodies")}
    held = set(prescribed.tolist())
    in_loops = loop_joints(model)
    pins = tuple((j, "held actuator" if joint.coordinates and set(joint.coordinates) <= held else "loop")
                 for j, joint in enumerate(model.joints)
                 if (joint.coordinates and set(joint.coordinates) <= held) or j in in_loops)
    joints = tuple(j for j, joint in enumerate(model.joints) if wanted["joints"] is None or joint.name in wanted["joints"])
    joints_at = [*joints, *(j for j, _ in pins if j not in joints)]
    nq, loaded = model.nq, 3 * model.nq + 6 * len(joints_at)
    joint_columns = []
    for k, j in enumerate(joints):
        coordinates = list(model.joints[j].coordinates)
        joint_columns += [*coordinates, *(nq + c for c in coordinates), *(2 * nq + c for c in coordinates),
                          *range(3 * nq + 6 * k, 3 * nq + 6 * k + 6), *range(loaded + 6 * k, loaded + 6 * k + 6)]
    pin_extras = []
    for k, (j, _) in enumerate(pins):
        pin_extras += [k, len(pins) + k, *(2 * len(pins) + c for c in model.joints[j].coordinates)]
    bodies = tuple(b for b, name in enumerate(model.body_names)
                   if b and (wanted["bodies"] is None or name in wanted["bodies"]))
    consecutive = bodies == tuple(range(bodies[0], bodies[-1] + 1)) if bodies else True
    return _MachinePlan(
        machine, prescribed, free, template, swept, loads, machine.placement.vector_to_model(scenario.gravity), joints,
        tuple(f for f, name in enumerate(model.frame_names) if wanted["frames"] is None or name in wanted["frames"]),
        bodies, slice(bodies[0], bodies[-1] + 1) if bodies and consecutive else np.array(bodies, dtype=np.int64),
        pins, model.node_kind[model.coordinate_node[free]] == REVOLUTE, bool(rigid_joints_in_loops(model)),
        np.array(joints_at, dtype=np.int64), np.array([joints_at.index(j) for j, _ in pins], dtype=np.int64),
        np.array(joint_columns, dtype=np.int64), np.array(pin_extras, dtype=np.int64))


class _BlockLayout:
    """Where a block's numbers are in its rows, the same for every block of a run's machines (their plans, in order):
    per machine its columns of each group of :attr:`StepBlock.values` (joints, frames, bodies, pins, q, q_ref: each
    group over every machine, machine after machine) and of :attr:`StepBlock.extras` (``spans``); ``width`` and
    ``extra_width`` the rows' lengths; ``items`` and ``offsets`` as :attr:`StepBlock.items` and
    :attr:`StepBlock._offsets` give them; the tracked ``joints``, ``effort_labels``, ``frames`` and ``pins`` (scenario
    names) and the ``digest_*`` columns :meth:`StepBlock.digest_arrays` reads. Built once per run (and per set of
    plans a process attaches blocks to), not per block."""

    def __init__(self, plans: Sequence[_MachinePlan]):
        def count(machine: Machine, joint: int) -> int:
            return len(machine.model.joints[joint].coordinates)

        widths = {  # per group, per plan: its columns of values
            "joints": [sum(3 * count(p.machine, j) + 12 for j in p.joints) for p in plans],
            "frames": [6 * len(p.frames) for p in plans], "bodies": [12 * len(p.bodies) for p in plans],
            "pins": [6 * len(p.pins) for p in plans], "q": [p.machine.model.nq for p in plans],
            "q_ref": [p.machine.model.nq for p in plans]}
        starts: dict[str, list[slice]] = {}
        at = 0
        for group, group_widths in widths.items():
            starts[group] = []
            for width in group_widths:
                starts[group].append(slice(at, at + width))
                at += width
        self.width = at
        extra = [sum(2 + count(p.machine, j) for j, _ in p.pins) for p in plans]
        edges = np.cumsum([0, *extra])
        self.extra_width = int(edges[-1])
        self.spans = tuple(_MachineSpans(*(starts[group][k] for group in widths), slice(int(edges[k]), int(edges[k + 1])))
                           for k in range(len(plans)))
        kinds = (("joint", lambda p: [(j, count(p.machine, j), "") for j in p.joints], lambda c: 3 * c + 12),
                 ("frame", lambda p: [(f, 0, "") for f in p.frames], lambda c: 6),
                 ("body", lambda p: [(b, 0, "") for b in p.bodies], lambda c: 12),
                 ("pin", lambda p: [(j, count(p.machine, j), role) for j, role in p.pins], lambda c: 6))
        self.offsets: dict[str, list[tuple[Machine, int, int, str, int, int]]] = {}
        items = []
        at = extra_at = 0
        for kind, of, width in kinds:  # each kind over every machine, machine after machine: as the values
            self.offsets[kind] = []
            for plan in plans:
                for index, coordinates, role in of(plan):
                    self.offsets[kind].append((plan.machine, index, coordinates, role, at, extra_at))
                    items.append((kind, plan.machine.id, index, coordinates, role))
                    at += width(coordinates)
                    extra_at += 2 + coordinates if kind == "pin" else 0
        self.items = tuple(items)
        joints = [(machine.name(machine.model.joints[index].name), coordinates, at)
                  for machine, index, coordinates, _, at, _ in self.offsets["joint"]]
        self.joints = [name for name, _, _ in joints]
        self.effort_labels = [(name, k) for name, coordinates, _ in joints for k in range(coordinates)]
        self.frames = [machine.name(machine.model.frame_names[index]) for machine, index, *_ in self.offsets["frame"]]
        self.pins = [(machine.name(machine.model.joints[index].name), role)
                     for machine, index, _, role, _, _ in self.offsets["pin"]]
        # the digest's columns of values (efforts, joint forces, frames' deflections) and of extras (pin sizes)
        efforts = [at + 2 * coordinates + k for _, coordinates, at in joints for k in range(coordinates)]
        forces = [at + 3 * coordinates + 6 + i for _, coordinates, at in joints for i in range(3)]
        deflections = [at + 3 + i for *_, at, _ in self.offsets["frame"] for i in range(3)]
        self.digest_values = np.array([*efforts, *forces, *deflections], dtype=np.int64)
        self.digest_splits = (len(efforts), len(efforts) + len(forces))
        pin_columns = [extra for *_, extra in self.offsets["pin"]]
        self.digest_extras = np.array([*pin_columns, *(column + 1 for column in pin_columns)], dtype=np.int64)


class _MachineSpans(NamedTuple):
    """One machine's columns in a block's rows: of each group of values, and of the extras."""

    joints: slice
    frames: slice
    bodies: slice
    pins: slice
    q: slice
    q_ref: slice
    extras: slice


@dataclass
class _MachineBlock:
    """One machine's solved block: the chain's arrays (:class:`~shiftsim.statics.ChainResult`) it reports from."""

    plan: _MachinePlan | str  # the machine's id while the block travels between processes (see StepBlock.attach)
    q: np.ndarray            # (S, nq)
    q_reference: np.ndarray  # (S, nq)
    wrench: np.ndarray | None    # (S, J, 6) model axes (None once the block's values are computed)
    rotation: np.ndarray | None  # (S, J, 3, 3) model <- child-side joint frame (likewise)
    effort: np.ndarray | None    # (S, nq) (likewise)
    iterations: np.ndarray   # (S,)
    residual: np.ndarray     # (S,)
    stability: np.ndarray    # (S,)
    remarks: dict[int, list[str]]  # row -> the step's remarks (large motion), rows with none left out


class StepBlock:
    """Consecutive plain steps of one chain, every machine solved by the block path (see the module docstring).

    ``indices`` (S,) the steps' indices; ``table`` (S, P) their swept values; per machine a :class:`_MachineBlock`;
    ``layout`` where the numbers are in a row (:class:`_BlockLayout`, shared by the run's blocks).
    ``values`` (S, V): every number the store holds for a step, in its row order (joints' position, deflection,
    effort, wrench_joint, wrench_world; frames' position and deflection; bodies' position and rotation; pin forces and
    moments; coordinates and reference coordinates: machine after machine within each), SI units; a step's names
    are those of :meth:`BlockStep.as_dict`'s store rows (the stream takes them once per block).
    """

    def __init__(self, scenario: Scenario, indices: np.ndarray, table: np.ndarray, machines: list[_MachineBlock],
                 layout: _BlockLayout):
        self.scenario, self.indices, self.table, self.machines, self.layout = scenario, indices, table, machines, layout
        self.iterations = sum(m.iterations for m in machines)
        self.residual = np.max([m.residual for m in machines], axis=0)
        rank = np.max([_verdict_ranks(m.stability) for m in machines], axis=0)
        self.stability = np.array(STABILITY)[rank]

    def __len__(self) -> int:
        return len(self.indices)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the scenario, the layout and the machines' plans (compiled models): a block sent back from a
        worker process is :meth:`attach`-ed to the receiving process's scenario."""
        state = {key: value for key, value in self.__dict__.items() if key not in ("scenario", "layout")}
        state["machines"] = [replace(m, plan=m.plan.machine.id) for m in self.machines]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, scenario=None, layout=None)

    def attach(self, scenario: Scenario, plans: dict[str, _MachinePlan],
               layouts: dict[tuple[str, ...], _BlockLayout]) -> None:
        """Give a block that arrived from another process this process's ``scenario``, plans (by machine id) and
        layout (by the machines' ids), filling ``plans`` and ``layouts`` as needed."""
        if self.scenario is not None:
            return
        by_id = {machine.id: machine for machine in scenario.machines}
        for m in self.machines:
            if m.plan not in plans:
                plans[m.plan] = _plan(scenario, by_id[m.plan])
            m.plan = plans[m.plan]
        ids = tuple(m.plan.machine.id for m in self.machines)
        if ids not in layouts:
            layouts[ids] = _BlockLayout([m.plan for m in self.machines])
        self.layout, self.scenario = layouts[ids], scenario

    def steps(self) -> list[BlockStep]:
        """The block's steps, in order (their dictionaries are built when read)."""
        return [BlockStep(self, row) for row in range(len(self))]

    @cached_property
    def _columns(self) -> tuple[np.ndarray, np.ndarray]:
        """The block's numbers: ``values`` (S, V) as the store holds them (see the class docstring) and ``extras``
        (S, E) what results.json adds (per pin reaction its force and moment sizes and its efforts), where the layout
        puts them. Computed once (one forward-kinematics pass per machine over the block for q and, with tracked frames,
        for q_reference), written in place; the joint loads' arrays are let go then (the block keeps only these numbers
        and the coordinates)."""
        steps, layout = len(self), self.layout
        values, extras = np.empty((steps, layout.width)), np.empty((steps, layout.extra_width))
        for m, spans in zip(self.machines, layout.spans):
            _machine_columns(m, spans, values, extras)
            m.wrench = m.rotation = m.effort = None  # in values and extras now
        return values, extras

    @property
    def items(self) -> tuple[tuple[str, str, int, int, str], ...]:
        """What a row of :attr:`values` holds, item by item in its order: (kind, machine id, model index, coordinates'
        count, pin role); blocks with the same items name their values alike."""
        return self.layout.items

    @property
    def values(self) -> np.ndarray:
        """(S, V) every number the store holds for each step, in its row order (see the class docstring)."""
        return self._columns[0]

    @property
    def extras(self) -> np.ndarray:
        """(S, E) what results.json's pin reactions add to :attr:`values` (per pin reaction its force's and moment's
        sizes and its efforts), in the order of :meth:`entries`' ``more``."""
        return self._columns[1]

    @property
    def _offsets(self) -> dict[str, list[tuple[Machine, int, int, str, int, int]]]:
        """Per kind (joint, frame, body, pin) its items with where their numbers start in a row of values and of
        extras: (machine, model index, coordinates' count, pin role, first value column, first extra column)."""
        return self.layout.offsets

    @property
    def tracked_joints(self) -> list[str]:
        """The tracked joints' scenario names (those of every step's ``joints``)."""
        return self.layout.joints

    def digest_arrays(self, rows: np.ndarray) -> BlockDigestArrays:
        """What a run's digest reduces (:class:`~shiftsim.analysis.digest.RunDigest`) at the block's ``rows`` (k,), as
        arrays: the same numbers as the steps' ``joints``, ``frames`` and ``pin_reactions`` dictionaries hold (only
        the columns they are in are read)."""
        layout, (values, extras) = self.layout, self._columns
        every = len(rows) == len(self) and bool((rows == np.arange(len(self))).all())
        numbers, sizes = values[:, layout.digest_values], extras[:, layout.digest_extras]
        if not every:
            numbers, sizes = numbers[rows], sizes[rows]
        efforts, forces, deflections = np.split(numbers, layout.digest_splits, axis=1)
        pin_forces, pin_moments = np.split(sizes, 2, axis=1)
        return BlockDigestArrays(layout.joints, layout.effort_labels, efforts,
                                 forces.reshape(len(rows), len(layout.joints), 3), layout.frames,
                                 deflections.reshape(len(rows), len(layout.frames), 3), layout.pins, pin_forces,
                                 pin_moments)

    def reports(self, row: int, kind: str) -> dict[str, dict[str, Any]]:
        """Step ``row``'s ``kind`` (joint, frame, body, pin) entries as results.json has them, by scenario name."""
        values, extras = self._columns
        return self.entries(kind, values[row].tolist(), extras[row].tolist())

    def entries(self, kind: str, numbers: Sequence[Any], more: Sequence[Any]) -> dict[str, dict[str, Any]]:
        """The ``kind`` entries of a step whose numbers are ``numbers`` (a row of :attr:`values`) and ``more`` (a row of
        the extras), as :meth:`reports` gives them: any sequences whose items and slices are the row's (the results
        writer passes placeholders, to write a block's steps at once)."""
        out = {}
        if kind == "joint":
            for machine, index, count, _, at, _ in self._offsets[kind]:
                joint = machine.model.joints[index]
                position, deflection, effort = (numbers[at + k * count: at + (k + 1) * count] for k in range(3))
                at += 3 * count
                scalar = count == 1
                out[machine.name(joint.name)] = {
                    "type": joint.source_type, "position": position[0] if scalar else position,
                    "deflection": deflection[0] if scalar else deflection, "effort": effort[0] if scalar else effort,
                    "wrench_joint": numbers[at:at + 6], "wrench_world": numbers[at + 6:at + 12], "determinate": True}
        elif kind == "frame":
            for machine, index, _, _, at, _ in self._offsets[kind]:
                out[machine.name(machine.model.frame_names[index])] = {"position": numbers[at:at + 3],
                                                                       "deflection": numbers[at + 3:at + 6]}
        elif kind == "body":
            for machine, index, _, _, at, _ in self._offsets[kind]:
                out[machine.name(machine.model.body_names[index])] = {
                    "position": numbers[at:at + 3], "rotation": [numbers[at + 3 + 3 * i:at + 6 + 3 * i] for i in range(3)]}
        else:
            for machine, index, count, role, at, extra in self._offsets[kind]:
                joint = machine.model.joints[index]
                out[machine.name(joint.name)] = {
                    "role": role, "type": joint.source_type, "force_joint": numbers[at:at + 3],
                    "moment_joint": numbers[at + 3:at + 6], "force": more[extra], "moment": more[extra + 1],
                    "effort": more[extra + 2:extra + 2 + count], "determinate": True}
        return out


@dataclass(frozen=True)
class BlockDigestArrays:
    """A block's numbers a run's digest reduces, at k of its steps (:meth:`StepBlock.digest_arrays`), by scenario name:
    ``joints`` the tracked joints; ``efforts`` (k, n) N or N m, one column per tracked joint coordinate, labelled by
    ``effort_labels`` (joint, coordinate within it); ``joint_forces`` (k, J, 3) N, world axes: the force part of each
    tracked joint's ``wrench_world``; ``frames`` and ``deflections`` (k, F, 3) m, world axes: the tracked frames'
    deflections; ``pins`` (name, role) and ``pin_forces``, ``pin_moments`` (k, P) N and N m: the pin reactions'
    magnitudes."""

    joints: list[str]
    effort_labels: list[tuple[str, int]]
    efforts: np.ndarray
    joint_forces: np.ndarray
    frames: list[str]
    deflections: np.ndarray
    pins: list[tuple[str, str]]
    pin_forces: np.ndarray
    pin_moments: np.ndarray


def _verdict_ranks(verdicts: np.ndarray) -> np.ndarray:
    """The rank (S,) in :data:`~shiftsim.statics.STABILITY` of each of ``verdicts`` (S,) (the block's steps' verdicts,
    each one of them)."""
    ranks = np.full(len(verdicts), -1)
    for rank, verdict in enumerate(STABILITY):
        ranks[verdicts == verdict] = rank
    if (ranks < 0).any():
        raise ValueError(f"verdicts {sorted(set(verdicts[ranks < 0].tolist()))}: expected one of {STABILITY}")
    return ranks


def _in_joint_frames(m: _MachineBlock) -> np.ndarray:
    """Every joint's force and moment (S, J, 6) over the block, each in its child-side joint frame: R^T f, R^T m."""
    rotation_t = np.swapaxes(m.rotation, -1, -2)
    return np.concatenate([np.einsum("snij,snj->sni", rotation_t, m.wrench[..., :3]),
                           np.einsum("snij,snj->sni", rotation_t, m.wrench[..., 3:])], axis=2)


def _to_world(rotation: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """``vectors`` (S, n, 3) in the axes ``rotation`` (3, 3) maps to world axes, one matrix product over all S n
    vectors, (S, n, 3)."""
    shape = vectors.shape
    return (np.ascontiguousarray(vectors).reshape(-1, 3) @ rotation.T).reshape(shape)


def _machine_columns(m: _MachineBlock, spans: _MachineSpans, values: np.ndarray, extras: np.ndarray) -> None:
    """Write a machine's part of a block's ``values`` (S, V) and ``extras`` (S, E) into the columns ``spans`` says,
    in the order :class:`StepBlock` documents: each kind's arrays computed for all its items at once (one
    forward-kinematics pass of q for the frames and bodies, one of q_reference for the frames), then put in place."""
    plan, placement = m.plan, m.plan.machine.placement
    model, steps = plan.machine.model, len(m.q)
    loads = _in_joint_frames(m)[:, plan.joints_at]  # (S, n, 6)
    tracked = plan.joints_at[:len(plan.joints)]  # the tracked joints come first among those with loads computed
    world = _to_world(placement.rotation, m.wrench[:, tracked].reshape(steps, -1, 3))  # per joint force, moment
    source = np.concatenate([m.q, m.q - m.q_reference, m.effort, loads.reshape(steps, -1), world.reshape(steps, -1)],
                            axis=1)
    np.take(source, plan.joint_columns, axis=1, out=values[:, spans.joints])
    if plan.frames or plan.bodies:
        poses = Poses(np.empty((steps, len(model.body_names) if plan.bodies else 0, 4, 4)),
                      np.empty((steps, len(model.frame_names) if plan.frames else 0, 4, 4)))
        loaded = forward(model, m.q, bodies=bool(plan.bodies), frames=bool(plan.frames), out=poses)  # on this thread
    if plan.frames:
        frames = np.asarray(plan.frames)
        reference = Poses(poses.bodies[:, :0], np.empty_like(poses.frames))
        p = loaded.frames[:, frames][..., :3, 3]
        p_reference = forward(model, m.q_reference, bodies=False, out=reference).frames[:, frames][..., :3, 3]
        out = values[:, spans.frames].reshape(steps, len(frames), 6)  # a view: the columns split per frame
        np.add(_to_world(placement.rotation, p), placement.position, out=out[..., :3])
        out[..., 3:] = _to_world(placement.rotation, p - p_reference)
    if plan.bodies:
        poses = loaded.bodies[:, plan.bodies_at]
        rotations = np.ascontiguousarray(np.moveaxis(poses[:, :, :3, :3], 2, 0)).reshape(3, -1)  # (3, S nB 3)
        out = values[:, spans.bodies].reshape(steps, len(plan.bodies), 12)  # a view, as the frames'
        np.add(_to_world(placement.rotation, poses[:, :, :3, 3]), placement.position, out=out[..., :3])
        world_rotations = (placement.rotation @ rotations).reshape(3, steps, -1, 3)  # one product
        out[..., 3:].reshape(steps, len(plan.bodies), 3, 3)[...] = np.moveaxis(world_rotations, 0, 2)
    pins = loads[:, plan.pins_at]
    values[:, spans.pins] = pins.reshape(steps, -1)
    values[:, spans.q], values[:, spans.q_ref] = m.q, m.q_reference
    sizes = [np.linalg.norm(pins[..., :3], axis=2), np.linalg.norm(pins[..., 3:], axis=2)]
    np.take(np.concatenate([*sizes, m.effort], axis=1), plan.pin_extras, axis=1, out=extras[:, spans.extras])


class _kept:
    """A value of a block step read from its block on first use and kept in the step: a non-data descriptor (the value
    stored in the instance hides it on later reads), without functools.cached_property's lock (Python 3.11)."""

    def __init__(self, read: Any):
        self.read, self.name = read, read.__name__

    def __get__(self, step: Any, owner: Any = None) -> Any:
        if step is None:
            return self
        value = step.__dict__[self.name] = self.read(step)
        return value


class BlockStep(StepResult):
    """One step of a :class:`StepBlock`: a :class:`~.runner.StepResult` read from the block's arrays when asked (its
    swept values, solver figures and coordinates once, its joints, frames, bodies and pin reactions on every read; the
    store takes its numbers as a row of the block's array, :meth:`store_values`)."""

    status = "converged"
    collisions = None  # until checked after solving (a scenario's collision section)

    def __init__(self, block: StepBlock, row: int):
        self.block, self.row, self.index = block, row, int(block.indices[row])

    def __getstate__(self) -> dict[str, Any]:
        """Pickled as its block's row (and the collisions checked, if any): a chain's steps then travel as their
        block's few arrays, not as small arrays and dictionaries a step (which Dask sends one buffer each)."""
        return {key: self.__dict__[key] for key in ("block", "row", "index", "collisions") if key in self.__dict__}

    @_kept
    def parameters(self) -> dict[str, float]:
        return dict(zip(self.block.scenario.sweep.names, map(float, self.block.table[self.row])))

    @_kept
    def iterations(self) -> int:
        return int(self.block.iterations[self.row])

    @_kept
    def residual(self) -> float:
        return float(self.block.residual[self.row])

    @_kept
    def stability(self) -> str:
        return str(self.block.stability[self.row])

    @property
    def stable(self) -> bool:
        return self.stability == "stable"

    @_kept
    def remarks(self) -> dict[str, list[str]]:
        return {_machine_id(m): m.remarks[self.row] for m in self.block.machines if self.row in m.remarks}

    @_kept
    def q(self) -> dict[str, np.ndarray]:
        return {_machine_id(m): m.q[self.row] for m in self.block.machines}

    @_kept
    def q_reference(self) -> dict[str, np.ndarray]:
        return {_machine_id(m): m.q_reference[self.row] for m in self.block.machines}

    # a block-path step has none of these (a step that would goes by the step path)
    failures = property(lambda self: [])
    actuators = property(lambda self: {})
    ground = property(lambda self: {})
    neutral = property(lambda self: {})

    def store_values(self) -> np.ndarray | None:
        """The step's numbers in the store (a row of :attr:`StepBlock.values`), or None when the step carries more
        than the block computed (collisions checked after solving): then its rows come from :meth:`as_dict`."""
        return None if self.collisions is not None else self.block.values[self.row]

    # built on every read, not kept: a long run holds its steps' arrays, not their dictionaries
    joints = property(lambda self: self.block.reports(self.row, "joint"))
    frames = property(lambda self: self.block.reports(self.row, "frame"))
    bodies = property(lambda self: self.block.reports(self.row, "body"))
    pin_reactions = property(lambda self: self.block.reports(self.row, "pin"))


class BlockRows(NamedTuple):
    """Rows ``start`` to ``stop - 1`` of ``block``: consecutive steps of the block path, handed on together."""

    block: StepBlock
    start: int
    stop: int


def block_runs(steps: Sequence[StepResult]) -> Iterator[BlockRows | StepResult]:
    """``steps`` in their order: each run of consecutive rows of one block that carry nothing beyond what the block
    computed (no collisions checked after solving) as one :class:`BlockRows`, every other step as itself."""
    block, start, stop = None, 0, 0
    for step in steps:
        if isinstance(step, BlockStep) and step.collisions is None:
            if step.block is block and step.row == stop:
                stop += 1
                continue
            if block is not None:
                yield BlockRows(block, start, stop)
            block, start, stop = step.block, step.row, step.row + 1
            continue
        if block is not None:
            yield BlockRows(block, start, stop)
            block = None
        yield step
    if block is not None:
        yield BlockRows(block, start, stop)


def _machine_id(block: _MachineBlock) -> str:
    """The id of a machine's block's machine (its plan, or the id it travels with between processes)."""
    return block.plan if isinstance(block.plan, str) else block.plan.machine.id


def _solve_blocks(plans: list[_MachinePlan], parts: list[tuple[int, ...]], table: np.ndarray,
                  states: list[dict[str, _MachineChainState]]) -> list[tuple[list[_MachineBlock], int]]:
    """Solve every chain's part (at most a block each) for every machine from that chain's ``states``, all chains in
    one call of the core per machine (the chains on every thread): per chain the machines' blocks and how many
    leading steps every machine solved plainly (those the block reports; the states are not advanced)."""
    starts = np.cumsum([0, *(len(part) for part in parts)])
    rows = table[[index for part in parts for index in part]]
    steps = int(starts[-1])
    solved: list[tuple[list[_MachineBlock], int]] = [([], len(part)) for part in parts]
    for plan in plans:
        model = plan.machine.model
        target = np.repeat(plan.template[None], steps, axis=0)
        for coordinate, column in plan.swept:
            target[:, coordinate] = rows[:, column]
        loads = applied(model, [load for load, _ in plan.loads], steps)
        for applied_load, (load, column) in zip(loads, plan.loads):
            if column is not None:  # the step's factor replaces the load's: force * factor as applied() scales it
                unit = applied(model, [Load(load.frame, load.force, load.torque, load.direction, 1.0)], 1)[0]
                applied_load.force[:] = unit.force[0] * rows[:, column, None]
                applied_load.torque[:] = unit.torque[0] * rows[:, column, None]
        result = solve_chain(model, np.stack([chain_states[plan.machine.id].q for chain_states in states]), target,
                             plan.prescribed, starts, np.broadcast_to(plan.gravity, (steps, 3)), loads)
        for k, (first, end) in enumerate(zip(starts[:-1], starts[1:])):
            ok = result.plain[first:end].copy()
            plain = int(np.argmin(ok)) if not ok.all() else len(ok)
            if plain and plan.rigid_in_loops:  # the core checked the held coordinates' share, not rigid joints'
                ok[:plain] &= ~statically_open(model, result.q[first:first + plain], plan.free)
                plain = int(np.argmin(ok)) if not ok.all() else len(ok)
            q, assembled, size = result.q[first:end], result.assembled[first:end], result.size[first:end]
            moved = np.abs(q[:plain][:, plan.free] - assembled[:plain][:, plan.free])
            far = moved > np.where(plan.revolute, 0.5, 0.1 * size[:plain, None])
            remarks = {}
            for row in np.flatnonzero(far.any(axis=1)):
                words = _large_motion(model, assembled[row], q[row], plan.free, float(size[row]))
                if words:
                    remarks[int(row)] = words
            blocks, least = solved[k]
            blocks.append(_MachineBlock(plan, q, result.q_reference[first:end], result.wrench_world[first:end],
                                        result.rotation[first:end], result.effort[first:end],
                                        result.iterations[first:end], result.residual[first:end],
                                        result.stability[first:end], remarks))
            solved[k] = (blocks, min(least, plain))
    return solved


def run_chain(scenario: Scenario, chain: tuple[int, ...], on_step: StepCallback | None = None,
              blocks: bool = True) -> list[StepResult]:
    """Solve the steps of one chain in order, each from the previous equilibrium (all from the start state first):
    in blocks where :func:`block_path_problem` finds nothing against it (and ``blocks``), step by step otherwise.
    Returns the steps when there is no ``on_step`` (as :func:`run_chains`)."""
    return run_chains(scenario, [chain], on_step, blocks)


def run_chains(scenario: Scenario, chains: list[tuple[int, ...]], on_step: StepCallback | None = None,
               blocks: bool = True) -> list[StepResult]:
    """Solve several chains (each as :func:`run_chain` does) in this process: by the block path, up to
    :data:`CHAINS_AT_ONCE` chains' blocks at a time in one call of the core (the chains on every thread), so steps
    of different chains reach ``on_step`` interleaved, each chain's in order; step by step, one chain after another.
    Returns the steps when there is no ``on_step`` (else an empty list: the steps are ``on_step``'s to keep or let go,
    so a long chain's memory does not grow with its steps)."""
    table = scenario.sweep.table()
    states = [{m.id: _MachineChainState(m.q_start.copy()) for m in scenario.machines} for _ in chains]
    results: list[StepResult] = []
    hand_on = results.append if on_step is None else on_step

    if not blocks or block_path_problem(scenario) is not None:
        for chain, chain_states in zip(chains, states):
            for index in chain:
                hand_on(solve_step(scenario, index, table[index], chain_states))
        return results
    plans = [_plan(scenario, machine) for machine in scenario.machines]
    layout = _BlockLayout(plans)
    position, size = [0] * len(chains), [BLOCK_STEPS] * len(chains)
    solved: list[StepBlock | StepResult] = []  # solved, not handed on yet, in order
    with ThreadPoolExecutor(1, thread_name_prefix="shiftsim-chain") as solver:
        while True:
            active = [k for k, chain in enumerate(chains) if position[k] < len(chain)][:CHAINS_AT_ONCE]
            if not active:
                _hand_on(solved, hand_on)
                return results
            parts = [chains[k][position[k]:position[k] + size[k]] for k in active]
            solving = solver.submit(_solve_blocks, plans, parts, table, [states[k] for k in active])
            solved = _hand_on(solved, hand_on)  # while the core solves the next blocks (it lets the GIL go)
            for k, part, (machine_blocks, plain) in zip(active, parts, solving.result()):
                if plain:
                    block = StepBlock(scenario, np.asarray(part[:plain]), table[list(part[:plain])],
                                      [_cut(m, plain) for m in machine_blocks], layout)
                    solved.append(block)
                    for m in block.machines:
                        states[k][m.plan.machine.id].advance(m.q[-1].copy(), None)
                position[k] += plain
                if plain < len(part):  # this step needs the step path; the chain's next block starts small
                    index = chains[k][position[k]]
                    solved.append(solve_step(scenario, index, table[index], states[k]))
                    position[k] += 1
                    size[k] = 1
                else:
                    size[k] = min(2 * size[k], BLOCK_STEPS)


def _hand_on(solved: list[StepBlock | StepResult], hand_on: StepCallback) -> list[StepBlock | StepResult]:
    """Hand on every step of ``solved`` (blocks and steps solved step by step) in order; an empty list for the next
    ones."""
    for item in solved:
        if isinstance(item, StepBlock):
            for step in item.steps():
                hand_on(step)
        else:
            hand_on(item)
    return []


def attach_blocks(scenario: Scenario, steps: list[StepResult]) -> list[StepResult]:
    """``steps`` (from another process), their blocks attached to this process's ``scenario``
    (:meth:`StepBlock.attach`); returned for chaining."""
    plans: dict[str, _MachinePlan] = {}
    layouts: dict[tuple[str, ...], _BlockLayout] = {}
    for step in steps:
        if isinstance(step, BlockStep):
            step.block.attach(scenario, plans, layouts)
    return steps


def _cut(block: _MachineBlock, steps: int) -> _MachineBlock:
    """The first ``steps`` rows of a machine's block."""
    return _MachineBlock(block.plan, block.q[:steps], block.q_reference[:steps], block.wrench[:steps],
                         block.rotation[:steps], block.effort[:steps], block.iterations[:steps],
                         block.residual[:steps], block.stability[:steps],
                         {row: text for row, text in block.remarks.items() if row < steps})
