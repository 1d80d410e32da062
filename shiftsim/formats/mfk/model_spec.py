"""An MFK configuration as a :class:`~shiftsim.spec.ModelSpec`.

Names: component ``C`` is the assembly ``cC``; node ``boom`` of component 1 is
the body ``c1:boom``. Each node is joined to its parent node's body (a root
node to ``fixed``, or, in an attached component, to the body of
``parent_node_ref``) by its local transform ``T · Rz · Ry · Rx``:

* a node value named in the component's replicate manifest (``tx ty tz`` or
  ``rx ry rz``) is a prismatic or revolute joint named after the value,
  ``c1:boom.ry``, about/along the axis of that factor (for ``ry`` the y axis of
  the frame ``T · Rz``, which is the node's y axis when ``rx`` is 0), with the
  value as ``initial``; the other factors become the joint's parent and child
  frames, so the chain reproduces the node transform exactly;
* a node with no articulated value hangs by a rigid joint named ``c1:boom``;
* a node with several articulated values gets one joint per value, in the
  order Tx Ty Tz Rz Ry Rx, joined by massless bodies ``c1:boom.tz`` (named
  after the joint that carries them); the node's own body comes last.

Joint frames on the parent side are named after the joint with ``.`` for
``:`` (``c1.boom.ry`` on ``c1:body``); a child-side frame (when fixed factors
follow the last joint) adds ``.child``. Points of interest are frames named by
their id on their node's body; collision shapes are shapes (``aabb`` a box
along the node's axes) named by their id.

The model frame is the machine frame (J670 of the root component, z down),
so gravity is ``[0, 0, +9.81]``. Masses, centres of mass, inertias and joint
springs come from the ``shiftsim.physics`` interface (:mod:`.physics`); a
component without one is massless (warned). ``extras["mfk"]`` maps MFK value
references to joint names and holds the site placement.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ...errors import Problems
from ...spatial import rotation_about
from ...spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec, ShapeSpec
from ...typed import shown
from .base import member_path
from .config import Component, ResourceConfiguration
from .kinematics import attach_order, homogeneous, node_local_transform, placement, root_components
from .loader import load_configuration
from .names import assembly_name, body_name, joint_name
from .physics import PhysicsJoint, combine_mass_properties
from .references import QualifiedRef, Reference, parse_reference
from .topcon import NODE_MOTION_VALUES, ManifestEntry, Node

GRAVITY_J670 = np.array([0.0, 0.0, 9.81])
AXES = {"x": np.array([1.0, 0.0, 0.0]), "y": np.array([0.0, 1.0, 0.0]), "z": np.array([0.0, 0.0, 1.0])}
FACTOR_ORDER = ("tx", "ty", "tz", "rz", "ry", "rx")


def mfk_model_spec(path: str | Path, data: Any, values: Mapping[str, float] | None = None) -> ModelSpec:
    """Read an MFK resource configuration (bare or enveloped) into a ModelSpec. Raises ModelError."""
    return build_model_spec(load_configuration(data, path, values))


def factor_matrix(value: str, amount: float) -> np.ndarray:
    """The 4x4 elementary transform of one node value: translation along or rotation about an axis."""
    axis = AXES[value[1]]
    if value[0] == "t":
        return homogeneous(np.eye(3), amount * axis)
    return homogeneous(rotation_about(axis, amount), np.zeros(3))


def frame_from_matrix(name: str, matrix: np.ndarray) -> FrameSpec:
    return FrameSpec(name, rotation=matrix[:3, :3].copy(), translation=matrix[:3, 3].copy())


def build_model_spec(config: ResourceConfiguration) -> ModelSpec:
    """The ModelSpec of a loaded configuration (see the module docstring). Raises ModelError."""
    builder = _Builder(config)
    for index in attach_order(config):
        builder.add_component(config.components[index])
    return builder.finish()


class _Builder:
    """Collects bodies, frames and joints component by component (parents first)."""

    def __init__(self, config: ResourceConfiguration):
        self.config = config
        self.problems = Problems(config.file)
        self.spec = ModelSpec(name=config.description or config.uuid, source=config.file, format="mfk",
                              gravity=GRAVITY_J670.copy(), warnings=list(config.warnings))
        self.bodies: dict[str, BodySpec] = {}
        self.articulated = _articulated_values(config)
        self.springs = _springs(config, self.articulated, self.problems)
        self.joint_refs: dict[str, str] = {}

    def add_component(self, component: Component) -> None:
        if component.physics is None and component.nodes is not None:
            self.spec.warnings.append(f"{self.config.file}: {component.where}: {component.label} has no "
                                      "shiftsim.physics interface; its bodies are massless")
        base = _attach_parent(component)
        masses = _node_masses(component)
        for node in component.walk_nodes():
            _check_representable(node, component, self.problems)
            name = body_name(component.index, node.id)
            mass, com, inertia = masses.get(node.id, (0.0, np.zeros(3), np.zeros((3, 3))))
            self.bodies[name] = BodySpec(name, mass=mass, com=com, inertia=inertia, where=node.where)
            parent = body_name(component.index, node.parent) if node.parent is not None else base
            values = self.articulated.get((component.index, node.id))
            if values:
                self._add_joint_chain(component.index, node, parent, values)
            else:
                self.spec.joints.append(JointSpec(joint_name(component.index, node.id), "rigid", FrameRef(parent),
                                                  FrameRef(name), offset=node_local_transform(node),
                                                  source_type="mfk node", where=node.where))
        _add_points_and_shapes(component, self.bodies, self.problems)

    def _add_joint_chain(self, index: int, node: Node, parent: str, values: dict[str, ManifestEntry]) -> None:
        """One joint per articulated value, in T·Rz·Ry·Rx order; fixed factors go into the joint frames."""
        name = body_name(index, node.id)
        last = [v for v in FACTOR_ORDER if v in values][-1]
        carrier, fixed = parent, np.eye(4)
        for value in FACTOR_ORDER:
            if value not in values:
                fixed = fixed @ factor_matrix(value, node.number(value))
                continue
            joint = joint_name(index, node.id, value)
            child = name if value == last else f"{name}.{value}"
            if child != name:
                self.bodies[child] = BodySpec(child, where=node.where)
            entry = values[value]
            spec = JointSpec(joint, "revolute" if value[0] == "r" else "prismatic",
                             self._add_frame(carrier, frame_from_matrix(joint.replace(":", "."), fixed)),
                             FrameRef(child), axis=AXES[value[1]].copy(), initial=(node.number(value),),
                             actuated=True, source_type=f"mfk articulated {value}", where=entry.where)
            _apply_spring(spec, self.springs.get((index, node.id, value)), node.number(value))
            self.spec.joints.append(spec)
            self.joint_refs[str(QualifiedRef(index, parse_reference(entry.value_ref)))] = joint
            carrier, fixed = child, np.eye(4)
        if not np.allclose(fixed, np.eye(4)):
            last_joint = self.spec.joints[-1]
            last_joint.child = self._add_frame(name, frame_from_matrix(
                last_joint.name.replace(":", ".") + ".child", np.linalg.inv(fixed)))

    def _add_frame(self, body: str, frame: FrameSpec) -> FrameRef:
        (self.spec.fixed_frames if body == FIXED else self.bodies[body].frames)[frame.name] = frame
        return FrameRef(body, frame.name)

    def finish(self) -> ModelSpec:
        self.problems.raise_if_any()
        self.spec.bodies = list(self.bodies.values())
        self.spec.assemblies = {assembly_name(c.index): True for c in self.config.components}
        self.spec.extras["mfk"] = _extras(self.config, self.joint_refs)
        return self.spec


def _articulated_values(config: ResourceConfiguration) -> dict[tuple[int, str], dict[str, ManifestEntry]]:
    """Node values named in each component's manifest: ``{(component, node id): {value: entry}}``."""
    found: dict[tuple[int, str], dict[str, ManifestEntry]] = {}
    for component in config.components:
        for entry in component.replicate.manifest if component.replicate else []:
            ref = parse_reference(entry.value_ref, with_field=True)
            if (ref.oem, ref.interface) == ("topcon", "nodes") and ref.field in NODE_MOTION_VALUES:
                found.setdefault((component.index, ref.id), {}).setdefault(ref.field, entry)  # type: ignore[arg-type]
    return found


def _springs(config: ResourceConfiguration, articulated: dict[tuple[int, str], dict[str, ManifestEntry]],
             problems: Problems) -> dict[tuple[int, str, str], PhysicsJoint]:
    """Physics joints by ``(component, node id, value)``; each must name an articulated value."""
    springs = {}
    for component in config.components:
        for joint in component.physics.joints if component.physics else []:
            ref = parse_reference(joint.value_ref, with_field=True)
            key = (component.index, ref.id, ref.field)
            if (ref.oem, ref.interface) != ("topcon", "nodes") or ref.field not in articulated.get(key[:2], {}):
                problems.add(member_path(joint.where, "value_ref"),
                             f"{joint.value_ref} is not an articulated value of {component.label}",
                             "a node value listed in the component's replicate manifest")
                continue
            springs[key] = joint
    return springs


def _apply_spring(joint: JointSpec, spring: PhysicsJoint | None, current: float) -> None:
    """Stiffness ``-k (q - rest)`` (rest defaults to the current value), damping and limits."""
    if spring is None:
        return
    k = spring.number("stiffness")
    rest = spring.optional("rest")
    rest = current if rest is None else rest
    if k:
        joint.stiffness = (-k * rest or 0.0, k)
    if spring.number("damping"):
        joint.damping = (0.0, spring.number("damping"))
    lower, upper = spring.optional("lower"), spring.optional("upper")
    if lower is not None or upper is not None:
        joint.limits = (-np.inf if lower is None else lower, np.inf if upper is None else upper)


def _attach_parent(component: Component) -> str:
    if component.attach is None:
        return FIXED
    return body_name(component.attach.parent_component_index, component.attach.parent_node_ref.split(".")[2])


def _node_masses(component: Component) -> dict[str, tuple[float, np.ndarray, np.ndarray]]:
    """Mass, centre of mass and inertia per node id, from the component's physics bodies."""
    parts: dict[str, list] = {}
    for body in component.physics.bodies if component.physics else []:
        parts.setdefault(body.node_ref.split(".")[2], []).append((body.mass, body.com, body.inertia))
    return {node: combine_mass_properties(p) for node, p in parts.items()}


def _check_representable(node: Node, component: Component, problems: Problems) -> None:
    if ":" in node.id:
        problems.add(member_path(node.where, "id"), f"node id {shown(node.id)} contains ':'",
                     "an id without ':' (':' separates body path parts)")
    if any(node.number(s) != 1.0 for s in ("sx", "sy", "sz")):
        scale = tuple(float(x) for x in node.scale)
        problems.add(node.where, f"node {body_name(component.index, node.id)} has scale {scale}",
                     "scale 1 (a rigid-body model cannot carry scale; the standard keeps it out of nodes)")


def _add_points_and_shapes(component: Component, bodies: dict[str, BodySpec], problems: Problems) -> None:
    """Points of interest as frames, collision shapes as shapes, on their node's body."""

    def body_of(item) -> BodySpec | None:
        if ":" in item.id:
            problems.add(member_path(item.where, "id"), f"id {shown(item.id)} contains ':'", "an id without ':'")
            return None
        return bodies.get(body_name(component.index, item.node_ref.split(".")[2]))

    for point in component.points_of_interest.points if component.points_of_interest else []:
        body = body_of(point)
        if body is not None:
            body.frames[point.id] = FrameSpec(point.id, translation=point.position)
    for shape in component.collision_shapes.shapes if component.collision_shapes else []:
        body = body_of(shape)
        if body is None:
            continue
        if shape.type == "aabb":
            body.shapes.append(ShapeSpec(shape.id, "box", centre=shape.centre, half_extents=shape.half_extents))
        else:
            body.shapes.append(ShapeSpec(shape.id, "sphere", centre=shape.centre, radius=shape.radius))


def _extras(config: ResourceConfiguration, joint_refs: dict[str, str]) -> dict[str, Any]:
    roots = root_components(config)
    transform = config.components[roots[0]].transform if roots else None
    placement_refs = {}
    if transform is not None:
        parts = (transform.wgs,) if transform.type == "wgs" else (transform.local_position, transform.local_rotation)
        for part in parts:
            for value in part.DEFAULTS if part else ():
                ref = Reference(transform.oem, transform.name, part.id, value)
                placement_refs[str(QualifiedRef(roots[0], ref))] = part.number(value)
    return {
        "uuid": config.uuid,
        "description": config.description,
        "root_component": roots[0] if roots else None,
        "joints": joint_refs,
        "site_from_machine": placement(config).tolist(),
        "placement": transform.type if transform is not None else "local",
        "placement_values": placement_refs,
    }
