"""CLARAty body records -> :class:`~shiftsim.spec.ModelSpec`.

The mapping (``docs/claraty.md`` has the full story):

* every ``ME_Body`` is a :class:`BodySpec` whose origin is the body's
  reference frame; the reference frame also appears as an identity frame
  under its own name, and local frames keep their names;
* its ``ME_Joint`` is a :class:`JointSpec` from the frame ``<body>_joint`` on
  the parent body (on ``fixed`` for a body without parent, or with parent
  ``Ground_Body``) to the body's origin, acting about/along z;
* the parent-side frame is the reference transform followed by the joint's
  ``offset`` (a rotation about z for a revolute joint, a translation along z
  for a prismatic one), so the joint coordinate q is the file's joint
  variable and ``home`` is its initial value;
* a ``DH_Paul`` frame puts the joint *before* its constant part
  ``Tz(d) Tx(a) Rx(alpha)``: the parent side gets ``Rz(theta)`` (plus offset)
  and the joint's child frame is ``<body>_joint`` on the body, at the inverse
  of the constant part (the joint location seen from the Paul frame);
* ``Joint_Stiffness`` gives the spring ``(0, kz)`` on the joint coordinate
  (z is the joint axis); ``Joint_Constraint`` becomes a :class:`CouplingSpec`.

What the spec cannot hold (DH rows, Euler angles as written, rho and volume,
vmax and torque limits, kx and ky, the bounding-shape tree) is kept in
``spec.extras["claraty"]`` so that :mod:`.writer` can save the file back.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import Problems, suggest
from ...spatial import inverse
from ...spec import FIXED, ORIGIN, BodySpec, CouplingSpec, FrameRef, FrameSpec, JointSpec, ModelSpec, ShapeSpec
from .dh import joint_motion
from .elements import BodyRecord, JointRecord, ShapeNode
from .expressions import ExpressionError, coupling_functions, parse_expression

FORMAT = "claraty"
GROUND_BODY = "Ground_Body"
Z_AXIS = np.array([0.0, 0.0, 1.0])


def joint_frame_name(body: str) -> str:
    """Name of the generated frame holding the joint location of ``body`` (on its parent, and for DH_Paul on it)."""
    return f"{body}_joint"


def _frame(name: str, matrix: np.ndarray) -> FrameSpec:
    return FrameSpec(name, matrix[:3, :3].copy(), matrix[:3, 3].copy())


def _collision_shapes(record: BodyRecord, warnings: list[str], file: str) -> list[ShapeSpec]:
    """Leaves of the containment tree that can collide, as ShapeSpecs (containers are coarser copies)."""
    containers = {n.parent for n in record.shapes if n.parent is not None}
    shapes: list[ShapeSpec] = []
    empty: list[str] = []
    for node in record.shapes:
        if node.name in containers or node.type in ("no_shape", "") or node.ignore_collisions:
            continue
        if not np.all(node.dimension > 0):
            empty.append(node.name)
            continue
        shapes.append(_shape_spec(node, warnings, file))
    if empty:
        warnings.append(f"{file}: {record.element.where}: bounding shape(s) {', '.join(empty)} have a zero "
                        "dimension; not used for collision")
    return shapes


def _shape_spec(node: ShapeNode, warnings: list[str], file: str) -> ShapeSpec:
    centre, rotation = node.matrix[:3, 3].copy(), node.matrix[:3, :3].copy()
    if node.type == "box":
        return ShapeSpec(node.name, "box", centre, rotation, half_extents=node.dimension / 2.0)
    dx, dy, dz = node.dimension
    if not math.isclose(dx, dy, rel_tol=1e-9):
        warnings.append(f"{file}: {node.element.where}: cylinder with dim-x {dx:g} != dim-y {dy:g}; "
                        f"radius taken as {max(dx, dy) / 2:g} (the larger)")
    return ShapeSpec(node.name, "cylinder", centre, rotation, radius=max(dx, dy) / 2.0, length=float(dz))


def _parents(records: list[BodyRecord], problems: Problems) -> dict[str, str]:
    """Parent body name of every body (:data:`FIXED` for roots); reports unknown parents and cycles."""
    names = {r.name for r in records}
    parent_of: dict[str, str] = {}
    for record in records:
        parent = record.parent
        if parent is None or (parent == GROUND_BODY and GROUND_BODY not in names):
            parent_of[record.name] = FIXED
        elif parent not in names:
            problems.add(record.element.where, f"unknown parent body {parent!r}",
                         f"{suggest(parent, names)}, or no parent (or {GROUND_BODY}) for the ground")
        elif parent == record.name:
            problems.add(record.element.where, "a body cannot be its own parent", "another body's name")
        else:
            parent_of[record.name] = parent
    settled: set[str] = set()  # bodies known to reach the ground
    where_of = {r.name: r.element.where for r in records}
    for start in parent_of:
        path: list[str] = []
        on_path: set[str] = set()
        current = start
        while current != FIXED and current in parent_of and current not in settled and current not in on_path:
            path.append(current)
            on_path.add(current)
            current = parent_of[current]
        if current in on_path:
            cycle = path[path.index(current):]
            problems.add(where_of[current], "bodies form a parent cycle: " + " -> ".join([*cycle, current]),
                         "a tree rooted at the ground")
        settled.update(path)
    return parent_of


def _couplings(joints: dict[str, JointRecord], problems: Problems) -> dict[str, CouplingSpec]:
    couplings: dict[str, CouplingSpec] = {}
    sources_of: dict[str, tuple[str, ...]] = {}
    for name, joint in joints.items():
        if joint.constraint is None or joint.constraint_element is None:
            continue
        where = joint.constraint_element.where
        try:
            expression = parse_expression(joint.constraint, variables=[j for j in joints if j])
        except ExpressionError as error:
            problems.add(where, f"expr={joint.constraint!r} is not a valid joint law: {error}",
                         error.expected or "an expression of other joints' values, numbers, constants (M_PI), "
                         "+ - * / ^ and functions such as sin, cos, sqrt")
            continue
        if name in expression.variables:
            problems.add(where, f"expr={joint.constraint!r} uses the joint's own value {name!r}",
                         "an expression of other joints only")
            continue
        function, gradient = coupling_functions(expression, expression.variables)
        couplings[name] = CouplingSpec(expression.variables, function, gradient, joint.constraint)
        sources_of[name] = expression.variables
    reported: set[str] = set()
    for name in sources_of:
        stack, seen = [(name, (name,))], set()
        while stack:
            current, chain = stack.pop()
            for source in sources_of.get(current, ()):
                if source == name and name not in reported:
                    reported.update(chain)
                    problems.add(joints[name].constraint_element.where,
                                 "joint constraints depend on each other in a cycle: " + " -> ".join([*chain, name]),
                                 "each coupled joint a function of independent joints")
                elif source not in seen:
                    seen.add(source)
                    stack.append((source, (*chain, source)))
    return couplings


def _joint_extras(joint: JointRecord) -> dict[str, Any]:
    extras: dict[str, Any] = {"offset": joint.offset, "home": joint.home}
    extras.update(joint.limit_extras)
    if joint.stiffness is not None:
        extras["stiffness"] = list(joint.stiffness)
    if joint.constraint is not None:
        extras["constraint"] = joint.constraint
    return extras


def build_spec(path: Path, name: str, version: str, layout: str, records: list[BodyRecord],
               problems: Problems, warnings: list[str]) -> ModelSpec:
    """Assemble the ModelSpec; problems are added to ``problems`` (the caller raises)."""
    file = str(path)
    seen_bodies: dict[str, BodyRecord] = {}
    for record in records:
        if record.name in seen_bodies:
            problems.add(record.element.where, f"second body named {record.name!r}", "unique body names")
        seen_bodies.setdefault(record.name, record)
    joints: dict[str, JointRecord] = {}
    for record in records:
        if record.joint is None:
            continue
        if record.joint.name in joints:
            problems.add(record.joint.element.where, f"second joint named {record.joint.name!r}", "unique joint names")
        joints.setdefault(record.joint.name, record.joint)
    parent_of = _parents(records, problems)
    couplings = _couplings(joints, problems)

    children: dict[str, list[str]] = {}
    for child, parent in parent_of.items():
        children.setdefault(parent, []).append(child)
    for record in records:
        dh = record.reference.placement.dh if record.reference else None
        siblings = children.get(parent_of.get(record.name, ""), [])
        if dh is not None and dh.convention == "DH_Paul" and len(siblings) > 1:
            others = ", ".join(repr(s) for s in siblings if s != record.name)
            problems.add(record.reference.element.where, f"DH_Paul frame, but the parent also carries {others}",
                         "DH_Paul only in serial chains (the parent's only child); use DH_Craig or a Transform")

    bodies: dict[str, BodySpec] = {}
    body_extras: dict[str, dict[str, Any]] = {}
    for record in records:
        body = BodySpec(record.name, where=record.element.where, geometry=list(record.graphics))
        extras: dict[str, Any] = {}
        if record.reference is not None:
            body.frames[record.reference.name] = FrameSpec(record.reference.name)
            extras["reference_frame"] = record.reference.name
            extras["reference"] = record.reference.placement.form
        for frame in record.frames:
            body.frames[frame.name] = _frame(frame.name, frame.placement.matrix)
        if record.frames:
            extras["frames"] = {f.name: f.placement.form for f in record.frames}
        if record.mass is not None:
            body.mass, body.com, body.inertia = record.mass.mass, record.mass.com, record.mass.inertia
            if record.mass.rho is not None:
                extras["rho"], extras["volume"] = record.mass.rho, record.mass.volume
        if record.shapes:
            body.shapes = _collision_shapes(record, warnings, file)
            extras["bounding_shapes"] = [n.as_extras() for n in record.shapes]
        bodies.setdefault(record.name, body)
        body_extras.setdefault(record.name, extras)

    spec = ModelSpec(name=name, source=file, format=FORMAT, warnings=warnings)
    joint_extras: dict[str, dict[str, Any]] = {}
    for record in records:
        joint, reference = record.joint, record.reference
        if joint is None or reference is None or record.name not in parent_of or bodies.get(record.name) is None:
            continue
        prismatic = joint.type == "prismatic"
        dh = reference.placement.dh
        before, after = dh.split() if dh is not None else (reference.placement.matrix, np.eye(4))
        offset = joint.offset if math.isfinite(joint.offset) else 0.0
        parent_side = before @ joint_motion(offset, prismatic)
        frame_name = joint_frame_name(record.name)
        parent = parent_of[record.name]
        parent_frames = spec.fixed_frames if parent == FIXED else bodies[parent].frames
        if frame_name in parent_frames:
            problems.add(record.element.where, f"the parent {parent!r} already has a frame named {frame_name!r}, "
                         "the name given to this body's joint location", f"another name than {frame_name!r}")
        parent_frames[frame_name] = _frame(frame_name, parent_side)
        child = FrameRef(record.name, ORIGIN)
        if not np.allclose(after, np.eye(4), rtol=0.0, atol=0.0):
            own = bodies[record.name].frames
            if frame_name in own:
                problems.add(record.element.where, f"the body already has a frame named {frame_name!r}, the name "
                             "given to its DH_Paul joint location", f"another name than {frame_name!r}")
            own[frame_name] = _frame(frame_name, inverse(after))
            child = FrameRef(record.name, frame_name)
        stiffness = (0.0, joint.stiffness[2]) if joint.stiffness is not None else ()
        spec.joints.append(JointSpec(
            name=joint.name, type=joint.type or "revolute", parent=FrameRef(parent, frame_name), child=child,
            axis=Z_AXIS.copy(), initial=(joint.home,), stiffness=stiffness, limits=joint.limits,
            coupling=couplings.get(joint.name), actuated=joint.actuated, source_type=joint.type,
            where=joint.element.where,
        ))
        joint_extras[joint.name] = _joint_extras(joint)
    spec.bodies = list(bodies.values())
    spec.extras[FORMAT] = {"version": version, "layout": layout, "bodies": body_extras, "joints": joint_extras}
    return spec
