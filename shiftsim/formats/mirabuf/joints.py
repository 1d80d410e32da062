"""Joint instances of a mirabuf assembly -> JointSpecs between the rigid bodies.

Conventions (see ``docs/mirabuf.md``):

* ``parent_part`` is the **moving** side and ``child_part`` the base side; the
  JointSpec's parent is the base body, its child the moving body.
* ``origin`` (+ the instance's ``offset``) is a world point and the DOF axis a
  world direction at the exported pose (cm -> m). Each joint gets a frame on
  both bodies at the origin with z along the axis; the joint axis is z.
* Coordinates: ``value`` is the current coordinate (cm -> m for sliders;
  revolute values wrapped into (-pi, pi]) and becomes ``JointSpec.initial``;
  the child frame is placed so that the bodies sit at the file pose at
  q = initial. Positive q turns the moving side about (or moves it along) the
  axis relative to the base.
* Limits are absolute in the file's coordinate; the travel from the file pose
  (limit - value) is kept, so ``limits = initial + (limit - value)``. A
  revolute value is first moved by whole turns into its limits (a joint stored
  at 6.2247 rad with limits +-pi/2 is at -0.0585 rad, inside them), so the
  limits always contain the wrapped value when any turn of it fits.
  ``lower == upper`` (0 and 0 when unset) means unlimited; swapped limits are
  put in order with a warning.
* Exports with ``Assembly.info.version < 5`` store revolute axes with x
  negated (as Synthesis itself corrects on import); it is flipped back.
* BALL -> one spherical joint, frame axes = world axes, q = (0, 0, 0) at the
  file pose. CUSTOM -> a chain of revolute joints (Synthesis reads custom
  DOFs as rotations) through massless intermediate bodies at the origin.
* ``motion_link``: the linked joint drives this one, in displacement from the
  file pose: ``q = q_file + s * ratio * (q_source - q_source_file)`` with
  ``s = -1`` when ``reversed``. Ratios between a slider and a revolute joint
  are in mm per degree (or degrees per mm), as the format states.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import Problems
from ...spec import FIXED, ORIGIN, BodySpec, CouplingSpec, FrameRef, FrameSpec, JointSpec
from ...spatial import rotation_about
from .bodies import GROUNDED, Group, safe_name, unique_name
from .parts import CM
from .schema import JOINT_MOTION

RIGID, REVOLUTE, SLIDER, BALL, CUSTOM = (JOINT_MOTION[n] for n in ("RIGID", "REVOLUTE", "SLIDER", "BALL", "CUSTOM"))
MOTION_NAMES = {number: name for name, number in JOINT_MOTION.items()}
AXIS_FIX_VERSION = 5
"""Exports older than this assembly version negate the x component of revolute axes."""

MM_PER_M, DEG_PER_RAD = 1000.0, 180.0 / math.pi


@dataclass
class JointSet:
    """What the joint instances turn into."""

    joints: list[JointSpec] = field(default_factory=list)
    links: list[BodySpec] = field(default_factory=list)
    wheels: list[str] = field(default_factory=list)
    details: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class AffineLaw:
    """``q = start + gains · (sources - anchors)``: a motion link's coupling law (picklable)."""

    start: float
    gains: np.ndarray
    anchors: np.ndarray

    def __call__(self, values: np.ndarray) -> float:
        return float(self.start + self.gains @ (np.asarray(values, float) - self.anchors))

    def gradient(self, values: np.ndarray) -> np.ndarray:
        return self.gains.copy()


def wrap_angle(angle: float) -> float:
    """``angle`` moved by whole turns into (-pi, pi]."""
    wrapped = math.remainder(angle, 2.0 * math.pi)
    return math.pi if wrapped == -math.pi else wrapped


def turn_into(angle: float, lower: float, upper: float) -> float:
    """``angle`` moved by whole turns into [lower, upper] when some turn fits, else by the turns that bring
    it nearest (the limits' midpoint decides): a revolute value and its limits are compared modulo 2 pi."""
    middle = (lower + upper) / 2.0
    return middle + math.remainder(angle - middle, 2.0 * math.pi)


def axis_frame(axis: np.ndarray) -> np.ndarray:
    """A rotation whose third column is the unit vector ``axis`` (columns: frame axes in world)."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = helper - (helper @ axis) * axis
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(axis, x), axis])


@dataclass(frozen=True)
class _Dof:
    """One degree of freedom in SI: world axis, coordinate at the file pose, limits in q, travel from it."""

    axis: np.ndarray
    initial: float
    limits: tuple[float, float] | None
    travel: tuple[float, float] | None


def _read_vector(vector) -> np.ndarray:
    return np.array([vector.x, vector.y, vector.z], dtype=float)


def _read_dof(dof, where: str, prismatic: bool, flip_x: bool, problems: Problems, warnings: list[str]) -> _Dof | None:
    axis = _read_vector(dof.axis)
    if flip_x:
        axis[0] = -axis[0]
    norm = float(np.linalg.norm(axis))
    if not np.isfinite(norm) or norm < 1e-9:
        problems.add(f"{where}.axis", f"axis {axis.tolist()} has no direction", "a non-zero world direction")
        return None
    unit = CM if prismatic else 1.0
    value = float(dof.value) * unit
    initial = value if prismatic else wrap_angle(value)
    lower, upper = float(dof.limits.lower) * unit, float(dof.limits.upper) * unit
    if not all(map(math.isfinite, (value, lower, upper))):
        problems.add(where, "non-finite value or limits", "finite numbers")
        return None
    if lower == upper:
        if lower != 0.0:
            warnings.append(f"{where}.limits: lower = upper = {dof.limits.lower:g}; read as unlimited")
        return _Dof(axis / norm, initial, None, None)
    if lower > upper:
        warnings.append(f"{where}.limits: lower {dof.limits.lower:g} > upper {dof.limits.upper:g}; swapped")
        lower, upper = upper, lower
    if not prismatic:
        value = turn_into(value, lower, upper)
    if not lower - 1e-9 <= value <= upper + 1e-9:
        warnings.append(f"{where}: value {dof.value:g} is outside its limits [{lower / unit:g}, {upper / unit:g}]")
    travel = (lower - value, upper - value)
    return _Dof(axis / norm, initial, (initial + travel[0], initial + travel[1]), travel)


def _add_frame(body: BodySpec, base_name: str, rotation: np.ndarray, translation: np.ndarray) -> str:
    name = unique_name(base_name, set(body.frames) | {ORIGIN})
    body.frames[name] = FrameSpec(name=name, rotation=rotation, translation=translation)
    return name


class _Builder:
    def __init__(self, assembly, bodies: dict[str, BodySpec], problems: Problems, warnings: list[str]):
        self.assembly = assembly
        self.bodies = bodies
        self.problems = problems
        self.warnings = warnings
        self.result = JointSet()
        self.taken_joint_names: set[str] = set()
        self.spec_of_instance: dict[str, JointSpec] = {}
        self.file_value: dict[str, float] = {}
        self.flip_x = assembly.info.version < AXIS_FIX_VERSION

    def one_dof(self, name: str, kind: str, base: str, moving: str, origin: np.ndarray, dof: _Dof,
                where: str, actuated: bool, source_type: str) -> JointSpec:
        """A revolute/prismatic joint whose frames put both bodies at the file pose at q = dof.initial."""
        frame = axis_frame(dof.axis)
        if kind == "revolute":
            child_rotation, child_origin = frame @ rotation_about(np.array([0.0, 0.0, 1.0]), dof.initial), origin
        else:
            child_rotation, child_origin = frame, origin + dof.initial * dof.axis
        parent_frame = _add_frame(self.bodies[base], name, frame, origin)
        child_frame = _add_frame(self.bodies[moving], name, child_rotation, child_origin)
        return JointSpec(name=name, type=kind, parent=FrameRef(base, parent_frame), child=FrameRef(moving, child_frame),
                         axis=np.array([0.0, 0.0, 1.0]), initial=(dof.initial,), limits=dof.limits,
                         actuated=actuated, source_type=source_type, where=where)

    def build(self, key: str, instance, group_of: dict[str, int], groups: list[Group]) -> None:
        joints = self.assembly.data.joints
        label = instance.info.name or key
        where = f"data.joints.joint_instances[{label!r}]"
        definition = joints.joint_definitions.get(instance.joint_reference)
        if definition is None:
            self.problems.add(f"{where}.joint_reference", f"names no joint definition ({instance.joint_reference!r})",
                              "a key of data.joints.joint_definitions")
            return
        motion = definition.joint_motion_type
        if motion == RIGID:
            return  # welded while grouping
        base, moving = groups[group_of[instance.child_part]].name, groups[group_of[instance.parent_part]].name
        if base == moving:
            self.warnings.append(f"{where}: both sides are in rigid body {base!r} (rigid groups or shared parts); "
                                 "joint left out")
            return
        def_where = f"data.joints.joint_definitions[{definition.info.name or instance.joint_reference!r}]"
        origin = (_read_vector(definition.origin) + _read_vector(instance.offset)) * CM
        name = unique_name(safe_name(label), self.taken_joint_names)
        actuated = bool(definition.motor_reference) and definition.motor_reference in joints.motor_definitions
        source_type = MOTION_NAMES.get(motion, str(motion))
        details: dict[str, Any] = {"motion": source_type, "instance": key}
        if actuated:
            motor = joints.motor_definitions[definition.motor_reference]
            if motor.HasField("simple_motor"):
                details["simple_motor"] = {"stall_torque": motor.simple_motor.stall_torque,
                                           "max_velocity": motor.simple_motor.max_velocity,
                                           "braking_constant": motor.simple_motor.braking_constant}
        if motion in (REVOLUTE, SLIDER):
            field_name = "rotational" if motion == REVOLUTE else "prismatic"
            if not definition.HasField(field_name):
                self.problems.add(def_where, f"{source_type} joint without its '{field_name}' motion",
                                  f"{field_name}.{field_name}_freedom with axis, value and limits")
                return
            freedom = (definition.rotational.rotational_freedom if motion == REVOLUTE
                       else definition.prismatic.prismatic_freedom)
            dof = _read_dof(freedom, f"{def_where}.{field_name}.{field_name}_freedom", motion == SLIDER,
                            self.flip_x and motion == REVOLUTE, self.problems, self.warnings)
            if dof is None:
                return
            if self.flip_x and motion == REVOLUTE and freedom.axis.x != 0.0:
                self.warnings.append(f"{def_where}: export version {self.assembly.info.version} < 5 stores revolute "
                                     "axes with x negated; flipped back")
            kind = "revolute" if motion == REVOLUTE else "prismatic"
            spec = self.one_dof(name, kind, base, moving, origin, dof, where, actuated, source_type)
            details["travel"] = dof.travel
            self.file_value[key] = dof.initial
            self.spec_of_instance[key] = spec
            self.result.joints.append(spec)
        elif motion == BALL:
            self.ball(name, base, moving, origin, definition, def_where, where, actuated, details)
        elif motion == CUSTOM:
            self.custom(name, base, moving, origin, definition, def_where, where, actuated, details)
        else:
            self.problems.add(f"{def_where}.joint_motion_type", f"joint {label!r} is {source_type}, which is not read",
                              "REVOLUTE, SLIDER, BALL, CUSTOM or RIGID")
            return
        if definition.user_data.data.get("wheel") == "true":
            self.result.wheels.append(name)
            details["wheel"] = True
        self.result.details[name] = details

    def ball(self, name, base, moving, origin, definition, def_where, where, actuated, details) -> None:
        parent_frame = _add_frame(self.bodies[base], name, np.eye(3), origin)
        child_frame = _add_frame(self.bodies[moving], name, np.eye(3), origin)
        dofs = definition.custom.dofs
        if any(d.value != 0.0 or d.limits.lower != d.limits.upper for d in dofs):
            self.warnings.append(f"{def_where}: ball joint DOF values and limits are not used "
                                 "(spherical joint, q = (0, 0, 0) at the file pose, no limits)")
            details["dofs"] = [{"name": d.name, "axis": _read_vector(d.axis).tolist(), "value": d.value,
                                "limits": (d.limits.lower, d.limits.upper)} for d in dofs]
        self.result.joints.append(JointSpec(name=name, type="spherical", parent=FrameRef(base, parent_frame),
                                            child=FrameRef(moving, child_frame), initial=(0.0, 0.0, 0.0),
                                            actuated=actuated, source_type="BALL", where=where))

    def custom(self, name, base, moving, origin, definition, def_where, where, actuated, details) -> None:
        dofs_where = f"{def_where}.custom.dofs"
        raw = list(definition.custom.dofs)
        if not raw or len(raw) > 3:
            self.problems.add(dofs_where, f"CUSTOM joint {name!r} has {len(raw)} DOFs",
                              "1 to 3 rotational DOFs (custom DOFs are rotations)")
            return
        dofs = [_read_dof(d, f"{dofs_where}[{i}]", False, False, self.problems, self.warnings)
                for i, d in enumerate(raw)]
        if any(d is None for d in dofs):
            return
        for i in range(len(dofs)):
            for j in range(i + 1, len(dofs)):
                if np.linalg.norm(np.cross(dofs[i].axis, dofs[j].axis)) < 1e-6:
                    self.problems.add(dofs_where, f"CUSTOM joint {name!r}: DOFs {i} and {j} turn about parallel axes",
                                      "independent rotation axes (this combination is not supported)")
                    return
        chain = [base]
        for i in range(len(dofs) - 1):
            link = BodySpec(name=unique_name(f"{name}_link{i + 1}", set(self.bodies) | {FIXED}),
                            where=f"{where} (massless link between DOFs {i} and {i + 1})")
            self.bodies[link.name] = link
            self.result.links.append(link)
            chain.append(link.name)
        chain.append(moving)
        for i, (dof, raw_dof) in enumerate(zip(dofs, raw)):
            joint_name = unique_name(f"{name}_{safe_name(raw_dof.name) if raw_dof.name else i}", self.taken_joint_names)
            spec = self.one_dof(joint_name, "revolute", chain[i], chain[i + 1], origin, dof,
                                f"{where} (DOF {i})", actuated, "CUSTOM")
            self.result.joints.append(spec)
        details["chain"] = [j.name for j in self.result.joints[-len(dofs):]]

    def couple(self, key: str, instance) -> None:
        """Turn the instance's motion links into a coupling of its joint."""
        if not instance.motion_link:
            return
        label = instance.info.name or key
        where = f"data.joints.joint_instances[{label!r}].motion_link"
        target = self.spec_of_instance.get(key)
        if target is None:
            self.problems.add(where, f"joint {label!r} is not a 1-dof REVOLUTE or SLIDER joint",
                              "motion links on 1-dof joints")
            return
        sources, gains, anchors, terms = [], [], [], []
        for i, link in enumerate(instance.motion_link):
            source = self.spec_of_instance.get(link.joint_instance)
            if source is None or link.joint_instance == key:
                self.problems.add(f"{where}[{i}].joint_instance",
                                  f"{link.joint_instance!r} is not another 1-dof REVOLUTE or SLIDER joint instance",
                                  "the key of another joint instance")
                continue
            if link.ratio == 0.0 or not math.isfinite(link.ratio):
                self.problems.add(f"{where}[{i}].ratio", f"ratio {link.ratio:g}", "a non-zero finite ratio")
                continue
            gain = (-1.0 if link.reversed else 1.0) * float(link.ratio)
            if target.type == "prismatic" and source.type == "revolute":
                gain *= DEG_PER_RAD / MM_PER_M
            elif target.type == "revolute" and source.type == "prismatic":
                gain *= MM_PER_M / DEG_PER_RAD
            sources.append(source.name)
            gains.append(gain)
            anchors.append(self.file_value[link.joint_instance])
            terms.append(f"{gain:+.6g}*({source.name} - {anchors[-1]:.6g})")
        if not sources:
            return
        law = AffineLaw(self.file_value[key], np.array(gains), np.array(anchors))
        target.coupling = CouplingSpec(sources=tuple(sources), function=law, gradient=law.gradient,
                                       text=f"{law.start:.6g} " + " ".join(terms))


def build_joints(assembly, groups: list[Group], group_of: dict[str, int], bodies: dict[str, BodySpec],
                 problems: Problems, warnings: list[str]) -> JointSet:
    """JointSpecs of every joint instance (frames are added to ``bodies``); couplings from motion links."""
    builder = _Builder(assembly, bodies, problems, warnings)
    instances = sorted(assembly.data.joints.joint_instances.items(), key=lambda item: (item[1].info.name, item[0]))
    for key, instance in instances:
        if key != GROUNDED:
            builder.build(key, instance, group_of, groups)
    for key, instance in instances:
        if key != GROUNDED:
            builder.couple(key, instance)
    return builder.result
