"""Machines of a scenario: a compiled model, its placement, start state, and what its names set.

Names inside a machine are model names (``arm:boom_cyl``); in the scenario and
its results they carry the machine id in front (``ex1:arm:boom_cyl``).
:func:`resolve` finds model names (full paths or unambiguous endings, as
``shiftsim solve`` does).

What a machine-local name in ``hold`` or a sweep parameter *sets* is a
:class:`Setting`, decided by the machine's :class:`Vocabulary`: for any model a
name is a joint; an MFK machine also takes value references
(:mod:`.mfk`), an Mdx platform its pose components (:mod:`.mdx`). At each
step the vocabulary turns the step's settings into a :class:`Setup`: the
model, the placement and the prescribed joint values to solve with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Mapping

import numpy as np

from ..errors import InputError, Problems, SolveError, suggest
from ..kinematics import Poses, assemble, forward
from ..model import PRISMATIC, Model
from ..spec import ModelSpec, PATH_SEPARATOR
from .placement import Placement
from .schema import json_path

SettingKind = Literal["joint", "placement", "geometry", "pose", "site"]
SITE_SETTINGS = {"placement.x": "m", "placement.y": "m", "placement.z": "m", "placement.yaw": "rad"}
"""What places any machine in the world, as sweep names (``ex1:placement.yaw``) and units: its model origin's
world position and its yaw about the world z axis (pitch and roll kept), replacing the scenario's placement."""
Purpose = Literal["sweep", "hold"]
_BASE_NAME = re.compile(r"(?<![\w.:])base\.(?:x|y|z|rx|ry|rz)\b")  # a free base joint (ground.base) not yet qualified


@dataclass(frozen=True)
class Setting:
    """What a machine-local name sets, and the unit of its value.

    ``joint``: the joint ``target`` (full model name), rad or m;
    ``placement``: an MFK transform value (``target`` its reference ``C:oem.interface.id.field``), m or rad;
    ``geometry``: any other MFK value, written into the configuration before it is loaded (no unit known);
    ``pose``: a component of an Mdx platform pose (``x`` ... ``yaw``), normalized (``-``) or mm / deg;
    ``site``: the machine's placement in the world (``target`` one of :data:`SITE_SETTINGS`), m or rad.
    """

    kind: SettingKind
    target: str
    unit: str


SettingValues = Mapping[tuple[str, str], float]
"""A step's values for one machine, keyed by ``(setting kind, target)``."""


@dataclass(frozen=True)
class Setup:
    """A machine at one step: the model and placement (world <- model) to solve with, the joints
    prescribed at values this step (besides the held ones), and for an Mdx platform its actuator
    joints (``legs``) with what the pose makes of them (``actuators``: pose, lengths, raw, in_range)."""

    model: Model
    placement: Placement
    joints: dict[str, float]
    actuators: dict[str, Any] | None = None
    legs: tuple[str, ...] = ()


class Vocabulary:
    """What the names of a machine set. This base class serves any model: every name is a joint."""

    kind = "model"

    def setting(self, machine: Machine, name: str, where: str, problems: Problems, purpose: Purpose) -> Setting | None:
        return joint_setting(machine, name, where, problems, purpose)

    def setup(self, machine: Machine, values: SettingValues) -> Setup:
        return Setup(machine.model, machine.placement, _joint_values(values))

    def start_joints(self) -> dict[str, float]:
        """Joints prescribed at a value in every step whatever the sweep (an Mdx platform's legs)."""
        return {}


PLAIN = Vocabulary()


def _joint_values(values: SettingValues) -> dict[str, float]:
    return {target: value for (kind, target), value in values.items() if kind == "joint"}


@dataclass(frozen=True)
class Machine:
    """One placed machine: compiled model, placement (world <- model) and start state.

    ``q_start`` is the model's file configuration with the scenario's ``joints``
    values, assembled with the held and swept joints kept; ``held`` are the
    (full) names of the joints held at their ``q_start`` values throughout.
    ``inputs`` are the model files read for it (attached machines' files too).
    """

    id: str
    source: Path
    model: Model
    placement: Placement
    q_start: np.ndarray
    held: tuple[str, ...]
    where: str
    vocabulary: Vocabulary = field(default=PLAIN, repr=False)
    inputs: tuple[Path, ...] = ()
    support: Any = field(default=None, repr=False)  # a standing machine's scenario.ground.Support, else None

    def name(self, local: str) -> str:
        """Scenario name of a model name: ``<id>:<local>``."""
        return f"{self.id}{PATH_SEPARATOR}{local}"

    def setting(self, name: str, where: str, problems: Problems, purpose: Purpose = "sweep") -> Setting | None:
        """What machine-local ``name`` sets (None with a problem at ``where`` when it sets nothing)."""
        if name in SITE_SETTINGS and purpose == "sweep":
            return Setting("site", name, SITE_SETTINGS[name])
        return self.vocabulary.setting(self, name, where, problems, purpose)

    def setup(self, values: SettingValues | None = None) -> Setup:
        """Model, placement and prescribed joints at a step with these settings (none: the start settings).

        Raises InputError when the settings make an invalid model (an MFK geometry value)."""
        values = values or {}
        site = {target.removeprefix("placement."): value for (kind, target), value in values.items() if kind == "site"}
        setup = self.vocabulary.setup(self, {key: value for key, value in values.items() if key[0] != "site"})
        return replace(setup, placement=setup.placement.moved(site)) if site else setup

    def world_poses(self, q: np.ndarray, setup: Setup | None = None) -> Poses:
        """World poses of the machine's bodies and frames at coordinates ``q`` (nq,) or (..., nq)."""
        setup = setup or Setup(self.model, self.placement, {})
        poses = forward(setup.model, q)
        return Poses(setup.placement.poses_to_world(poses.bodies), setup.placement.poses_to_world(poses.frames))

    def qualified(self, text: str) -> str:
        """A solver message about this machine with its free base's joints named as in the scenario: ``base.z``
        becomes ``<id>:base.z`` (other names are the model's, under the machine's id)."""
        return _BASE_NAME.sub(lambda match: self.name(match.group(0)), text)

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


def joint_unit(model: Model, joint: str) -> str:
    """``m`` for a joint whose first coordinate is prismatic motion, else ``rad``."""
    coordinate = model.coordinates_of(joint)[0]
    return "m" if model.node_kind[model.coordinate_node[coordinate]] == PRISMATIC else "rad"


def joint_setting(machine: Machine, name: str, where: str, problems: Problems, purpose: Purpose) -> Setting | None:
    """``name`` as a joint of the machine's model; a swept joint must have one coordinate and not be coupled."""
    model = machine.model
    joint = resolve(model, "joint", name, machine.id, where, problems)
    if joint is None:
        return None
    coordinates = model.coordinates_of(joint)
    if purpose == "sweep":
        if len(coordinates) != 1:
            problems.add(where, f"joint {joint!r} has {len(coordinates)} coordinates", "a one-coordinate joint to sweep")
            return None
        if any(c.target == coordinates[0] for c in model.couplings):
            problems.add(where, f"joint {joint!r} is coupled to other joints and follows them",
                         "a joint that is not coupled")
            return None
    return Setting("joint", joint, joint_unit(model, joint) if coordinates else "")


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


def assemble_start(machine: Machine, prescribed: list[str], problems: Problems) -> Machine:
    """The machine with its start state assembled, the ``prescribed`` joints (held and swept) kept.

    Joints the vocabulary prescribes in every step (an Mdx platform's legs) take their values first.
    """
    model = machine.model
    q = machine.q_start.copy()
    start = machine.vocabulary.start_joints()
    for name, value in start.items():
        q[list(model.coordinates_of(name))] = value
    coordinates = sorted({c for name in [*prescribed, *start] for c in model.coordinates_of(name)})
    try:
        q = assemble(model, q, held=coordinates, start=model.q0).q
    except SolveError as error:
        problems.add(f"{machine.where}.joints", f"machine {machine.id!r}: the start state cannot be assembled: {error}",
                     "joint values with which the loops close")
        return machine
    return replace(machine, q_start=q)
