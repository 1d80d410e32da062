"""Machines of a scenario: a model read, its assemblies switched, compiled, placed and given a start state.

Names inside a machine are model names (``arm:boom_cyl``); in the scenario and
its results they carry the machine id in front (``ex1:arm:boom_cyl``).
:class:`Machine` resolves model names (full paths or unambiguous endings, as
``shiftsim solve`` does) and maps poses to the world through its placement.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, Problems, SolveError, suggest
from ..formats import read_model
from ..kinematics import Poses, assemble, forward
from ..model import Model, compile_model
from ..spec import ModelSpec, PATH_SEPARATOR
from .placement import Placement, read_placement
from .schema import json_path


@dataclass(frozen=True)
class Machine:
    """One placed machine: compiled model, placement (world <- model) and start state.

    ``q_start`` is the model's file configuration with the scenario's ``joints``
    values, assembled with the held and swept joints kept; ``held`` are the
    (full) names of the joints held at their ``q_start`` values throughout.
    """

    id: str
    source: Path
    model: Model
    placement: Placement
    q_start: np.ndarray
    held: tuple[str, ...]
    where: str

    def name(self, local: str) -> str:
        """Scenario name of a model name: ``<id>:<local>``."""
        return f"{self.id}{PATH_SEPARATOR}{local}"

    def world_poses(self, q: np.ndarray) -> Poses:
        """World poses of the machine's bodies and frames at coordinates ``q`` (nq,) or (..., nq)."""
        poses = forward(self.model, q)
        return Poses(self.placement.poses_to_world(poses.bodies), self.placement.poses_to_world(poses.frames))

    def held_values(self) -> dict[str, np.ndarray]:
        return {name: self.q_start[list(self.model.coordinates_of(name))] for name in self.held}


def resolve(model: Model, kind: str, name: str, machine_id: str, where: str, problems: Problems) -> str | None:
    """Full model name of a joint, frame or body named ``name`` (a path or unambiguous ending), or None + a problem."""
    index_of, names = {"joint": (model.joint_index, model.joint_names), "frame": (model.frame_index, model.frame_names),
                       "body": (model.body_index, model.body_names)}[kind]
    try:
        return names[index_of(name)]
    except InputError as error:
        for p in error.problems:
            problems.add(where, f"machine {machine_id!r}: {p.what}", p.expected)
        return None


def switch_assemblies(spec: ModelSpec, switches: dict[str, bool], path: list[str | int], problems: Problems) -> None:
    """Switch assemblies of ``spec`` on or off in place before it is compiled.

    An item (body, joint, restraint) is active when every assembly enclosing it
    is (the scenario's switch, else the file's state) and its own flag is set.
    Items inside an assembly that the file switched off have lost their own
    flag when read; switching that assembly on activates them all. Joints that
    the reader switched off because they touch a body of an inactive assembly
    come back when that body does. Restraints on inactive joints or bodies go off.
    """
    for name in switches:
        if name not in spec.assemblies:
            problems.add(json_path([*path, name]), f"the model has no assembly {name!r}", suggest(name, spec.assemblies))
    switches = {p: v for p, v in switches.items() if p in spec.assemblies}
    if not switches:
        return
    state = {**spec.assemblies, **switches}

    def enclosing(name: str) -> list[str]:
        parts = name.split(PATH_SEPARATOR)
        return [p for p in (PATH_SEPARATOR.join(parts[:i]) for i in range(1, len(parts))) if p in state]

    def active(name: str, own: bool) -> bool:
        paths = enclosing(name)
        own = own or not all(spec.assemblies[p] for p in paths)
        return own and all(state[p] for p in paths)

    was_active = {b.name: b.active for b in spec.bodies}
    for body in spec.bodies:
        body.active = active(body.name, body.active)
    body_on = {b.name: b.active for b in spec.bodies}
    for joint in spec.joints:
        ends = (joint.parent.body, joint.child.body)
        revived = not joint.active and any(not was_active.get(b, True) for b in ends)
        joint.active = active(joint.name, joint.active or revived) and all(body_on.get(b, True) for b in ends)
    joint_on = {j.name: j.active for j in spec.joints}
    for restraint in spec.restraints:
        ends = [f.body for f in restraint.pair] if restraint.pair else []
        restraint.active = (active(restraint.name, restraint.active)
                            and joint_on.get(restraint.joint, True) and all(body_on.get(b, True) for b in ends))
    spec.assemblies.update(switches)


def load_machine(entry: dict[str, Any], index: int, scenario_dir: Path, problems: Problems) -> Machine | None:
    """Read, switch, compile and place machine ``index`` of the scenario; None (with problems added) if it cannot."""
    where = f"machines[{index}]"
    machine_id = entry["id"]
    placement = read_placement(entry.get("placement"), f"{where}.placement", problems)
    source = (scenario_dir / entry["model"]).resolve()
    if not source.is_file():
        problems.add(f"{where}.model", f"model file {entry['model']!r} not found (looked for {source})",
                     "a model file path relative to the scenario file")
        return None
    try:
        spec = read_model(source)
        known_problems = len(problems.items)
        switch_assemblies(spec, entry.get("assemblies", {}), ["machines", index, "assemblies"], problems)
        if len(problems.items) > known_problems:
            return None
        model = compile_model(spec)
    except InputError as error:
        problems.add(f"{where}.model", f"model file {entry['model']!r} is invalid:", "a valid model")
        problems.items.extend(error.problems)
        return None

    q = model.q0.copy()
    for name, value in entry.get("joints", {}).items():
        at = json_path(["machines", index, "joints", name])
        full = resolve(model, "joint", name, machine_id, at, problems)
        if full is None:
            continue
        coordinates = list(model.coordinates_of(full))
        values = np.atleast_1d(np.asarray(value, float))
        if len(values) != len(coordinates):
            problems.add(at, f"{len(values)} values for joint {full!r}", f"{len(coordinates)} (its degrees of freedom)")
            continue
        q[coordinates] = values
    held = []
    for k, name in enumerate(entry.get("hold", [])):
        full = resolve(model, "joint", name, machine_id, f"{where}.hold[{k}]", problems)
        if full is not None:
            held.append(full)
    return Machine(machine_id, source, model, placement, q, tuple(held), where)


def assemble_start(machine: Machine, prescribed: list[str], problems: Problems) -> Machine:
    """The machine with its start state assembled, the ``prescribed`` joints (held and swept) kept."""
    model = machine.model
    coordinates = sorted({c for name in prescribed for c in model.coordinates_of(name)})
    try:
        q = assemble(model, machine.q_start, held=coordinates).q
    except SolveError as error:
        problems.add(f"{machine.where}.joints", f"machine {machine.id!r}: the start state cannot be assembled: {error}",
                     "joint values with which the loops close")
        return machine
    return replace(machine, q_start=q)
