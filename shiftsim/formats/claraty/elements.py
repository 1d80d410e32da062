"""CLARAty XML elements -> plain records, checking each element against the DTD.

One :class:`ElementReader` walks the element tree of one file. It checks
attributes and children of every element (unknown names, counts), evaluates
numeric attributes with the safe expression parser, applies the DTD's default
values, and adds every problem it finds to a :class:`~shiftsim.errors.Problems`
collector instead of stopping. The records it returns (:class:`BodyRecord`
and friends) are turned into a ModelSpec by :mod:`.build`.

Conventions settled here (see ``docs/claraty.md``):

* ``Rotation type="EULER_XYZ|EULER_ZYX|EULER_ZYZ"`` (any case): intrinsic
  rotations about the moving axes in the order named, ``R = R1(angle1)
  R2(angle2) R3(angle3)`` (scipy ``from_euler("XYZ")``, upper case; built by
  :func:`shiftsim.spatial.euler_rotation`).
* ``Quaternion qi qj qk qs``: scalar last; normalised with a warning when not unit.
* ``Inertia xx yy zz``: principal moments at the CM frame, whose axes are the
  CM transform's rotation R: tensor in body axes ``R diag(xx, yy, zz) R^T``.
* ``Dimension dim-x dim-y dim-z``: full extents along the shape's axes; a
  ``cyl`` is a cylinder along its z axis of diameter ``dim-x`` (= ``dim-y``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping

import numpy as np

from ...errors import Notice, Problems, suggest
from ... import typed
from ..physical import PHYSICAL_INERTIA, inertia_problem
from ..rotations import RotationRounding
from ...spatial import euler_rotation, quaternion_matrix
from ...typed import Mismatch, shown
from .dh import CONVENTIONS, DhParameters
from .document import Element
from .expressions import ExpressionError, evaluate_number

NUMBER_EXPECTED = "a number or an arithmetic expression of numbers and constants such as M_PI, M_PI_2 (e.g. -M_PI/4)"
EULER_SEQUENCES = {"EULER_XYZ": "XYZ", "EULER_ZYX": "ZYX", "EULER_ZYZ": "ZYZ"}
JOINT_TYPES = ("revolute", "prismatic")
SHAPE_TYPES = ("box", "cyl", "no_shape")


@dataclass
class Placement:
    """A frame's constant placement ``matrix`` (4x4) and how the file wrote it (``form``, for saving).

    For a DH frame, ``dh`` holds the parameters and ``matrix`` is their
    transform at zero joint variable.
    """

    matrix: np.ndarray
    form: dict[str, Any]
    dh: DhParameters | None = None


@dataclass
class FrameRecord:
    name: str
    kind: str  # "reference" or "local"
    placement: Placement
    element: Element


@dataclass
class JointRecord:
    name: str
    type: str
    actuated: bool
    offset: float
    home: float
    element: Element
    limits: tuple[float, float] | None = None
    limit_extras: dict[str, float] = field(default_factory=dict)
    stiffness: tuple[float, float, float] | None = None
    constraint: str | None = None
    constraint_element: Element | None = None


@dataclass
class MassRecord:
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    rho: float | None = None
    volume: float | None = None


@dataclass
class ShapeNode:
    """One ``Obj_Params`` of a bounding-shape tree (all values already read)."""

    name: str
    parent: str | None
    type: str
    is_container: str
    level: int
    link: str
    is_aligned: str
    ignore_collisions: bool
    tol: float
    matrix: np.ndarray
    dimension: np.ndarray
    element: Element

    def as_extras(self) -> dict[str, Any]:
        return {
            "name": self.name, "parent": self.parent, "type": self.type, "is_container": self.is_container,
            "level": self.level, "link": self.link, "is_aligned": self.is_aligned,
            "ignore_collisions": self.ignore_collisions, "tol": self.tol,
            "position": self.matrix[:3, 3].tolist(), "rotation": self.matrix[:3, :3].tolist(),
            "dimension": self.dimension.tolist(),
        }


@dataclass
class BodyRecord:
    name: str
    parent: str | None
    element: Element
    joint: JointRecord | None
    reference: FrameRecord | None
    frames: list[FrameRecord] = field(default_factory=list)  # local frames
    mass: MassRecord | None = None
    shapes: list[ShapeNode] = field(default_factory=list)
    graphics: list[str] = field(default_factory=list)


class ElementReader:
    """Reads elements of one file; problems go to ``problems``, notes to ``warnings``."""

    def __init__(self, problems: Problems, warnings: list[str]):
        self.problems = problems
        self.warnings = warnings
        self.rotations = RotationRounding()

    def finish(self) -> None:
        """Add the file-wide warnings (quaternion rounding) once every element has been read."""
        rounding = self.rotations.warning("a rotation", "rotations")
        if rounding:
            self.warnings.append(Notice(self.problems.file, "", rounding))

    # ------------------------------------------------------------------ basics
    def warn(self, element: Element, what: str) -> None:
        self.warnings.append(Notice(self.problems.file, element.where, what))

    def check(self, element: Element, attributes: Collection[str],
              children: Mapping[str, tuple[int, int | None]] | None = None) -> None:
        """Report unknown attributes, stray text, unknown children and wrong child counts."""
        children = children or {}
        for name in element.attrib:
            if name not in attributes:
                expected = suggest(name, attributes) if attributes else "no attributes"
                self.problems.add(element.where, f"unknown attribute {name!r} on <{element.tag}>", expected)
        if element.text:
            self.problems.add(f"{element.path} (line {element.text_line})", f"unexpected text {element.text[:40]!r}",
                              "only child elements")
        counts: dict[str, int] = {}
        for child in element.children:
            if child.tag not in children:
                expected = suggest(child.tag, children) if children else "no child elements"
                self.problems.add(child.where, f"unexpected element <{child.tag}> in <{element.tag}>", expected)
            counts[child.tag] = counts.get(child.tag, 0) + 1
        for tag, (low, high) in children.items():
            n = counts.get(tag, 0)
            if n < low:
                self.problems.add(element.where, f"missing <{tag}> in <{element.tag}>",
                                  f"at least {low} <{tag}>" if low > 1 else f"a <{tag}> element")
            elif high is not None and n > high:
                self.problems.add(element.where, f"{n} <{tag}> elements in <{element.tag}>", f"at most {high}")

    def text(self, element: Element, attribute: str, default: str | None = None) -> str | None:
        value = element.attrib.get(attribute, default)
        if value is None:
            self.problems.add(element.where, f"missing attribute {attribute!r} on <{element.tag}>",
                              f"{attribute}=\"...\"")
        return value

    def number(self, element: Element, attribute: str, default: str | None = None, unit: str = "") -> float:
        """Value of a numeric attribute (``default`` is the DTD's text) within the magnitude bound of
        ``unit`` (:data:`~shiftsim.typed.BOUNDS`); NaN after reporting a problem."""
        text = self.text(element, attribute, default)
        if text is None:
            return math.nan
        try:
            return typed.number(evaluate_number(text), unit)
        except ExpressionError as error:
            self.problems.add(element.where, f"attribute {attribute}={shown(text)} is not a number: {error}",
                              error.expected or NUMBER_EXPECTED)
        except Mismatch as error:
            self.problems.add(element.where, f"attribute {attribute}={shown(text)} {error.what}", error.expected)
        return math.nan

    def choice(self, element: Element, attribute: str, choices: tuple[str, ...], default: str | None = None) -> str:
        """One of ``choices`` (matched ignoring case and surrounding blanks); '' after reporting a problem."""
        text = self.text(element, attribute, default)
        if text is None:
            return ""
        for option in choices:
            if text.strip().lower() == option.lower():
                return option
        self.problems.add(element.where, f"attribute {attribute}={text!r} is not allowed", "one of " + ", ".join(choices))
        return ""

    def boolean(self, element: Element, attribute: str, default: str) -> bool:
        return self.choice(element, attribute, ("true", "false"), default) == "true"

    def name(self, element: Element) -> str:
        return (self.text(element, "name") or "").strip()

    # ------------------------------------------------------------------ transforms
    def transform(self, element: Element) -> Placement:
        """``Transform``: ``Position`` and exactly one of ``Rotation`` / ``Quaternion``."""
        self.check(element, (), {"Position": (1, 1), "Rotation": (0, 1), "Quaternion": (0, 1)})
        matrix = np.eye(4)
        form: dict[str, Any] = {"kind": "quaternion"}
        positions = element.children_named("Position")
        if positions:
            position = positions[0]
            self.check(position, ("x", "y", "z"))
            matrix[:3, 3] = [self.number(position, axis, "0", "m") for axis in "xyz"]
        orientations = element.children_named("Rotation") + element.children_named("Quaternion")
        if len(orientations) != 1:
            if not orientations:
                self.problems.add(element.where, "no orientation in <Transform>", "a <Rotation> or a <Quaternion>")
            else:
                self.problems.add(element.where, "both <Rotation> and <Quaternion> in <Transform>", "one of them")
            return Placement(matrix, form)
        orientation = orientations[0]
        if orientation.tag == "Rotation":
            matrix[:3, :3], form = self.euler(orientation)
        else:
            matrix[:3, :3] = self.quaternion(orientation)
        return Placement(matrix, form)

    def euler(self, element: Element) -> tuple[np.ndarray, dict[str, Any]]:
        self.check(element, ("type", "angle1", "angle2", "angle3"))
        kind = self.choice(element, "type", tuple(EULER_SEQUENCES))
        angles = [self.number(element, f"angle{k}") for k in (1, 2, 3)]
        if not kind or not all(math.isfinite(a) for a in angles):
            return np.eye(3), {"kind": "quaternion"}
        sequence = EULER_SEQUENCES[kind]
        return euler_rotation(sequence, angles), {"kind": "euler", "sequence": sequence, "angles": angles}

    def quaternion(self, element: Element) -> np.ndarray:
        self.check(element, ("qi", "qj", "qk", "qs"))
        q = np.array([self.number(element, name, default) for name, default in
                      (("qi", "0"), ("qj", "0"), ("qk", "0"), ("qs", "1"))])
        if not np.all(np.isfinite(q)):
            return np.eye(3)
        norm = float(np.linalg.norm(q))
        if norm < 1e-12:
            self.problems.add(element.where, "zero quaternion", "a unit quaternion qi qj qk qs (scalar last)")
            return np.eye(3)
        homogeneous = quaternion_matrix(q)  # R^T R = |q|^4 I: the matrix rule applies
        try:
            return self.rotations.rotation(homogeneous, element.where)
        except Mismatch as error:
            self.problems.add(element.where, f"quaternion of norm {norm:.9g} {error.what}",
                              "a unit quaternion qi qj qk qs (|q|^4 within 1e-3 of 1)")
            return np.eye(3)

    def dh(self, element: Element) -> tuple[str, DhParameters | None]:
        """``DH_Parameter`` -> (its name, parameters or None after a problem)."""
        self.check(element, ("type", "name", "length", "twist", "offset", "angle"))
        convention = self.choice(element, "type", CONVENTIONS)
        name = self.name(element)
        values = [self.number(element, "length"), self.number(element, "twist"),
                  self.number(element, "offset", "0"), self.number(element, "angle", "0")]
        if not convention or not all(math.isfinite(v) for v in values):
            return name, None
        return name, DhParameters(convention, *values)

    def dh_placement(self, element: Element) -> tuple[str, Placement]:
        name, parameters = self.dh(element)
        if parameters is None:
            return name, Placement(np.eye(4), {"kind": "quaternion"})
        form = {"kind": "dh", "convention": parameters.convention, "name": name, "length": parameters.length,
                "twist": parameters.twist, "offset": parameters.offset, "angle": parameters.angle}
        return name, Placement(parameters.matrix(), form, parameters)

    def frame(self, element: Element) -> FrameRecord:
        """``Frame name type`` holding a ``Transform`` or a ``DH_Parameter``."""
        self.check(element, ("name", "type"), {"Transform": (0, 1), "DH_Parameter": (0, 1)})
        name = self.name(element)
        kind = self.choice(element, "type", ("reference", "local"), "local")
        transforms = element.children_named("Transform")
        dhs = element.children_named("DH_Parameter")
        if len(transforms) + len(dhs) != 1:
            what = "no placement in <Frame>" if not transforms and not dhs else "both <Transform> and <DH_Parameter>"
            self.problems.add(element.where, what, "a <Transform> or a <DH_Parameter>")
            return FrameRecord(name, kind, Placement(np.eye(4), {"kind": "quaternion"}), element)
        placement = self.transform(transforms[0]) if transforms else self.dh_placement(dhs[0])[1]
        return FrameRecord(name, kind, placement, element)

    # ------------------------------------------------------------------ joints
    def joint(self, element: Element) -> JointRecord:
        self.check(element, ("name", "type", "actuated", "offset", "home"),
                   {"Joint_Limits": (0, 1), "Joint_Stiffness": (0, 1), "Joint_Constraint": (0, 1)})
        record = JointRecord(
            name=self.name(element),
            type=self.choice(element, "type", JOINT_TYPES, "revolute"),
            actuated=self.boolean(element, "actuated", "true"),
            offset=self.number(element, "offset", "0"),
            home=self.number(element, "home", "0"),
            element=element,
        )
        for limits in element.children_named("Joint_Limits"):
            self.check(limits, ("min", "max", "vmax", "torque_min", "torque_max"))
            low, high = self.number(limits, "min", "-M_PI"), self.number(limits, "max", "M_PI")
            if low > high:
                self.problems.add(limits.where, f"min {low:g} is greater than max {high:g}", "min <= max")
            record.limits = (low, high)
            record.limit_extras = {"vmax": self.number(limits, "vmax", "1.0"),
                                   "torque_min": self.number(limits, "torque_min", "0"),
                                   "torque_max": self.number(limits, "torque_max", "0")}
            if record.limit_extras["vmax"] < 0:
                self.problems.add(limits.where, f"negative vmax {record.limit_extras['vmax']:g}", "vmax >= 0")
            if math.isfinite(record.home) and low <= high and not low <= record.home <= high:
                self.warn(element, f"home {record.home:g} lies outside the limits [{low:g}, {high:g}]")
        for stiffness in element.children_named("Joint_Stiffness"):
            self.check(stiffness, ("kx", "ky", "kz"))
            k = tuple(self.number(stiffness, name) for name in ("kx", "ky", "kz"))
            for name, value in zip(("kx", "ky", "kz"), k):
                if value < 0:
                    self.problems.add(stiffness.where, f"negative stiffness {name}={value:g}", "a value >= 0")
            record.stiffness = k  # type: ignore[assignment]
        for constraint in element.children_named("Joint_Constraint"):
            self.check(constraint, ("expr",))
            record.constraint = self.text(constraint, "expr")
            record.constraint_element = constraint
        return record

    # ------------------------------------------------------------------ mass
    def mass(self, element: Element) -> MassRecord:
        self.check(element, ("rho", "volume", "mass"), {"CM": (1, 1), "Inertia": (1, 1)})
        given = {k: self.number(element, k, unit="kg" if k == "mass" else "") for k in ("rho", "volume", "mass")
                 if k in element.attrib}
        for key, value in given.items():
            if value < 0:
                self.problems.add(element.where, f"negative {key} {value:g}", f"{key} >= 0")
        rho, volume = given.get("rho"), given.get("volume")
        if (rho is None) != (volume is None):
            self.problems.add(element.where, "only one of rho and volume given",
                              "both rho and volume (mass = rho*volume), or mass")
        mass = given.get("mass")
        if rho is not None and volume is not None:
            derived = rho * volume
            if mass is not None and not math.isclose(mass, derived, rel_tol=1e-9, abs_tol=1e-12):
                self.problems.add(element.where, f"mass {mass:g} differs from rho*volume = {derived:g}",
                                  "mass = rho*volume, or only one of them")
            mass = derived
        if mass is None:
            self.warn(element, "no mass given (mass or rho and volume); mass taken as 0")
            mass = 0.0
        frame = np.eye(4)
        for cm in element.children_named("CM"):
            self.check(cm, (), {"Transform": (1, 1)})
            for transform in cm.children_named("Transform"):
                frame = self.transform(transform).matrix
        principal = np.zeros(3)
        for inertia in element.children_named("Inertia"):
            self.check(inertia, ("xx", "yy", "zz"))
            principal = np.array([self.number(inertia, k) for k in ("xx", "yy", "zz")])
            problem = inertia_problem(np.diag(principal)) if np.all(np.isfinite(principal)) else None
            if problem:
                self.problems.add(inertia.where, f"inertia {problem}", PHYSICAL_INERTIA)
        r = frame[:3, :3]
        return MassRecord(float(mass), frame[:3, 3].copy(), r @ np.diag(principal) @ r.T, rho, volume)

    # ------------------------------------------------------------------ shapes
    def shapes(self, element: Element) -> list[ShapeNode]:
        self.check(element, (), {"Obj_Params": (1, None)})
        nodes = [self.shape(child) for child in element.children_named("Obj_Params")]
        by_name: dict[str, ShapeNode] = {}
        for node in nodes:
            if node.name in by_name:
                self.problems.add(node.element.where, f"second bounding shape named {node.name!r}", "unique names")
            by_name.setdefault(node.name, node)
        for node in nodes:
            if node.parent is None:
                continue
            parent = by_name.get(node.parent)
            if parent is None:
                self.problems.add(node.element.where, f"unknown parent shape {node.parent!r}",
                                  suggest(node.parent, by_name))
            elif parent.level >= node.level and parent is not node:
                self.warn(node.element, f"level {node.level} is not below its container {parent.name!r} "
                          f"(level {parent.level})")
            chain = [node.name]
            while parent is not None and parent.name not in chain:
                chain.append(parent.name)
                parent = by_name.get(parent.parent) if parent.parent is not None else None
            if parent is not None and parent.name == node.name:
                self.problems.add(node.element.where, "bounding shapes contain each other in a cycle: "
                                  + " -> ".join([*chain, node.name]), "a containment tree")
        return nodes

    def shape(self, element: Element) -> ShapeNode:
        self.check(element, ("name", "parent", "type", "is_container", "level", "link", "is_aligned",
                             "ignore_collisions", "tol"), {"Transform": (1, 1), "Dimension": (1, 1)})
        matrix = np.eye(4)
        for transform in element.children_named("Transform"):
            matrix = self.transform(transform).matrix
        dimension = np.zeros(3)
        for dim in element.children_named("Dimension"):
            self.check(dim, ("dim-x", "dim-y", "dim-z"))
            dimension = np.array([self.number(dim, k, "0") for k in ("dim-x", "dim-y", "dim-z")])
            if np.any(dimension < 0):
                self.problems.add(dim.where, "negative dimension", "dim-x, dim-y, dim-z >= 0")
        level = self.choice(element, "level", ("1", "2", "3"), "1")
        parent = element.attrib.get("parent")
        return ShapeNode(
            name=self.name(element),
            parent=parent.strip() if parent is not None else None,
            type=self.choice(element, "type", SHAPE_TYPES),
            is_container=self.choice(element, "is_container", ("true", "false", "none"), "none"),
            level=int(level) if level else 1,
            link=element.attrib.get("link", ""),
            is_aligned=self.choice(element, "is_aligned", ("yes", "no"), "no"),
            ignore_collisions=self.boolean(element, "ignore_collisions", "false"),
            tol=self.number(element, "tol", "-1"),
            matrix=matrix,
            dimension=dimension,
            element=element,
        )

    # ------------------------------------------------------------------ bodies
    def body(self, element: Element) -> BodyRecord:
        self.check(element, ("name", "parent"), {"ME_Joint": (1, 1), "Frame": (1, None), "Mass_Properties": (0, 1),
                                                 "Bounding_Shape": (0, 1), "Display_Graphics": (0, 1)})
        parent = element.attrib.get("parent")
        joints = [self.joint(j) for j in element.children_named("ME_Joint")]
        frames = [self.frame(f) for f in element.children_named("Frame")]
        references = [f for f in frames if f.kind == "reference"]
        if not references and frames:
            self.problems.add(element.where, "no reference frame (it places the body's joint in the parent's "
                              "reference frame)", "exactly one <Frame type=\"reference\">")
        if len(references) > 1:
            names = ", ".join(repr(f.name) for f in references)
            self.problems.add(element.where, f"{len(references)} reference frames ({names})",
                              "exactly one <Frame type=\"reference\"> per body")
        seen: set[str] = set()
        for frame in frames:
            if frame.name in seen:
                self.problems.add(frame.element.where, f"second frame named {frame.name!r} in this body", "unique names")
            seen.add(frame.name)
        record = BodyRecord(
            name=self.name(element),
            parent=parent.strip() if parent is not None else None,
            element=element,
            joint=joints[0] if joints else None,
            reference=references[0] if references else None,
            frames=[f for f in frames if f.kind == "local"],
        )
        for mass in element.children_named("Mass_Properties"):
            record.mass = self.mass(mass)
        for shapes in element.children_named("Bounding_Shape"):
            record.shapes = self.shapes(shapes)
        for graphics in element.children_named("Display_Graphics"):
            self.check(graphics, ("path",))
            path = self.text(graphics, "path")
            if path is not None:
                record.graphics.append(path)
        return record

    def table(self, block_dh: Element, block_joint: Element) -> list[BodyRecord]:
        """The ``Block_DH`` + ``Block_Joint`` table: row i places body i (named by its DH row) on body i-1."""
        self.check(block_dh, (), {"DH_Parameter": (1, None)})
        self.check(block_joint, (), {"ME_Joint": (1, None)})
        rows = block_dh.children_named("DH_Parameter")
        joints = [self.joint(j) for j in block_joint.children_named("ME_Joint")]
        if rows and joints and len(rows) != len(joints):
            self.problems.add(block_joint.where, f"{len(joints)} joints for {len(rows)} DH rows",
                              "one <ME_Joint> per <DH_Parameter>, in the same order")
        bodies: list[BodyRecord] = []
        conventions: set[str] = set()
        for k, (row, joint) in enumerate(zip(rows, joints)):
            name, placement = self.dh_placement(row)
            if placement.dh is not None:
                conventions.add(placement.dh.convention)
            reference = FrameRecord(name, "reference", placement, row)
            parent = bodies[k - 1].name if k else None
            bodies.append(BodyRecord(name, parent, row, joint, reference))
        if len(conventions) > 1:
            self.problems.add(block_dh.where, "the table mixes DH_Craig and DH_Paul rows", "one convention per table")
        return bodies

