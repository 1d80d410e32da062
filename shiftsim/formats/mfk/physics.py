"""The ``shiftsim.physics`` interface: the mass and stiffness MFK does not carry.

An OEM interface of ours (``"oem": "shiftsim", "name": "physics"``), placed in
a component beside Topcon's interfaces and referencing them the MFK way::

    {"oem": "shiftsim", "name": "physics", "version": "0.1",
     "bodies": [{"id": "boom_mass", "node_ref": "topcon.nodes.boom", "mass": 1800,
                 "cx": 2.7, "cy": 0, "cz": -0.15,
                 "ixx": 260, "iyy": 5100, "izz": 4900, "ixy": 0, "ixz": 0, "iyz": 0}],
     "joints": [{"id": "boom_cylinders", "value_ref": "topcon.nodes.boom.ry",
                 "stiffness": 1.4e7, "rest": 0.0, "damping": 0, "lower": -1.0, "upper": 1.2}]}

Bodies: ``mass`` (kg), centre of mass ``cx cy cz`` (m, in the node's J670
frame), inertia tensor about the centre of mass along the node's axes
(kg m², ``ixy`` etc. are tensor elements: ``ixy = -∫ x y dm``). Several entries
on one node add up (parallel-axis theorem). Joints: a linear spring on an
articulated value (one in the replicate manifest): generalised force
``-stiffness · (q - rest)`` (N m/rad or N/m), ``rest`` defaulting to the value's
current value, optional viscous ``damping`` and limits ``lower``/``upper``.

Every field is an ordinary MFK value, so measurement scripts may compute
them (``mfk.shiftsim.physics.boom_mass.cx = m.boom_length.value / 2``) and
value references may address them (``shiftsim.physics.boom_mass.mass``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import Problems
from ...typed import shown
from .base import FieldReader, Interface, MfkObject, member_path, register_objects
from .topcon import Header

OEM = "shiftsim"
NAME = "physics"


@dataclass(eq=False)
class PhysicsBody(MfkObject):
    """Mass properties attached to a node (frame: the node's J670 frame)."""

    node_ref: str = ""

    DEFAULTS = {"mass": 0.0, "cx": 0.0, "cy": 0.0, "cz": 0.0,
                "ixx": 0.0, "iyy": 0.0, "izz": 0.0, "ixy": 0.0, "ixz": 0.0, "iyz": 0.0}
    UNITS = {"mass": "kg", "cx": "m", "cy": "m", "cz": "m"}

    @property
    def mass(self) -> float:
        return self.number("mass")

    @property
    def com(self) -> np.ndarray:
        return self.vector("cx", "cy", "cz")

    @property
    def inertia(self) -> np.ndarray:
        """3x3 inertia tensor about the centre of mass, node axes."""
        xx, yy, zz = self.number("ixx"), self.number("iyy"), self.number("izz")
        xy, xz, yz = self.number("ixy"), self.number("ixz"), self.number("iyz")
        return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


@dataclass(eq=False)
class PhysicsJoint(MfkObject):
    """A linear spring (and damper, limits) on an articulated node value."""

    value_ref: str = ""

    DEFAULTS = {"stiffness": 0.0, "damping": 0.0}

    def optional(self, name: str) -> float | None:
        value = self.values.get(name)
        return float(value) if isinstance(value, float) else None


@dataclass(eq=False)
class PhysicsInterface(Interface):
    bodies: list[PhysicsBody] = field(default_factory=list)
    joints: list[PhysicsJoint] = field(default_factory=list)


def parse_physics(reader: FieldReader, data: dict[str, Any], header: Header) -> PhysicsInterface:
    interface = PhysicsInterface(header.oem, header.name, header.version, header.where)
    for key, cls, ref_key in (("bodies", PhysicsBody, "node_ref"), ("joints", PhysicsJoint, "value_ref")):
        for path, obj in reader.objects(data, key, header.where):
            if cls is PhysicsJoint:
                for name in ("rest", "lower", "upper"):
                    reader.number(obj, name, path, required=False)
            entry = reader.identified(cls, obj, path, **{ref_key: reader.string(obj, ref_key, path)})
            if entry is not None:
                getattr(interface, key).append(entry)
    register_objects(reader, interface, [*interface.bodies, *interface.joints])
    return interface


def check_physics_values(interface: PhysicsInterface, problems: Problems) -> None:
    """Refuse physically impossible values (after measurement scripts have run)."""
    for body in interface.bodies:
        if body.mass < 0:
            problems.add(member_path(body.where, "mass"), f"mass {body.mass:g} kg is negative", "a mass >= 0")
        moments = np.linalg.eigvalsh(body.inertia)
        tolerance = 1e-9 * max(1.0, float(np.abs(moments).max()))
        a, b, c = moments
        if a < -tolerance or a + b < c - tolerance:
            problems.add(body.where, f"inertia of {shown(body.id)} has principal moments "
                         f"{', '.join(f'{m:g}' for m in moments)} kg m^2",
                         "a physical inertia: principal moments >= 0 obeying the triangle inequality")
    for joint in interface.joints:
        for name in ("stiffness", "damping"):
            if joint.number(name) < 0:
                problems.add(member_path(joint.where, name), f"{name} {joint.number(name):g} is negative", ">= 0")
        lower, upper = joint.optional("lower"), joint.optional("upper")
        if lower is not None and upper is not None and lower > upper:
            problems.add(joint.where, f"lower limit {lower:g} is above upper limit {upper:g}", "lower <= upper")


def combine_mass_properties(parts: list[tuple[float, np.ndarray, np.ndarray]]) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass, centre of mass and inertia (about that centre) of rigidly joined parts.

    Each part is ``(mass, com, inertia about its own com)`` in one frame; the
    parallel-axis theorem moves each inertia to the common centre of mass.
    """
    mass = sum(m for m, _, _ in parts)
    if mass <= 0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    com = sum(m * c for m, c, _ in parts) / mass
    inertia = np.zeros((3, 3))
    for m, c, i in parts:
        d = c - com
        inertia += i + m * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
    return float(mass), com, inertia
