"""ModelSpec: the plain, format-independent description every reader produces.

Readers (``shiftsim.formats.*``) parse a file and return a :class:`ModelSpec`;
``shiftsim.model.compile_model`` turns it into a solver-ready ``Model``.
Nothing here knows about files or solvers.

Conventions (all readers convert to these at the boundary):

* SI units: metres, kilograms, seconds, radians, newtons.
* Names are full assembly paths joined by ``:`` (``arm:boom``); a frame is
  addressed as ``(body path, frame name)``. The world body is called
  :data:`FIXED`; every body and ``fixed`` has an implicit frame :data:`ORIGIN`.
* A frame's ``rotation`` holds the frame's axes as columns in body coordinates
  and ``translation`` its origin: ``p_body = rotation @ p_frame + translation``.
* Mass properties: ``com`` in body coordinates, ``inertia`` the 3x3 tensor
  about the centre of mass along body axes (kg m^2).
* Joint motion ``J(q)`` acts between the parent frame and the child frame:
  ``X_world_child_body = X_world_parent_body @ X_parent_frame @ J(q) @ inv(X_child_frame)``.
  Coordinates per joint type (``axis`` is a unit vector in joint-frame coordinates):

  ========== ===== ============================================================
  type       dof   J(q)
  ========== ===== ============================================================
  revolute   1     rotation by +q about ``axis`` (right-handed)
  prismatic  1     translation by +q along ``axis``
  spherical  3     Rz(q0) Ry(q1) Rx(q2) (intrinsic z-y'-x'' angles)
  float      6     Tx(q0) Ty(q1) Tz(q2) Rz(q3) Ry(q4) Rx(q5)
  rigid      0     the constant transform ``offset``
  ========== ===== ============================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal

import numpy as np

FIXED = "fixed"
ORIGIN = "origin"
PATH_SEPARATOR = ":"

JointType = Literal["revolute", "prismatic", "spherical", "float", "rigid"]
JOINT_DOF: dict[str, int] = {"revolute": 1, "prismatic": 1, "spherical": 3, "float": 6, "rigid": 0}

RestraintKind = Literal["spring", "damper", "friction"]
DistanceType = Literal["euclidean", "Tx", "Ty", "Tz"]


def join_path(*parts: str) -> str:
    """Join assembly path parts with ':' skipping empty parts."""
    return PATH_SEPARATOR.join(p for p in parts if p)


@dataclass(frozen=True)
class FrameRef:
    """A frame on a body: ``(body path, frame name)``; ``body`` may be :data:`FIXED`."""

    body: str
    frame: str = ORIGIN

    def __str__(self) -> str:
        return join_path(self.body, self.frame)


@dataclass
class FrameSpec:
    """A named frame fixed to a body (see module conventions for R and T)."""

    name: str
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def matrix(self) -> np.ndarray:
        """4x4 homogeneous transform body <- frame."""
        x = np.eye(4)
        x[:3, :3] = self.rotation
        x[:3, 3] = self.translation
        return x


@dataclass
class ShapeSpec:
    """A collision shape on a body.

    ``kind`` is ``box`` (``half_extents`` along the shape axes), ``sphere``
    (``radius``) or ``cylinder`` (``radius``, ``length`` along the shape z axis).
    The shape frame is given like a :class:`FrameSpec` (``rotation``, ``centre``)
    in body coordinates.
    """

    name: str
    kind: Literal["box", "sphere", "cylinder"]
    centre: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    half_extents: np.ndarray | None = None
    radius: float | None = None
    length: float | None = None


@dataclass
class BodySpec:
    """A rigid body: mass properties, frames, shapes. ``where`` locates it in its file."""

    name: str
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    frames: dict[str, FrameSpec] = field(default_factory=dict)
    shapes: list[ShapeSpec] = field(default_factory=list)
    geometry: list[str] = field(default_factory=list)
    active: bool = True
    where: str = ""


@dataclass
class CouplingSpec:
    """Makes a joint coordinate a function of other joints' coordinates.

    ``function(values)`` maps the source coordinates (in ``sources`` order) to
    the coupled coordinate; ``gradient(values)`` returns d(coupled)/d(sources),
    or is ``None`` to let the compiler use central differences. ``text`` is the
    human-readable law (e.g. ``"2*joint1 + 0.1"``) for reports.
    """

    sources: tuple[str, ...]
    function: Callable[[np.ndarray], float]
    gradient: Callable[[np.ndarray], np.ndarray] | None = None
    text: str = ""


@dataclass
class JointSpec:
    """A joint between two frames. See the module docstring for J(q) per type.

    ``initial`` holds the file's coordinates (length = dof of the type).
    ``stiffness``/``damping`` are joint-level polynomials, constant term first:
    ``Q = -sum(c[i] * q**i)`` on a 1-dof joint. ``limits`` are (lower, upper) or None.
    """

    name: str
    type: JointType
    parent: FrameRef
    child: FrameRef
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    initial: tuple[float, ...] = ()
    offset: np.ndarray = field(default_factory=lambda: np.eye(4))
    stiffness: tuple[float, ...] = ()
    damping: tuple[float, ...] = ()
    limits: tuple[float, float] | None = None
    coupling: CouplingSpec | None = None
    actuated: bool = False
    source_type: str = ""
    active: bool = True
    where: str = ""

    @property
    def dof(self) -> int:
        return JOINT_DOF[self.type]


@dataclass
class RestraintSpec:
    """A piecewise-polynomial spring, damper or friction law.

    Either ``joint`` (a 1-dof joint path) or ``pair`` (parent frame, child frame)
    is set. ``knots`` k1 < ... < kn split the axis into n+1 intervals;
    ``coefficients`` holds n+1 polynomials, **highest power first**, in the
    absolute coordinate x (joint coordinate, or distance between the pair's
    frame origins: Euclidean or along the parent frame's x/y/z axis).
    The law f(x) acts against increasing x: ``Q = -f(x)``.
    """

    name: str
    kind: RestraintKind
    knots: tuple[float, ...]
    coefficients: tuple[tuple[float, ...], ...]
    joint: str | None = None
    pair: tuple[FrameRef, FrameRef] | None = None
    distance_type: DistanceType = "euclidean"
    active: bool = True
    where: str = ""


@dataclass
class ModelSpec:
    """Everything a reader found in one model file.

    ``gravity`` is kept exactly as written (m/s^2, model frame). ``extras``
    keeps sections shiftsim reads but does not use (solver settings, force
    modules, loggers, format-specific data); ``warnings`` are the reader's
    non-fatal findings, shown by ``shiftsim check``.
    """

    name: str
    source: str
    format: str
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    bodies: list[BodySpec] = field(default_factory=list)
    fixed_frames: dict[str, FrameSpec] = field(default_factory=dict)
    joints: list[JointSpec] = field(default_factory=list)
    restraints: list[RestraintSpec] = field(default_factory=list)
    lights: list[dict[str, Any]] = field(default_factory=list)
    assemblies: dict[str, bool] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
