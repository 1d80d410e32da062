"""``write_claraty(spec, path)``: save a ModelSpec as a CLARAty Mechanism_Model XML file.

A spec read from a CLARAty file is written back in the representation it was
read from (``spec.extras["claraty"]``): DH rows stay DH rows, Euler angles stay
Euler angles, the Block_DH table stays a table, as long as those records still
reproduce the spec's transforms; otherwise the transform is written as
Position + Quaternion. Reading the written file gives the same spec.

Any other tree of revolute/prismatic joints can be written too. A joint axis
other than z is rotated onto z, and a joint whose child frame is not the
body origin moves the body's reference frame there (CLARAty's body reference
frame coincides with the joint location at zero articulation); every frame,
mass property and shape is re-expressed in the new reference frame, and the
old origin is kept as the local frame ``<body>_origin``.

What CLARAty cannot hold (loops, spherical/float/rigid joints, restraints,
damping, non-linear springs, sphere shapes, ground frames, gravity other than
the default) is refused with a :class:`~shiftsim.errors.ModelError` listing
every item; ``allow_loss=True`` drops the droppable items instead and returns
them as warnings. Structural impossibilities are always refused. The file is
written to a temporary name and renamed into place, so it is never half-written.
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ModelError, Problem, Problems, ShiftsimError
from ...spatial import euler_rotation, inverse
from ...spec import FIXED, ORIGIN, BodySpec, CouplingSpec, FrameRef, JointSpec, ModelSpec, ShapeSpec
from .build import FORMAT, joint_frame_name
from .dh import DhParameters, joint_motion
from .expressions import Expression, ExpressionError, parse_expression

MATCH_TOLERANCE = 1e-10
DEFAULT_GRAVITY = np.array([0.0, 0.0, -9.81])


def _num(value: float) -> str:
    """Shortest text that reads back to exactly ``value``."""
    return repr(float(value))


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.allclose(a, b, rtol=0.0, atol=MATCH_TOLERANCE))


def _axis_alignment(axis: np.ndarray) -> np.ndarray:
    """4x4 rotation taking z onto the unit vector ``axis`` (3,) (identity when axis is z)."""
    from scipy.spatial.transform import Rotation  # 0.2 s to import: reading a file does not pay it

    z = np.array([0.0, 0.0, 1.0])
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    x = np.eye(4)
    if _close(a, z):
        return x
    if _close(a, -z):
        x[:3, :3] = Rotation.from_rotvec([math.pi, 0.0, 0.0]).as_matrix()
        return x
    v = np.cross(z, a)
    x[:3, :3] = Rotation.from_rotvec(v / np.linalg.norm(v) * math.acos(np.clip(a @ z, -1.0, 1.0))).as_matrix()
    return x


def _principal(inertia: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(R, moments) with inertia = R diag(moments) R^T and det R = +1 (R = I for a diagonal tensor)."""
    if np.count_nonzero(inertia - np.diag(np.diag(inertia))) == 0:
        return np.eye(3), np.diag(inertia).copy()
    moments, vectors = np.linalg.eigh((inertia + inertia.T) / 2.0)
    if np.linalg.det(vectors) < 0:
        vectors[:, 2] *= -1.0
    return vectors, moments


@dataclass
class _Placed:
    """How one body is written: its joint, parent, reference transform and re-basing."""

    body: BodySpec
    joint: JointSpec
    parent: str
    rebase: np.ndarray  # 4x4: old body coordinates <- written reference frame
    reference: np.ndarray | None = None  # parent reference <- joint location (Transform form)
    dh: DhParameters | None = None


class _Writer:
    def __init__(self, spec: ModelSpec, allow_loss: bool):
        self.spec = spec
        self.allow_loss = allow_loss
        self.problems = Problems(spec.source or spec.name or "model")
        self.warnings: list[str] = []
        extras = spec.extras.get(FORMAT, {})
        self.body_extras: dict[str, dict[str, Any]] = extras.get("bodies", {})
        self.joint_extras: dict[str, dict[str, Any]] = extras.get("joints", {})
        self.version: str = extras.get("version", "1.0")
        self.layout: str = extras.get("layout", "bodies")
        self.bodies = {b.name: b for b in spec.bodies if b.active}
        self.children: dict[str, list[str]] = {}
        for joint in spec.joints:
            self.children.setdefault(joint.parent.body, []).append(joint.child.body)

    # ------------------------------------------------------------------ checks
    def lose(self, where: str, what: str) -> None:
        """Something CLARAty cannot hold: refused, or dropped with a warning under ``allow_loss``."""
        if self.allow_loss:
            self.warnings.append(f"{where}: {what}; not saved")
        else:
            self.problems.add(where, f"{what}; CLARAty XML cannot hold it", "a model without it, or allow_loss=True")

    def model_level_losses(self) -> None:
        spec = self.spec
        if not _close(np.asarray(spec.gravity, float), DEFAULT_GRAVITY):
            self.lose("gravity", f"gravity {np.asarray(spec.gravity).tolist()}")
        for r in spec.restraints:
            self.lose(f"restraint {r.name!r}", f"a {r.kind} restraint")
        if spec.lights:
            self.lose("lights", f"{len(spec.lights)} light(s)")
        for body in spec.bodies:
            if not body.active:
                self.lose(f"body {body.name!r}", "an inactive body")
        for joint in spec.joints:
            if not joint.active:
                self.lose(f"joint {joint.name!r}", "an inactive joint")

    # ------------------------------------------------------------------ placement
    def frame_matrix(self, ref: FrameRef, where: str) -> np.ndarray | None:
        if ref.frame == ORIGIN:
            return np.eye(4)
        frames = self.spec.fixed_frames if ref.body == FIXED else self.bodies[ref.body].frames
        if ref.frame not in frames:
            self.problems.add(where, f"unknown frame {ref}", "a frame of the body")
            return None
        return frames[ref.frame].matrix()

    def place(self) -> list[_Placed]:
        """Joint of every body, bodies in parent-first order, re-basing and reference transforms."""
        spec = self.spec
        joint_of: dict[str, JointSpec] = {}
        for joint in spec.joints:
            if not joint.active:
                continue
            where = f"joint {joint.name!r}"
            if joint.type not in ("revolute", "prismatic"):
                self.problems.add(where, f"a {joint.type} joint", "revolute or prismatic joints (CLARAty ME_Joint)")
            if joint.child.body not in self.bodies:
                self.problems.add(where, f"child body {joint.child.body!r} is not an active body",
                                  "a joint whose child is a body")
                continue
            if joint.parent.body != FIXED and joint.parent.body not in self.bodies:
                self.problems.add(where, f"parent body {joint.parent.body!r} is not an active body",
                                  "a joint whose parent is a body or fixed")
                continue
            if joint.child.body in joint_of:
                self.problems.add(where, f"body {joint.child.body!r} is the child of joints "
                                  f"{joint_of[joint.child.body].name!r} and {joint.name!r} (a closed loop)",
                                  "a tree: one joint per body (CLARAty files hold no loops)")
                continue
            joint_of[joint.child.body] = joint
        for name in self.bodies:
            if name not in joint_of:
                self.problems.add(f"body {name!r}", "no joint connects it to a parent",
                                  "every body the child of exactly one joint")
        self.problems.raise_if_any()

        order: list[str] = []  # parents before children
        done: set[str] = set()
        for start in self.bodies:
            path: list[str] = []
            name = start
            while name != FIXED and name not in done and name not in path:
                path.append(name)
                name = joint_of[name].parent.body
            if name in path:
                cycle = path[path.index(name):]
                self.problems.add(f"body {name!r}", "bodies form a cycle: " + " -> ".join([*cycle, name]),
                                  "a tree rooted at fixed")
                break
            order.extend(reversed(path))
            done.update(path)
        self.problems.raise_if_any()

        placed: dict[str, _Placed] = {}
        for name in order:
            joint = joint_of[name]
            where = f"joint {joint.name!r}"
            parent_matrix = self.frame_matrix(joint.parent, where)
            child_matrix = self.frame_matrix(joint.child, where)
            if parent_matrix is None or child_matrix is None:
                continue
            if joint.parent.body != FIXED and joint.parent.body not in placed:
                continue  # the parent could not be placed; its problem is reported
            align = _axis_alignment(joint.axis)
            parent_rebase = np.eye(4) if joint.parent.body == FIXED else placed[joint.parent.body].rebase
            parent_side = inverse(parent_rebase) @ parent_matrix @ align  # in the parent's written reference
            child_side = child_matrix @ align  # joint location in old body coordinates
            offset = float(self.joint_extras.get(joint.name, {}).get("offset", 0.0))
            motion = joint_motion(offset, joint.type == "prismatic")
            item = _Placed(self.bodies[name], joint, joint.parent.body, child_side)
            dh = self.recorded_dh(name)
            if dh is not None:
                before, after = dh.split()
                if _close(before @ motion, parent_side) and _close(inverse(after), child_side):
                    item.dh, item.rebase = dh, np.eye(4)
            if item.dh is None:
                item.reference = parent_side @ inverse(motion)
            placed[name] = item
        self.problems.raise_if_any()
        return [placed[b.name] for b in spec.bodies if b.name in placed]

    def recorded_dh(self, body: str) -> DhParameters | None:
        form = self.body_extras.get(body, {}).get("reference", {})
        if form.get("kind") != "dh":
            return None
        return DhParameters(form["convention"], form["length"], form["twist"], form["offset"], form["angle"])

    # ------------------------------------------------------------------ elements
    def transform(self, parent: ET.Element, matrix: np.ndarray, form: dict[str, Any] | None = None) -> None:
        transform = ET.SubElement(parent, "Transform")
        x, y, z = matrix[:3, 3]
        ET.SubElement(transform, "Position", x=_num(x), y=_num(y), z=_num(z))
        form = form or {}
        if form.get("kind") == "euler":
            sequence, angles = form["sequence"], form["angles"]
            if _close(euler_rotation(sequence, angles), matrix[:3, :3]):  # the reader's rule gives it back
                ET.SubElement(transform, "Rotation", {"type": f"EULER_{sequence}", "angle1": _num(angles[0]),
                                                      "angle2": _num(angles[1]), "angle3": _num(angles[2])})
                return
        from scipy.spatial.transform import Rotation  # 0.2 s to import: reading a file does not pay it

        qi, qj, qk, qs = Rotation.from_matrix(matrix[:3, :3]).as_quat()
        ET.SubElement(transform, "Quaternion", qi=_num(qi), qj=_num(qj), qk=_num(qk), qs=_num(qs))

    @staticmethod
    def dh_element(parent: ET.Element, dh: DhParameters, name: str) -> None:
        ET.SubElement(parent, "DH_Parameter", {"type": dh.convention, "name": name, "length": _num(dh.length),
                                               "twist": _num(dh.twist), "offset": _num(dh.offset),
                                               "angle": _num(dh.angle)})

    def joint_element(self, parent: ET.Element, joint: JointSpec) -> None:
        where = f"joint {joint.name!r}"
        extras = self.joint_extras.get(joint.name, {})
        home = joint.initial[0] if joint.initial else float(extras.get("home", 0.0))
        element = ET.SubElement(parent, "ME_Joint", {
            "name": joint.name, "type": joint.type, "actuated": "true" if joint.actuated else "false",
            "offset": _num(extras.get("offset", 0.0)), "home": _num(home)})
        if joint.limits is not None:
            low, high = joint.limits
            if not (math.isfinite(low) and math.isfinite(high)):
                self.lose(where, f"infinite limits {joint.limits}")
            else:
                ET.SubElement(element, "Joint_Limits", {
                    "min": _num(low), "max": _num(high), "vmax": _num(extras.get("vmax", 1.0)),
                    "torque_min": _num(extras.get("torque_min", 0.0)),
                    "torque_max": _num(extras.get("torque_max", 0.0))})
        stiffness = tuple(joint.stiffness)
        if stiffness and (stiffness[0] != 0.0 or any(c != 0.0 for c in stiffness[2:])):
            self.lose(where, f"stiffness polynomial {stiffness} (CLARAty springs are linear, zero at q = 0)")
        elif stiffness or "stiffness" in extras:
            kz = stiffness[1] if len(stiffness) > 1 else 0.0
            kx, ky, _ = extras.get("stiffness", (0.0, 0.0, 0.0))
            ET.SubElement(element, "Joint_Stiffness", kx=_num(kx), ky=_num(ky), kz=_num(kz))
        if joint.damping:
            self.lose(where, f"damping {tuple(joint.damping)}")
        if joint.coupling is not None:
            text = self.coupling_text(joint)
            if text is not None:
                ET.SubElement(element, "Joint_Constraint", expr=text)

    def coupling_text(self, joint: JointSpec) -> str | None:
        """The coupling's law as a CLARAty expression, checked against the coupling's function."""
        coupling = joint.coupling
        where = f"joint {joint.name!r}"
        names = [j.name for j in self.spec.joints]
        try:
            expression = parse_expression(coupling.text, names)
        except ExpressionError as error:
            self.lose(where, f"coupling law {coupling.text!r} is not a CLARAty expression ({error})")
            return None
        if not set(expression.variables) <= set(coupling.sources):
            self.lose(where, f"coupling law {coupling.text!r} names joints outside its sources {coupling.sources}")
            return None
        if not self.same_law(coupling, expression):
            self.lose(where, f"coupling text {coupling.text!r} does not match its function")
            return None
        return coupling.text

    @staticmethod
    def same_law(coupling: CouplingSpec, expression: Expression) -> bool:
        """True when text and function agree (to 1e-9) wherever both are defined at a few sample points."""
        samples = np.random.default_rng(0).uniform(-1.0, 1.0, (8, len(coupling.sources)))
        for values in samples:
            with np.errstate(all="ignore"):
                got = float(expression.value(dict(zip(coupling.sources, values))))
            try:
                expected = float(coupling.function(values))
            except (ShiftsimError, ArithmeticError, ValueError):
                expected = math.nan
            if math.isfinite(got) != math.isfinite(expected):
                return False
            if math.isfinite(got) and not math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12):
                return False
        return True

    def frame_element(self, parent: ET.Element, name: str, kind: str, matrix: np.ndarray,
                      form: dict[str, Any] | None) -> None:
        frame = ET.SubElement(parent, "Frame", name=name, type=kind)
        if form and form.get("kind") == "dh":
            dh = DhParameters(form["convention"], form["length"], form["twist"], form["offset"], form["angle"])
            if _close(dh.matrix(), matrix):
                self.dh_element(frame, dh, form["name"])
                return
        self.transform(frame, matrix, form)

    def mass_element(self, parent: ET.Element, body: BodySpec, rebase: np.ndarray, extras: dict[str, Any]) -> None:
        inertia = rebase[:3, :3].T @ np.asarray(body.inertia, float) @ rebase[:3, :3]
        com = (inverse(rebase) @ np.append(np.asarray(body.com, float), 1.0))[:3]
        rho, volume = extras.get("rho"), extras.get("volume")
        if rho is not None and volume is not None and rho * volume == body.mass:
            attributes = {"rho": _num(rho), "volume": _num(volume)}
        else:
            attributes = {"mass": _num(body.mass)}
        element = ET.SubElement(parent, "Mass_Properties", attributes)
        axes, moments = _principal(inertia)
        cm = np.eye(4)
        cm[:3, :3], cm[:3, 3] = axes, com
        self.transform(ET.SubElement(element, "CM"), cm)
        ET.SubElement(element, "Inertia", xx=_num(moments[0]), yy=_num(moments[1]), zz=_num(moments[2]))

    def shapes_element(self, parent: ET.Element, body: BodySpec, rebase: np.ndarray,
                       extras: dict[str, Any]) -> None:
        nodes = [dict(n) for n in extras.get("bounding_shapes", [])]
        specs = {s.name: s for s in body.shapes}
        from_tree = {n["name"] for n in nodes}
        for shape in body.shapes:
            if shape.name not in from_tree:
                nodes.append({"name": shape.name, "parent": None, "type": "", "is_container": "false", "level": 1,
                              "link": "", "is_aligned": "no", "ignore_collisions": False, "tol": -1.0})
        unrebase = inverse(rebase)
        written = []
        for node in nodes:
            matrix, dimension, kind = self.shape_geometry(node, specs.get(node["name"]), body.name)
            if kind is None:
                continue
            attributes = {"name": node["name"]}
            if node["parent"] is not None:
                attributes["parent"] = node["parent"]
            attributes.update({"type": kind, "is_container": node["is_container"], "level": str(node["level"]),
                               "link": node["link"], "is_aligned": node["is_aligned"],
                               "ignore_collisions": "true" if node["ignore_collisions"] else "false",
                               "tol": _num(node["tol"])})
            written.append((attributes, unrebase @ matrix, dimension))
        if not written:
            return
        element = ET.SubElement(parent, "Bounding_Shape")
        for attributes, matrix, dimension in written:
            params = ET.SubElement(element, "Obj_Params", attributes)
            self.transform(params, matrix)
            ET.SubElement(params, "Dimension", {"dim-x": _num(dimension[0]), "dim-y": _num(dimension[1]),
                                                "dim-z": _num(dimension[2])})

    def shape_geometry(self, node: dict[str, Any], shape: ShapeSpec | None, body: str
                       ) -> tuple[np.ndarray, np.ndarray, str | None]:
        """(pose in old body coordinates, full dimensions, CLARAty type) of a tree node or a ShapeSpec."""
        recorded = None
        if "position" in node:
            recorded = np.eye(4)
            recorded[:3, :3], recorded[:3, 3] = node["rotation"], node["position"]
        if shape is None:
            return recorded, np.asarray(node["dimension"], float), node["type"]
        pose = np.eye(4)
        pose[:3, :3], pose[:3, 3] = shape.rotation, shape.centre
        if shape.kind == "box":
            dimension, kind = 2.0 * np.asarray(shape.half_extents, float), "box"
        elif shape.kind == "cylinder":
            dimension, kind = np.array([2.0 * shape.radius, 2.0 * shape.radius, shape.length]), "cyl"
        else:
            self.lose(f"body {body!r} shape {shape.name!r}", f"a {shape.kind} shape (CLARAty has boxes and cylinders)")
            return pose, np.zeros(3), None
        if recorded is not None and node["type"] == kind and _close(recorded, pose):
            dx, dy, dz = node["dimension"]
            same = (np.allclose(dimension, node["dimension"], rtol=0, atol=MATCH_TOLERANCE) if kind == "box" else
                    math.isclose(max(dx, dy), dimension[0], abs_tol=MATCH_TOLERANCE)
                    and math.isclose(dz, dimension[2], abs_tol=MATCH_TOLERANCE))
            if same:  # the node as read still describes the shape: keep its own numbers
                return recorded, np.asarray(node["dimension"], float), kind
        return pose, dimension, kind

    def reference_name(self, body: BodySpec, rebase: np.ndarray) -> str:
        """Name of the written reference frame: the recorded one if it is (still) the reference frame."""
        recorded = self.body_extras.get(body.name, {}).get("reference_frame")
        if recorded and recorded in body.frames and _close(body.frames[recorded].matrix(), rebase):
            return recorded
        if recorded and recorded not in body.frames:
            return recorded
        return self.free_name(body, f"{body.name}_reference")

    @staticmethod
    def free_name(body: BodySpec, name: str, taken: set[str] = frozenset()) -> str:
        """``name``, or ``name2``, ``name3``... whichever is not a frame of the body yet."""
        candidate, k = name, 1
        while candidate in body.frames or candidate in taken:
            k += 1
            candidate = f"{name}{k}"
        return candidate

    def generated_frames(self, placed: list[_Placed]) -> dict[str, set[str]]:
        """Frames per body (and fixed) that the reader regenerates from the joints."""
        generated: dict[str, set[str]] = {}
        for item in placed:
            joint = item.joint
            name = joint_frame_name(item.body.name)
            if joint.parent.frame == name:
                generated.setdefault(joint.parent.body, set()).add(name)
            if joint.child.frame == name:
                generated.setdefault(item.body.name, set()).add(name)
        return generated

    def body_element(self, root: ET.Element, item: _Placed, generated: set[str]) -> None:
        body, joint = item.body, item.joint
        extras = self.body_extras.get(body.name, {})
        attributes = {"name": body.name}
        if item.parent != FIXED:
            attributes["parent"] = item.parent
        element = ET.SubElement(root, "ME_Body", attributes)
        self.joint_element(element, joint)
        reference = self.reference_name(body, item.rebase)
        frame = ET.SubElement(element, "Frame", name=reference, type="reference")
        if item.dh is not None:
            self.dh_element(frame, item.dh, extras.get("reference", {}).get("name", reference))
        else:
            self.transform(frame, item.reference, extras.get("reference"))
        forms = extras.get("frames", {})
        unrebase = inverse(item.rebase)
        if not _close(item.rebase, np.eye(4)):
            origin = self.free_name(body, f"{body.name}_origin", {reference})
            self.frame_element(element, origin, "local", unrebase, None)
        for name, spec_frame in body.frames.items():
            if name in generated or name == reference:
                continue
            if name in self.reserved_names(item):
                self.problems.add(f"body {body.name!r} frame {name!r}", "a frame with the name the reader gives to "
                                  "a joint location", "another frame name")
            self.frame_element(element, name, "local", unrebase @ spec_frame.matrix(), forms.get(name))
        if body.mass != 0.0 or np.any(np.asarray(body.inertia) != 0.0) or "rho" in extras:
            self.mass_element(element, body, item.rebase, extras)
        self.shapes_element(element, body, item.rebase, extras)
        if len(body.geometry) > 1:
            self.lose(f"body {body.name!r}", f"{len(body.geometry)} graphics files (CLARAty has one per body)")
        if body.geometry:
            ET.SubElement(element, "Display_Graphics", path=str(body.geometry[0]))

    def reserved_names(self, item: _Placed) -> set[str]:
        """Frame names the reader will generate on this body: its children's joint locations (and its own for Paul)."""
        names = {joint_frame_name(child) for child in self.children.get(item.body.name, ())}
        if item.dh is not None and item.dh.convention == "DH_Paul":
            names.add(joint_frame_name(item.body.name))
        return names

    def ground_frames(self) -> None:
        """Ground frames that place a joint live on in its reference transform; any other one is lost."""
        used = {ref.frame for j in self.spec.joints for ref in (j.parent, j.child) if ref.body == FIXED}
        for name in self.spec.fixed_frames:
            if name not in used:
                self.lose(f"fixed frame {name!r}", "a frame on the ground (CLARAty files hold no Ground_Body)")

    # ------------------------------------------------------------------ layouts
    def table_rows(self, placed: list[_Placed], generated: dict[str, set[str]]
                   ) -> list[tuple[_Placed, DhParameters, str]] | None:
        """Rows of a Block_DH table when the spec still is one serial DH chain with nothing else, else None."""
        rows = []
        for k, item in enumerate(placed):
            body, extras = item.body, self.body_extras.get(item.body.name, {})
            expected_parent = placed[k - 1].body.name if k else FIXED
            others = set(body.frames) - {body.name} - generated.get(body.name, set())
            if (item.dh is None or item.parent != expected_parent or extras.get("reference_frame") != body.name
                    or extras.get("reference", {}).get("name") != body.name or others or body.mass != 0.0
                    or np.any(np.asarray(body.inertia) != 0.0) or body.shapes or body.geometry or "rho" in extras
                    or extras.get("bounding_shapes")):
                return None
            rows.append((item, item.dh, body.name))
        if len({dh.convention for _, dh, _ in rows}) != 1:
            return None
        return rows

    def document(self) -> ET.Element:
        placed = self.place()  # raises at once when the structure cannot be written
        self.model_level_losses()
        generated = self.generated_frames(placed)
        self.ground_frames()
        root = ET.Element("Mechanism_Model", name=self.spec.name or "model", version=str(self.version))
        rows = self.table_rows(placed, generated) if self.layout == "table" else None
        if self.layout == "table" and rows is None:
            self.warnings.append("written as ME_Body elements: the model is no longer a plain DH table")
        if rows is not None:
            block_dh = ET.SubElement(root, "Block_DH")
            block_joint = ET.SubElement(root, "Block_Joint")
            for item, dh, name in rows:
                self.dh_element(block_dh, dh, name)
                self.joint_element(block_joint, item.joint)
        else:
            for item in placed:
                self.body_element(root, item, generated.get(item.body.name, set()))
        self.problems.raise_if_any()
        return root


def write_claraty(model: ModelSpec | Any, path: str | Path, *, allow_loss: bool = False) -> list[str]:
    """Write ``model`` (a ModelSpec, or anything with a ``.spec`` ModelSpec) to ``path``; return warnings."""
    spec = model if isinstance(model, ModelSpec) else getattr(model, "spec", None)
    if not isinstance(spec, ModelSpec):
        raise TypeError(f"expected a ModelSpec or a compiled Model, got {type(model).__name__}")
    writer = _Writer(spec, allow_loss)
    root = writer.document()
    ET.indent(root, space="  ")
    source = f" from {Path(spec.source).name}" if spec.source else ""
    text = ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<!-- CLARAty mechanism model written by shiftsim{source} -->\n"
            + ET.tostring(root, encoding="unicode") + "\n")
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise ModelError([Problem(str(path), "", f"cannot write the file: {error.strerror}", "a writable path")]) from None
    return writer.warnings
